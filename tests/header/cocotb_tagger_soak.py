"""Soak of GSETagger (opengse.sim.soak): N hostile host frames (spoofed GSE EtherType,
runts of 1-13 bytes, bad frames, spoof+bad and runt+bad, tuser on an earlier beat only,
a last beat with tkeep 0 or with holes, 1 B to 10 kB) with one s_hdr entry each, under
random idle cycles and back-pressure; every frame checked against the reference tagging
(the brief's byte table), every counter exact, delivered + drops == sent, a progress
watchdog on s_axis and m_axis, and no s_hdr entry left over at the end. Full return
(the tagger has no free counts): no output valid for 200 clocks after the last expected
frame, then good frames tagged exactly and counted as frames only."""

import random
from collections import deque

import cocotb
from cocotb.clock import Clock
from cocotbext.axi import AxiStreamBus, AxiStreamSink, AxiStreamSource

from opengse.sim.cocotb_util import random_pause, reset_dut
from opengse.sim.gse_scapy import GSE_ETHERTYPE
from opengse.sim.runner import test_params
from opengse.sim.soak import (
    HostileFrames,
    ProgressWatchdog,
    ReasonTally,
    assert_quiet,
    check_conservation,
    gse_header,
    soak_inputs,
)
from opengse.sim.traffic import random_tag_fields
from opengse.sim.valid_ready import FieldStreamSource

HDR_FIELDS = ("type", "flags", "tc", "tenant", "src_node", "dst_node", "port", "ttl", "seq", "len", "dgsq")
COUNTERS = ("frames", "drop_spoof", "drop_runt", "err_frame")
DROPS = ("drop_spoof", "drop_runt")
RETURN_FRAMES = 8  # good frames after the soak (the full return)


def last_user(frame):
    return frame.tuser[-1] if isinstance(frame.tuser, list) else int(frame.tuser or 0)


@cocotb.test()
async def test_tagger_soak(dut):
    n = soak_inputs()
    width = test_params()["data_width"] // 8
    rng = random.Random(1802 + width)
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
    sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst)
    hdr = FieldStreamSource(dut, "s_hdr", dut.clk, HDR_FIELDS)
    source.set_pause_generator(random_pause(rng, 0.2))
    hdr.set_pause_generator(random_pause(rng, 0.2))
    sink.set_pause_generator(random_pause(rng, 0.2))
    await reset_dut(dut)

    gen = HostileFrames(rng, width)
    expected = deque()
    sent = ReasonTally(COUNTERS)
    checked = 0
    wd = ProgressWatchdog(dut.clk, limit=20_000)
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
            got = sink.recv_nowait()
            assert expected, f"a frame out of nothing after {checked} frames"
            i, label, out, bad = expected.popleft()
            where = f"frame {i} ({label}, {len(out)} B)"
            assert bytes(got.tdata) == out, (
                f"{where}: data differs\n{bytes(got.tdata)[:64].hex()}\n{out[:64].hex()}"
            )
            assert last_user(got) == int(bad), f"{where}: tuser {last_user(got)} != {int(bad)}"
            checked += 1

    async def offer(i, h):
        fields = random_tag_fields(rng, len(h.counted))
        if len(h.counted) < 14:
            sent.add("drop_runt")
        elif int.from_bytes(h.counted[12:14], "big") == GSE_ETHERTYPE:
            sent.add("drop_spoof")
        else:
            sent.add("frames")
            if h.bad:
                sent.add("err_frame")
            s = h.seen
            out = (
                s[:12]
                + GSE_ETHERTYPE.to_bytes(2, "big")
                + gse_header(next_type=int.from_bytes(s[12:14], "big"), **fields)
                + s[14:]
            )
            expected.append((i, h.label, out, h.bad))
        if source.count() >= 16:
            await wd.wait(lambda: source.count() < 16, "room in the s_axis queue")
        source.send_nowait(h.frame)
        hdr.send(fields)
        drain()

    async def settle(total, what):
        while expected:
            await wd.wait(lambda: not sink.empty(), f"frame {expected[0][0]} on m_axis")
            drain()
        await wd.wait(lambda: source.idle(), "s_axis to take every frame")
        await assert_quiet(dut.clk, {"m_axis": dut.m_axis_tvalid}, 200, what)
        drain()
        assert sink.empty(), f"{what}: output left over after the expected frames"
        await hdr.wait()  # every s_hdr entry consumed (bounded: fails naming s_hdr)
        counters = {c: int(getattr(dut, f"stat_{c}").value) for c in COUNTERS}
        check_conservation(total, counters["frames"], counters, sent.counts, DROPS)

    for i in range(n):
        await offer(i, gen.host())
    await settle(n, "after the soak")
    # Full return: good frames after the hostile run are tagged as after a reset.
    for i in range(n, n + RETURN_FRAMES):
        await offer(i, gen.shape(gen.plain(gen.size()), "return_plain"))
    await settle(n + RETURN_FRAMES, "after the return frames")
    dut._log.info(
        "tagger soak: %d frames (+%d good ones after), %d delivered; counters %s; made: %s",
        n,
        RETURN_FRAMES,
        checked,
        {c: int(getattr(dut, f"stat_{c}").value) for c in COUNTERS},
        gen.made,
    )
