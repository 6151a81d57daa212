"""TxFrameStore in Amaranth's simulator, against a plain model of store and forward:
every word leaves once and in order; a frame that fits starts only after its last word
came in, and then leaves without a gap while the reader takes a word a clock; a frame
longer than the store goes out cut-through; the latency is two clocks."""

import random

import pytest
from amaranth.sim import Simulator

from opengse.rtl.mac.tx_store import TxFrameStore

WIDTH = 32


def _frames(rng, n, depth):
    """``n`` frames of 1..4 x depth words (some longer than the store), words numbered."""
    frames, k = [], 0
    for _ in range(n):
        length = rng.choice(
            [1, 2, 3, rng.randint(1, depth), rng.randint(1, depth), rng.randint(depth, 4 * depth)]
        )
        frames.append(list(range(k, k + length)))
        k += length
    return frames


def _run(depth, frames, p_in, p_out, seed, limit):
    rng = random.Random(seed)
    dut = TxFrameStore(WIDTH, depth)
    words = [(w, j == len(f) - 1) for f in frames for j, w in enumerate(f)]
    last_in = {}  # frame index -> clock its last word was taken
    out = []  # (clock, word, last, ready-run) per word taken on o
    valid_trace = []  # (clock, o.valid, o.ready)

    async def bench(ctx):
        i = 0
        clock = 0
        frame = 0
        while len(out) < len(words):
            assert clock < limit, f"TxFrameStore: {len(out)} of {len(words)} words out after {limit} clocks"
            if i < len(words):
                ctx.set(dut.i.payload.data, words[i][0])
                ctx.set(dut.i.payload.last, words[i][1])
                ctx.set(dut.i.valid, rng.random() < p_in)
            else:
                ctx.set(dut.i.valid, 0)
            ctx.set(dut.o.ready, rng.random() < p_out)
            _, _, i_v, i_r, o_v, o_r, data, last = await ctx.tick().sample(
                dut.i.valid, dut.i.ready, dut.o.valid, dut.o.ready, dut.o.payload.data, dut.o.payload.last
            )
            if i_v and i_r:
                if words[i][1]:
                    last_in[frame] = clock
                    frame += 1
                i += 1
            valid_trace.append((clock, o_v, o_r))
            if o_v and o_r:
                out.append((clock, data, last))
            clock += 1

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return words, last_in, out, valid_trace


@pytest.mark.parametrize(
    "depth,p_in,p_out,seed", [(16, 0.8, 0.7, 1), (32, 1.0, 1.0, 2), (8, 0.5, 0.9, 3), (4, 0.9, 0.3, 4)]
)
def test_store_and_forward_against_model(depth, p_in, p_out, seed):
    frames = _frames(random.Random(seed), 60, depth)
    words, last_in, out, trace = _run(depth, frames, p_in, p_out, seed, limit=40_000)
    assert [(d, bool(last)) for _, d, last in out] == [(w, last) for w, last in words]
    k = 0
    for f, frame in enumerate(frames):
        first_clock, last_clock = out[k][0], out[k + len(frame) - 1][0]
        if len(frame) <= depth:
            # store and forward: nothing of the frame before all of it was in
            assert first_clock > last_in[f], f"frame {f} ({len(frame)} words) started before its last word"
            # no gap once it started: o.valid stays high until its last word left
            gaps = [c for c, v, _ in trace[first_clock : last_clock + 1] if not v]
            assert not gaps, f"frame {f}: o.valid low at clocks {gaps} in the middle of the frame"
        k += len(frame)


def test_longer_than_the_store_goes_out_cut_through():
    """A frame of 3 x depth words, writer and reader always ready: its first word leaves
    before its last came in, and then a word a clock, as the writer brings them."""
    depth = 8
    frames = [list(range(3 * depth)), [100, 101]]
    words, last_in, out, trace = _run(depth, frames, 1.0, 1.0, 4, limit=500)
    assert [d for _, d, _ in out] == [w for w, _ in words]
    assert out[0][0] < last_in[0]
    gaps = [c for c, v, _ in trace[out[0][0] : out[3 * depth - 1][0] + 1] if not v]
    assert not gaps, f"cut-through frame: o.valid low at clocks {gaps}"


def test_latency_two_clocks():
    """Into an empty store with the reader ready, a one-word and a four-word frame each
    show their first word on o two clocks after their last word was taken."""
    depth = 16
    frames = [[7], [8, 9, 10, 11]]
    _, last_in, out, _ = _run(depth, frames, 1.0, 1.0, 5, limit=100)
    # out's clock is the clock the word was taken; it was on o since the clock before at
    # the earliest, and the reader is always ready, so that is when it appeared.
    assert out[0][0] - last_in[0] == 2
    assert out[1][0] - last_in[1] == 2
