"""cocotb bench for ReorderBuffer: containers of several sources arrive shuffled
within the window, with lost, duplicated, bad, oversize, orphan, runt and foreign
frames mixed in, random idle cycles on the input and random back-pressure on the
output; checked against sim/pktc_model.py's ReorderChecker and exact counters."""

import logging
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from opengse.sim.cocotb_util import random_pause, reset_dut
from opengse.sim.pktc_model import FIRST, LAST, PROBE, ReorderChecker, tagged_frame
from opengse.sim.runner import test_params

STATS = (
    "frames_in",
    "containers_out",
    "lost",
    "drop_dup",
    "drop_window",
    "drop_orphan",
    "drop_bad",
    "drop_runt",
    "drop_other",
)


class ReorderTB:
    def __init__(self, dut, seed):
        self.dut = dut
        self.p = test_params()
        self.rng = random.Random(seed)
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst)
        for x in (self.source, self.sink):
            x.log.setLevel(logging.WARNING)
        self.checker = ReorderChecker()
        self.expect_stats = {n: 0 for n in STATS}
        self.sent_containers = {}  # (src, seq) -> frames, for duplicates
        cocotb.start_soon(self._collect())

    async def reset(self):
        await reset_dut(self.dut)

    def set_pauses(self, p_in, p_out):
        self.source.set_pause_generator(random_pause(self.rng, p_in) if p_in else None)
        self.sink.set_pause_generator(random_pause(self.rng, p_out) if p_out else None)

    async def _collect(self):
        while True:
            fr = await self.sink.recv()
            self.checker.frame(fr.tdata)

    def container(self, src, seq, nframes=None, max_len=200):
        nframes = nframes or self.rng.randint(1, 3)
        frames = []
        for k in range(nframes):
            flags = (FIRST if k == 0 else 0) | (LAST if k == nframes - 1 else 0)
            frames.append(
                tagged_frame(
                    self.rng.randint(60, max_len), self.rng, src_node=src, dst_node=7, seq=seq, flags=flags
                )
            )
        return frames

    def send(self, frame, bad=False):
        tuser = ([0] * (len(frame) - 1) + [1]) if bad else 0
        self.source.send_nowait(AxiStreamFrame(frame, tuser=tuser))
        self.expect_stats["frames_in"] += 1

    def send_container(self, src, seq, frames, kind="good"):
        """kind: good (delivered), bad (a frame with tuser), dup (a copy), lost (not sent)."""
        if kind == "lost":
            self.expect_stats["lost"] += 1
            return
        if kind == "dup":
            self.expect_stats["drop_dup"] += len(frames)
        bad_at = self.rng.randrange(len(frames)) if kind == "bad" else None
        for k, fr in enumerate(frames):
            self.send(fr, bad=(k == bad_at))
        if kind == "bad":
            self.expect_stats["drop_bad"] += 1
        if kind == "good":
            self.checker.expect(src, seq, frames)
            self.sent_containers[(src, seq)] = frames

    async def wait_delivered(self, src, count, limit=200000):
        for _ in range(limit):
            if self.checker.delivered(src) >= count:
                return
            await RisingEdge(self.dut.clk)
        raise AssertionError(
            f"source {src}: {self.checker.delivered(src)} of {count} containers "
            f"delivered; stats {await self.stats()}"
        )

    async def wait_idle(self, cycles):
        while not self.source.empty() or self.source.active:
            await RisingEdge(self.dut.clk)
        for _ in range(cycles):
            await RisingEdge(self.dut.clk)

    async def stats(self):
        await RisingEdge(self.dut.clk)
        return {n: int(getattr(self.dut, f"stat_{n}").value) for n in STATS}

    async def finish(self):
        n_exp = {s: len(v) for s, v in self.checker.expected.items()}
        for s, n in n_exp.items():
            await self.wait_delivered(s, n)
        await self.wait_idle(3 * self.p["timeout"])
        errs = self.checker.check()
        assert not errs, "\n".join(errs[:20])
        assert self.sink.empty(), "frames left over in the sink"
        got = await self.stats()
        exp = dict(self.expect_stats)
        exp["containers_out"] = sum(n_exp.values())
        assert got == exp, f"counters: got {got}, expected {exp}"


