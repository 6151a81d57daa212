"""cocotb tests of the RTL-to-RTL DGSQ loop (gse_dgsq_loop_tb, rtl/dgsq_loop_testbench_top.py).

The DGSQ manager (source leaf) and the grant arbiter (one destination egress port)
talk through REQUEST/GRANT control frames inside the top; this bench plays the rest:

* the VOQ buffer: packets offered on ``s_pkt`` (random idle cycles), enqueued as the
  manager hands them over on ``m_pkt`` (random back-pressure); a release request on
  ``m_rel`` (random back-pressure) sends whole packets until the credit is used (each
  packet uses its length rounded up to whole 64-byte credit units, as at the egress;
  the last may overrun) and is reported (the credit used) on ``s_rel_done`` a few
  clocks later (the VOQ buffer with ``credit_unit`` = 64);
* the fabric and the egress: each released packet arrives after a random latency,
  enters the egress buffer model (drained at up to one credit unit per clock) and is
  reported on ``s_arr`` (one report per packet, ``last`` on a release's last packet);
  ``egress_room`` = buffer − occupancy.

Checks, from the bench's own ledger (independent of the RTL): every offered packet
arrives at the egress exactly once and in per-key order; the manager keeps a key's
packets in one queue while it is live; no release without data; per queue (context
incarnation) released credit ≤ credit granted + one maximum packet (overrun); every
clock ``outstanding`` ≤ ``buffer_credits`` and the egress occupancy within the
buffer plus one maximum-packet overrun per container in flight of the queues that
have data in the buffer, the fabric or the VOQ; REQUEST/GRANT fields as the frames
must carry them; in the lossless test consecutive GRANT seqs per queue and the
manager's ``stat_grant_gap`` 0; frame counts equal on both sides of every link; at
the end both sides empty (contexts freed, arbiter slots free, outstanding 0).

Spec-level checks (issue 18; from the configuration and the wires only): no container
without a GRANT, every GRANT ends in a container or a counted lease write-off (GRANTs <=
max_inflight x containers + write-offs), every GRANT received when lossless; the loss
test forces its first REQUEST and first GRANT lost. DGSQ_LOOP_TIGHT=1 adds issue 18's
tighter bounds (occupancy <= buffer + one max packet; granted <= asked + one container
per queue), which do not hold today (docs/dgsq-loop.md).
"""

import os
import random
from collections import deque

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from opengse.sim.dgsq_model import units
from opengse.sim.runner import test_params

SIZES = (64, 300, 1500, 9000)
MAX_PKT = max(SIZES)
GRANT_TYPE = 2
REQUEST_TYPE = 1
HDR_FIELDS = ("type", "flags", "tc", "tenant", "src_node", "dst_node", "port", "ttl", "seq", "len", "dgsq")
DEBUG = bool(int(os.environ.get("DGSQ_LOOP_DEBUG", "0")))
# The pytest case's seed (DGSQ_LOOP_CASE_SEED), else DGSQ_LOOP_SEED, else each test's own.
SEED = int(os.environ.get("DGSQ_LOOP_CASE_SEED") or os.environ.get("DGSQ_LOOP_SEED") or 0)
LOSS_1E2 = 655  # link drop probability x 65536 (1.0e-2)
# Issue 18's spec bounds "egress occupancy <= buffer + one maximum packet" and "per
# queue, credit granted <= credit asked + one container", checked every clock only with
# DGSQ_LOOP_TIGHT=1 (a strict xfail under -m slow): neither holds. Lossless test, seed
# 41: 326 units above the buffer (> 141: overruns at once; 179 before the void GRANTs);
# 12416 B granted beyond what was asked (first at clock 190: two GRANTs, 8192 B, for
# 1920 B asked). Traced
# (docs/dgsq-loop.md): every GRANT is a whole container and a short container returns
# its unused credit at `last`, which this ledger does not subtract; the occupancy
# excess is two containers overrunning at once.
TIGHT = bool(int(os.environ.get("DGSQ_LOOP_TIGHT", "0")))


