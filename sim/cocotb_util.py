"""Small pieces every cocotb bench here uses."""
from cocotb.triggers import RisingEdge

__all__ = ["random_pause", "reset_dut", "drain_until"]


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


async def drain_until(clk, finished, progress, timeout, idle, on_timeout):
    """Wait until ``finished()`` — giving up after ``timeout`` clocks in which
    ``progress()`` (a count of transfers seen) did not change, then calling
    ``on_timeout(quiet_clocks)`` — then ``idle`` more clocks, so that unexpected extra
    output shows up before the end-of-test checks."""
    quiet, seen = 0, progress()
    while not finished():
        await RisingEdge(clk)
        now = progress()
        quiet, seen = (0 if now != seen else quiet + 1), now
        if quiet >= timeout:
            on_timeout(quiet)
            break
    for _ in range(idle):
        await RisingEdge(clk)
