"""``gse bench tagger`` / ``gse bench parser``: throughput in Amaranth's Python
simulator and, optionally, ECP5 figures.

Throughput: back-to-back frames of each size in :data:`BENCH_SIZES`, ``s_axis`` valid
every cycle (and for the tagger ``s_hdr`` valid every cycle), ``m_axis`` / ``m_hdr``
always ready. Counted on the busier side of each block — the tagger's output (a
frame grows by 18 bytes) and the parser's input (it shrinks by 18 with ``strip``) —
as beats divided by the cycles from the first transfer to the last, inclusive; 1.0
is line rate with no bubble between frames. One simulation per width streams the
sizes' groups (6 frames of 60-65 B, 4 of 1500 B, 2 of 9000 B) back-to-back. The
tagger gets plain frames of the size; the parser gets valid tagged DATA frames of
that total size (strip=1).
"""

import random

from amaranth.sim import Simulator

from .gse_scapy import tag
from .traffic import random_frame

__all__ = ["BENCH_SIZES", "BENCH_WIDTHS", "measure", "bench"]

BENCH_SIZES = (60, 64, 65, 1500, 9000)
BENCH_WIDTHS = (64, 256)


def _frames(block, size, count, rng):
    """``count`` frames of ``size`` bytes as the block takes them."""
    if block == "tagger":
        return [random_frame(rng, size) for _ in range(count)]
    frames = []
    for _ in range(count):
        orig = random_frame(rng, size - 18)
        frames.append(tag(orig, type=0, ttl=64, len=len(orig), src_node=1, dst_node=2))
    return frames


def _beats(frame, nbytes):
    return [frame[i : i + nbytes] for i in range(0, len(frame), nbytes)]


def _count(size):
    return 2 if size >= 4000 else 4 if size >= 1000 else 6


def measure(block, data_width, sizes=BENCH_SIZES, seed=1):
    """``{size: beats per clock}``: one simulation of ``block`` at ``data_width``
    streaming a few frames of each size in ``sizes``, all back-to-back (a group per
    size, in order); each group is timed from its first counted beat to its last."""
    from opengse.rtl.catalog import get_block

    nbytes = data_width // 8
    rng = random.Random(seed)
    groups = [(size, _frames(block, size, _count(size), rng)) for size in sizes]
    frames = [f for _size, group in groups for f in group]
    params = {"data_width": data_width}
    if block == "parser":
        params["strip"] = 1
    dut = get_block(block).build(**params)
    grow = 18 if block == "tagger" else 0
    counted = dut.m_axis if block == "tagger" else dut.s_axis
    group_beats = [sum(-(-(len(f) + grow) // nbytes) for f in group) for _s, group in groups]
    expect = sum(group_beats)
    limit = 4 * expect + 200
    cycles_of_beat = []

    async def drive_frames(ctx):
        for frame in frames:
            chunks = _beats(frame, nbytes)
            for i, chunk in enumerate(chunks):
                ctx.set(dut.s_axis.payload.data, int.from_bytes(chunk, "little"))
                ctx.set(dut.s_axis.payload.keep, (1 << len(chunk)) - 1)
                ctx.set(dut.s_axis.payload.last, i == len(chunks) - 1)
                ctx.set(dut.s_axis.payload.user, 0)
                ctx.set(dut.s_axis.valid, 1)
                await ctx.tick().until(dut.s_axis.ready)
        ctx.set(dut.s_axis.valid, 0)

    async def drive_headers(ctx):
        for frame in frames:
            ctx.set(dut.s_hdr.payload.type, 0)
            ctx.set(dut.s_hdr.payload.ttl, 64)
            ctx.set(dut.s_hdr.payload.len, len(frame))
            ctx.set(dut.s_hdr.payload.dst_node, 2)
            ctx.set(dut.s_hdr.valid, 1)
            await ctx.tick().until(dut.s_hdr.ready)
        ctx.set(dut.s_hdr.valid, 0)

    async def count_beats(ctx):
        ctx.set(dut.m_axis.ready, 1)
        if block == "parser":
            ctx.set(dut.m_hdr.ready, 1)
        cycle = 0
        async for _clk, _rst, valid, ready in ctx.tick().sample(counted.valid, counted.ready):
            if valid and ready:
                cycles_of_beat.append(cycle)
            cycle += 1
            if len(cycles_of_beat) >= expect or cycle > limit:
                break

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(drive_frames)
    if block == "tagger":
        sim.add_testbench(drive_headers)
    sim.add_testbench(count_beats)
    sim.run()
    if len(cycles_of_beat) < expect:
        raise RuntimeError(
            f"{block} {data_width}b: only {len(cycles_of_beat)} of {expect} "
            f"beats in {limit} cycles (stalled?)"
        )
    out, start = {}, 0
    for (size, _group), n in zip(groups, group_beats):
        span = cycles_of_beat[start + n - 1] - cycles_of_beat[start] + 1
        out[size] = n / span
        start += n
    return out


def bench(block, seeds=(1, 2, 3), pnr=True):
    """Figures for ``block`` ("tagger" or "parser"): throughput by width and size, the
    worst of them as ``beats_per_clock``, and ECP5 figures at 64 bits if ``pnr``."""
    from .benchmark import LINE_RATE, Target, fmax_target, implement_block, no_pnr_figures, verdict

    if block not in ("tagger", "parser"):
        raise ValueError(f"bench_header covers the tagger and the parser, not {block!r}")
    by_size = {str(w): {str(s): round(v, 4) for s, v in measure(block, w).items()} for w in BENCH_WIDTHS}
    out = {
        "block": block,
        "beats_per_clock": min(v for per in by_size.values() for v in per.values()),
        "beats_per_clock_by_size": by_size,
    }
    if pnr:
        params = {"data_width": 64}
        if block == "parser":
            params["strip"] = 1
        out.update(implement_block(block, params, seeds=seeds))
    else:
        out.update(no_pnr_figures())
    out["note"], out["meets_targets"] = verdict(
        [
            Target("beats/clock (worst width and size)", out["beats_per_clock"], LINE_RATE),
            fmax_target("Fmax (MHz, 64-bit)", out),
        ]
    )
    return out
