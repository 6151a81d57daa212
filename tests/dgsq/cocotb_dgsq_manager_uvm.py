"""pyuvm test of the DGSQManager (gse_dgsq_manager) on :mod:`opengse.sim.uvm.stream_env`:
three input ports (``s_pkt``, ``s_grant``, ``s_rel_done``) and three output ports
(``m_pkt``, ``m_req``, ``m_rel``), all with random idle cycles / back-pressure.

Closed loop (as in tests/cocotb_dgsq_manager.py, built from the env's monitors and
queue sequences): packets of more keys than there are contexts go in on ``s_pkt``; a
VOQ model keeps what ``m_pkt`` enqueues and answers every ``m_rel`` with whole
packets, reported on ``s_rel_done`` as the credit used (lengths rounded up to 64-byte
credit units); the reference scheduler
(:class:`~opengse.sim.dgsq_model.ArbiterModel`, one per egress port) takes the
REQUESTs seen on ``m_req``, picks, and returns GRANTs on ``s_grant``; data arrivals
come back to it after a latency. A few GRANTs that match no context are mixed in.

The scoreboard (:class:`ManagerChecker`) predicts from the transfers alone, with a
shadow :class:`~opengse.sim.dgsq_model.SourceModel`: every ``m_pkt`` is the next
packet taken, its context holds one key at a time (a context changes key only when
``stat_alloc`` counts a new allocation, and only once its queue is empty); every
REQUEST names its context's key, ``ttl``, this node, the exact backlog in credit units
and the acknowledged GRANT seq; every release asks exactly the credit the shadow has;
GRANTs that match no context are counted in ``stat_grant_unknown``, seq gaps in
``stat_grant_gap`` exactly as the shadow sees them.
``MGR_UVM_BREAK=len`` corrupts one REQUEST in the scoreboard's view (can-fail check).
"""

import os
import random
from collections import deque

import cocotb
import pyuvm
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge
from pyuvm import ConfigDB, uvm_component, uvm_subscriber, uvm_test

from opengse.sim.dgsq_model import ArbiterModel, SourceModel, credit_bytes, units
from opengse.sim.runner import test_params
from opengse.sim.uvm.stream_env import (
    CONFIG_KEY,
    StreamEnv,
    StreamEnvConfig,
    StreamModel,
    StreamPort,
    StreamQueueSequence,
    StreamSequence,
)

NODE = 5
REQUEST_TYPE, GRANT_TYPE = 1, 2
SIZES = (64, 300, 1500, 9000)


