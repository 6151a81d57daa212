"""IngressStore against a model: which frames it keeps, their descriptors, its counters."""

import random

import pytest
from amaranth.sim import Simulator

from opengse.rtl.tops.leaf.ingress_store import IngressStore
from opengse.sim.sim_stream import send_frame, take_beat


def _run(data_width, max_bytes, seed, nframes=40, depth=4096):
    bpb = data_width // 8
    rng = random.Random(seed)
    limit = max_bytes or 300
    sizes = [1, 5, 13, 14, 15, 16, 60, 64, 65, limit - 1, limit, limit + 1]
    frames = [
        (
            bytes(rng.randrange(256) for _ in range(rng.choice(sizes + [rng.randint(1, 700)]))),
            rng.random() < 0.1,
            k % 4,
        )
        for k in range(nframes)
    ]
    dut = IngressStore(depth, data_width, info_width=2, desc_depth=256, min_bytes=14, max_bytes=max_bytes)
    out, descs, stats, done = [], [], [], []

    async def source(ctx):
        r = random.Random(seed + 1)
        for data, bad, info in frames:
            ctx.set(dut.info, info)  # sampled at the last beat
            await send_frame(ctx, dut.s_axis, data, bpb, r, 0.2, user=int(bad))
        ctx.set(dut.s_axis.valid, 0)
        await ctx.tick().repeat(depth + 200)
        names = ("frames", "drop_overflow", "drop_bad", "drop_runt", "drop_long")
        stats.extend(ctx.get(getattr(dut, f"stat_{n}")) for n in names)
        done.append(1)

    async def sink(ctx):
        r, partial = random.Random(seed + 2), bytearray()
        while not done:
            ctx.set(dut.m_axis.ready, r.random() < 0.6)
            ctx.set(dut.m_desc.ready, r.random() < 0.5)
            _, _, a_valid, a_ready, beat, d_valid, d_ready, desc = await ctx.tick().sample(
                dut.m_axis.valid,
                dut.m_axis.ready,
                dut.m_axis.payload,
                dut.m_desc.valid,
                dut.m_desc.ready,
                dut.m_desc.payload,
            )
            if a_valid and a_ready and (frame := take_beat(partial, beat, bpb)) is not None:
                out.append(frame)
            if d_valid and d_ready:
                descs.append((desc.len, desc.info))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(source)
    sim.add_testbench(sink)
    sim.run()
    return frames, out, descs, stats


@pytest.mark.parametrize("data_width,max_bytes", [(64, 0), (64, 300), (32, 300), (8, 100)])
def test_ingress_store_model(data_width, max_bytes):
    frames, out, descs, stats = _run(data_width, max_bytes, seed=data_width + max_bytes)
    fits = [not max_bytes or len(f) <= max_bytes for f, _, _ in frames]
    keep = [(f, i) for (f, bad, i), ok in zip(frames, fits) if ok and not bad and len(f) >= 14]
    assert out == [f for f, _ in keep]
    assert descs == [(len(f), i) for f, i in keep]
    bad = sum(1 for (_, b, _), ok in zip(frames, fits) if ok and b)  # bad before runt
    runt = sum(1 for f, b, _ in frames if not b and len(f) < 14)
    assert stats == [len(keep), 0, bad, runt, fits.count(False)]
