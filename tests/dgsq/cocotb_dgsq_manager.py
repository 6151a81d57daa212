"""cocotb tests of the DGSQManager (gse_dgsq_manager) in a closed loop.

The manager (RTL) faces a VOQ-buffer model (queues of packet lengths, whole-packet
container release answering ``m_rel`` with ``s_rel_done``: the credit used, each
packet's length rounded up to whole 64-byte credit units), the reference grant
scheduler (:class:`opengse.sim.dgsq_model.ArbiterModel`, one per egress port, fed
with the manager's REQUESTs, returning GRANTs and taking data arrivals after a
latency), and a loss injector on REQUESTs and GRANTs. A shadow
:class:`~opengse.sim.dgsq_model.SourceModel` predicts every release size and every
REQUEST's backlog and acknowledged seq.
"""

import os
import random
from collections import deque

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from opengse.sim.dgsq_model import ArbiterModel, SourceModel, credit_bytes, units
from opengse.sim.runner import test_params

NODE = 5
REQ_FIELDS = (
    *("type", "flags", "tc", "tenant", "src_node", "dst_node", "port", "ttl", "seq", "len", "dgsq"),
    "next_type",
)
GRANT_FIELDS = ("type", "src_node", "port", "seq", "len", "dgsq")
GRANT_TYPE = 2
REQUEST_TYPE = 1


