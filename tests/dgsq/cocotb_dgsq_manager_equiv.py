"""cocotb co-simulation: today's DGSQ manager against the reference commit's.

Runs on :mod:`manager_equiv_top` (both managers, same inputs, every output compared in
RTL every clock: ``mismatch``). The traffic is random and reacts to the outputs, so
that it reaches every part of the manager:

* packets with keys from a pool three times the number of contexts (pool
  exhaustion), lengths from 0 to 65535 bytes, now and then withdrawn before they were
  taken;
* GRANTs to the queues the REQUESTs named, with seq in order, skipped (gaps) or
  repeated, and GRANTs that match nothing (another node or port, an id beyond the
  pool, a type other than GRANT);
* release reports (with a random ``pkts``, which the manager ignores) answering each release after a random delay with the credit, less,
  more or a random figure, and now and then a report nobody asked for;
* random back-pressure on ``m_pkt``, ``m_req`` and ``m_rel`` and random idle clocks,
  in phases (busy, stalled, quiet: contexts age, refresh and free), a change of
  ``node_id`` and one reset in the middle.

Fails at the first clock where any output differs, naming the outputs; at the end,
fails unless every counter that marks one of these cases moved.
"""
import json
import os
import random
from collections import deque

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from opengse.sim.runner import test_params

GRANT_TYPE = 2
COVERED = ("pool_full", "alloc", "freed", "requests", "refresh", "grants", "grant_unknown",
           "grant_gap", "grant_unused", "releases")
PHASES = {   # p_pkt, p_grant, stall probability of m_pkt / m_req / m_rel, report delay
    "busy": (0.9, 0.3, (0.0, 0.1, 0.0), 4),
    "mixed": (0.5, 0.2, (0.3, 0.3, 0.3), 20),
    "stalled": (0.8, 0.4, (0.9, 0.8, 0.9), 40),
    "quiet": (0.0, 0.02, (0.2, 0.2, 0.2), 10),
    "grantless": (0.3, 0.0, (0.1, 0.1, 0.1), 10),
}
SIZES = (0, 1, 63, 64, 65, 300, 1500, 4096, 9000, 65535)


