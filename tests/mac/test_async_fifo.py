"""RegisteredAsyncFIFO in Amaranth's simulator: every word comes out once and in order
under random enables on two unrelated clocks; with both sides always enabled it moves
one word per clock; a write-side reset empties it."""

import random

import pytest
from amaranth.hdl import ClockDomain, Module
from amaranth.sim import Simulator

from opengse.rtl.mac.async_fifo import RegisteredAsyncFIFO


def _top(depth, width=16):
    m = Module()
    m.domains.w = cd_w = ClockDomain("w")
    m.domains.r = ClockDomain("r")
    m.submodules.fifo = fifo = RegisteredAsyncFIFO(width=width, depth=depth, r_domain="r", w_domain="w")
    return m, fifo, cd_w


@pytest.mark.parametrize(
    "depth,w_period,r_period,seed", [(8, 8e-9, 8e-9, 1), (16, 7e-9, 11e-9, 2), (4, 13e-9, 5e-9, 3)]
)
def test_order_and_no_loss_under_random_enables(depth, w_period, r_period, seed):
    m, fifo, cd_w = _top(depth)
    n = 300
    rng = random.Random(seed)
    got = []

    async def writer(ctx):
        i = 0
        while i < n:
            ctx.set(fifo.w_data, i)
            ctx.set(fifo.w_en, rng.random() < 0.7)
            _, _, rdy, en = await ctx.tick("w").sample(fifo.w_rdy, fifo.w_en)
            if rdy and en:
                assert ctx.get(fifo.w_level) <= depth
                i += 1
        ctx.set(fifo.w_en, 0)

    async def reader(ctx):
        while len(got) < n:
            ctx.set(fifo.r_en, rng.random() < 0.6)
            _, _, rdy, en, data = await ctx.tick("r").sample(fifo.r_rdy, fifo.r_en, fifo.r_data)
            if rdy and en:
                got.append(data)

    sim = Simulator(m)
    sim.add_clock(w_period, domain="w")
    sim.add_clock(r_period, domain="r")
    sim.add_testbench(writer)
    sim.add_testbench(reader)
    sim.run_until(n * 60e-9)
    assert got == list(range(n))


def test_full_rate_and_reset():
    """Both sides always enabled: one word per clock; filled, it holds depth + 2 or
    depth + 3 words; a write-side reset empties it."""
    depth = 16
    m, fifo, cd_w = _top(depth)
    moved = []

    async def bench(ctx):
        ctx.set(fifo.w_en, 1)
        ctx.set(fifo.r_en, 1)
        sent = 0
        for i in range(200):
            ctx.set(fifo.w_data, sent)
            _, _, wr, rr, data = await ctx.tick("w").sample(fifo.w_rdy, fifo.r_rdy, fifo.r_data)
            assert wr or i == 0, f"w_rdy low at {i}"
            sent += wr
            if rr:
                moved.append(data)
        # In order, at the full rate once the pipeline is full.
        assert moved == list(range(len(moved)))
        assert 190 <= len(moved) <= 200, len(moved)
        # Fill without reading: depth - 1 or depth words in memory, 3 in its output.
        ctx.set(fifo.r_en, 0)
        taken = 0
        for _ in range(4 * depth):
            _, _, wr, en = await ctx.tick("w").sample(fifo.w_rdy, fifo.w_en)
            taken += wr
        level = ctx.get(fifo.r_level)
        assert depth + 2 <= level <= depth + 3 and ctx.get(fifo.r_rdy)
        # A write-side reset empties it.
        ctx.set(fifo.w_en, 0)
        ctx.set(cd_w.rst, 1)
        for _ in range(2):
            await ctx.tick("w")
        ctx.set(cd_w.rst, 0)
        for _ in range(6):
            await ctx.tick("w")
        assert not ctx.get(fifo.r_rdy) and ctx.get(fifo.r_level) == 0 and ctx.get(fifo.w_rdy)

    sim = Simulator(m)
    sim.add_clock(8e-9, domain="w")
    sim.add_clock(8e-9, domain="r")
    sim.add_testbench(bench)
    sim.run()