class ManagerChecker(StreamModel):
    """Scoreboard model of the manager (see the module docstring)."""

    def __init__(self, p, corrupt=None):
        self.p = p
        self.shadow = SourceModel(node_id=NODE)
        self.taken = deque()  # s_pkt transfers not yet out on m_pkt
        self.qkey = {}  # context -> key it holds
        self.expect_rel = {}  # context -> bytes the next m_rel must ask
        self.alloc_seen = 0
        self.unknown = 0  # GRANTs that match no context
        self.gaps = 0  # GRANTs whose seq is not the last one + 1
        self.requests = 0
        self.corrupt = corrupt

    def on_input(self, item):
        f = item.fields
        if item.port == "s_pkt":
            self.taken.append(f)
        elif item.port == "s_grant":
            q = self.shadow.queues.get(f["dgsq"])
            key = self.qkey.get(f["dgsq"])
            if f["type"] != GRANT_TYPE or q is None or key[:2] != (f["src_node"], f["port"]):
                self.unknown += 1
                return ()
            gaps = q.gaps
            rel = self.shadow.grant(f["dgsq"], f["seq"], f["len"])
            self.gaps += q.gaps - gaps
            if rel:
                self.expect_rel[f["dgsq"]] = rel
        elif item.port == "s_rel_done":
            rel = self.shadow.release_done(f["queue"], f["bytes"])
            if rel:
                self.expect_rel[f["queue"]] = rel
        return ()

    def on_output(self, item):
        f, errs = item.fields, []
        if item.port == "m_pkt":
            if not self.taken:
                return ["m_pkt without a packet taken on s_pkt"]
            src = self.taken.popleft()
            key = (src["dst_node"], src["port"], src["tc"], src["tenant"])
            if f["bytes"] != src["bytes"]:
                errs.append(f"bytes {f['bytes']} != {src['bytes']}")
            if f["tenant"] != src["tenant"] % self.p["n_tenants"]:
                errs.append(f"tenant index {f['tenant']} for tenant {src['tenant']}")
            qid, alloc = f["queue"], item.sampled["stat_alloc"]
            fresh, self.alloc_seen = alloc > self.alloc_seen, alloc
            old = self.qkey.get(qid)
            if old is not None and old != key and not fresh:
                errs.append(f"context {qid} of {old} given to {key} without an allocation")
            if fresh and qid in self.shadow.queues:
                q = self.shadow.queues.pop(qid)
                if q.backlog or q.rel_pending:
                    errs.append(f"context {qid} reallocated with {q.backlog} bytes of {old} queued")
            self.qkey[qid] = key
            self.shadow.enqueue(qid, key, f["bytes"])
            self.shadow.pending.discard(qid)  # the RTL decides when to ask
        elif item.port == "m_req":
            self.requests += 1
            if self.corrupt == "len" and self.requests == 20:
                f = dict(f, len=f["len"] + 1)
            q = self.shadow.queues.get(f["dgsq"])
            if q is None:
                return [f"REQUEST for context {f['dgsq']}, which holds no queue"]
            key = self.qkey[f["dgsq"]]
            got = (f["type"], f["src_node"], f["dst_node"], f["port"], f["tc"], f["tenant"], f["ttl"])
            want = (REQUEST_TYPE, NODE) + key + (self.p["ttl"],)
            if got != want:
                errs.append(f"header (type, src, dst, port, tc, tenant, ttl) {got} != {want}")
            want = self.shadow.demand(f["dgsq"])
            if f["len"] != want:
                errs.append(f"backlog {f['len']} != {want} credit units (backlog less credit granted)")
            if f["seq"] != q.ack:
                errs.append(f"acknowledged seq {f['seq']} != {q.ack}")
            if f["next_type"] != q.voids % 256:
                errs.append(f"void-GRANT count {f['next_type']} != {q.voids % 256}")
        elif item.port == "m_rel":
            want = self.expect_rel.pop(f["queue"], None)
            if want != f["credit"]:
                errs.append(f"release of {f['credit']} bytes, expected {want}")
            key = self.qkey.get(f["queue"])
            if key is not None and f["dst_node"] != key[0]:
                errs.append(f"release dst_node {f['dst_node']} for queue key {key}")
            if f["queue"] in self.shadow.queues:
                self.shadow.release(f["queue"], f["credit"])
        return errs

    def on_end(self):
        errs = []
        if self.taken:
            errs.append(f"{len(self.taken)} packets taken never came out on m_pkt")
        if self.expect_rel:
            errs.append(f"releases never asked: {self.expect_rel}")
        left = {qid: q.backlog for qid, q in self.shadow.queues.items() if q.backlog}
        if left:
            errs.append(f"backlog left in the shadow: {left}")
        return errs