class ManagerBench:
    def __init__(
        self, dut, seed, *, loss=0.0, lease=3000, rel_delay=3, latency=20, grant_every=2, max_inflight=2
    ):
        self.dut = dut
        self.p = test_params()
        self.rng = random.Random(seed)
        self.loss = loss
        self.lease = lease
        self.rel_delay = rel_delay
        self.latency = latency
        self.grant_every = grant_every
        self.max_inflight = max_inflight
        self.max_release = 0  # the largest release credit seen on m_rel
        self.now = 0
        self.shadow = SourceModel(node_id=NODE)
        self.voq = {}  # qid -> deque of packet lengths
        self.qkey = {}  # qid -> key while live
        self.pkts = deque()  # packets to offer: dict
        self.inflight_pkts = deque()  # offered and accepted, waiting for m_pkt
        self.arbs = {}  # (dst_node, port) -> ArbiterModel
        self.grants = deque()
        self.rel_done = deque()  # (due, fields)
        self.arrivals = deque()  # (due, arb, fields)
        self.expect_rel = {}  # qid -> bytes expected on m_rel
        self.delivered = 0
        self.offered = 0
        self.lost = {"req": 0, "grant": 0}
        self.requests = 0
        self.wasted = 0
        self.alloc_seen = 0
        self.pkt_fires = []  # cycles at which s_pkt was accepted
        self.hooks = deque()  # (cycle, fn(bench)) run once from the loop

    async def start(self):
        d = self.dut
        cocotb.start_soon(Clock(d.clk, 10, unit="ns").start())
        d.node_id.value = NODE
        for s in ("s_pkt", "s_grant", "s_rel_done"):
            getattr(d, f"{s}_valid").value = 0
        for s in ("m_pkt", "m_req", "m_rel"):
            getattr(d, f"{s}_ready").value = 1
        d.rst.value = 1
        for _ in range(4):
            await RisingEdge(d.clk)
        d.rst.value = 0

    def offer(self, dst_node, port, tc, tenant, nbytes):
        self.pkts.append({"dst_node": dst_node, "port": port, "tc": tc, "tenant": tenant, "bytes": nbytes})
        self.offered += nbytes

    def arb(self, dst_node, port):
        return self.arbs.setdefault(
            (dst_node, port),
            ArbiterModel(n_req=64, buffer_credits=16 * 64, grant_credits=64, max_inflight=self.max_inflight),
        )

    def stat(self, name):
        return int(getattr(self.dut, f"stat_{name}").value)

    async def run(self, cycles, *, pause=0.0, until_done=False):
        d = self.dut
        pkt_cur = grant_cur = rd_cur = None
        end = self.now + cycles
        while self.now < end:
            if pkt_cur is None and self.pkts:
                pkt_cur = self.pkts.popleft()
                for k, v in pkt_cur.items():
                    getattr(d, f"s_pkt_{k}").value = v
            d.s_pkt_valid.value = int(pkt_cur is not None)
            if grant_cur is None and self.grants:
                grant_cur = self.grants.popleft()
                for k in GRANT_FIELDS:
                    getattr(d, f"s_grant_{k}").value = grant_cur.get(k, 0)
            d.s_grant_valid.value = int(grant_cur is not None)
            if rd_cur is None and self.rel_done and self.rel_done[0][0] <= self.now:
                rd_cur = self.rel_done.popleft()[1]
                d.s_rel_done_queue.value = rd_cur["queue"]
                d.s_rel_done_bytes.value = rd_cur["bytes"]
                d.s_rel_done_pkts.value = rd_cur["pkts"]
            d.s_rel_done_valid.value = int(rd_cur is not None)
            readies = {s: int(self.rng.random() >= pause) for s in ("m_pkt", "m_req", "m_rel")}
            for s, r in readies.items():
                getattr(d, f"{s}_ready").value = r
            await ReadOnly()
            fire = {}
            fire["s_pkt"] = pkt_cur is not None and int(d.s_pkt_ready.value)
            fire["s_grant"] = grant_cur is not None and int(d.s_grant_ready.value)
            fire["s_rel_done"] = rd_cur is not None and int(d.s_rel_done_ready.value)
            outs = {}
            for s, fields in (
                ("m_pkt", ("queue", "tenant", "bytes")),
                ("m_rel", ("queue", "credit", "dst_node")),
                ("m_req", REQ_FIELDS),
            ):
                if readies[s] and int(getattr(d, f"{s}_valid").value):
                    outs[s] = {f: int(getattr(d, f"{s}_{f}").value) for f in fields}
            alloc_now = int(d.stat_alloc.value)
            await RisingEdge(d.clk)
            self.now += 1
            # Handshakes of the edge just passed, in the engine's order.
            if fire["s_pkt"]:
                self.pkt_fires.append(self.now)
                self.inflight_pkts.append(pkt_cur)
                pkt_cur = None
            if fire["s_grant"]:
                g = grant_cur
                grant_cur = None
                q = self.shadow.queues.get(g["dgsq"])
                if q is not None and self.qkey.get(g["dgsq"], (None, None))[:2] == (g["src_node"], g["port"]):
                    if q.backlog == 0 and q.balance >= 0:
                        self.wasted += 1  # nothing to send and no debt to repay
                    rel = self.shadow.grant(g["dgsq"], g["seq"], g["len"], self.now)
                    if rel:
                        self.expect_rel[g["dgsq"]] = rel
            if fire["s_rel_done"]:
                r = rd_cur
                rd_cur = None
                rel = self.shadow.release_done(r["queue"], r["bytes"])
                if rel:
                    self.expect_rel[r["queue"]] = rel
            if "m_pkt" in outs:
                o = outs["m_pkt"]
                src = self.inflight_pkts.popleft()
                key = (src["dst_node"], src["port"], src["tc"], src["tenant"])
                assert o["bytes"] == src["bytes"]
                assert o["tenant"] == src["tenant"] % self.p["n_tenants"], (
                    f"m_pkt tenant {o['tenant']} for tenant {src['tenant']}"
                )
                qid = o["queue"]
                old = self.qkey.get(qid)
                fresh = alloc_now > self.alloc_seen  # this packet allocated its context
                self.alloc_seen = alloc_now
                if old is not None and old != key:
                    assert fresh, f"context {qid} of {old} given to {key}"
                if fresh and qid in self.shadow.queues:
                    q = self.shadow.queues[qid]
                    assert q.backlog == 0 and not q.rel_pending, (
                        f"context {qid} reused while {old} still has backlog"
                    )
                    del self.shadow.queues[qid]
                self.qkey[qid] = key
                self.voq.setdefault(qid, deque()).append(o["bytes"])
                self.shadow.enqueue(qid, key, o["bytes"], self.now)
                self.shadow.pending.discard(qid)
            if "m_rel" in outs:
                o = outs["m_rel"]
                want = self.expect_rel.pop(o["queue"], None)
                self.max_release = max(self.max_release, o["credit"])
                assert want == o["credit"], f"release {o} expected {want}"
                assert o["dst_node"] == self.qkey[o["queue"]][0], (
                    f"release {o} of queue key {self.qkey[o['queue']]}"
                )
                sent = []
                tot = 0
                v = self.voq[o["queue"]]
                while v and tot < o["credit"]:  # credit used: lengths rounded up to units
                    b = v.popleft()
                    sent.append(b)
                    tot += credit_bytes(b)
                self.shadow.release(o["queue"], o["credit"])
                self.rel_done.append(
                    (self.now + self.rel_delay, {"queue": o["queue"], "bytes": tot, "pkts": len(sent)})
                )
                dst, port = self.qkey[o["queue"]][:2]
                for k, b in enumerate(sent):
                    self.arrivals.append(
                        (
                            self.now + self.latency + k,
                            (dst, port),
                            (NODE, o["queue"], units(b), k == len(sent) - 1),
                        )
                    )
                self.delivered += sum(sent)
            if "m_req" in outs:
                o = outs["m_req"]
                self.requests += 1
                q = self.shadow.queues[o["dgsq"]]
                key = self.qkey[o["dgsq"]]
                assert o["type"] == REQUEST_TYPE and o["src_node"] == NODE
                assert (o["dst_node"], o["port"], o["tc"], o["tenant"]) == key, (o, key)
                want = self.shadow.demand(o["dgsq"])
                assert o["len"] == want, f"REQUEST backlog {o['len']} vs {want} (backlog less credit granted)"
                assert o["seq"] == q.ack, f"REQUEST ack {o['seq']} vs {q.ack}"
                want_v = q.voids % 256
                assert o["next_type"] == want_v, f"REQUEST void count {o['next_type']} vs {want_v}"
                if self.rng.random() < self.loss:
                    self.lost["req"] += 1
                else:
                    self.arb(key[0], key[1]).request(
                        NODE, o["dgsq"], key[2], key[3], o["len"], o["seq"], self.now, voids=o["next_type"]
                    )
            while self.hooks and self.hooks[0][0] <= self.now:
                self.hooks.popleft()[1](self)
            # The egress side: arrivals, leases, one decision per port every few clocks.
            while self.arrivals and self.arrivals[0][0] <= self.now:
                _t, a, (src, dg, cr, last) = self.arrivals.popleft()
                self.arb(*a).arrival(src, dg, cr, last, self.now)
            for (dst, port), arb in self.arbs.items():
                for k in arb.expired(self.now, self.lease):
                    arb.expire(k)
                if self.now % self.grant_every == 0:
                    key = arb.pick(room=arb.buffer, now=self.now)
                    if key is not None:
                        if self.rng.random() < self.loss:
                            self.lost["grant"] += 1
                        else:
                            s = arb.slots.get(key)
                            seq = s.gseq if s else 0
                            self.grants.append(
                                {
                                    "type": GRANT_TYPE,
                                    "src_node": dst,
                                    "dst_node": NODE,
                                    "port": port,
                                    "seq": seq,
                                    "len": arb.G,
                                    "dgsq": key[1],
                                    "ttl": 64,
                                }
                            )
            if (
                until_done
                and self.now % 128 == 0
                and self.delivered == self.offered
                and not self.pkts
                and not self.inflight_pkts
            ):
                break
        d.s_pkt_valid.value = 0
        d.s_grant_valid.value = 0
        d.s_rel_done_valid.value = 0


