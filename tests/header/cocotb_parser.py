"""cocotb bench for GSEParser: scapy-built GSE frames of every size class, control
frames and plain Ethernet frames, with every malformed reason mixed in randomly,
random back-pressure on data and header outputs and idle cycles on the input."""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from opengse.sim.cocotb_util import random_pause, reset_dut
from opengse.sim.gse_scapy import control_frame, tag
from opengse.sim.parser_model import HDR_FIELDS, parse_reference
from opengse.sim.runner import test_params
from opengse.sim.traffic import frame_sizes, random_frame
from opengse.sim.valid_ready import FieldStreamSink

SIDE_FIELDS = HDR_FIELDS + ("gse", "eth_dst", "eth_src", "eth_type")
COUNTERS = ("frames", "other", "drop_runt", "drop_ver", "drop_type", "drop_ttl", "err_len", "err_frame")


class TB:
    def __init__(self, dut, seed=1):
        self.dut = dut
        self.params = test_params()
        self.width = self.params["data_width"]
        self.strip = bool(self.params["strip"])
        self.rng = random.Random(seed)
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst)
        self.hdr = FieldStreamSink(dut, "m_hdr", dut.clk, SIDE_FIELDS)

    async def reset(self):
        await reset_dut(self.dut)

    def set_pauses(self, p_in, p_out):
        self.source.set_pause_generator(random_pause(self.rng, p_in) if p_in else None)
        self.sink.set_pause_generator(random_pause(self.rng, p_out) if p_out else None)
        self.hdr.set_pause_generator(random_pause(self.rng, p_out) if p_out else None)

    def gse_fields(self, **over):
        r = self.rng
        f = {
            "type": 0,
            "flags": r.randrange(8),
            "tc": r.randrange(8),
            "tenant": r.randrange(4096),
            "src_node": r.randrange(65536),
            "dst_node": r.randrange(65536),
            "port": r.randrange(256),
            "ttl": r.randrange(1, 256),
            "seq": r.randrange(65536),
            "dgsq": r.randrange(65536),
        }
        f.update(over)
        return f

    def make_frame(self, size, plain=True):
        """A random frame and whether the MAC marks it bad, every malformed reason mixed in."""
        r = self.rng
        k = r.random()
        while not plain and 0.55 <= k < 0.67:
            k = r.random()
        bad = r.random() < 0.05
        if k < 0.45:  # good DATA frame
            orig = random_frame(r, max(60, size - 18))
            return tag(orig, **self.gse_fields(len=len(orig))), bad
        if k < 0.55:  # control frame
            fields = self.gse_fields(len=r.randrange(65536))
            del fields["type"]
            return control_frame(r.choice(["REQUEST", "GRANT", "PROBE"]), **fields), bad
        if k < 0.67:  # plain Ethernet
            return random_frame(r, size), bad
        if k < 0.72:  # wrong version
            raw = bytearray(tag(random_frame(r, 60), **self.gse_fields(len=60)))
            raw[14] = (r.choice([0, 2, 3, 15]) << 4) | (raw[14] & 15)
            return bytes(raw), bad
        if k < 0.77:  # reserved type
            return tag(random_frame(r, 60), **self.gse_fields(type=r.randrange(4, 16), len=60)), bad
        if k < 0.82:  # ttl 0
            return tag(random_frame(r, 60), **self.gse_fields(ttl=0, len=60)), bad
        if k < 0.87:  # runt: no full Ethernet header
            return bytes(r.randrange(256) for _ in range(r.randint(1, 13))), bad
        if k < 0.92:  # runt: GSE header cut short
            raw = tag(random_frame(r, 60), **self.gse_fields(len=60))
            return raw[: r.randint(14, 31)], bad
        orig = random_frame(r, max(60, size - 18))  # DATA with a wrong len
        wrong = (len(orig) + r.choice([-1, 1, 7, -60, 1000])) % 65536
        return tag(orig, **self.gse_fields(len=wrong)), bad

    async def counters(self):
        await RisingEdge(self.dut.clk)
        return {n: int(getattr(self.dut, f"stat_{n}").value) for n in COUNTERS}