class LoopBench:
    def __init__(self, dut, seed, *, check_seq=True):
        self.dut = dut
        self.p = test_params()
        self.rng = random.Random(seed)
        self.check_seq = check_seq
        self.BUF = self.p["buffer_credits"]
        self.SRC, self.DST, self.PORT = self.p["src_node"], self.p["dst_node"], self.p["port"]
        self.now = 0
        self.pkts = deque()  # offered, not yet accepted: (key, serial, bytes)
        self.accepted = deque()  # accepted by s_pkt, waiting for m_pkt
        self.serial = {}  # key -> next serial to offer
        self.expect = {}  # key -> next serial expected at the egress
        self.voq = {}  # qid -> deque of (key, serial, bytes)
        self.qkey = {}  # qid -> key of its current incarnation
        self.granted = {}  # qid -> credit bytes granted (this incarnation)
        self.released = {}  # qid -> credit bytes released (this incarnation)
        self.last_seq = {}  # qid -> seq of its last GRANT (this incarnation)
        self.rel_out = set()  # qids with a release not yet reported
        self.rel_done = deque()  # (due, queue, bytes)
        self.in_fabric = []  # (due, qid, key, serial, bytes, last)
        self.arr_q = deque()  # arrival reports to drive: (qid, credits, last)
        self.fabric_tail = {}  # qid -> last arrival time scheduled
        self.occ = 0  # egress buffer occupancy, credit units
        self.inflight_containers = 0
        self.offered = self.arrived = 0
        self.alloc_seen = 0
        self.n_req = self.n_grant = 0
        self.max_occ = 0
        self.events = deque(maxlen=4000)
        self.dbg = {}
        self.max_report_wait = 0  # clocks an arrival report waited for s_arr
        self.recent = set()  # queues whose data arrived since the buffer was last empty
        self.max_outstanding = 0
        # spec-level ledgers (independent of the RTL: from the configuration and the wires)
        self.asked = {}  # qid -> the key's s_pkt credit bytes before this incarnation
        self.offered_key = {}  # key -> credit bytes accepted on s_pkt (the source's demand)
        self.handed_key = {}  # key -> credit bytes handed over on m_pkt
        self.max_excess = 0  # max egress occupancy above the buffer, credit units
        self.max_over_grant = 0  # max (granted - asked) of any queue incarnation, bytes
        self.n_rel = 0  # containers (release requests) the source sent
        self.spec_fail = {}  # check -> first failure (clock, text), checked every clock

    async def start(self):
        d = self.dut
        cocotb.start_soon(Clock(d.clk, 10, unit="ns").start())
        for s in ("s_pkt", "s_rel_done", "s_arr", "s_cfg"):
            getattr(d, f"{s}_valid").value = 0
        d.m_pkt_ready.value = 1
        d.m_rel_ready.value = 1
        d.egress_room.value = self.BUF
        d.req_loss.value = 0
        d.grant_loss.value = 0
        d.rst.value = 1
        for _ in range(4):
            await RisingEdge(d.clk)
        d.rst.value = 0

    def stat(self, name):
        return int(getattr(self.dut, name).value)

    async def force_losses(self, loss):
        """Drop (nearly) every frame on each link until it has dropped one, then set its
        loss to ``loss``: every loss test loses at least one REQUEST and one GRANT, so its
        loss checks are never vacuous."""
        d = self.dut
        links = {
            "req": (d.req_loss, "link_stat_req_dropped"),
            "grant": (d.grant_loss, "link_stat_grant_dropped"),
        }
        for port, _ in links.values():
            port.value = 0xFFFF
        while links:
            await RisingEdge(d.clk)
            for name in list(links):
                port, counter = links[name]
                if self.stat(counter):
                    port.value = loss
                    del links[name]

    def keys(self, n):
        """``n`` distinct queue keys to this egress port: different tc/tenant."""
        out = set()
        while len(out) < n:
            out.add((self.DST, self.PORT, self.rng.randrange(8), self.rng.randrange(4096)))
        return sorted(out)

    def offer(self, keys, n_pkts):
        for _ in range(n_pkts):
            k = self.rng.choice(keys)
            s = self.serial.get(k, 0)
            self.serial[k] = s + 1
            self.expect.setdefault(k, 0)
            b = self.rng.choice(SIZES)
            self.pkts.append((k, s, b))
            self.offered += b

    def done(self):
        return (
            self.arrived == self.offered
            and not self.pkts
            and not self.accepted
            and not self.arr_q
            and not self.rel_done
        )

    async def run(self, cycles, *, idle=0.0, pause=0.0, until_done=False):
        d = self.dut
        rng = self.rng
        pkt_cur = rd_cur = arr_cur = None
        end = self.now + cycles
        while self.now < end:
            # ---- drive inputs -------------------------------------------------------
            if pkt_cur is None and self.pkts and rng.random() >= idle:
                pkt_cur = self.pkts.popleft()
                k, _s, b = pkt_cur
                d.s_pkt_dst_node.value, d.s_pkt_port.value = k[0], k[1]
                d.s_pkt_tc.value, d.s_pkt_tenant.value = k[2], k[3]
                d.s_pkt_bytes.value = b
            d.s_pkt_valid.value = int(pkt_cur is not None)
            if rd_cur is None and self.rel_done and self.rel_done[0][0] <= self.now:
                rd_cur = self.rel_done.popleft()
                d.s_rel_done_queue.value, d.s_rel_done_bytes.value = rd_cur[1], rd_cur[2]
                d.s_rel_done_pkts.value = rd_cur[3]
            d.s_rel_done_valid.value = int(rd_cur is not None)
            if arr_cur is None and self.arr_q and rng.random() >= idle:
                arr_cur = self.arr_q.popleft()
                d.s_arr_src_node.value = self.SRC
                d.s_arr_dgsq.value, d.s_arr_credits.value, d.s_arr_last.value = arr_cur[:3]
            d.s_arr_valid.value = int(arr_cur is not None)
            r_pkt = int(rng.random() >= pause)
            r_rel = int(rng.random() >= pause)
            d.m_pkt_ready.value = r_pkt
            d.m_rel_ready.value = r_rel
            d.egress_room.value = max(0, self.BUF - self.occ)

            await ReadOnly()
            f_pkt = pkt_cur is not None and int(d.s_pkt_ready.value)
            f_rd = rd_cur is not None and int(d.s_rel_done_ready.value)
            f_arr = arr_cur is not None and int(d.s_arr_ready.value)
            o_pkt = (
                (int(d.m_pkt_queue.value), int(d.m_pkt_bytes.value), int(d.m_pkt_tenant.value))
                if r_pkt and int(d.m_pkt_valid.value)
                else None
            )
            o_rel = (
                (int(d.m_rel_queue.value), int(d.m_rel_credit.value), int(d.m_rel_dst_node.value))
                if r_rel and int(d.m_rel_valid.value)
                else None
            )
            mon_req = None
            if int(d.mon_req_valid.value):
                mon_req = {f: int(getattr(d, f"mon_req_{f}").value) for f in HDR_FIELDS}
            mon_grant = None
            if int(d.mon_grant_valid.value):
                mon_grant = {f: int(getattr(d, f"mon_grant_{f}").value) for f in HDR_FIELDS}
            outst = int(d.outstanding.value)
            alloc_now = int(d.mgr_stat_alloc.value) if o_pkt else 0
            await RisingEdge(d.clk)
            self.now += 1

            # ---- the edge just passed -------------------------------------------------
            assert outst <= self.BUF, f"outstanding {outst} > buffer {self.BUF}"
            self.max_outstanding = max(self.max_outstanding, outst)
            if self.occ > self.BUF:
                # Granted credit fits the room; only overruns exceed it: at most one
                # maximum packet per container in flight of a busy queue.
                busy = (
                    {q for q, v in self.voq.items() if v}
                    | self.rel_out
                    | {it[1] for it in self.in_fabric}
                    | self.recent
                )
                slack = self.p["max_inflight"] * units(MAX_PKT) * len(busy)
                assert self.occ <= self.BUF + slack, (
                    f"egress occupancy {self.occ} > buffer {self.BUF} + overruns {slack}"
                )
            self.max_occ = max(self.max_occ, self.occ)
            if self.occ - self.BUF > self.max_excess:
                self.max_excess = self.occ - self.BUF
                if TIGHT and self.occ > self.BUF + units(MAX_PKT):
                    self.spec_fail.setdefault(
                        "occupancy",
                        (
                            self.now,
                            f"egress occupancy {self.occ} > buffer {self.BUF} "
                            f"+ one max packet {units(MAX_PKT)}",
                        ),
                    )
            if f_pkt:
                self.accepted.append(pkt_cur)
                k = pkt_cur[0]
                self.offered_key[k] = self.offered_key.get(k, 0) + units(pkt_cur[2]) * 64
                pkt_cur = None
            if f_rd:
                self.rel_out.discard(rd_cur[1])
                rd_cur = None
            if DEBUG:
                self.debug_cycle(f_arr and arr_cur, mon_grant, mon_req, o_rel)
            if f_arr:
                self.max_report_wait = max(self.max_report_wait, self.now - arr_cur[3])
                arr_cur = None
            if o_pkt:
                self.on_m_pkt(*o_pkt, fresh=alloc_now > self.alloc_seen)
                self.alloc_seen = max(self.alloc_seen, alloc_now)
            if mon_grant:
                self.on_grant(mon_grant)
            if o_rel:
                self.on_release(*o_rel)
            if mon_req:
                self.on_request(mon_req)
            # fabric → egress buffer → arrival reports; the egress drains
            if self.in_fabric:
                keep = []
                for item in self.in_fabric:
                    if item[0] <= self.now:
                        self.on_arrival(*item[1:])
                    else:
                        keep.append(item)
                self.in_fabric = keep
            if self.occ and rng.random() < 0.6:
                self.occ -= 1
                if not self.occ:
                    self.recent.clear()
            if until_done and self.now % 64 == 0 and self.done():
                break
        d.s_pkt_valid.value = 0
        d.s_rel_done_valid.value = 0
        d.s_arr_valid.value = 0
        if pkt_cur is not None:
            self.pkts.appendleft(pkt_cur)
        if rd_cur is not None:
            self.rel_done.appendleft(rd_cur)
        if arr_cur is not None:
            self.arr_q.appendleft(arr_cur)

    def debug_cycle(self, arr, g, r, rel):
        """DGSQ_LOOP_DEBUG=1: keep an event trace; at each arb_stat_arr_unknown step log
        the recent REQUESTs, GRANTs, releases and arrivals of one queue."""
        ev = self.events
        if arr:
            ev.append((self.now, "arr", arr[:3]))
        if g:
            ev.append((self.now, "grant", g["dgsq"], g["seq"]))
        if r:
            ev.append((self.now, "req", r["dgsq"], r["len"], r["seq"]))
        if rel:
            ev.append((self.now, "rel", rel))
        for n in (
            "arb_stat_arr_unknown",
            "arb_stat_lease_expired",
            "mgr_stat_grant_gap",
            "link_stat_grant_dropped",
            "link_stat_req_dropped",
        ):
            v = self.stat(n)
            if v != self.dbg.get(n, 0):
                ev.append((self.now, n, v))
                self.dbg[n] = v
                if n == "arb_stat_arr_unknown":
                    # DGSQ_LOOP_Q: a queue id, or "all"; default the queue of the last arrival
                    q = os.environ.get("DGSQ_LOOP_Q", "")
                    q = (
                        int(q)
                        if q.isdigit()
                        else q or next((e[2][0] for e in reversed(ev) if e[1] == "arr"), None)
                    )
                    self.dut._log.info(
                        "arr_unknown at %d; recent events:\n%s",
                        self.now,
                        "\n".join(
                            map(
                                str,
                                [
                                    e
                                    for e in ev
                                    if e[1].startswith(("link", "arb", "mgr"))
                                    or (e[1] == "arr" and e[2][0] == q)
                                    or (e[1] == "rel" and e[2][0] == q)
                                    or (e[1] in ("req", "grant") and e[2] == q)
                                    or q == "all"
                                ][-400:],
                            )
                        ),
                    )

    # ---- VOQ buffer ------------------------------------------------------------------
    def on_m_pkt(self, qid, nbytes, tenant, *, fresh):
        key, serial, b = self.accepted.popleft()
        assert nbytes == b, f"m_pkt bytes {nbytes}, offered {b}"
        assert tenant == key[3] % self.p["n_tenants"], f"m_pkt tenant {tenant} for key {key}"
        old = self.qkey.get(qid)
        busy = bool(self.voq.get(qid)) or qid in self.rel_out
        if old is not None and old != key:
            assert fresh and not busy, f"context {qid} of {old} given to {key} while live"
        if fresh:
            assert not busy, f"context {qid} reallocated with data or a release out"
            self.granted[qid] = self.released[qid] = 0
            # the incarnation's demand: what the source took for the key since the last
            # one ran dry (everything not yet handed over then)
            self.asked[qid] = self.handed_key.get(key, 0)
            self.last_seq.pop(qid, None)
        for q, k in self.qkey.items():
            if k == key and q != qid:
                assert not self.voq.get(q) and q not in self.rel_out, (
                    f"key {key} split over queues {q} and {qid}"
                )
        self.qkey[qid] = key
        self.voq.setdefault(qid, deque()).append((key, serial, b))
        self.handed_key[key] = self.handed_key.get(key, 0) + units(b) * 64

    def on_grant(self, g):
        self.n_grant += 1
        assert g["type"] == GRANT_TYPE and g["src_node"] == self.DST and g["port"] == self.PORT, g
        assert g["dst_node"] == self.SRC and g["ttl"] > 0, g
        assert g["len"] == self.p["grant_credits"], g
        q = g["dgsq"]
        if q not in self.qkey:
            return
        self.granted[q] = self.granted.get(q, 0) + g["len"] * 64
        asked = self.offered_key.get(self.qkey[q], 0) - self.asked.get(q, 0)
        over = self.granted[q] - asked
        if over > self.max_over_grant:
            self.max_over_grant = over
            if TIGHT and over > self.p["grant_credits"] * 64:
                self.spec_fail.setdefault(
                    "over_grant",
                    (self.now, f"queue {q}: granted {self.granted[q]} B > asked {asked} B + one container"),
                )
        if self.check_seq and q in self.last_seq:
            assert g["seq"] == (self.last_seq[q] + 1) & 0xFFFF, (
                f"queue {q}: GRANT seq {g['seq']} after {self.last_seq[q]}"
            )
        self.last_seq[q] = g["seq"]

    def on_release(self, qid, credit, dst_node):
        assert dst_node == self.qkey[qid][0], f"release of queue {qid} to node {dst_node}"
        v = self.voq.get(qid)
        assert v, f"release of {credit} B from empty queue {qid}"
        assert qid not in self.rel_out, f"second release out for queue {qid}"
        assert credit > 0
        sent = []
        tot = 0  # credit used: each packet's length rounded up to whole credit units
        while v and tot < credit:
            sent.append(v.popleft())
            tot += units(sent[-1][2]) * 64
        self.released[qid] = self.released.get(qid, 0) + tot
        assert self.released[qid] <= self.granted.get(qid, 0) + units(MAX_PKT) * 64, (
            f"queue {qid}: released {self.released[qid]} B on {self.granted.get(qid, 0)} B of credit"
        )
        self.rel_out.add(qid)
        self.n_rel += 1
        self.rel_done.append((self.now + self.rng.randrange(2, 7), qid, tot, len(sent)))
        # Random latency, but a queue's data is not reordered (the PKTC reorder buffer's job).
        lat = max(self.now + self.rng.randrange(16, 48), self.fabric_tail.get(qid, 0) + 1)
        self.fabric_tail[qid] = lat + len(sent) - 1
        self.inflight_containers += 1
        for k, (key, serial, b) in enumerate(sent):
            self.in_fabric.append((lat + k, qid, key, serial, b, k == len(sent) - 1))

    def on_request(self, r):
        self.n_req += 1
        assert r["type"] == REQUEST_TYPE and r["src_node"] == self.SRC, r
        assert (r["dst_node"], r["port"]) == (self.DST, self.PORT) and r["ttl"] > 0, r
        key = self.qkey.get(r["dgsq"])
        assert key is not None, f"REQUEST for unknown queue {r}"
        assert (r["tc"], r["tenant"]) == key[2:], f"REQUEST {r} for queue of key {key}"

    # ---- egress ----------------------------------------------------------------------
    def on_arrival(self, qid, key, serial, b, last):
        want = self.expect[key]
        assert serial == want, f"key {key}: packet {serial} arrived, expected {want}"
        self.expect[key] = want + 1
        self.arrived += b
        self.occ += units(b)
        self.recent.add(qid)
        self.arr_q.append((qid, units(b), int(last), self.now))
        if last:
            self.inflight_containers -= 1

    # ---- end of test -----------------------------------------------------------------
    def check_counters_consistent(self, *, lossless=True):
        s = self.stat
        assert s("req_enc_stat_frames") == s("mgr_stat_requests")
        assert s("req_dec_stat_ctl") == s("req_enc_stat_frames") - s("link_stat_req_dropped")
        assert s("arb_stat_requests") == s("req_dec_stat_ctl") == self.n_req
        assert s("grant_enc_stat_frames") == s("arb_stat_grants")
        assert s("grant_dec_stat_ctl") == s("grant_enc_stat_frames") - s("link_stat_grant_dropped")
        assert s("grant_dec_stat_ctl") == self.n_grant
        assert s("mgr_stat_grants") + s("mgr_stat_grant_unknown") == self.n_grant
        for n in (
            "req_dec_stat_drop_other",
            "req_dec_stat_drop_malformed",
            "req_dec_stat_drop_err",
            "grant_dec_stat_drop_other",
            "grant_dec_stat_drop_malformed",
            "grant_dec_stat_drop_err",
            "top_stat_not_request",
            "mgr_stat_pool_full",
            "arb_stat_req_no_slot",
        ) + (("arb_stat_arr_unknown",) if lossless else ()):
            assert s(n) == 0, f"{n} = {s(n)}"

    def check_spec(self, *, lossless):
        """The spec-level invariants checked every clock (first failure of each, with the
        worst figure), then the GRANT outcomes; returns the leases written off."""
        fails = [f"clock {c}: {t}" for c, t in self.spec_fail.values()]
        assert not fails, (
            "; ".join(fails) + f" (max occupancy above buffer {self.max_excess} units, "
            f"max granted - asked {self.max_over_grant} B)"
        )
        return self.check_grant_outcomes(lossless=lossless)

    def check_grant_outcomes(self, *, lossless):
        """Spec-level, at the end (both sides at rest): no container went out without a
        GRANT the source took, and every GRANT the arbiter sent ended in exactly one of:
        a container, a void the source counted (``mgr_stat_grant_void``: the queue ran
        dry, debt or an earlier overrun took its credit; a REQUEST reported it), or a
        lease the arbiter wrote off (``arb_stat_lease_expired``, at most
        ``max_inflight`` GRANTs each). Lossless: no lease is written off at all, and
        GRANTs sent == containers + voids exactly. Returns the write-offs."""
        grants = self.stat("arb_stat_grants")
        expired = self.stat("arb_stat_lease_expired")
        voids = self.stat("mgr_stat_grant_void")
        per = self.p["max_inflight"]
        assert self.n_rel <= self.n_grant, f"{self.n_rel} containers on {self.n_grant} GRANTs received"
        if lossless:
            assert self.n_grant == grants, f"lossless: {self.n_grant} GRANTs received of {grants} sent"
            assert expired == 0, f"lossless: {expired} leases written off ({grants} GRANTs)"
            assert grants == self.n_rel + voids, (
                f"lossless: {grants} GRANTs sent, {self.n_rel} containers + {voids} voids"
            )
        else:
            assert self.n_rel + voids <= self.n_grant, (
                f"{self.n_rel} containers + {voids} voids on {self.n_grant} GRANTs received"
            )
            assert grants <= self.n_rel + voids + per * expired, (
                f"{grants} GRANTs sent, {self.n_rel} containers + {voids} voids + {expired} "
                f"leases written off (x {per} GRANTs at most)"
            )
        return expired

    def log_stats(self, what):
        names = [n for n in dir(self.dut) if "_stat_" in n]
        self.dut._log.info(
            "%s after %d cycles: %s; max outstanding %d, max egress occupancy %d, max report wait %d; "
            "SPEC: containers %d, max occupancy above buffer %d units, max granted-asked %d B",
            what,
            self.now,
            ", ".join(f"{n}={self.stat(n)}" for n in sorted(names)),
            self.max_outstanding,
            self.max_occ,
            self.max_report_wait,
            self.n_rel,
            self.max_excess,
            self.max_over_grant,
        )

    async def drain_and_settle(self, bound):
        start = self.now
        await self.run(bound, idle=0.3, pause=0.3, until_done=True)
        assert self.done(), (
            f"not drained within {bound} cycles: {self.offered - self.arrived} B "
            f"of {self.offered} missing; queues "
            f"{ {q: len(v) for q, v in self.voq.items() if v} }"
        )
        took = self.now - start
        # Past the idle time (contexts free) and two leases (arbiter write-offs).
        p = self.p
        await self.run(max(3 * p["idle_cycles"], 2 * p["lease_cycles"]) + 4096)
        assert int(self.dut.ctx_used.value) == 0, "manager contexts not freed after the idle time"
        assert self.stat("mgr_stat_freed") == self.stat("mgr_stat_alloc")
        assert int(self.dut.slots_used.value) == 0, "arbiter slots still used"
        assert int(self.dut.outstanding.value) == 0, "arbiter credit leaked (outstanding != 0)"
        assert all(not v for v in self.voq.values())
        return took