def _traffic(tb, n_keys, n_pkts, sizes=(64, 300, 1500, 9000)):
    rng = tb.rng
    keys = [
        (rng.randrange(1, 8), rng.randrange(4), rng.randrange(8), rng.randrange(4096)) for _ in range(n_keys)
    ]
    for _ in range(n_pkts):
        k = rng.choice(keys)
        tb.offer(*k, rng.choice(sizes))
    return keys


def _bogus_grant(**fields):
    g = {
        "type": GRANT_TYPE,
        "src_node": 1,
        "dst_node": NODE,
        "port": 0,
        "seq": 0,
        "len": 64,
        "dgsq": 0,
        "ttl": 64,
    }
    g.update(fields)
    return g


def _grant_to_live_context_from_stranger(tb):
    qid = min(tb.qkey) if tb.qkey else 0
    tb.grants.append(_bogus_grant(src_node=0x7FFF, dgsq=qid))  # no key has this dst_node


def _check_exact_outcomes(tb):
    """Lossless: the reference arbiters wrote off no lease, and every GRANT the manager
    took ended in a container (a release) or a void it counted and reported."""
    expired = sum(arb.stats["lease_expired"] for arb in tb.arbs.values())
    assert expired == 0, f"{expired} leases written off in a lossless run"
    g, rel, void = tb.stat("grants"), tb.stat("releases"), tb.stat("grant_void")
    assert g == rel + void, f"{g} GRANTs taken, {rel} containers + {void} voids"
    assert void > 0, "no void GRANT happened: the void path is not exercised"


