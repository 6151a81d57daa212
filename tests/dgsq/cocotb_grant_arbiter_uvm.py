"""pyuvm test of the GrantArbiter (gse_grant_arbiter) on
:mod:`opengse.sim.uvm.stream_env`.

Stimulus (closed loop, like tests/cocotb_grant_arbiter.py): waves of finite DGSQ
queues at many sources (:class:`~opengse.sim.dgsq_model.SourceModel`: REQUEST
triggers, GRANT handling, whole-packet containers), several classes and tenants;
every GRANT the monitor sees makes its source release a container whose arrival
report(s) come back on ``s_arr`` after a latency; an egress-buffer model drains at a
per-wave rate and drives ``egress_room``. Random idle cycles on ``s_req`` /
``s_arr``, random back-pressure on ``m_grant``. Keys of a wave come back two waves
later (slot freed and allocated again, seq continued); at most 64 keys are live at
once (no REQUEST finds the slots full).

Each queue uses one packet size that divides the 4096 B container, so every
container is exactly full: no overrun, no debt, and hence none of the documented
REQUEST/overrun race (docs/dgsq.md), which makes the credit ledger exact.

The scoreboard (:class:`ArbiterChecker`) sees only the port transfers, in cycle
order, and checks what holds exactly despite the arbiter's pipeline lag:

* every GRANT is legal for the reference :class:`~opengse.sim.dgsq_model.ArbiterModel`
  fed with the same REQUESTs and arrivals (``check_grant``: a known requester with
  demand, fewer than ``max_inflight`` containers in flight, and the credit granted and
  not yet arrived plus this grant within ``egress_room`` (sampled with the grant) and
  the buffer) — the model applies inputs when they are taken, earlier than the RTL,
  which only makes it more permissive;
* ledger: per requester, grants so far <= containers its REQUESTs asked for
  (acknowledged seq + backlog rounded up to containers), and equal at the end;
* GRANT fields: ``credit`` = one container, ``tc``/``tenant`` as requested, ``seq``
  = the previous GRANT's seq + 1 per requester (from 1, across slot reuse);
* the arbiter's ``outstanding`` (sampled with each grant) is at least the credit the
  model has granted and not seen arrive, and at most ``buffer_credits``;
* strict priority: no GRANT to class c while a requester of a higher class was
  *surely* eligible when that GRANT could have been decided (see
  :meth:`ArbiterChecker.surely_eligible`);
* at the end: every requester's slot freed and no credit outstanding in the model.

The test adds: every queue drained, no GRANT found an empty queue, the source-side
ledger (GRANTs per queue = its bytes in containers, rounded up), the DUT's
``outstanding``/``slots_used`` back to 0 and its counters consistent.

``ARB_UVM_BREAK`` (for checking that the test can fail; a comma-separated list)
corrupts the scoreboard's view of the grants: ``tc`` (class lowered by one), ``seq``
(one seq off), ``drop`` (one grant hidden from the scoreboard), ``room`` (sampled room
shrunk by a container).
"""

import os
import random
from collections import deque

import cocotb
import pyuvm
from cocotb.clock import Clock
from cocotb.triggers import ReadWrite, RisingEdge
from pyuvm import ConfigDB, uvm_component, uvm_subscriber, uvm_test

from opengse.sim.dgsq_model import ArbiterModel, SourceModel, units
from opengse.sim.runner import test_params
from opengse.sim.uvm.stream_env import (
    CONFIG_KEY,
    StreamEnv,
    StreamEnvConfig,
    StreamModel,
    StreamPort,
    StreamQueueSequence,
)

# Packet sizes that divide the container: one size per queue keeps containers exactly
# full (the source sends whole packets until the grant is used up).
PKT_BYTES = (64, 256, 512, 1024, 2048, 4096)
CONTAINER = 4096
SEQ_MOD = 1 << 16


class _Requester:
    """The scoreboard's ledger of one (src_node, dgsq)."""

    def __init__(self):
        self.tc = self.tenant = None
        self.reqs = []  # (cycle, containers asked for in total)
        self.first_seq = None  # seq of the first REQUEST (the first GRANT is +1)
        self.granted = 0
        self.last_seq = None
        self.grant_idx = []  # global indices of its grants
        self.completions = []  # cycles of container ends (arrival with last)
        self.events = []  # cycles of its REQUESTs and arrivals (engine operations)

    def asked(self, upto=None):
        """Containers asked for by the latest REQUEST taken at or before ``upto``."""
        best = 0
        for cyc, n in self.reqs:
            if upto is None or cyc <= upto:
                best = n
        return best


