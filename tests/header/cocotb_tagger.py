"""cocotb bench for GSETagger: scapy reference tagging, random back-pressure,
idle cycles, spoofed, runt and bad frames mixed into valid traffic."""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from scapy.layers.l2 import Ether

from opengse.sim.cocotb_util import random_pause, reset_dut
from opengse.sim.gse_scapy import GSE, GSE_ETHERTYPE, tag
from opengse.sim.runner import test_params
from opengse.sim.traffic import random_tag_fields, frame_sizes, random_frame
from opengse.sim.valid_ready import FieldStreamSource

HDR_FIELDS = ("type", "flags", "tc", "tenant", "src_node", "dst_node", "port", "ttl", "seq", "len", "dgsq")


class TB:
    def __init__(self, dut, seed=1):
        self.dut = dut
        self.params = test_params()
        self.width = self.params["data_width"]
        self.rng = random.Random(seed)
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst)
        self.hdr = FieldStreamSource(dut, "s_hdr", dut.clk, HDR_FIELDS)

    async def reset(self):
        await reset_dut(self.dut)

    def set_pauses(self, p_in, p_out):
        self.source.set_pause_generator(random_pause(self.rng, p_in) if p_in else None)
        self.hdr.set_pause_generator(random_pause(self.rng, p_in) if p_in else None)
        self.sink.set_pause_generator(random_pause(self.rng, p_out) if p_out else None)

    def random_header(self, frame_len):
        return random_tag_fields(self.rng, frame_len)

    def send(self, raw, hdr, bad=False):
        frame = AxiStreamFrame(raw, tuser=([0] * (len(raw) - 1) + [1]) if bad else 0)
        self.source.send_nowait(frame)
        self.hdr.send(hdr)

    async def counters(self):
        await RisingEdge(self.dut.clk)
        return {
            n: int(getattr(self.dut, f"stat_{n}").value)
            for n in ("frames", "drop_spoof", "drop_runt", "err_frame")
        }


def last_user(frame):
    return frame.tuser[-1] if isinstance(frame.tuser, list) else int(frame.tuser or 0)


async def run_mix(dut, count, p_in, p_out, seed, malformed=True):
    tb = TB(dut, seed)
    tb.set_pauses(p_in, p_out)
    await tb.reset()
    big_share = 0.1 if tb.width >= 32 else 0.02  # every size class at any width; fewer big ones at 8 bits
    expected = []
    stats = {"frames": 0, "drop_spoof": 0, "drop_runt": 0, "err_frame": 0}
    for size in frame_sizes(tb.rng, count, big_share=big_share):
        kind = tb.rng.random() if malformed else 1.0
        if kind < 0.08:  # spoofing: already GSE-tagged
            raw = random_frame(tb.rng, size, ethertype=GSE_ETHERTYPE)
            tb.send(raw, tb.random_header(size))
            stats["drop_spoof"] += 1
        elif kind < 0.14:  # runt: ends before the EtherType
            raw = bytes(tb.rng.randrange(256) for _ in range(tb.rng.randint(1, 13)))
            tb.send(raw, tb.random_header(len(raw)), bad=tb.rng.random() < 0.5)
            stats["drop_runt"] += 1
        else:
            raw = random_frame(tb.rng, size)
            bad = kind < 0.2
            hdr = tb.random_header(size)
            tb.send(raw, hdr, bad=bad)
            fields = dict(hdr)
            expected.append((tag(raw, **fields), bad, hdr, raw))
            stats["frames"] += 1
            stats["err_frame"] += bad
    for want, bad, hdr, raw in expected:
        got = await tb.sink.recv()
        assert bytes(got.tdata) == want, (
            f"tagged frame differs (len {len(got.tdata)} vs {len(want)}):\n"
            f"{bytes(got.tdata).hex()}\n{want.hex()}"
        )
        # And scapy dissects what the RTL built into the fields it was given.
        gse = Ether(bytes(got.tdata))[GSE]
        assert {k: int(getattr(gse, k)) for k in HDR_FIELDS} == hdr
        assert gse.ver == 1 and gse.next_type == int.from_bytes(raw[12:14], "big")
        assert last_user(got) == int(bad), "tuser on the last beat must carry the frame error"
    await tb.hdr.wait()
    for _ in range(50):
        await RisingEdge(dut.clk)
    assert tb.sink.empty(), "frames left over after the expected ones"
    assert await tb.counters() == stats


@cocotb.test()
async def test_tag_all_sizes(dut):
    """Every size class, no back-pressure, no errors."""
    await run_mix(dut, 30, 0, 0, seed=1, malformed=False)


@cocotb.test()
async def test_backpressure_and_malformed(dut):
    """Random idle cycles and back-pressure, spoofed/runt/bad frames mixed in."""
    await run_mix(dut, 120, 0.3, 0.3, seed=2)


@cocotb.test()
async def test_line_rate(dut):
    """Back-to-back frames with no pauses: the output never idles inside a burst."""
    tb = TB(dut, 3)
    await tb.reset()
    sizes = [60, 64, 65, 1500] * 3
    frames = [random_frame(tb.rng, s) for s in sizes]
    hdrs = [tb.random_header(len(raw)) for raw in frames]
    for raw, hdr in zip(frames, hdrs):
        tb.send(raw, hdr)
    width = tb.width // 8
    out_beats = sum(-(-(len(f) + 18) // width) for f in frames)
    # Count cycles from the first output beat to the last.
    busy = cycles = 0
    started = False
    while busy < out_beats:
        await RisingEdge(dut.clk)
        if int(dut.m_axis_tvalid.value) and int(dut.m_axis_tready.value):
            started = True
            busy += 1
        if started:
            cycles += 1
    assert cycles == out_beats, f"{cycles - out_beats} bubbles in {out_beats} output beats"
    for raw, hdr in zip(frames, hdrs):
        got = await tb.sink.recv()
        assert bytes(got.tdata) == tag(raw, **hdr)
    assert tb.sink.empty()
