"""Formal check (yowasp-sby BMC) of the VOQ buffer's cell accounting on a small buffer.

Configuration: 4 cells of 2 bytes (one is the free list's sentinel), 8-bit data,
2 queues, 2 tenants, 2-bit counters. Every input is
free (reset included, so resets at any moment are covered). A shadow model in the
wrapper tracks which cells hold committed data (``owned``: in a queue or on the way
out) from the block's internal events and asserts, every cycle up to the BMC depth:

* the enqueue never writes a cell that is owned (no cell is in two lists / a free
  cell is never handed out while still queued);
* a commit takes exactly the cells its packet wrote, all of them not owned;
* the emitter reads only owned cells, and frees exactly the cells of the packet it
  read, all owned;
* ``popcount(owned)`` equals the queued + dequeue-in-flight cell counters (adjusted
  for events posted and not yet applied), and free + queued + in-flight == total;
* the RTL's own ``stat_invariant_err`` never rises.
"""

import os

import pytest

from amaranth.hdl import Assert, Assume, Cover, ResetSignal, Const, Elaboratable, Module, Mux, Signal, Value

from opengse.rtl.voq.buffer import VOQBuffer
from opengse.sim.formal import prove
from opengse.sim.runner import BUILD_ROOT

SMALL = dict(
    data_width=8,
    buffer_bytes=8,
    cell_bytes=2,
    queues=2,
    tenants=2,
    queue_limit_cells=3,
    tenant_reserved_cells=1,
    tenant_limit_cells=3,
    alpha_log2=0,
    credit_width=4,
    counter_width=2,
    credit_unit=1,
)
#: Regression depth: the table clear takes 4 cycles, the first commit is reachable at
#: step 11, the first cell returned to the free list at step 24 (cover check below).
DEPTH = int(os.environ.get("VOQ_FORMAL_DEPTH", "16"))
DEEP = int(os.environ.get("VOQ_FORMAL_DEEP", "28"))
SCRIPT = ("memory_map",)  # tiny memories as flip-flops: faster for z3 than arrays


def popcount(v, n):
    return sum(v[i] for i in range(n))


class VOQFormal(Elaboratable):
    """``VOQBuffer`` plus the cell-ownership shadow model and its assertions."""

    def __init__(self, reset=False, **params):
        self.dut = VOQBuffer(**params)
        self.reset = reset  # let the solver assert rst at any time (slower)

    def ports(self):
        # Inputs only: logic that reaches no assertion (data path, statistics) is then
        # removed by Yosys, which keeps the solver's problem small.
        from amaranth.lib.wiring import In

        return [
            Value.cast(sig)
            for _path, member, sig in self.dut.signature.flatten(self.dut)
            if member.flow == In
        ]

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        n = dut.n

        def bit(idx):
            return (Const(1, n) << idx)[:n]

        owned, pkt, rd = Signal(n), Signal(n), Signal(n)
        pkt_next, rd_next, owned_after_commit = Signal(n), Signal(n), Signal(n)
        wbit, rbit = Signal(n), Signal(n)
        m.d.comb += [wbit.eq(bit(dut.tap_cell_wcell)), rbit.eq(bit(dut.tap_rd_cell))]

        # Enqueue: cells written by the current packet.
        m.d.comb += pkt_next.eq(Mux(dut.tap_enq_start, 0, pkt) | Mux(dut.tap_cell_we, wbit, 0))
        m.d.sync += pkt.eq(pkt_next)
        with m.If(dut.tap_cell_we):
            m.d.comb += Assert((owned & wbit) == 0, "enqueue writes a cell that holds queued data")
        with m.If(dut.tap_commit):
            m.d.comb += [
                Assert((owned & pkt_next) == 0, "commit takes an owned cell"),
                Assert(popcount(pkt_next, n) == dut.tap_commit_cells, "commit cell count"),
            ]
        m.d.comb += owned_after_commit.eq(owned | Mux(dut.tap_commit, pkt_next, 0))

        # Emitter: cells read for the current packet.
        m.d.comb += rd_next.eq(rd | Mux(dut.tap_rd, rbit, 0))
        with m.If(dut.tap_rd):
            m.d.comb += Assert((owned & rbit) != 0, "emitter reads a cell that is not owned")
        with m.If(dut.tap_free):
            m.d.comb += [
                Assert((owned & rd_next) == rd_next, "free of a cell that is not owned"),
                Assert(popcount(rd_next, n) == dut.tap_free_cells, "free cell count"),
            ]
            m.d.sync += [rd.eq(0), owned.eq(owned_after_commit & ~rd_next)]
        with m.Else():
            m.d.sync += [rd.eq(rd_next), owned.eq(owned_after_commit)]

        # Counters agree with the shadow.
        with m.If(dut.init_done):
            expect = (
                dut.stat_queued_cells
                + dut.stat_deq_cells
                + Mux(dut.tap_commit_pend, dut.tap_commit_pend_cells, 0)
                - Mux(dut.tap_free_pend, dut.tap_free_pend_cells, 0)
            )
            m.d.comb += [
                Assert(popcount(owned, n) == expect, "owned cells != queued + in-flight"),
                Assert(
                    dut.stat_free_cells + dut.stat_queued_cells + dut.stat_deq_cells == n,
                    "free + queued + in-flight != total",
                ),
            ]
        m.d.comb += Assert(~dut.stat_invariant_err, "stat_invariant_err")
        if not self.reset:
            m.d.comb += Assume(~ResetSignal())
        return m


def _bmc(depth, name):
    top = VOQFormal(**SMALL)
    result = prove(
        top, ports=top.ports(), depth=depth, mode="bmc", script=SCRIPT, workdir=BUILD_ROOT / "formal" / name
    )
    assert result.passed
    print(f"VOQ BMC depth {depth}: {result.status} in {result.seconds:.1f} s")


def test_voq_cell_accounting_bmc():
    _bmc(DEPTH, "voq_bmc")


@pytest.mark.slow
def test_voq_cell_accounting_bmc_deep():
    """Deep enough for packets to go all the way round (enqueue, release, free)."""
    _bmc(DEEP, "voq_bmc_deep")


class _Reach(Elaboratable):
    def __init__(self):
        self.f = VOQFormal(**SMALL)

    def elaborate(self, platform):
        m = Module()
        m.submodules.f = self.f
        d = self.f.dut
        m.d.comb += [Cover(d.tap_commit, "commit"), Cover(d.tap_free, "free")]
        return m


@pytest.mark.slow
def test_voq_formal_reachability():
    """The shadow's events are reachable: commit and free happen within DEEP cycles."""
    top = _Reach()
    result = prove(
        top,
        ports=top.f.ports(),
        depth=DEEP,
        mode="cover",
        script=SCRIPT,
        workdir=BUILD_ROOT / "formal" / "voq_cover",
    )
    assert result.passed