@cocotb.test()
async def test_loop_lossless(dut):
    """Two phases of random traffic (10 keys, then 12 keys partly new, after the first
    phase's contexts freed: context and slot reuse), idle cycles and back-pressure;
    no control frame lost."""
    tb = LoopBench(dut, seed=SEED or 41)
    await tb.start()
    keys1 = tb.keys(10)
    tb.offer(keys1, 250)
    took1 = await tb.drain_and_settle(120000)
    keys2 = keys1[:4] + tb.keys(8)
    tb.offer(keys2, 250)
    took2 = await tb.drain_and_settle(120000)
    tb.log_stats("lossless")
    dut._log.info(
        "phases drained in %d and %d cycles; %d REQUESTs, %d GRANTs", took1, took2, tb.n_req, tb.n_grant
    )
    tb.check_counters_consistent()
    written_off = tb.check_spec(lossless=True)
    dut._log.info("lease write-offs %d per %d GRANTs (lossless)", written_off, tb.stat("arb_stat_grants"))
    assert tb.stat("link_stat_req_dropped") == tb.stat("link_stat_grant_dropped") == 0
    assert tb.stat("mgr_stat_grant_gap") == 0
    assert tb.stat("mgr_stat_grant_unknown") == 0
    assert tb.stat("mgr_stat_alloc") > len(keys1), "contexts never reused"
    assert tb.max_outstanding > 0