class ManagerLoop(uvm_component):
    """VOQ model and reference schedulers around the manager (the closed loop)."""

    def build_phase(self):
        self.p = test_params()
        self.rng = random.Random(ConfigDB().get(self, "", "loop_seed"))
        self.pkt_export = uvm_subscriber.uvm_AnalysisImp("pkt_export", self, self._pkt)
        self.req_export = uvm_subscriber.uvm_AnalysisImp("req_export", self, self._req)
        self.rel_export = uvm_subscriber.uvm_AnalysisImp("rel_export", self, self._rel)
        self.grant_seq = StreamQueueSequence("grant_seq")
        self.done_seq = StreamQueueSequence("rel_done_seq")
        self.voq = {}  # context -> deque of packet lengths
        self.arbs = {}  # (dst_node, port) -> ArbiterModel
        self.key = {}  # context -> key
        self.arrivals = deque()  # (due, (dst, port), arrival args)
        self.dones = deque()  # (due, fields)
        self.now = 0
        self.delivered = 0
        self.latency, self.rel_delay, self.lease = 20, 3, 3000

    def arb(self, dst, port):
        return self.arbs.setdefault(
            (dst, port), ArbiterModel(n_req=64, buffer_credits=16 * 64, grant_credits=64, max_inflight=2)
        )

    def _pkt(self, item):
        qid = item.fields["queue"]
        self.voq.setdefault(qid, deque()).append(item.fields["bytes"])

    def _req(self, item):
        f = item.fields
        self.key[f["dgsq"]] = (f["dst_node"], f["port"])
        self.arb(f["dst_node"], f["port"]).request(
            NODE, f["dgsq"], f["tc"], f["tenant"], f["len"], f["seq"], self.now, voids=f["next_type"]
        )

    def _rel(self, item):
        qid, credit = item.fields["queue"], item.fields["credit"]
        v, sent, tot = self.voq[qid], [], 0
        while v and tot < credit:  # whole packets; the last may overrun
            sent.append(v.popleft())
            tot += credit_bytes(sent[-1])  # credit used: lengths rounded up to units
        self.dones.append((self.now + self.rel_delay, {"queue": qid, "bytes": tot, "pkts": len(sent)}))
        for k, b in enumerate(sent):
            self.arrivals.append(
                (self.now + self.latency + k, self.key[qid], (NODE, qid, units(b), k == len(sent) - 1))
            )
        self.delivered += sum(sent)

    async def run_phase(self):
        clk = cocotb.top.clk
        while True:
            await RisingEdge(clk)
            self.now += 1
            while self.dones and self.dones[0][0] <= self.now:
                self.done_seq.put(self.dones.popleft()[1])
            while self.arrivals and self.arrivals[0][0] <= self.now:
                _t, a, args = self.arrivals.popleft()
                self.arb(*a).arrival(*args, now=self.now)
            for (dst, port), arb in self.arbs.items():
                for k in arb.expired(self.now, self.lease):
                    arb.expire(k)
                if self.now % 2 == 0:
                    key = arb.pick(room=arb.buffer, now=self.now)
                    if key is not None:
                        self.grant_seq.put(
                            {
                                "type": GRANT_TYPE,
                                "src_node": dst,
                                "port": port,
                                "seq": arb.slots[key].gseq if key in arb.slots else 0,
                                "len": arb.G,
                                "dgsq": key[1],
                            }
                        )


