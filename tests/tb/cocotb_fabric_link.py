"""cocotb tests of gse_fabric_link (rtl/tb/link.py) against sim/link_model.py.

Every clock the bench offers a beat or idles, sets ``fail`` and ``pause_in``, and
compares the link's output (``m_axis``, ``pause_out``) clock by clock with the model;
at the end it compares the counters.
"""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, Timer

from opengse.sim.cocotb_util import reset_dut
from opengse.sim.link_model import CLOSE, LinkModel
from opengse.sim.runner import test_params


class LinkBench:
    def __init__(self, dut, seed):
        self.dut, self.rng = dut, random.Random(seed)
        p = test_params()
        self.delay, self.width = p["delay"], p["data_width"]
        self.nbytes = self.width // 8
        self.model = LinkModel(self.delay)
        self.refused = 0
        self.seen = {"beats": 0, "close": 0, "lost": 0}
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())

    async def start(self):
        d = self.dut
        d.s_axis_tvalid.value = 0
        d.fail.value = 0
        d.pause_in.value = 0
        d.m_axis_tready.value = 1
        await reset_dut(d)

    def frames(self, count):
        """Beats (or None for idle) of ``count`` random frames with random gaps."""
        for _ in range(count):
            length = self.rng.choice([1, 8, 9, 60, 64, self.rng.randrange(1, 300)])
            beats = -(-length // self.nbytes)
            for i in range(beats):
                last = i == beats - 1
                n = length - i * self.nbytes if last else self.nbytes
                keep = (1 << n) - 1
                yield (self.rng.getrandbits(self.width), keep, int(last), int(self.rng.random() < 0.1))
                while self.rng.random() < 0.15:
                    yield None
            while self.rng.random() < 0.3:
                yield None

    async def run(self, stream, fail_of, ready_of=lambda t: 1):
        d, m = self.dut, self.model
        for t, beat in enumerate(list(stream) + [None] * (self.delay + 4)):
            await FallingEdge(d.clk)
            fail, pause = fail_of(t), self.rng.getrandbits(1)
            ready = ready_of(t)
            d.fail.value, d.pause_in.value, d.m_axis_tready.value = fail, pause, ready
            d.s_axis_tvalid.value = int(beat is not None)
            data, keep, last, user = beat if beat is not None else (self.rng.getrandbits(self.width), 0, 0, 0)
            d.s_axis_tdata.value, d.s_axis_tkeep.value = data, keep
            d.s_axis_tlast.value, d.s_axis_tuser.value = last, user
            await Timer(1, unit="ns")
            assert int(d.s_axis_tready.value) == 1, f"clock {t}: s_axis_tready low"
            want, want_pause = m.clock(beat, fail, pause)
            got_pause = int(d.pause_out.value)
            assert got_pause == want_pause, f"clock {t}: pause_out {got_pause}, model {want_pause}"
            valid = int(d.m_axis_tvalid.value)
            if want is None:
                assert not valid, f"clock {t}: a beat on m_axis, the model has none"
                continue
            assert valid, f"clock {t}: no beat on m_axis, the model has {want}"
            self.refused += int(not ready)
            got = (
                int(d.m_axis_tdata.value),
                int(d.m_axis_tkeep.value),
                int(d.m_axis_tlast.value),
                int(d.m_axis_tuser.value),
            )
            if want == CLOSE:
                self.seen["close"] += 1
                assert got[1] & 1 and got[2] == 1 and got[3] & 1, f"clock {t}: cut frame closed with {got}"
            else:
                self.seen["beats"] += 1
                assert got == want, f"clock {t}: m_axis beat {got}, model {want}"

    def check_counters(self):
        d, m = self.dut, self.model
        for name, want in [
            ("stat_beats", m.beats),
            ("stat_frames", m.frames),
            ("stat_beats_lost", m.beats_lost),
            ("stat_frames_lost", m.frames_lost),
            ("stat_refused", self.refused),
        ]:
            got = int(getattr(d, name).value)
            assert got == want, f"{name} = {got}, model {want}"


def windows(spans):
    """``fail_of(t)``: 1 inside any of the clock ranges ``spans``."""
    return lambda t: int(any(a <= t < b for a, b in spans))


@cocotb.test()
async def test_no_failure(dut):
    """Random frames, gaps and pause: every beat delayed exactly `delay` clocks, nothing
    lost, pause delayed by the same."""
    tb = LinkBench(dut, 1)
    await tb.start()
    await tb.run(tb.frames(150), lambda t: 0)
    tb.check_counters()
    assert tb.model.beats_lost == 0 and tb.seen["beats"] == tb.model.beats > 1000


@cocotb.test()
async def test_failures(dut):
    """Failure windows of 1 clock to several frames, inside frames and in gaps: beats lost,
    cut frames closed with tuser, the tail after recovery lost, counted exactly."""
    tb = LinkBench(dut, 2)
    await tb.start()
    rng = random.Random(3)
    spans, t = [], tb.delay + 20
    while t < 12000:
        length = rng.choice([1, 2, 5, 30, 200])
        spans.append((t, t + length))
        t += length + rng.randrange(20, 400)
    await tb.run(tb.frames(300), windows(spans))
    tb.check_counters()
    m = tb.model
    assert m.frames_lost > 20 and tb.seen["close"] > 5, (
        f"the failures hit too little: {m.frames_lost} frames lost, {tb.seen['close']} cut"
    )
    assert m.frames - m.frames_lost > 100, "too few frames got through"


@cocotb.test()
async def test_refused(dut):
    """A receiver that drops tready breaks the contract: the beat is not held, and each
    such clock is counted."""
    tb = LinkBench(dut, 4)
    await tb.start()
    rng = random.Random(5)
    await tb.run(tb.frames(40), lambda t: 0, lambda t: int(rng.random() > 0.2))
    tb.check_counters()
    assert tb.refused > 10