async def check_header_first(dut):
    """Each frame's header is offered no later than the frame's first beat, unless the
    header port is still offering an earlier frame's header (the consumer holds it)."""
    presented = frames = 0  # headers handed over or on offer; frames started
    in_frame = False
    while True:
        await RisingEdge(dut.clk)
        offered = presented + int(dut.m_hdr_valid.value)
        if int(dut.m_axis_tvalid.value) and not in_frame:
            busy = int(dut.m_hdr_valid.value) and offered == frames
            assert offered > frames or busy, f"frame {frames}: first beat before its header"
        if int(dut.m_axis_tvalid.value) and int(dut.m_axis_tready.value):
            if not in_frame:
                frames += 1
            in_frame = not int(dut.m_axis_tlast.value)
        if int(dut.m_hdr_valid.value) and int(dut.m_hdr_ready.value):
            presented += 1


def last_user(frame):
    return frame.tuser[-1] if isinstance(frame.tuser, list) else int(frame.tuser or 0)


async def run_mix(dut, count, p_in, p_out, seed):
    tb = TB(dut, seed)
    tb.set_pauses(p_in, p_out)
    await tb.reset()
    cocotb.start_soon(check_header_first(dut))
    big_share = 0.1 if tb.width >= 32 else 0.02  # every size class at any width; fewer big ones at 8 bits
    expected = []
    stats = {n: 0 for n in COUNTERS}
    for size in frame_sizes(tb.rng, count, big_share=big_share):
        raw, bad = tb.make_frame(size)
        tb.source.send_nowait(AxiStreamFrame(raw, tuser=([0] * (len(raw) - 1) + [1]) if bad else 0))
        ref = parse_reference(raw, bad, strip=tb.strip)
        if ref[0] == "drop":
            stats[f"drop_{ref[1]}"] += 1
        else:
            _, out, hdr, err, reasons, kind = ref
            stats[kind] += 1
            for reason in reasons:
                stats[f"err_{reason}"] += 1
            expected.append((out, hdr, err))
    for i, (out, hdr, err) in enumerate(expected):
        got = await tb.sink.recv()
        got_hdr = await tb.hdr.recv()
        assert got_hdr == hdr, f"frame {i}: header {got_hdr} != {hdr}"
        assert bytes(got.tdata) == out, f"frame {i}: data differs\n{bytes(got.tdata).hex()}\n{out.hex()}"
        assert last_user(got) == int(err), f"frame {i}: tuser {last_user(got)} != {int(err)}"
    for _ in range(100):
        await RisingEdge(dut.clk)
    assert tb.sink.empty() and tb.hdr.empty(), "output left over after the expected frames"
    assert await tb.counters() == stats


@cocotb.test()
async def test_parse_mix(dut):
    """Valid, control, plain and malformed frames, no back-pressure."""
    await run_mix(dut, 120, 0, 0, seed=11)


@cocotb.test()
async def test_parse_backpressure(dut):
    """The same mix with random idle cycles and back-pressure on both outputs."""
    await run_mix(dut, 160, 0.3, 0.4, seed=12)


@cocotb.test()
async def test_never_stalls_input(dut):
    """With outputs always ready, the input is accepted every cycle, drops included.

    GSE frames only: with ``strip``, a plain frame right after a GSE frame whose end
    left a beat over waits one cycle (docs/header-blocks.md)."""
    tb = TB(dut, 13)
    await tb.reset()
    frames = []
    for size in [60, 64, 65, 1500, 60, 61, 200] * 3:
        raw, _bad = tb.make_frame(size, plain=not tb.strip)
        frames.append(raw)
    for raw in frames:
        tb.source.send_nowait(AxiStreamFrame(raw))
    width = tb.width // 8
    in_beats = sum(-(-len(f) // width) for f in frames)
    seen = cycles = 0
    while seen < in_beats:
        await RisingEdge(dut.clk)
        if int(dut.s_axis_tvalid.value):
            cycles += 1
            seen += int(dut.s_axis_tready.value)
    assert cycles == in_beats, f"input stalled {cycles - in_beats} cycles over {in_beats} beats"
    for _ in range(100):
        await RisingEdge(dut.clk)
    while not tb.sink.empty():
        await tb.sink.recv()
        await tb.hdr.recv()
    assert tb.hdr.empty()