@pyuvm.test()
class DGSQManagerUvmTest(uvm_test):
    SEED = int(os.environ.get("MGR_UVM_SEED", 41))
    PACKETS = int(os.environ.get("MGR_UVM_PACKETS", 900))
    # Idle cycles between packets (0: each packet presented the clock after the last
    # was taken, the only pattern the manager handled at the time of writing).
    PKT_PAUSE = float(os.environ.get("MGR_UVM_PKT_PAUSE", 0.3))

    def build_phase(self):
        self.p = test_params()
        self.rng = random.Random(self.SEED)
        self.checker = ManagerChecker(self.p, corrupt=os.environ.get("MGR_UVM_BREAK"))
        cfg = StreamEnvConfig(
            dut=cocotb.top,
            model=self.checker,
            seed=self.SEED,
            inputs=[
                StreamPort("s_pkt", pause=self.PKT_PAUSE),
                StreamPort("s_grant", pause=0.2),
                StreamPort("s_rel_done", pause=0.2),
            ],
            outputs=[
                StreamPort("m_pkt", pause=0.2, sample=("stat_alloc",)),
                StreamPort("m_req", pause=0.3),
                StreamPort("m_rel", pause=0.3),
            ],
        )
        ConfigDB().set(None, "*", CONFIG_KEY, cfg)
        ConfigDB().set(None, "*", "loop_seed", self.SEED + 1)
        self.env = StreamEnv("env", self)
        self.loop = ManagerLoop("loop", self)

    def connect_phase(self):
        for port, imp in (
            ("m_pkt", self.loop.pkt_export),
            ("m_req", self.loop.req_export),
            ("m_rel", self.loop.rel_export),
        ):
            self.env.agent(port).monitor.ap.connect(imp)

    def packets(self):
        r, n_ctx = self.rng, self.p["n_ctx"]
        # More keys than contexts (the pool runs out now and then), bursts per key.
        keys = [
            (r.randrange(1, 8), r.randrange(4), r.randrange(8), r.randrange(4096))
            for _ in range(n_ctx + n_ctx // 2)
        ]
        out = []
        while len(out) < self.PACKETS:
            k = r.choice(keys[: n_ctx - 2] if len(out) < self.PACKETS // 2 else keys)
            out += [
                dict(zip(("dst_node", "port", "tc", "tenant"), k), bytes=r.choice(SIZES))
                for _ in range(r.randint(1, 12))
            ]
        return out

    async def run_phase(self):
        self.raise_objection()
        dut, loop = cocotb.top, self.loop
        dut.node_id.value = NODE
        for s in ("s_pkt", "s_grant", "s_rel_done"):
            getattr(dut, f"{s}_valid").value = 0
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        await self.env.reset()
        n_ctx = self.p["n_ctx"]
        # GRANTs that are not ours: a REQUEST type, a dgsq beyond the pool, a free context.
        for g in (
            {"type": REQUEST_TYPE, "dgsq": 0},
            {"type": GRANT_TYPE, "dgsq": n_ctx},
            {"type": GRANT_TYPE, "dgsq": 1},
        ):
            loop.grant_seq.put(dict(g, src_node=1, port=0, seq=1, len=64))
        cocotb.start_soon(loop.grant_seq.start(self.env.seqr("s_grant")))
        cocotb.start_soon(loop.done_seq.start(self.env.seqr("s_rel_done")))
        pkts = self.packets()
        offered = sum(p["bytes"] for p in pkts)
        await StreamSequence("pkts", pkts).start(self.env.seqr("s_pkt"))
        await self.env.drain(done=lambda: loop.delivered == offered and not loop.dones)
        # Every context frees after the idle time (tick-rounded) once its queue is empty.
        for _ in range(3 * self.p["idle_cycles"]):
            await RisingEdge(dut.clk)
        self.offered, self.n_pkts = offered, len(pkts)
        self.stats = stat = {
            n: int(getattr(dut, f"stat_{n}").value)
            for n in (
                "alloc",
                "freed",
                "pool_full",
                "requests",
                "refresh",
                "grants",
                "grant_unknown",
                "grant_gap",
                "releases",
            )
        }
        dut._log.info(
            "cycles %d, packets %d (%d bytes), REQUESTs %d, GRANTs %d, releases %d; stats %s",
            loop.now,
            self.n_pkts,
            self.offered,
            self.checker.requests,
            self.env.agent("s_grant").monitor.seen,
            self.env.agent("m_rel").monitor.seen,
            stat,
        )
        self.drop_objection()

    def check_phase(self):
        # After the scoreboard's check (children first): the end state and counters.
        dut, loop, n_ctx = cocotb.top, self.loop, self.p["n_ctx"]
        stat = self.stats
        assert loop.delivered == self.offered, f"delivered {loop.delivered} of {self.offered} bytes"
        assert int(dut.ctx_used.value) == 0, "contexts not freed after the idle time"
        assert stat["freed"] == stat["alloc"] > n_ctx, stat
        assert stat["pool_full"] > 0, "pool exhaustion not exercised"
        assert stat["requests"] == self.checker.requests
        assert stat["grant_unknown"] == self.checker.unknown == 3, (
            stat["grant_unknown"],
            self.checker.unknown,
        )
        # The reference scheduler may repeat a seq (it resynchronises when a REQUEST
        # acknowledges less than it granted and nothing is in flight: a grant that only
        # repaid overrun debt); the manager must count exactly the gaps the shadow sees.
        assert stat["grant_gap"] == self.checker.gaps, (stat["grant_gap"], self.checker.gaps)
        assert stat["releases"] == self.env.agent("m_rel").monitor.seen
