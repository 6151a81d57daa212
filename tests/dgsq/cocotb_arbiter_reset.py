"""Random resets of the grant arbiter in mid-traffic (issue 18), in the closed loop of
opengse.sim.arbiter_bench: eight saturated queues run and ``rst`` is asserted at a
random clock, several times. After each reset the arbiter must come back clean
(``outstanding`` 0, ``slots_used`` 0, every counter 0, no ``m_grant`` valid for 200
clocks) and then, with fresh sources (a leaf reset with it), run a lossless loop that
drains: no GRANT finds an empty queue, no lease written off, no unknown arrival, no
egress overflow (the bench asserts it every clock), back at rest at the end."""

import cocotb
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from opengse.sim.arbiter_bench import ArbiterBench

RESETS = 5
COUNTERS = ("grants", "requests", "req_no_slot", "arr_unknown", "lease_expired", "room_stall")


def add_queues(tb):
    for i in range(8):
        tb.add_queue(1 + i % 4, i, tc=0, tenant=i % 4, pkt=tb.rng.choice((64, 1500)), saturate=True)


async def reset(dut, cycles):
    for s in ("s_req", "s_arr", "s_cfg"):
        getattr(dut, f"{s}_valid").value = 0
    dut.rst.value = 1
    await ClockCycles(dut.clk, cycles)
    dut.rst.value = 0


async def check_clean(dut, r):
    dut.m_grant_ready.value = 1
    grants = 0
    for k in range(200):
        await RisingEdge(dut.clk)
        await ReadOnly()
        grants += int(dut.m_grant_valid.value)
        if k == 0:
            got = {n: int(getattr(dut, f"stat_{n}").value) for n in COUNTERS}
            assert not any(got.values()), f"reset {r}: counters not cleared: {got}"
    out, used = int(dut.outstanding.value), int(dut.slots_used.value)
    assert (out, used) == (0, 0), f"reset {r}: outstanding {out}, slots_used {used} after reset"
    assert not grants, f"reset {r}: stale GRANT valid for {grants} clocks after reset"
    await RisingEdge(dut.clk)


@cocotb.test()
async def test_arbiter_random_resets(dut):
    tb = ArbiterBench(dut, seed=1811)
    tb.refresh = 4096
    await tb.start()
    for r in range(RESETS):
        add_queues(tb)
        await tb.run(tb.rng.randint(50, 4000), drain=8, latency=24)  # cut mid-traffic
        await reset(dut, tb.rng.randint(1, 5))
        await check_clean(dut, r)
        tb = ArbiterBench(dut, seed=1811 + r + 1)  # fresh sources (the clock runs on)
        tb.refresh = 4096
        add_queues(tb)
        await tb.run(3000, drain=8, latency=24)
        tb.stop_saturation(lambda k: True)
        await tb.run(40_000, drain=8, latency=24, until_empty=True)
        assert tb.total_backlog() == 0, f"reset {r}: sources not drained: {tb.total_backlog()} bytes left"
        # one lease and a margin: a GRANT still held would expire in it
        await tb.run(tb.p["lease_cycles"] + 2000, drain=8, latency=24)
        assert tb.grants, f"reset {r}: no GRANT after the reset"
        assert tb.empty_grants == 0, f"reset {r}: {tb.empty_grants} grants found an empty queue"
        got = {n: tb.stat(n) for n in ("lease_expired", "arr_unknown")}
        assert not any(got.values()), f"reset {r}: {got}"
        out, used = int(dut.outstanding.value), int(dut.slots_used.value)
        assert (out, used) == (0, 0), f"reset {r}: not back at rest: outstanding {out}, slots_used {used}"
    dut._log.info("grant arbiter: %d random resets, clean each time", RESETS)
