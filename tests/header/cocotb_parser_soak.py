"""Soak of GSEParser (opengse.sim.soak): N hostile fabric frames (every malformed reason
alone and combined, tuser errors, odd tkeep on a last beat, 1 B to 10 kB) under random
idle cycles and back-pressure; every frame checked against the scapy reference, every
counter exact, delivered + drops == sent, and a progress watchdog on both streams."""

import random
from collections import deque

import cocotb
from cocotb.clock import Clock
from cocotbext.axi import AxiStreamBus, AxiStreamSink, AxiStreamSource

from opengse.sim.cocotb_util import LastBeatUser, random_pause, reset_dut
from opengse.sim.parser_model import HDR_FIELDS, parse_reference
from opengse.sim.runner import test_params
from opengse.sim.soak import (
    HostileFrames,
    ProgressWatchdog,
    ReasonTally,
    assert_quiet,
    check_conservation,
    soak_inputs,
)
from opengse.sim.valid_ready import FieldStreamSink

SIDE_FIELDS = HDR_FIELDS + ("gse", "eth_dst", "eth_src", "eth_type")
COUNTERS = ("frames", "other", "drop_runt", "drop_ver", "drop_type", "drop_ttl", "err_len", "err_frame")
DROPS = ("drop_runt", "drop_ver", "drop_type", "drop_ttl")
RETURN_FRAMES = 8  # good frames after the soak (the full return)


@cocotb.test()
async def test_parser_soak(dut):
    await run_soak(dut, soak_inputs())


@cocotb.test()
async def test_parser_soak_stuck(dut):
    """A deliberately stuck consumer: m_axis_tready held low. The watchdog must fail
    this test ("no beat produced on m_axis for 2000 clocks"); tests/header/
    test_parser_soak.py runs it alone and checks that it failed so."""
    await run_soak(dut, 200, stuck=True, limit=2000)


def _never():
    while True:
        yield True


async def run_soak(dut, n, stuck=False, limit=20_000):
    params = test_params()
    width, strip = params["data_width"] // 8, bool(params["strip"])
    rng = random.Random(1800 + width + strip)
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
    sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst)
    hdr = FieldStreamSink(dut, "m_hdr", dut.clk, SIDE_FIELDS)
    last_user = LastBeatUser(dut, "m_axis", dut.clk)  # the sink loses a tkeep-0 beat's tuser
    source.set_pause_generator(random_pause(rng, 0.2))
    sink.set_pause_generator(_never() if stuck else random_pause(rng, 0.2))
    hdr.set_pause_generator(random_pause(rng, 0.2))
    await reset_dut(dut)

    gen = HostileFrames(rng, width)
    expected = deque()  # (index, label, out bytes, header, err)
    sent = ReasonTally(COUNTERS)
    got_frames, got_hdrs = deque(), deque()
    checked = 0

    wd = ProgressWatchdog(dut.clk, limit=limit)
    wd.watch(
        "s_axis",
        dut.s_axis_tvalid,
        dut.s_axis_tready,
        "accepted",
        lambda: source.count() + (not source.idle()),
    )
    wd.watch("m_axis", dut.m_axis_tvalid, dut.m_axis_tready, "produced", lambda: len(expected))
    wd.start()

    def drain():
        nonlocal checked
        while not sink.empty():
            got_frames.append(sink.recv_nowait())
        while not hdr.empty():
            got_hdrs.append(hdr.recv_nowait())
        while got_frames and got_hdrs and len(last_user):
            got, got_hdr = got_frames.popleft(), got_hdrs.popleft()
            assert expected, f"a frame out of nothing after {checked} frames: {bytes(got.tdata)[:32].hex()}"
            i, label, out, want_hdr, err = expected.popleft()
            where = f"frame {i} ({label}, {len(out)} B)"
            assert got_hdr == want_hdr, f"{where}: header {got_hdr} != {want_hdr}"
            assert bytes(got.tdata) == out, (
                f"{where}: data differs\n{bytes(got.tdata)[:64].hex()}\n{out[:64].hex()}"
            )
            user = last_user.pop()
            assert user == int(err), f"{where}: tuser {user} != {int(err)}"
            checked += 1

    async def offer(i, h):
        ref = parse_reference(h.counted, h.bad, strip=strip)
        if ref[0] == "drop":
            sent.add(f"drop_{ref[1]}")
        else:
            _, _out, want_hdr, err, reasons, kind = ref
            sent.add(kind)
            for reason in reasons:
                sent.add(f"err_{reason}")
            # What the sink sees: the kept bytes, untagged when stripping.
            out = parse_reference(h.seen, h.bad, strip=strip)[1] if h.keep_odd else ref[1]
            expected.append((i, h.label, out, want_hdr, err))
        if source.count() >= 16:
            await wd.wait(lambda: source.count() < 16, "room in the s_axis queue")
        source.send_nowait(h.frame)
        drain()

    async def settle(total, what):
        while expected:
            await wd.wait(
                lambda: not sink.empty() or not hdr.empty() or (got_frames and got_hdrs and len(last_user)),
                f"frame {expected[0][0]} on m_axis",
            )
            drain()
        await wd.wait(lambda: source.idle(), "s_axis to take every frame")
        await assert_quiet(dut.clk, {"m_axis": dut.m_axis_tvalid, "m_hdr": dut.m_hdr_valid}, 200, what)
        drain()
        assert sink.empty() and hdr.empty() and not got_frames and not got_hdrs, (
            f"{what}: output left over after the expected frames"
        )
        counters = {c: int(getattr(dut, f"stat_{c}").value) for c in COUNTERS}
        check_conservation(total, counters["frames"] + counters["other"], counters, sent.counts, DROPS)

    for i in range(n):
        await offer(i, gen.fabric())
    await settle(n, "after the soak")
    # Full return: good DATA frames after the hostile run are parsed as after a reset.
    for i in range(n, n + RETURN_FRAMES):
        await offer(i, gen.shape(gen.gse(gen.size(), type=0), "return_data"))
    await settle(n + RETURN_FRAMES, "after the return frames")
    dut._log.info(
        "parser soak: %d frames (+%d good ones after), %d delivered; counters %s; made: %s",
        n,
        RETURN_FRAMES,
        checked,
        {c: int(getattr(dut, f"stat_{c}").value) for c in COUNTERS},
        gen.made,
    )
