"""Link monitor with ``idle_only``: PROBEs only where the traffic does not prove a link.

Five links, interval T, miss limit K, random ``tready`` (0.7) on every ``m_probe``; a
PROBE taken off ``m_probe_<i>`` of a link marked *looped* comes back 5-20 clocks later
as a ``probe_rx`` + ``rx_frame`` pulse (the spine returning it):

- link 0, busy both ways (``tx_data`` and ``rx_frame`` pulses at least every 20
  clocks): never a PROBE beat, healthy by (M + 1) T, never down, one skipped PROBE per
  interval;
- link 1, sending only (``tx_data`` busy, nothing received but its looped PROBEs): a
  PROBE every interval (a returned PROBE is not traffic), none skipped, healthy, never
  down;
- link 2, busy both ways until STOP, then dead (nothing arrives; ``tx_data`` goes on,
  the sender does not know): healthy until STOP, PROBEs again after STOP, and down
  exactly once, within (K + 1) T + 1 clocks of the last frame received;
- link 3, busy both ways until STOP, then idle (looped): PROBEs resume within 2 T + 40
  clocks of STOP, at most one missed interval, never down;
- link 4, idle throughout (looped): a PROBE every interval, healthy, never down.

Every link: ``stat_probes_sent`` equals the PROBE frames taken, ``stat_probes_rcvd`` the
``probe_rx`` pulses driven.
"""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge

from opengse.sim.runner import test_params

INTERVALS = 60
STOP_INTERVAL = 30


@cocotb.test()
async def test_link_monitor_idle_only(dut):
    p = test_params()
    L, T, K, M = p["links"], p["interval"], p["miss_limit"], p["rejoin"]
    assert L == 5 and p["idle_only"]
    rng = random.Random(2020)
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.src_node.value = 0x0101
    dut.probe_rx.value = dut.rx_frame.value = dut.tx_data.value = 0
    dut.link_up.value = (1 << L) - 1
    ports = [
        (
            getattr(dut, f"m_probe_{i}_tvalid"),
            getattr(dut, f"m_probe_{i}_tready"),
            getattr(dut, f"m_probe_{i}_tlast"),
        )
        for i in range(L)
    ]
    dut.rst.value = 1
    for _ in range(3):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    looped = {1, 3, 4}
    stop = STOP_INTERVAL * T + rng.randrange(T)
    frames = [0] * L
    beats_after_stop = [0] * L
    first_probe_after_stop = [None] * L
    pulses = [0] * L
    returns = {}  # clock -> mask of links whose PROBE comes back then
    last_rx2 = 0
    down2_at = None
    up_by = (M + 1) * T + 4
    total = INTERVALS * T
    for c in range(total):
        busy_both = {0} | ({2, 3} if c < stop else set())
        tx = rx = 0
        for i in busy_both | {1, 2}:  # link 2 goes on sending after STOP
            if c % 20 == 3 * i or rng.random() < 0.1:
                tx |= 1 << i
        for i in busy_both:
            if c % 20 == 3 * i + 1 or rng.random() < 0.1:
                rx |= 1 << i
        probe = returns.pop(c, 0)
        rx |= probe
        dut.tx_data.value = tx
        dut.rx_frame.value = rx
        dut.probe_rx.value = probe
        for _, rdy, _ in ports:
            rdy.value = int(rng.random() < 0.7)
        await RisingEdge(dut.clk)
        if rx & 0b100:
            last_rx2 = c
        for i in range(L):
            pulses[i] += (probe >> i) & 1
            v, rdy, last = ports[i]
            if int(v.value) and int(rdy.value):
                if c >= stop:
                    beats_after_stop[i] += 1
                    if first_probe_after_stop[i] is None:
                        first_probe_after_stop[i] = c
                assert i != 0, f"clock {c}: a PROBE beat on link 0, which is busy both ways"
                assert not (i in (2, 3) and c < stop - 2), f"clock {c}: PROBE on busy link {i} before STOP"
                if int(last.value):
                    frames[i] += 1
                    if i in looped:
                        at = c + rng.randint(5, 20)
                        returns[at] = returns.get(at, 0) | (1 << i)
        h = int(dut.healthy.value)
        if c >= up_by:
            want = 0b11011 | (0b100 if c < stop else 0)
            assert h & want == want, f"clock {c}: healthy {h:#07b}, links {want:#07b} must be up"
        if not h & 0b100 and c >= up_by and down2_at is None:
            down2_at = c
    dut.tx_data.value = dut.rx_frame.value = dut.probe_rx.value = 0
    await RisingEdge(dut.clk)

    def stat(name, i):
        return int(getattr(dut, f"stat_{name}_{i}").value)

    ticks = total // T
    for i in range(L):
        assert stat("probes_sent", i) == frames[i], (
            f"link {i}: stat_probes_sent {stat('probes_sent', i)} != {frames[i]}"
        )
        assert stat("probes_rcvd", i) == pulses[i], (
            f"link {i}: stat_probes_rcvd {stat('probes_rcvd', i)} != {pulses[i]}"
        )
    assert frames[0] == 0 and stat("probes_skipped", 0) >= ticks - 1, (
        f"link 0 (busy): {frames[0]} PROBEs sent, {stat('probes_skipped', 0)} skipped of {ticks} intervals"
    )
    for i in (1, 4):
        assert stat("probes_skipped", i) == 0, (
            f"link {i}: {stat('probes_skipped', i)} PROBEs skipped, not busy both ways"
        )
        assert frames[i] >= ticks - 2, f"link {i}: {frames[i]} PROBEs in {ticks} intervals (one each wanted)"
    for i in (0, 1, 3, 4):
        assert stat("down_events", i) == 0, f"link {i} went down"
    assert stat("probes_missed", 3) <= 1, (
        f"link 3: {stat('probes_missed', 3)} missed intervals after STOP (<= 1)"
    )
    assert first_probe_after_stop[3] is not None and first_probe_after_stop[3] - stop <= 2 * T + 40, (
        f"link 3: no PROBE within 2T+40 clocks of STOP ({first_probe_after_stop[3]}, stop {stop})"
    )
    assert beats_after_stop[2] >= 8 * K, f"link 2: {beats_after_stop[2]} PROBE beats after it went silent"
    assert stat("down_events", 2) == 1, f"link 2 (dead): {stat('down_events', 2)} down events, want 1"
    assert down2_at is not None and down2_at > stop, (
        f"link 2 went down at {down2_at}, traffic stopped at {stop}"
    )
    assert down2_at - last_rx2 <= (K + 1) * T + 1, (
        f"link 2 down {down2_at - last_rx2} clocks after its last frame (bound {(K + 1) * T + 1})"
    )
    dut._log.info(
        "idle-only PROBEs: sent %s, skipped on link 0 %d of %d intervals, "
        "link 2 down %d clocks after its last frame",
        frames,
        stat("probes_skipped", 0),
        ticks,
        down2_at - last_rx2,
    )