@cocotb.test()
async def test_closed_loop(dut):
    """Lossless: every packet's data is granted and released exactly as predicted,
    REQUESTs carry the exact backlog and acknowledged seq, contexts free when idle;
    GRANTs that match no context have no effect and are counted; the packet rate."""
    tb = ManagerBench(dut, seed=31)
    await tb.start()
    n = test_params()["n_ctx"]
    # Not ours: a REQUEST type, a dgsq beyond the pool, a free context, another key.
    tb.grants.extend([_bogus_grant(type=REQUEST_TYPE), _bogus_grant(dgsq=n), _bogus_grant(dgsq=1)])
    tb.hooks.append((3000, _grant_to_live_context_from_stranger))
    _traffic(tb, 12, 1500)
    await tb.run(200000, pause=0.2, until_done=True)
    assert tb.delivered == tb.offered, f"delivered {tb.delivered} of {tb.offered} bytes"
    assert tb.stat("grant_gap") == 0
    assert tb.stat("grant_unknown") == 4, f"unknown GRANTs counted {tb.stat('grant_unknown')}"
    assert tb.wasted == 0, f"{tb.wasted} grants found an empty queue without debt"
    _check_exact_outcomes(tb)
    idle = test_params()["idle_cycles"]
    await tb.run(3 * idle + 4096)
    assert int(dut.ctx_used.value) == 0, "contexts not freed after the idle time"
    assert tb.stat("freed") == tb.stat("alloc")
    assert tb.stat("requests") == tb.requests
    # Packet rate with outputs always ready and the grants held back (a queue that
    # empties between packets asks anew each time, and its GRANT, release and report
    # take engine events too): 3 clocks per event, the sweep takes one event per 32
    # clocks, a REQUEST one per container of growth.
    tb.pkt_fires.clear()
    tb.grant_every = 1 << 40
    for _ in range(200):
        tb.offer(3, 1, 2, 77, 64)
    await tb.run(2000)
    rate = (len(tb.pkt_fires) - 1) / (tb.pkt_fires[-1] - tb.pkt_fires[0])
    dut._log.info("packet descriptors per clock (64 B packets, one queue): %.3f", rate)
    assert len(tb.pkt_fires) == 200 and rate >= 0.25, f"packet rate {rate:.3f} per clock"
    tb.grant_every = 2
    await tb.run(20000, until_done=True)
    assert tb.delivered == tb.offered


@cocotb.test()
async def test_pool_exhaustion(dut):
    """More live queues than contexts: s_pkt back-pressures (counted), nothing lost,
    everything drains as contexts free up."""
    tb = ManagerBench(dut, seed=32)
    await tb.start()
    n = test_params()["n_ctx"]
    _traffic(tb, 3 * n, 1200, sizes=(64, 1500))
    await tb.run(400000, until_done=True)
    assert tb.delivered == tb.offered, f"delivered {tb.delivered} of {tb.offered} bytes"
    assert tb.stat("pool_full") > 0, "pool exhaustion not exercised"
    assert tb.stat("alloc") > n


@cocotb.test()
async def test_control_loss(dut):
    """1e-3 and 1e-2 of REQUESTs and GRANTs lost: no queue stalls (refresh, leases)."""
    rates = [float(x) for x in os.environ.get("DGSQ_LOSS_RATES", "1e-3").split(",")]
    for loss, seed in zip(rates, (33, 34)):
        tb = ManagerBench(dut, seed=seed, loss=loss)
        if seed == 33:
            await tb.start()
        gaps0, ref0 = tb.stat("grant_gap"), tb.stat("refresh")
        _traffic(tb, 10, 3000)
        await tb.run(600000, until_done=True)
        dut._log.info(
            "loss %g: lost %s; seq gaps seen %d, refreshes %d, cycles %d",
            loss,
            tb.lost,
            tb.stat("grant_gap") - gaps0,
            tb.stat("refresh") - ref0,
            tb.now,
        )
        assert tb.delivered == tb.offered, f"loss {loss}: {tb.offered - tb.delivered} bytes stalled"
        if tb.lost["grant"]:
            assert tb.stat("grant_gap") > gaps0, "lost GRANTs not visible as seq gaps"
        await tb.run(4000)


@cocotb.test()
async def test_grants_during_release(dut):
    """Six containers in flight per queue and a VOQ that takes 600 clocks to report a
    release: several GRANTs come while one release is out. Each still forms its own
    container (the reorder slot and the arbiter's in-flight count are per container):
    no release asks for more than one container's credit, and all data is delivered."""
    tb = ManagerBench(dut, seed=35, rel_delay=600, max_inflight=6, grant_every=1)
    await tb.start()
    cub = test_params()["container_bytes"]
    _traffic(tb, 2, 400, sizes=(1500,))
    await tb.run(400000, until_done=True)
    assert tb.delivered == tb.offered, f"delivered {tb.delivered} of {tb.offered} bytes"
    assert 0 < tb.max_release <= cub, f"a release asked for {tb.max_release} bytes (container {cub})"
    assert tb.wasted == 0, f"{tb.wasted} grants found an empty queue without debt"
    _check_exact_outcomes(tb)
