"""cocotb side of tests/dgsq/test_arbiter_equivalence.py: random traffic into the
reference and today's GrantArbiter at once (the ``gse_arbiter_equiv`` top), and a
check of its ``mismatch`` bits every clock.

Traffic (seeded by cocotb's RANDOM_SEED), in phases of 5000 clocks that change the
load: REQUESTs from 1.5 x ``n_req`` queues (some sharing a ``src_node``; backlog 0,
small, large; ``seq`` mostly the last GRANT the queue received, sometimes stale or
random); arrivals of each GRANT's container after 10-400 clocks, split into 1-4
packets, sometimes lost, short, long or without ``last``, and reports for unknown
queues; weight writes (0 included); ``egress_room`` from a drained buffer model, at
times above ``buffer_credits`` or random; ``m_grant_ready`` random with bursts.
Every protocol rule of a stream is kept (valid and payload held until ready).
At the end the run must have reached grants, room stalls, slots refused, unknown
arrivals and lease write-offs (else the traffic would not test them).
"""

import heapq
import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from opengse.sim.runner import test_params

STATS = (
    "stat_grants",
    "stat_requests",
    "stat_req_no_slot",
    "stat_arr_unknown",
    "stat_lease_expired",
    "stat_room_stall",
)


class Traffic:
    def __init__(self, dut, rng, p):
        self.d, self.rng, self.p = dut, rng, p
        self.G, self.BUF, self.n = p["grant_credits"], p["buffer_credits"], p["n_req"]
        srcs = [rng.randrange(1 << 16) for _ in range(max(2, self.n // 2))]
        self.keys = []
        for _ in range(self.n * 3 // 2):
            key = (rng.choice(srcs), rng.randrange(1 << 16))
            self.keys.append((key, rng.choice((0, 3, 3, 5, 7)), rng.randrange(1 << 12)))
        self.last_seq = {}  # key -> seq of the last GRANT received
        self.arrivals = []  # heap of (due, n, fields)
        self.arr_n = 0
        self.req = self.arr = None  # the transfer on offer (held until ready)
        self.occ = 0
        self.now = 0
        self.grants = 0
        self.phase()

    def phase(self):
        r = self.rng
        self.p_req = r.choice((0.02, 0.1, 0.3, 0.6))
        self.p_ready = r.choice((1.0, 0.8, 0.4, 0.1))
        self.drain = r.choice((1, 4, 16, 64))
        self.p_lost = r.choice((0.0, 0.02, 0.1))

    def drive(self):
        d, r = self.d, self.rng
        self.now += 1
        if self.now % 5000 == 0:
            self.phase()
        # REQUESTs
        if self.req is None and r.random() < self.p_req:
            key, tc, tenant = r.choice(self.keys)
            u = r.random()
            backlog = (
                0
                if u < 0.15
                else r.randrange(1, 64)
                if u < 0.6
                else r.randrange(64, 3000)
                if u < 0.98
                else 0xFFFF
            )
            seq = self.last_seq.get(key, 0)
            u = r.random()
            if u < 0.1:
                seq = (seq - r.randrange(1, 4)) & 0xFFFF
            elif u < 0.13:
                seq = r.randrange(1 << 16)
            self.req = (key, tc, tenant, backlog, seq)
        if self.req is not None:
            (src, dgsq), tc, tenant, backlog, seq = self.req
            d.s_req_src_node.value, d.s_req_dgsq.value = src, dgsq
            d.s_req_tc.value, d.s_req_tenant.value = tc, tenant
            d.s_req_backlog.value, d.s_req_seq.value = backlog, seq
        d.s_req_valid.value = int(self.req is not None)
        # Arrivals (in due order), and now and then one for a queue never granted.
        if self.arr is None:
            if self.arrivals and self.arrivals[0][0] <= self.now:
                self.arr = heapq.heappop(self.arrivals)[2]
            elif r.random() < 0.002:
                self.arr = (r.randrange(1 << 16), r.randrange(1 << 16), r.randrange(1, 64), 1)
        if self.arr is not None:
            src, dgsq, credits, last = self.arr
            d.s_arr_src_node.value, d.s_arr_dgsq.value = src, dgsq
            d.s_arr_credits.value, d.s_arr_last.value = credits, last
        d.s_arr_valid.value = int(self.arr is not None)
        # Weight writes
        cfg = r.random() < 0.003
        if cfg:
            d.s_cfg_tenant.value = r.randrange(self.p["n_tenants"])
            d.s_cfg_weight.value = r.choice((0, 1, 2, 3, 5, 8, 255))
        d.s_cfg_valid.value = int(cfg)
        # Egress room and back-pressure
        self.occ = max(0, self.occ - r.randrange(self.drain + 1))
        u = r.random()
        room = (
            r.randrange(1 << 16)
            if u < 0.005
            else self.BUF + r.randrange(1, 100)
            if u < 0.01
            else max(0, self.BUF - self.occ)
        )
        d.egress_room.value = room
        d.m_grant_ready.value = int(r.random() < self.p_ready)

    def transfers(self):
        """In ReadOnly: the transfers of the coming clock edge."""
        d = self.d
        if self.req is not None and d.s_req_ready.value:
            self.req = None
        if self.arr is not None and d.s_arr_ready.value:
            self.occ += self.arr[2]
            self.arr = None
        if d.m_grant_valid.value and d.m_grant_ready.value:
            self.grants += 1
            key = (int(d.m_grant_src_node.value), int(d.m_grant_dgsq.value))
            self.last_seq[key] = int(d.m_grant_seq.value)
            self.container(key)

    def container(self, key):
        r, G = self.rng, self.G
        if r.random() < self.p_lost:
            return
        u = r.random()
        total = max(1, G - r.randrange(1, G)) if u < 0.1 else G + r.randrange(1, G + 1) if u < 0.2 else G
        k = r.randrange(1, 5)
        cuts = sorted(r.randrange(1, total) for _ in range(k - 1)) if total > 1 else []
        parts = [b - a for a, b in zip([0] + cuts, cuts + [total]) if b > a]
        due = self.now + r.randrange(10, 400)
        no_last = r.random() < 0.03
        for j, c in enumerate(parts):
            last = int(j == len(parts) - 1 and not no_last)
            self.arr_n += 1
            heapq.heappush(self.arrivals, (due, self.arr_n, (key[0], key[1], c, last)))
            due += r.randrange(1, 6)


@cocotb.test()
async def test_equivalence(dut):
    p = test_params()
    outputs = p["outputs"]
    cycles = int(os.environ.get("EQUIV_CYCLES", "50000"))
    rng = random.Random(cocotb.RANDOM_SEED)
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    for s in ("s_req", "s_arr", "s_cfg"):
        getattr(dut, f"{s}_valid").value = 0
    dut.m_grant_ready.value = 0
    dut.egress_room.value = 0
    dut.rst.value = 1
    for _ in range(3):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    tr = Traffic(dut, rng, p)
    for clock in range(cycles):
        await RisingEdge(dut.clk)
        tr.drive()
        await ReadOnly()
        mism = int(dut.mismatch.value)
        if mism:
            diff = [
                f"{name}: new {int(getattr(dut, name).value)} ref {int(getattr(dut, 'ref_' + name).value)}"
                for k, name in enumerate(outputs)
                if mism >> k & 1
            ]
            assert False, f"outputs differ at clock {clock}: " + "; ".join(diff)
        tr.transfers()
    stats = {s: int(getattr(dut, s).value) for s in STATS}
    dut._log.info(
        f"EQUIV n_req={p['n_req']} clocks={cycles} GRANTs taken={tr.grants} "
        + " ".join(f"{k}={v}" for k, v in stats.items())
    )
    for s in STATS:
        assert stats[s] > 0, f"the traffic never reached {s} (nothing compared there)"
