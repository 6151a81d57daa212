"""Soak of the control-frame decoder (opengse.sim.soak): N hostile fabric frames (every
malformed reason alone and combined, DATA/PROBE/plain frames, runts, tuser errors, odd
tkeep on a last beat, 1 B to 10 kB) under random idle cycles and back-pressure on
``m_ctl``. The reference is the decoder's documented rule, applied to scapy's
dissection: ``tuser`` on the last beat -> ``drop_err``; shorter than 14 bytes, or
shorter than 32 without the GSE EtherType -> ``drop_other``; GSE and shorter than 32,
or ``ver`` != 1, reserved ``type``, ``ttl`` 0 -> ``drop_malformed``; not GSE, DATA or
PROBE -> ``drop_other``; else REQUEST/GRANT fields on ``m_ctl``. Every entry checked,
every counter exact, delivered + drops == sent, a progress watchdog on s_axis and
m_ctl. Full return (the decoder has no free counts): no ``m_ctl`` valid for 200 clocks
after the last expected entry, then good REQUEST/GRANT frames decoded exactly and
counted in ``stat_ctl`` only."""

import os
import random
from collections import deque

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamSource

from opengse.sim.cocotb_util import random_pause, reset_dut
from opengse.sim.gse_scapy import GSE, GSE_ETHERTYPE
from opengse.sim.soak import (
    HostileFrames,
    ProgressWatchdog,
    ReasonTally,
    assert_quiet,
    check_conservation,
    soak_inputs,
)
from opengse.sim.valid_ready import FieldStreamSink

FIELDS = ("type", "flags", "tc", "tenant", "src_node", "dst_node", "port", "ttl", "seq", "len", "dgsq")
COUNTERS = ("ctl", "drop_other", "drop_malformed", "drop_err")
DEBUG = bool(os.environ.get("SOAK_DEBUG"))
DROPS = ("drop_other", "drop_malformed", "drop_err")
RETURN_FRAMES = 8  # good frames after the soak (the full return)


def decode_reference(h):
    """``(counter, fields or None)`` for a :class:`~opengse.sim.soak.Hostile` frame; the
    decoder counts a beat's bytes by its set ``tkeep`` bits (the sink's view)."""
    raw, n = h.counted, len(h.seen)
    if h.bad:
        return "drop_err", None
    is_gse = n >= 14 and int.from_bytes(raw[12:14], "big") == GSE_ETHERTYPE
    if n < 32:
        return ("drop_malformed" if is_gse else "drop_other"), None
    if not is_gse:
        return "drop_other", None
    g = GSE(raw[14:32])
    if g.ver != 1 or g.type > 3 or g.ttl == 0:
        return "drop_malformed", None
    if g.type in (0, 3):
        return "drop_other", None
    return "ctl", {k: int(getattr(g, k)) for k in FIELDS}


@cocotb.test()
async def test_ctl_decoder_soak(dut):
    n = soak_inputs()
    rng = random.Random(1804)
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
    sink = FieldStreamSink(dut, "m_ctl", dut.clk, fields=FIELDS)
    source.set_pause_generator(random_pause(rng, 0.2))
    sink.set_pause_generator(random_pause(rng, 0.4))
    await reset_dut(dut)

    gen = HostileFrames(rng, 8, hostile=0.6)
    expected = deque()
    sent = ReasonTally(COUNTERS)
    wd = ProgressWatchdog(dut.clk, limit=20_000)
    wd.watch(
        "s_axis",
        dut.s_axis_tvalid,
        dut.s_axis_tready,
        "accepted",
        lambda: source.count() + (not source.idle()),
    )
    wd.watch("m_ctl", dut.m_ctl_valid, dut.m_ctl_ready, "produced", lambda: len(expected))
    wd.start()
    checked = 0

    def drain():
        nonlocal checked
        while not sink.empty():
            got = sink.recv_nowait()
            assert expected, f"an m_ctl entry out of nothing after {checked}: {got}"
            i, label, want = expected.popleft()
            assert got == want, f"frame {i} ({label}): m_ctl {got} != {want}"
            checked += 1

    async def offer(i, h):
        counter, fields = decode_reference(h)
        sent.add(counter)
        if fields is not None:
            expected.append((i, h.label, fields))
        if source.count() >= 16:
            await wd.wait(lambda: source.count() < 16, "room in the s_axis queue")
        source.send_nowait(h.frame)
        drain()
        if DEBUG:
            await wd.wait(lambda: source.idle(), "idle")
            for _ in range(4):
                await RisingEdge(dut.clk)
            total = sum(int(getattr(dut, f"stat_{c}").value) for c in COUNTERS)
            assert total == i + 1, (
                f"frame {i} ({h.label}, {len(h.frame.tdata)} B) counted nowhere ({counter} expected)"
            )

    async def settle(total, what):
        while expected:
            await wd.wait(lambda: not sink.empty(), f"entry of frame {expected[0][0]} on m_ctl")
            drain()
        await wd.wait(lambda: source.idle(), "s_axis to take every frame")
        await assert_quiet(dut.clk, {"m_ctl": dut.m_ctl_valid}, 200, what)
        drain()
        assert sink.empty(), f"{what}: m_ctl entries left over"
        counters = {c: int(getattr(dut, f"stat_{c}").value) for c in COUNTERS}
        check_conservation(total, counters["ctl"], counters, sent.counts, DROPS)

    for i in range(n):
        h = gen.fabric()
        if h.label.startswith("data") and rng.random() < 0.5:
            h = gen.shape(gen.gse(42, type=rng.choice((1, 2))), "ctl")  # more good control frames
        await offer(i, h)
    await settle(n, "after the soak")
    # Full return: good REQUEST/GRANT frames after the hostile run decode as after a reset.
    for i in range(n, n + RETURN_FRAMES):
        await offer(i, gen.shape(gen.gse(42, type=1 + i % 2), "return_ctl"))
    await settle(n + RETURN_FRAMES, "after the return frames")
    dut._log.info(
        "ctl decoder soak: %d frames (+%d good ones after), %d entries; %s",
        n,
        RETURN_FRAMES,
        checked,
        sent.table(),
    )
