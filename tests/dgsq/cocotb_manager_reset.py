"""Random resets of the DGSQ manager in mid-traffic (issue 18): the closed loop of
cocotb_dgsq_manager with ``rst`` asserted at a random clock, several times. After
each reset the manager must come back clean (``ctx_used`` 0, every counter 0, no
``m_pkt``/``m_req``/``m_rel`` valid for 200 clocks) and then, with a
fresh bench (its VOQ and arbiter models reset too, as a real leaf's would be), carry
new traffic exactly as the closed-loop bench predicts: every byte delivered, no seq
gap, no unknown GRANT, all contexts freed after the idle time."""

import cocotb
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from cocotb_dgsq_manager import ManagerBench, _traffic
from opengse.sim.runner import test_params

RESETS = 5
COUNTER_NAMES = (
    "pool_full",
    "alloc",
    "freed",
    "requests",
    "refresh",
    "grants",
    "grant_unknown",
    "grant_gap",
    "grant_unused",
    "releases",
)


async def reset(dut, cycles):
    for s in ("s_pkt", "s_grant", "s_rel_done"):
        getattr(dut, f"{s}_valid").value = 0
    dut.rst.value = 1
    await ClockCycles(dut.clk, cycles)
    dut.rst.value = 0


async def check_clean(dut, r):
    for s in ("m_pkt", "m_req", "m_rel"):
        getattr(dut, f"{s}_ready").value = 1
    seen = {"m_pkt": 0, "m_req": 0, "m_rel": 0}
    for k in range(200):
        await RisingEdge(dut.clk)
        await ReadOnly()
        for s in seen:
            seen[s] += int(getattr(dut, f"{s}_valid").value)
        if k == 0:
            counters = {n: int(getattr(dut, f"stat_{n}").value) for n in COUNTER_NAMES}
            assert not any(counters.values()), f"reset {r}: counters not cleared: {counters}"
            assert int(dut.ctx_used.value) == 0, f"reset {r}: ctx_used {int(dut.ctx_used.value)}"
    assert not any(seen.values()), f"reset {r}: stale outputs after reset (valid clocks {seen})"
    await RisingEdge(dut.clk)


@cocotb.test()
async def test_manager_random_resets(dut):
    tb = ManagerBench(dut, seed=1807)
    await tb.start()
    idle = test_params()["idle_cycles"]
    for r in range(RESETS):
        _traffic(tb, 12, 400, sizes=(64, 300, 1500, 9000))
        await tb.run(tb.rng.randint(50, 4000), pause=0.2)  # cut somewhere mid-traffic
        await reset(dut, tb.rng.randint(1, 5))
        await check_clean(dut, r)
        tb = ManagerBench(dut, seed=1807 + r + 1)  # fresh leaf models (the clock runs on)
        _traffic(tb, 12, 300)
        await tb.run(200_000, pause=0.2, until_done=True)
        assert tb.delivered == tb.offered, f"reset {r}: delivered {tb.delivered} of {tb.offered} bytes"
        assert tb.stat("grant_gap") == 0 and tb.stat("grant_unknown") == 0, (
            f"reset {r}: gap {tb.stat('grant_gap')}, unknown {tb.stat('grant_unknown')}"
        )
        assert tb.wasted == 0, f"reset {r}: {tb.wasted} grants found an empty queue without debt"
        await tb.run(3 * idle + 4096)
        assert int(dut.ctx_used.value) == 0, f"reset {r}: contexts not freed after the idle time"
        assert tb.stat("freed") == tb.stat("alloc") and tb.stat("requests") == tb.requests
    dut._log.info("manager: %d random resets, clean each time", RESETS)
