"""Small pieces every cocotb bench here uses."""
from cocotb.triggers import RisingEdge

__all__ = ["random_pause", "reset_dut"]


def random_pause(rng, p):
    """Pause generator for cocotbext-axi style streams: True (pause) with probability
    ``p`` each cycle."""
    while True:
        yield rng.random() < p


async def reset_dut(dut, cycles=4, clk="clk", rst="rst"):
    """Hold the synchronous reset for ``cycles`` clock cycles, then one idle cycle."""
    clock, reset = getattr(dut, clk), getattr(dut, rst)
    reset.value = 1
    for _ in range(cycles):
        await RisingEdge(clock)
    reset.value = 0
    await RisingEdge(clock)
