"""PipelinedMultiplier: the behavioural form against Python's product, two clocks late,
in Amaranth's simulator; the ECP5 form is one MULT18X18D with its own registers."""

import random

import pytest
from amaranth.hdl import Fragment, Instance
from amaranth.sim import Simulator

from opengse.rtl.lib.pipelined_multiplier import LATENCY, PipelinedMultiplier


@pytest.mark.parametrize("a_width,b_width,shift,width", [(16, 14, 16, 14), (16, 9, 16, 8), (5, 3, 0, None)])
def test_product_two_clocks_late(a_width, b_width, shift, width):
    dut = PipelinedMultiplier(a_width, b_width, shift=shift, width=width)
    rng = random.Random(a_width * 100 + b_width)
    mask = (1 << len(dut.p)) - 1
    seen = []

    async def bench(ctx):
        sent = []
        for _ in range(300):
            a, b = rng.getrandbits(a_width), rng.getrandbits(b_width)
            ctx.set(dut.a, a)
            ctx.set(dut.b, b)
            sent.append((a * b >> shift) & mask)
            await ctx.tick()
            seen.append(ctx.get(dut.p))
        seen.append(sent)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    sent = seen.pop()
    # the product of the operands set before tick k is on p after tick k + LATENCY - 1
    assert seen[LATENCY - 1 :] == sent[: len(sent) - LATENCY + 1]


class _ECP5:
    family = "ecp5"


def test_ecp5_form_is_a_registered_dsp():
    frag = Fragment.get(PipelinedMultiplier(16, 14, shift=16, width=14), _ECP5())
    dsp = frag.subfragments[0][0]
    assert isinstance(dsp, Instance) and dsp.type == "MULT18X18D"
    for reg in ("REG_INPUTA_CLK", "REG_INPUTB_CLK", "REG_OUTPUT_CLK"):
        assert dsp.parameters[reg] == "CLK0"


def test_bad_slice():
    with pytest.raises(ValueError):
        PipelinedMultiplier(4, 4, shift=8)