class ArbiterChecker(StreamModel):
    """Scoreboard model of the arbiter (see the module docstring)."""

    LAG = 48  # clocks after a REQUEST/arrival is taken by which the pick surely sees
    # it (engine ~2-4, lane 8, pick 3; arrival accumulator; margin)
    DECIDED = 12  # GRANTs decided but not handed over: <= the 8-entry FIFO + pipeline
    MASK = 8  # a granted slot is masked from the pick for the next 7 decisions

    def __init__(self, p, corrupt=None):
        self.p = p
        self.G, self.K, self.BUF = p["grant_credits"], p["max_inflight"], p["buffer_credits"]
        self.ref = ArbiterModel(
            n_req=p["n_req"],
            buffer_credits=self.BUF,
            grant_credits=self.G,
            max_inflight=self.K,
            n_tenants=p["n_tenants"],
        )
        self.req = {}
        self.grants = []  # (cycle, key, tc) in hand-over order = decision order
        self.corrupt = set((corrupt or "").split(",")) - {""}
        self.prio_considered = 0  # (grant, higher-class requester with demand) pairs
        self.prio_armed = 0  # ... of which the requester was surely eligible
        self.n_req_taken = 0

    # -- inputs -----------------------------------------------------------------
    def on_input(self, item):
        f, c = item.fields, item.cycle
        if item.port == "s_req":
            key = (f["src_node"], f["dgsq"])
            r = self.req.setdefault(key, _Requester())
            r.tc, r.tenant = f["tc"], f["tenant"]
            if r.first_seq is None:
                r.first_seq = f["seq"]
            # Grants the source had seen + its backlog in containers (rounded up).
            r.reqs.append((c, f["seq"] + -(-f["backlog"] // self.G)))
            r.events.append(c)
            self.n_req_taken += 1
            self.ref.request(
                f["src_node"],
                f["dgsq"],
                f["tc"],
                f["tenant"],
                f["backlog"],
                f["seq"],
                now=c,
                voids=f["voids"],
            )
        elif item.port == "s_arr":
            key = (f["src_node"], f["dgsq"])
            r = self.req.get(key)
            if r is not None:
                r.events.append(c)
                if f["last"]:
                    r.completions.append(c)
            self.ref.arrival(f["src_node"], f["dgsq"], f["credits"], f["last"], now=c)
        elif item.port == "s_cfg":
            self.ref.set_weight(f["tenant"], f["weight"])
        return ()

    # -- outputs ----------------------------------------------------------------
    def on_output(self, item):
        f = dict(item.fields)
        room = item.sampled["egress_room"]
        if "tc" in self.corrupt and f["tc"] > 0:
            f["tc"] -= 1
        if "seq" in self.corrupt and len(self.grants) == 100:
            f["seq"] += 1
        if "drop" in self.corrupt and len(self.grants) == 100:
            self.corrupt.discard("drop")
            return ()
        if "room" in self.corrupt:
            room = max(0, room - self.G)
        key = (f["src_node"], f["dgsq"])
        r = self.req.get(key)
        if r is None:
            return [f"GRANT to {key}, which never sent a REQUEST"]
        errs = list(self.ref.check_grant(key, room))
        errs += self.check_priority(item.cycle, f["tc"])
        self.ref.grant(key, item.cycle)
        if f["credit"] != self.G:
            errs.append(f"credit {f['credit']} != {self.G}")
        if (f["tc"], f["tenant"]) != (r.tc, r.tenant):
            errs.append(f"tc/tenant {f['tc']}/{f['tenant']} != requested {r.tc}/{r.tenant}")
        want = ((r.last_seq if r.last_seq is not None else r.first_seq) + 1) % SEQ_MOD
        if f["seq"] != want:
            errs.append(f"seq {f['seq']} != {want}")
        r.last_seq = f["seq"]
        r.granted += 1
        if r.granted > r.asked():
            errs.append(f"grant #{r.granted} to {key}: its REQUESTs asked for {r.asked()} containers")
        outst = item.sampled["outstanding"]
        if not self.ref.outstanding <= outst <= self.BUF:
            errs.append(
                f"outstanding {outst}: credit granted and not arrived is "
                f"{self.ref.outstanding}, buffer {self.BUF}"
            )
        if f["slot"] >= self.p["n_req"]:
            errs.append(f"slot {f['slot']} >= n_req")
        r.grant_idx.append(len(self.grants))
        self.grants.append((item.cycle, key, f["tc"]))
        return errs

    def surely_eligible(self, r, t_lo, t, i):
        """Requester ``r`` was eligible and not masked whenever in [t_lo, t] the GRANT
        with hand-over index ``i`` (seen at ``t``) may have been decided: a REQUEST
        asking for more containers than it had been granted before that GRANT was taken
        LAG clocks before t_lo; fewer than max_inflight of those grants were still in
        flight for the arbiter (container ends taken LAG before t_lo); no REQUEST or
        arrival of it within LAG of that window (an operation in a lane masks it); no
        grant to it among the MASK grants before. Grants are handed over in decision
        order, so the grants decided before this one are exactly those seen before."""
        before = len(r.grant_idx)
        if r.asked(t_lo - self.LAG) <= before:
            return False
        done = sum(1 for c in r.completions if c <= t_lo - self.LAG)
        if before - done >= self.K:
            return False
        if r.events and r.events[-1] > t_lo - self.LAG:
            return False
        return not (r.grant_idx and r.grant_idx[-1] >= i - self.MASK)

    def check_priority(self, t, tc):
        i = len(self.grants)
        t_lo = self.grants[i - self.DECIDED][0] if i >= self.DECIDED else 0
        errs = []
        for key, r in self.req.items():
            if r.tc is None or r.tc <= tc or r.asked() <= r.granted:
                continue
            self.prio_considered += 1
            if self.surely_eligible(r, t_lo, t, i):
                self.prio_armed += 1
                errs.append(
                    f"strict priority: GRANT to class {tc} while {key} of class {r.tc} "
                    f"was eligible (granted {r.granted} of {r.asked()})"
                )
        return errs

    def on_end(self):
        errs = []
        for key, r in self.req.items():
            if r.granted != r.asked():
                errs.append(f"{key}: granted {r.granted} containers, its REQUESTs asked for {r.asked()}")
        if self.ref.slots:
            errs.append(f"reference model still holds {len(self.ref.slots)} requesters")
        if self.ref.outstanding:
            errs.append(f"reference model: {self.ref.outstanding} credit units outstanding")
        return errs


class ClosedLoop(uvm_component):
    """The sources and the egress buffer around the arbiter: REQUESTs from the
    sources' triggers, containers released on the GRANTs the monitor sees, their
    arrival reports after ``latency`` clocks, ``egress_room`` = buffer - occupancy
    (arrivals in, ``drain`` credit units per clock out)."""

    def build_phase(self):
        self.p = test_params()
        self.G, self.BUF = self.p["grant_credits"], self.p["buffer_credits"]
        self.grant_export = uvm_subscriber.uvm_AnalysisImp("grant_export", self, self._grant)
        self.arr_export = uvm_subscriber.uvm_AnalysisImp("arr_export", self, self._arrived)
        self.rng = random.Random(ConfigDB().get(self, "", "loop_seed"))
        self.sources = {}  # src_node -> SourceModel
        self.req_seq = StreamQueueSequence("req_seq")
        self.arr_seq = StreamQueueSequence("arr_seq")
        self.due = deque()  # (cycle, arrival fields), in time order
        self.now = 0
        self.occ = 0
        self.drain = 8.0
        self.acc = 0.0
        self.latency = 16
        self.refresh = 1024
        self.bytes_in = {}  # (src, dgsq) -> bytes enqueued per burst (list)
        self.grants = {}  # (src, dgsq) -> GRANTs seen
        self.empty_grants = 0
        self.reports = self.reports_taken = 0
        self.refreshes = 0  # REQUESTs sent by the refresh timer (no GRANT for long)

    def add_queue(self, src, dgsq, tc, tenant, pkt, npkts):
        sm = self.sources.setdefault(src, SourceModel(node_id=src, refresh=self.refresh))
        if dgsq in sm.queues:  # a key back after its queue drained
            assert sm.queues[dgsq].backlog == 0
            sm.queues[dgsq].key = (0, 0, tc, tenant)
        for _ in range(npkts):
            sm.enqueue(dgsq, (0, 0, tc, tenant), pkt, self.now)
        self.bytes_in.setdefault((src, dgsq), []).append(pkt * npkts)

    def backlog(self, keys=None):
        return sum(
            q.backlog
            for src, sm in self.sources.items()
            for qid, q in sm.queues.items()
            if keys is None or (src, qid) in keys
        )

    def idle(self):
        """No data left at the sources and every arrival report taken."""
        return self.backlog() == 0 and self.reports_taken == self.reports

    def _grant(self, item):
        g = item.fields
        key = (g["src_node"], g["dgsq"])
        self.grants[key] = self.grants.get(key, 0) + 1
        sm = self.sources[g["src_node"]]
        q = sm.queues[g["dgsq"]]
        if q.backlog == 0 and q.balance >= 0:
            self.empty_grants += 1
        rel = sm.grant(g["dgsq"], g["seq"], g["credit"], self.now)
        if rel <= 0:
            return
        pkts = sm.release(g["dgsq"], rel)
        sm.release_done(g["dgsq"], sm.used(pkts))  # the VOQ reports the credit used
        due = self.now + self.latency
        base = {"src_node": g["src_node"], "dgsq": g["dgsq"]}
        if self.rng.random() < 0.5:  # one report per packet ...
            for k, b in enumerate(pkts):
                self.due.append((due, dict(base, credits=units(b), last=int(k == len(pkts) - 1))))
                self.reports += 1
        else:  # ... or one per container
            self.due.append((due, dict(base, credits=sum(units(b) for b in pkts), last=1)))
            self.reports += 1

    def _arrived(self, item):
        self.occ += item.fields["credits"]
        self.reports_taken += 1
        assert self.occ <= self.BUF, f"egress overflow: {self.occ} > {self.BUF}"

    async def run_phase(self):
        dut = ConfigDB().get(self, "", CONFIG_KEY).dut
        while True:
            await RisingEdge(dut.clk)
            # After every monitor has reported this edge (arrivals taken count already).
            await ReadWrite()
            self.now += 1
            self.acc += self.drain
            take, self.acc = int(self.acc), self.acc - int(self.acc)
            self.occ = max(0, self.occ - take)
            dut.egress_room.value = self.BUF - self.occ
            while self.due and self.due[0][0] <= self.now:
                self.arr_seq.put(self.due.popleft()[1])
            for src, sm in self.sources.items():
                if self.now % 64 == 0:
                    self.refreshes += len(sm.refresh_due(self.now))
                for qid in sorted(sm.pending):
                    r = sm.make_request(qid, self.now)
                    self.req_seq.put(
                        {
                            "src_node": src,
                            "dgsq": qid,
                            "tc": r["tc"],
                            "tenant": r["tenant"],
                            "backlog": r["len"],
                            "seq": r["seq"],
                            "voids": r["voids"],
                        }
                    )


@pyuvm.test()
class GrantArbiterUvmTest(uvm_test):
    """Waves of finite queues through the arbiter, closed loop, checked by
    :class:`ArbiterChecker`."""

    SEED = int(os.environ.get("ARB_UVM_SEED", 5))
    WAVES = int(os.environ.get("ARB_UVM_WAVES", 7))
    WAVE_KEYS = 32

    def build_phase(self):
        self.p = test_params()
        self.rng = random.Random(self.SEED)
        self.checker = ArbiterChecker(self.p, corrupt=os.environ.get("ARB_UVM_BREAK"))
        cfg = StreamEnvConfig(
            dut=cocotb.top,
            model=self.checker,
            seed=self.SEED,
            inputs=[StreamPort("s_req", pause=0.3), StreamPort("s_arr", pause=0.2), StreamPort("s_cfg")],
            outputs=[StreamPort("m_grant", pause=0.3, sample=("egress_room", "outstanding"))],
        )
        ConfigDB().set(None, "*", CONFIG_KEY, cfg)
        ConfigDB().set(None, "*", "loop_seed", self.SEED + 1000)
        self.env = StreamEnv("env", self)
        self.loop = ClosedLoop("loop", self)

    def connect_phase(self):
        self.env.agent("m_grant").monitor.ap.connect(self.loop.grant_export)
        self.env.agent("s_arr").monitor.ap.connect(self.loop.arr_export)

    def wave(self, w, reuse):
        """Queues of wave ``w``: (keys, drain, latency). Wave 0 has low classes with
        long backlogs, wave 1 high classes (strict priority shows), later waves any
        class; a third of the keys of wave w-2 come back."""
        r = self.rng
        keys = []
        for i in range(self.WAVE_KEYS):
            key = reuse.pop() if reuse and r.random() < 0.33 else (1 + r.randrange(12), 100 * w + i)
            if w == 0:
                tc, cont = r.randrange(0, 3), r.randint(3, 8)
            elif w == 1:
                tc, cont = r.randrange(5, 8), r.randint(2, 6)
            else:
                tc, cont = r.randrange(8), r.randint(1, 10)
            pkt = r.choice(PKT_BYTES)
            npkts = r.randint(max(1, (cont - 1) * CONTAINER // pkt), cont * CONTAINER // pkt)
            self.loop.add_queue(*key, tc=tc, tenant=r.randrange(1 << 12), pkt=pkt, npkts=npkts)
            keys.append(key)
        drain = 4 if w < 2 else r.choice([2, 4, 8, 16, 64])
        return keys, drain, r.randrange(4, 64)

    async def cycles(self, n):
        for _ in range(n):
            await RisingEdge(cocotb.top.clk)

    async def run_phase(self):
        self.raise_objection()
        dut, loop = cocotb.top, self.loop
        for s in ("s_req", "s_arr", "s_cfg"):
            getattr(dut, f"{s}_valid").value = 0
        dut.egress_room.value = self.p["buffer_credits"]
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        await self.env.reset()
        for seq, port in ((loop.req_seq, "s_req"), (loop.arr_seq, "s_arr")):
            cocotb.start_soon(seq.start(self.env.seqr(port)))
        cfg_seq = StreamQueueSequence("cfg_seq")
        for t, wgt in ((1, 2), (2, 3), (3, 4)):
            cfg_seq.put({"tenant": t, "weight": wgt})
        cfg_seq.close()
        await cfg_seq.start(self.env.seqr("s_cfg"))

        waves = []
        for w in range(self.WAVES):
            # At most two waves live (<= 64 keys): wave w-2 fully done and its slots
            # freed; wave w-1 half served (overlap).
            while True:
                old_done = w < 2 or (loop.backlog(waves[w - 2]) == 0 and loop.reports_taken == loop.reports)
                prev = w < 1 or loop.backlog(waves[w - 1]) <= self.prev_half
                if old_done and prev:
                    break
                await self.cycles(16)
            if w >= 2:
                await self.cycles(ArbiterChecker.LAG + 16)
            reuse = list(waves[w - 2]) if w >= 2 else []
            self.rng.shuffle(reuse)
            keys, drain, latency = self.wave(w, reuse)
            waves.append(keys)
            self.prev_half = loop.backlog(keys) * (3 if w == 0 else 2) // 4
            loop.drain, loop.latency = drain, latency
            dut._log.info(
                "wave %d at cycle %d: %d queues, %d bytes, drain %d, latency %d",
                w,
                loop.now,
                len(keys),
                loop.backlog(keys),
                drain,
                latency,
            )
        loop.drain = 16
        await self.env.drain(done=loop.idle)
        await self.cycles(ArbiterChecker.LAG + 32)
        chk = self.checker
        self.stats = stats = {
            n: int(getattr(dut, f"stat_{n}").value)
            for n in ("grants", "requests", "req_no_slot", "arr_unknown", "lease_expired", "room_stall")
        }
        dut._log.info(
            "cycles %d, GRANTs %d, REQUESTs %d (%d by refresh), arrival reports %d; "
            "stats %s; strict-priority pairs considered %d, surely eligible %d",
            loop.now,
            sum(loop.grants.values()),
            chk.n_req_taken,
            loop.refreshes,
            loop.reports_taken,
            stats,
            chk.prio_considered,
            chk.prio_armed,
        )
        self.drop_objection()

    def check_phase(self):
        # After the scoreboard's check (children first): end state, source-side ledger,
        # counters.
        dut, loop, chk, stats = cocotb.top, self.loop, self.checker, self.stats
        n_grants = sum(loop.grants.values())
        assert loop.backlog() == 0, f"{loop.backlog()} bytes never granted"
        assert loop.empty_grants == 0, f"{loop.empty_grants} GRANTs found an empty queue"
        for key, bursts in loop.bytes_in.items():
            want = sum(-(-b // CONTAINER) for b in bursts)
            assert loop.grants.get(key, 0) == want, (
                f"{key}: {loop.grants.get(key, 0)} GRANTs for bursts {bursts} (want {want})"
            )
        assert int(dut.outstanding.value) == 0, "credit still outstanding"
        assert int(dut.slots_used.value) == 0, "slots still in use"
        assert stats["grants"] == n_grants
        assert stats["requests"] == chk.n_req_taken
        assert stats["req_no_slot"] == stats["arr_unknown"] == stats["lease_expired"] == 0, stats
        assert stats["room_stall"] > 0, "the egress room never limited a grant"
        assert n_grants > 500, f"only {n_grants} GRANTs"
        assert chk.prio_considered > 100, "strict priority barely exercised"
        assert not loop.due and not loop.req_seq.pending() and not loop.arr_seq.pending()
