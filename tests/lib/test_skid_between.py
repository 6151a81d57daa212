"""``skid_between`` (rtl/lib/skid_buffer.py) in Amaranth's simulator: two parts joined
through it pass every record in order under random stalls at both ends, and the
sender's ``ready`` no longer follows the receiver's ``ready`` in the same clock."""

import random

from amaranth.hdl import Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from opengse.rtl.lib.skid_buffer import skid_between

LAYOUT = data.StructLayout({"value": 16, "tag": 3})


class _Pair(wiring.Component):
    """A sender port and a receiver port joined by ``skid_between`` (or directly)."""

    def __init__(self, skid=True):
        self.skid = skid
        super().__init__({"s": In(stream.Signature(LAYOUT)), "m": Out(stream.Signature(LAYOUT))})

    def elaborate(self, platform):
        m = Module()
        if self.skid:
            skid_between(m, "slice", wiring.flipped(self.s), wiring.flipped(self.m))
        else:
            wiring.connect(m, wiring.flipped(self.s), wiring.flipped(self.m))
            toggle = Signal()  # a clock domain for the bench to tick
            m.d.sync += toggle.eq(~toggle)
        return m


def _run(skid, n=200, seed=1):
    dut = _Pair(skid)
    rng = random.Random(seed)
    sent, got, follows = [], [], []

    async def bench(ctx):
        i = 0
        for _ in range(8 * n):
            offer = i < n and rng.random() < 0.7
            take = rng.random() < 0.6
            ctx.set(dut.s.valid, offer)
            ctx.set(dut.s.payload, {"value": (i * 37) & 0xFFFF, "tag": i & 7})
            ctx.set(dut.m.ready, take)
            # the sender's ready with the receiver's ready flipped, in the same clock
            r0 = ctx.get(dut.s.ready)
            ctx.set(dut.m.ready, not take)
            follows.append(ctx.get(dut.s.ready) != r0)
            ctx.set(dut.m.ready, take)
            if ctx.get(dut.m.valid) and take:
                p = ctx.get(dut.m.payload)
                got.append((p.value, p.tag))
            if offer and ctx.get(dut.s.ready):
                sent.append(((i * 37) & 0xFFFF, i & 7))
                i += 1
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return sent, got, follows


def test_skid_between_passes_everything_in_order():
    sent, got, follows = _run(skid=True)
    assert len(sent) == 200
    assert got == sent
    assert not any(follows), "the sender's ready followed the receiver's ready in the same clock"


def test_direct_connection_ready_follows():
    """The check above can fail: joined directly, ready runs straight through."""
    sent, got, follows = _run(skid=False)
    assert got == sent
    assert any(follows)
