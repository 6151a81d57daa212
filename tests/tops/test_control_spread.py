"""ControlSpread (rtl/tops/leaf/control_spread.py) in Amaranth's simulator: control
frames of random queue keys, random idle cycles on the input and random back-pressure
on every uplink, in phases of a fixed healthy set. Every frame must leave whole, byte
for byte, on its queue's uplink (the model, from the docstring's rule: the XOR of the
frame's ``dst_node`` and ``dgsq`` bytes folded to ceil(log2 U) bits, modulo U; if that
uplink is not healthy, the next healthy one in turn), in input order per uplink, so a
queue's frames keep their order; random keys use every healthy uplink; and with the
uplinks ready it moves one beat per clock."""

import random

import pytest
from amaranth.sim import Simulator

from opengse.rtl.tops.leaf.control_spread import ControlSpread
from opengse.sim.sim_stream import beats, send_frame, take_beat

CYCLE_LIMIT = 100_000
DST_NODE, DGSQ = (20, 21), (28, 29)  # frame bytes: Ethernet header + GSE header offsets


def control_frame(rng, dst_node, dgsq, length=60):
    data = bytearray(rng.getrandbits(8) for _ in range(length))
    data[12:14] = b"\x88\xb5"
    data[DST_NODE[0] : DST_NODE[1] + 1] = dst_node.to_bytes(2, "big")
    data[DGSQ[0] : DGSQ[1] + 1] = dgsq.to_bytes(2, "big")
    return bytes(data)


def model_uplink(data, uplinks, healthy):
    bits = max(1, (uplinks - 1).bit_length())
    h = 0
    for n in DST_NODE + DGSQ:
        for i in range(0, 8, bits):
            h ^= (data[n] >> i) & ((1 << bits) - 1)
    pref = h - uplinks if h >= uplinks else h  # h < 2**bits <= 2 U
    for step in range(uplinks):
        u = (pref + step) % uplinks
        if healthy >> u & 1:
            return u
    return None


def run(uplinks, phases, idle, stall, data_width=64):
    """``phases``: [(healthy, frames)]; each phase's frames leave before the next
    phase's healthy set applies. Returns the frames per uplink per phase, and the
    source's clocks."""
    bpb = data_width // 8
    dut = ControlSpread(data_width, uplinks)
    rng = random.Random(uplinks)
    got = [[[] for _ in range(uplinks)] for _ in phases]
    state = {"phase": 0, "source": 0, "left": 0}

    async def source(ctx):
        for p, (healthy, frames) in enumerate(phases):
            while state["phase"] != p:  # the previous phase has drained
                await ctx.tick()
            ctx.set(dut.healthy, healthy)
            state["left"] = len(frames)
            for data in frames:
                state["source"] += await send_frame(ctx, dut.s_axis, data, bpb, rng, idle)
            ctx.set(dut.s_axis.valid, 0)

    async def sink(ctx):
        partial = [bytearray() for _ in range(uplinks)]
        cycles = 0
        for p, (_healthy, frames) in enumerate(phases):
            n = 0
            while n < len(frames):
                cycles += 1
                assert cycles < CYCLE_LIMIT, f"phase {p}: only {n} of {len(frames)} frames left"
                for u in range(uplinks):
                    ctx.set(dut.m_axis[u].ready, int(rng.random() >= stall))
                moved = []
                for u in range(uplinks):
                    o = dut.m_axis[u]
                    if ctx.get(o.valid) and ctx.get(o.ready):
                        moved.append((u, ctx.get(o.payload)))
                await ctx.tick()
                for u, payload in moved:
                    frame = take_beat(partial[u], payload, bpb)
                    if frame is not None:
                        got[p][u].append(frame)
                        n += 1
            state["phase"] = p + 1

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(source)
    sim.add_testbench(sink)
    sim.run()
    return got, state["source"]


def keyed_frames(rng, n, keys):
    return [control_frame(rng, *rng.choice(keys)) for _ in range(n)]


@pytest.mark.parametrize("uplinks", [2, 3, 4])
def test_control_spread_keeps_each_queue_on_one_uplink(uplinks):
    rng = random.Random(11 + uplinks)
    keys = [(rng.randrange(1 << 16), rng.randrange(1 << 16)) for _ in range(24)]
    everyone = (1 << uplinks) - 1
    phases = [
        (everyone, keyed_frames(rng, 80, keys)),
        (everyone & ~1, keyed_frames(rng, 60, keys)),  # uplink 0 down: its queues move on
        (1 << (uplinks - 1), keyed_frames(rng, 30, keys)),  # only the last one healthy
    ]
    got, _ = run(uplinks, phases, idle=0.2, stall=0.3)
    for p, (healthy, frames) in enumerate(phases):
        want = [[] for _ in range(uplinks)]
        for data in frames:
            want[model_uplink(data, uplinks, healthy)].append(data)
        assert got[p] == want, f"phase {p} (healthy {healthy:#x})"
    used = [u for u in range(uplinks) if got[0][u]]
    assert used == list(range(uplinks)), f"all healthy: only uplinks {used} used"


def test_control_spread_full_rate():
    """Every uplink ready, the input never idle: one beat per clock."""
    rng = random.Random(5)
    frames = keyed_frames(rng, 50, [(rng.randrange(1 << 16), rng.randrange(1 << 16)) for _ in range(8)])
    n_beats = sum(len(list(beats(d, 8))) for d in frames)
    got, clocks = run(4, [(0xF, frames)], idle=0.0, stall=0.0)
    assert sum(map(len, got[0])) == len(frames) and clocks == n_beats, (clocks, n_beats)


def test_control_spread_one_uplink():
    """U = 1 (a leaf cabled straight to another leaf): every frame on uplink 0 in input
    order at one beat per clock; while uplink 0 is down nothing leaves (the frames wait,
    the input's ready falls) and all of them leave, in order, once it is back."""
    rng = random.Random(1)
    keys = [(rng.randrange(1 << 16), rng.randrange(1 << 16)) for _ in range(8)]
    frames = keyed_frames(rng, 30, keys)
    got, clocks = run(1, [(1, frames)], idle=0.0, stall=0.0)
    assert got[0] == [frames] and clocks == sum(len(list(beats(d, 8))) for d in frames)

    dut = ControlSpread(64, 1)
    held, out, waited = 200, [], []

    async def source(ctx):
        ctx.set(dut.healthy, 0)
        for data in frames[:10]:
            await send_frame(ctx, dut.s_axis, data, 8, rng, 0.2)
        ctx.set(dut.s_axis.valid, 0)

    async def sink(ctx):
        o, partial = dut.m_axis[0], bytearray()
        ctx.set(o.ready, 1)
        for _ in range(held):
            assert not ctx.get(o.valid), "a frame left with no healthy uplink"
            waited.append(ctx.get(dut.s_axis.valid) and not ctx.get(dut.s_axis.ready))
            await ctx.tick()
        ctx.set(dut.healthy, 1)
        for _ in range(CYCLE_LIMIT):
            if len(out) == 10:
                break
            payload = ctx.get(o.payload) if ctx.get(o.valid) else None
            await ctx.tick()
            if payload is not None and (frame := take_beat(partial, payload, 8)) is not None:
                out.append(frame)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(source)
    sim.add_testbench(sink)
    sim.run()
    assert any(waited), "the input never waited while uplink 0 was down"
    assert out == frames[:10]