@cocotb.test()
async def test_loop_control_loss(dut):
    """1e-2 of REQUEST and GRANT frames dropped on the links (LFSR in the top): no
    queue stalls (everything drains within the bound), the loss shows in the counters."""
    tb = LoopBench(dut, seed=SEED or 42, check_seq=False)
    await tb.start()
    cocotb.start_soon(tb.force_losses(LOSS_1E2))
    keys = tb.keys(12)
    tb.offer(keys, 500)
    took = await tb.drain_and_settle(300000)
    tb.log_stats("loss 1e-2")
    dut._log.info("drained in %d cycles; %d REQUESTs, %d GRANTs taken", took, tb.n_req, tb.n_grant)
    # Allowed here: a lost GRANT or REQUEST can leave the two sides' container accounting
    # apart until the lease (seed 42: 4 before the one-container-per-GRANT fix, 3 after
    # it, 0 now that the source also counts credit in whole units per packet).
    unknown = tb.stat("arb_stat_arr_unknown")
    assert unknown <= 16, f"{unknown} arrival reports for slots the arbiter had freed"
    tb.check_counters_consistent(lossless=False)
    tb.check_spec(lossless=False)
    lost_req, lost_grant = tb.stat("link_stat_req_dropped"), tb.stat("link_stat_grant_dropped")
    # ~700 frames at 1e-2 and the first frame of each link forced lost (force_losses):
    # at least one of each, so the checks below always run.
    assert lost_req >= 1 and lost_grant >= 1, f"{lost_req} REQUESTs and {lost_grant} GRANTs lost"
    # A lost GRANT shows as a seq gap at the manager or a lease write-off at the arbiter.
    assert tb.stat("mgr_stat_grant_gap") + tb.stat("arb_stat_lease_expired") > 0
    assert tb.stat("mgr_stat_refresh") > 0
