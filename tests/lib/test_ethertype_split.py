"""EtherTypeSplit (rtl/lib/ethertype_split.py) in Amaranth's simulator: random frames of
random EtherTypes and lengths (runts of 1..13 bytes, whose EtherType is cut off, among
them), random idle cycles on the input and random back-pressure on both outputs. Every
frame must leave whole, byte for byte, on the output its EtherType names (the model:
bytes 12..13 present and equal to the split's EtherType), in input order per output,
with its ``tuser`` bits; and at full rate with both outputs ready it moves one beat per
clock."""

import random

import pytest
from amaranth.sim import Simulator

from opengse.rtl.lib.ethertype_split import EtherTypeSplit
from opengse.sim.sim_stream import beats, send_frame, take_beat

ETHERTYPE = 0x88B6
CYCLE_LIMIT = 200_000


def frames(rng, n):
    out = []
    for i in range(n):
        length = rng.choice([rng.randint(1, 13), 14, rng.randint(15, 200)])
        etype = rng.choice([ETHERTYPE, 0x88B5, 0x0800, ETHERTYPE ^ 0x0100, ETHERTYPE ^ 0x0001])
        body = bytes(rng.getrandbits(8) for _ in range(length))
        data = (body[:12] + etype.to_bytes(2, "big") + body[14:])[:length]
        out.append((data, rng.getrandbits(1)))
    return out


def expected_output(data):
    return int(len(data) >= 14 and int.from_bytes(data[12:14], "big") == ETHERTYPE)


def run(data_width, frames_in, idle, stall):
    bpb = data_width // 8
    dut = EtherTypeSplit(ETHERTYPE, data_width, user_width=2)
    rng = random.Random(data_width)
    got = [[], []]
    clocks = {"source": 0}

    async def source(ctx):
        for data, bad in frames_in:
            clocks["source"] += await send_frame(ctx, dut.s_axis, data, bpb, rng, idle, user=bad | 2)
        ctx.set(dut.s_axis.valid, 0)

    async def sink(ctx):
        partial = [bytearray(), bytearray()]
        cycles = 0
        while sum(map(len, got)) < len(frames_in):
            cycles += 1
            assert cycles < CYCLE_LIMIT, f"only {sum(map(len, got))} of {len(frames_in)} frames left"
            for i in range(2):
                ctx.set(dut.m_axis[i].ready, int(rng.random() >= stall))
            moved = []
            for i in range(2):
                o = dut.m_axis[i]
                if ctx.get(o.valid) and ctx.get(o.ready):
                    moved.append((i, ctx.get(o.payload)))
            await ctx.tick()
            for i, payload in moved:
                frame = take_beat(partial[i], payload, bpb)
                if frame is not None:
                    got[i].append((frame, int(payload.user)))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(source)
    sim.add_testbench(sink)
    sim.run()
    return got, clocks


@pytest.mark.parametrize("data_width", [8, 64, 256])
def test_ethertype_split_steers_whole_frames(data_width):
    rng = random.Random(7 + data_width)
    frames_in = frames(rng, 120 if data_width > 8 else 60)
    got, _ = run(data_width, frames_in, idle=0.2, stall=0.3)
    want = [[], []]
    for data, bad in frames_in:
        want[expected_output(data)].append((data, bad | 2))
    assert want[1] and want[0], "the frames exercise both outputs"
    assert got == want


def test_ethertype_split_full_rate():
    """Both outputs always ready, the input never idle: one beat per clock, the source
    never refused (as many clocks as beats)."""
    rng = random.Random(3)
    frames_in = frames(rng, 60)
    n_beats = sum(len(list(beats(d, 8))) for d, _ in frames_in)
    got, clocks = run(64, frames_in, idle=0.0, stall=0.0)
    assert sum(map(len, got)) == len(frames_in) and clocks["source"] == n_beats, (clocks, n_beats)


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
def test_ethertype_split_bad_parameters():
    with pytest.raises(ValueError, match="16-bit"):
        EtherTypeSplit(0x10000)
    with pytest.raises(ValueError, match="power of two"):
        EtherTypeSplit(ETHERTYPE, data_width=48)