class EquivBench:
    def __init__(self, dut, seed):
        self.dut = dut
        self.p = test_params()
        self.n = self.p["n_ctx"]
        self.rng = random.Random(seed)
        self.names = json.loads(os.environ["EQUIV_NAMES"])
        self.keys = [(self.rng.randrange(1, 6), self.rng.randrange(4), self.rng.randrange(8),
                      self.rng.randrange(4096)) for _ in range(3 * self.n)]
        self.clock = 0
        self.stats = dict.fromkeys(COVERED, 0)
        self.clear()

    def clear(self):
        self.pkt = self.grant = self.report = None
        self.queues = {}          # qid -> [src_node, port, next seq] learned from REQUESTs
        self.reports = deque()    # (due clock, queue, bytes)
        self.taken = deque()      # packets taken, not yet out on m_pkt

    def _set(self, port, fields):
        for k, v in fields.items():
            getattr(self.dut, f"{port}_{k}").value = v

    def _new_packet(self):
        r = self.rng
        key = r.choice(self.keys[: self.n // 2]) if r.random() < 0.6 else r.choice(self.keys)
        return dict(zip(("dst_node", "port", "tc", "tenant"), key), bytes=r.choice(SIZES))

    def _new_grant(self):
        r = self.rng
        g = {"type": GRANT_TYPE, "src_node": r.randrange(1, 6), "port": r.randrange(4),
             "seq": r.randrange(1 << 16), "len": r.choice((0, 1, 16, 64, 64, 64, 200, 1023)),
             "dgsq": r.randrange(self.n)}
        x = r.random()
        if self.queues and x < 0.8:
            g["dgsq"] = q = r.choice(sorted(self.queues))
            src, port, seq = self.queues[q]
            g["src_node"], g["port"] = src, port
            if x < 0.05:
                g["port"] ^= 1                               # another egress: unknown
            else:
                y = r.random()
                g["seq"] = (seq + (1 if y < 0.1 else -1 if y < 0.15 else 0)) & 0xFFFF
                self.queues[q][2] = (g["seq"] + 1) & 0xFFFF
        elif x < 0.87:
            g["dgsq"] = r.randrange(self.n, 1 << 16)         # beyond the pool
        elif x < 0.93:
            g["type"] = r.choice((0, 1, 3, 15))              # not a GRANT
        return g

    def _report_bytes(self, credit):
        r, x = self.rng, self.rng.random()
        if x < 0.5:
            return -(-credit // 64) * 64
        if x < 0.7:
            return max(0, credit - 64 * r.randrange(1, 40))
        if x < 0.9:
            return credit + 64 * r.randrange(1, 150)
        return r.randrange(1 << 24)

    def drive(self, phase):
        d, r = self.dut, self.rng
        p_pkt, p_grant, stalls, delay = PHASES[phase]
        if self.pkt is None and r.random() < p_pkt:
            self.pkt = self._new_packet()
            self._set("s_pkt", self.pkt)
        elif self.pkt is not None and r.random() < 0.002:
            self.pkt = None                                   # withdrawn, never taken
        d.s_pkt_valid.value = int(self.pkt is not None)
        if self.grant is None and r.random() < p_grant:
            self.grant = self._new_grant()
            self._set("s_grant", self.grant)
        d.s_grant_valid.value = int(self.grant is not None)
        if r.random() < 0.0005:
            self.reports.append((self.clock, r.randrange(self.n), r.randrange(1 << 20)))
        if self.report is None and self.reports and self.reports[0][0] <= self.clock:
            _due, q, nbytes = self.reports.popleft()
            self.report = {"queue": q, "bytes": nbytes, "pkts": r.randrange(1 << 16)}
            self._set("s_rel_done", self.report)
        d.s_rel_done_valid.value = int(self.report is not None)
        self.ready = {}
        for port, stall in zip(("m_pkt", "m_req", "m_rel"), stalls):
            self.ready[port] = int(r.random() >= stall)
            getattr(d, f"{port}_ready").value = self.ready[port]
        return delay

    def check(self):
        d = self.dut
        if int(d.mismatch.value):
            neq = int(d.neq.value)
            diff = [n for i, n in enumerate(self.names) if (neq >> i) & 1]
            vals = {n: int(getattr(d, n.replace(".", "_")).value) for n in diff}
            raise AssertionError(f"clock {self.clock}: outputs differ from the reference: "
                                 f"{', '.join(diff)} (today's values {vals})")

    def observe(self, delay):
        """Transfers of the coming edge (read in ReadOnly)."""
        d, out = self.dut, {}
        out["s_pkt"] = self.pkt is not None and int(d.s_pkt_ready.value)
        if self.ready["m_pkt"] and int(d.m_pkt_valid.value):
            assert self.taken, f"clock {self.clock}: m_pkt without a packet taken"
            want = self.taken.popleft()["tenant"] % self.p["n_tenants"]
            got = int(d.m_pkt_tenant.value)
            assert got == want, f"clock {self.clock}: m_pkt tenant {got}, expected {want}"
        out["s_grant"] = self.grant is not None and int(d.s_grant_ready.value)
        out["s_rel_done"] = self.report is not None and int(d.s_rel_done_ready.value)
        if self.ready["m_req"] and int(d.m_req_valid.value):
            q = int(d.m_req_dgsq.value)
            if q not in self.queues:
                self.queues[q] = [int(d.m_req_dst_node.value), int(d.m_req_port.value), 0]
            else:
                self.queues[q][:2] = [int(d.m_req_dst_node.value), int(d.m_req_port.value)]
        if self.ready["m_rel"] and int(d.m_rel_valid.value):
            q, credit = int(d.m_rel_queue.value), int(d.m_rel_credit.value)
            self.reports.append((self.clock + 1 + self.rng.randrange(delay + 1), q,
                                 self._report_bytes(credit)))
        return out

    def after_edge(self, out):
        if out["s_pkt"]:
            self.taken.append(self.pkt)
            self.pkt = None
        if out["s_grant"]:
            self.grant = None
        if out["s_rel_done"]:
            self.report = None
        self.clock += 1

    def add_stats(self):
        for k in COVERED:
            self.stats[k] += int(getattr(self.dut, f"stat_{k}").value)


@cocotb.test()
async def test_equivalence(dut):
    cycles = int(os.environ.get("EQUIV_CYCLES", "100000"))
    tb = EquivBench(dut, seed=int(os.environ.get("EQUIV_SEED", "1")))
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.node_id.value = 5
    for s in ("s_pkt", "s_grant", "s_rel_done"):
        getattr(dut, f"{s}_valid").value = 0
    dut.rst.value = 1
    for _ in range(3):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    phase = "busy"
    while tb.clock < cycles:
        if tb.clock % 3000 == 0:
            phase = tb.rng.choice(sorted(PHASES))
        if tb.clock == cycles // 3:
            dut.node_id.value = 0x1234
        if tb.clock == cycles // 2:                  # a reset in the middle of traffic
            tb.add_stats()
            dut.rst.value = 1
            await RisingEdge(dut.clk)
            await RisingEdge(dut.clk)
            dut.rst.value = 0
            tb.clear()
        delay = tb.drive(phase)
        await ReadOnly()
        tb.check()
        out = tb.observe(delay)
        await RisingEdge(dut.clk)
        tb.after_edge(out)
    tb.add_stats()
    dut._log.info("%d clocks, outputs identical; counters %s", tb.clock, tb.stats)
    missed = [k for k in COVERED if tb.stats[k] == 0]
    assert not missed, f"traffic never exercised: {', '.join(missed)}"