async def source_stream(tb, src, ncont, p_lost, p_bad, p_dup, p_oversize, p_orphan):
    W = tb.p["window"]
    blk = max(1, W // 2)
    for start in range(0, ncont, blk):
        # the window: every container below start - blk must be released first
        need = sum(1 for (s, q) in tb.sent_containers if s == src and q < start - blk)
        await tb.wait_delivered(src, need)
        seqs = list(range(start, min(start + blk, ncont)))
        plan = {}
        for q in seqs:
            r = tb.rng.random()
            last_of_block = q == seqs[-1]
            if not last_of_block and r < p_lost:
                plan[q] = "lost"
            elif not last_of_block and r < p_lost + p_bad:
                plan[q] = "bad"
            elif not last_of_block and r < p_lost + p_bad + p_oversize:
                plan[q] = "oversize"
            else:
                plan[q] = "good"
        order = list(seqs)
        tb.rng.shuffle(order)
        for q in order:
            if plan[q] == "oversize":
                slot = tb.p["slot_bytes"]
                n = slot // 200 + 2
                frames = tb.container(src, q, nframes=n, max_len=200)
                while sum(len(f) for f in frames) <= slot:
                    frames = tb.container(src, q, nframes=n, max_len=200)
                for fr in frames:
                    tb.send(fr)
                tb.expect_stats["drop_bad"] += 1
                continue
            frames = tb.container(src, q)
            if plan[q] != "lost" and len(frames) > 1 and tb.rng.random() < p_orphan:
                # a middle/last frame ahead of its container's FIRST: an orphan
                tb.send(frames[-1])
                tb.expect_stats["drop_orphan"] += 1
            tb.send_container(src, q, frames, plan[q])
        # duplicates of earlier good containers
        if tb.rng.random() < p_dup:
            olds = [k for k in tb.sent_containers if k[0] == src]
            if olds:
                key = tb.rng.choice(olds)
                tb.send_container(src, key[1], tb.sent_containers[key], "dup")
        # foreign and runt frames
        if tb.rng.random() < 0.1:
            tb.send(tagged_frame(64, tb.rng, type=PROBE, src_node=src))
            tb.expect_stats["drop_other"] += 1
        if tb.rng.random() < 0.1:
            tb.send(bytes(tb.rng.getrandbits(8) for _ in range(tb.rng.randint(1, 31))))
            tb.expect_stats["drop_runt"] += 1
        if tb.rng.random() < 0.05:
            tb.send(tagged_frame(64, tb.rng, src_node=tb.p["sources"] + 3, seq=0, flags=FIRST | LAST))
            tb.expect_stats["drop_other"] += 1
        await RisingEdge(tb.dut.clk)


async def run_random(dut, seed, ncont, p_in, p_out, **probs):
    tb = ReorderTB(dut, seed)
    tb.set_pauses(p_in, p_out)
    await tb.reset()
    tasks = [cocotb.start_soon(source_stream(tb, s, ncont, **probs)) for s in range(tb.p["sources"])]
    for t in tasks:
        await t
    await tb.finish()


@cocotb.test()
async def test_in_order_no_pause(dut):
    """Shuffled within the window, nothing lost: everything in order, 1 beat/clock path."""
    await run_random(dut, 1, 40, 0.0, 0.0, p_lost=0, p_bad=0, p_dup=0, p_oversize=0, p_orphan=0)


@cocotb.test()
async def test_random_mix_backpressure(dut):
    """Loss (timeout skip), duplicates, bad/oversize containers, orphans, runts and
    foreign frames, with idle input cycles and output back-pressure."""
    await run_random(dut, 2, 48, 0.3, 0.4, p_lost=0.1, p_bad=0.05, p_dup=0.5, p_oversize=0.03, p_orphan=0.1)


@cocotb.test()
async def test_out_of_window(dut):
    """Seq W ahead of a missing head is dropped and counted; once the head arrives
    everything is released in order and seq W is accepted when sent again."""
    tb = ReorderTB(dut, 3)
    tb.set_pauses(0.2, 0.3)
    await tb.reset()
    W = tb.p["window"]
    conts = {q: tb.container(1, q) for q in range(W + 1)}
    for q in range(1, W):
        tb.send_container(1, q, conts[q])
    for fr in conts[W]:
        tb.send(fr)
    tb.expect_stats["drop_window"] += len(conts[W])
    await tb.wait_idle(50)
    assert tb.checker.delivered(1) == 0, "released past a missing head"
    tb.send_container(1, 0, conts[0])
    await tb.wait_delivered(1, W)
    tb.send_container(1, W, conts[W])
    await tb.finish()


@cocotb.test()
async def test_timeout_skip_partial(dut):
    """A head container cut after its FIRST frame (link failure) is skipped after the
    timeout and counted lost, exactly once; its late tail is dropped and counted."""
    tb = ReorderTB(dut, 4)
    await tb.reset()
    head = tb.container(2, 0, nframes=3)
    t0 = cocotb.utils.get_sim_time("ns") // 10
    tb.send(head[0])  # partial: FIRST only
    tb.expect_stats["lost"] += 1
    for q in range(1, 4):
        tb.send_container(2, q, tb.container(2, q))
    await tb.wait_delivered(2, 3)
    waited = cocotb.utils.get_sim_time("ns") // 10 - t0
    assert tb.p["timeout"] <= waited <= tb.p["timeout"] + 200, (
        f"skipped after {waited} clocks, timeout {tb.p['timeout']}"
    )
    for fr in head[1:]:  # the tail, too late
        tb.send(fr)
    tb.expect_stats["drop_dup"] += 2
    await tb.finish()


@cocotb.test()
async def test_source_jumps_ahead(dut):
    """A source far ahead of its window with nothing stored (e.g. everything in
    between lost): its frames are dropped and counted, and after the timeout the
    window resynchronises to it, counting every skipped seq as lost: no hang."""
    tb = ReorderTB(dut, 5)
    await tb.reset()
    for q in range(100, 104):
        frames = tb.container(3, q)
        for fr in frames:
            tb.send(fr)
        tb.expect_stats["drop_window"] += len(frames)
    await tb.wait_idle(tb.p["timeout"] + 50)
    for q in range(104, 108):
        tb.send_container(3, q, tb.container(3, q))
    tb.expect_stats["lost"] += 104  # seqs 0..102 at the resync, then 103 by timeout
    await tb.finish()
