"""Link monitor under spurious ``probe_rx`` and random resets.

Per epoch (reset to reset, a random length of 10-40 intervals, ``rst`` asserted at
a random clock, probes often mid-frame on random-ready ``m_probe`` ports):

- link 0: one ``probe_rx`` pulse per interval (mid-interval): must come up within
  (M + 1) intervals of reset and stay up (no miss, no down event);
- link 1: spurious bursts (up to 40 pulses an interval, runs of pulses every clock):
  up the same way, never down;
- link 2: ``link_up`` low, pulses anyway: never healthy;
- link 3: no pulses: never healthy, one miss per interval;
- every link: ``stat_probes_rcvd`` equals the pulses driven exactly, ``stat_probes_sent``
  equals the PROBE frames taken off ``m_probe`` (each 60 bytes, tlast on its 8th beat).

After each reset: ``healthy`` 0, every counter 0, and no ``m_probe`` beat before the
first interval ends (no stale frame)."""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge

from opengse.sim.runner import test_params

EPOCHS = 6


@cocotb.test()
async def test_link_monitor_spurious_and_resets(dut):
    p = test_params()
    L, T, M = p["links"], p["interval"], p["rejoin"]
    assert L >= 4
    rng = random.Random(1807)
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.src_node.value = 0x1234
    dut.probe_rx.value = 0
    dut.rx_frame.value = 0  # PROBEs only: every link is probed each interval
    dut.tx_data.value = 0
    dut.link_up.value = (1 << L) - 1 & ~(1 << 2)
    probes = [
        (
            getattr(dut, f"m_probe_{i}_tvalid"),
            getattr(dut, f"m_probe_{i}_tready"),
            getattr(dut, f"m_probe_{i}_tlast"),
        )
        for i in range(L)
    ]
    for _, rdy, _ in probes:
        rdy.value = 1
    for epoch in range(EPOCHS):
        dut.rst.value = 1
        for _ in range(rng.randint(1, 4)):
            await RisingEdge(dut.clk)
        dut.rst.value = 0
        pulses, frames, beats = [0] * L, [0] * L, [0] * L
        length = rng.randint(10, 40) * T + rng.randrange(T)  # the next reset lands anywhere
        plan0 = {}
        up_by = (M + 1) * T + 4
        burst = 0
        for c in range(length):
            k = c % T
            if k == 0:
                plan0 = {rng.randrange(T // 4, 3 * T // 4)}
                plan1 = {rng.randrange(T // 4, 3 * T // 4)} | {
                    rng.randrange(T) for _ in range(rng.randint(0, 40))
                }
            rx = 0
            if k in plan0:
                rx |= 1
            if k in plan1 or burst:
                rx |= 2
            burst = max(0, burst - 1) if burst else (rng.randint(1, 20) if rng.random() < 0.01 else 0)
            if rng.random() < 0.3:
                rx |= 4  # link 2 is down: pulses must not bring it up
            dut.probe_rx.value = rx
            for i, (_, rdy, _) in enumerate(probes):
                rdy.value = int(rng.random() < 0.7)
            await RisingEdge(dut.clk)
            for i in range(L):
                pulses[i] += (rx >> i) & 1
                v, rdy, last = probes[i]
                if int(v.value) and int(rdy.value):
                    assert c >= T - 1, f"epoch {epoch}: link {i} probe beat {c} clocks after reset (stale)"
                    beats[i] += 1
                    if int(last.value):
                        assert beats[i] % 8 == 0, (
                            f"epoch {epoch}: link {i} PROBE of {beats[i] % 8 or 8} beats"
                        )
                        frames[i] += 1
            h = int(dut.healthy.value)
            if c < 2:
                continue
            if c <= 2 or c < T:
                assert h == 0, f"epoch {epoch}: healthy {h:#x} {c} clocks after reset"
            assert not h & 0b1100, f"epoch {epoch}, clock {c}: link 2 (down) or 3 (silent) healthy: {h:#x}"
            if c >= up_by:
                assert h & 0b11 == 0b11, (
                    f"epoch {epoch}, clock {c}: links 0/1 not healthy by {up_by} clocks: {h:#x}"
                )
        dut.probe_rx.value = 0
        await RisingEdge(dut.clk)
        for i in range(L):
            got = int(getattr(dut, f"stat_probes_rcvd_{i}").value)
            assert got == pulses[i], f"epoch {epoch}: link {i} stat_probes_rcvd {got} != pulses {pulses[i]}"
            sent = int(getattr(dut, f"stat_probes_sent_{i}").value)
            assert sent == frames[i], (
                f"epoch {epoch}: link {i} stat_probes_sent {sent} != frames taken {frames[i]}"
            )
        for i in (0, 1):
            assert int(getattr(dut, f"stat_down_events_{i}").value) == 0, f"epoch {epoch}: link {i} went down"
        missed3 = int(getattr(dut, "stat_probes_missed_3").value)
        assert missed3 == length // T, f"epoch {epoch}: link 3 missed {missed3}, intervals {length // T}"
        # Reset in the middle of whatever is going on; then everything must be clean.
        dut.rst.value = 1
        await RisingEdge(dut.clk)
        await RisingEdge(dut.clk)
        dut.rst.value = 0
        await RisingEdge(dut.clk)
        await RisingEdge(dut.clk)
        assert int(dut.healthy.value) == 0, f"epoch {epoch}: healthy after reset"
        for name in ("probes_sent", "probes_rcvd", "probes_missed", "down_events"):
            for i in range(L):
                got = int(getattr(dut, f"stat_{name}_{i}").value)
                assert got == 0, f"epoch {epoch}: stat_{name}_{i} = {got} after reset"
        for i, (v, _, _) in enumerate(probes):
            assert not int(v.value), f"epoch {epoch}: m_probe_{i} valid right after reset"
    dut._log.info("link monitor: %d epochs with random resets, spurious probe_rx", EPOCHS)
