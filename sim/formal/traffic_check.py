"""Traffic checker: every frame received is counted once, with exactly one outcome.

:class:`CheckerCounts` around rtl/tb/traffic_check.py (64-bit, 2 sources x 2 flows,
2 tenants, 2 bins: a 4-clock reset sweep) counts the frames that arrive (their last
beats) and asserts every clock:

* ``stat_frames`` never runs ahead of the frames received and lags by at most one
  (frames of 60 bytes or more are 8 clocks apart; the checker counts 2-5 clocks after
  the last beat);
* the outcomes (``good_frames`` + ``duplicate`` + ``late`` + ``corrupt`` + ``bad`` +
  ``foreign``) never run ahead of ``stat_frames`` and lag by at most one;
* 8 clocks after the last frame ended all three are equal: each frame got exactly one
  outcome, whatever its content;
* ``s_axis_tready`` is 1.

Frames are any content (the solver chooses DA, IP/UDP headers, check words, filler,
``tuser``, the host id) of at least 60 bytes (``tlast`` not before the 8th beat),
contiguous ``tkeep``; idle clocks free. The 60-byte header capture, the flow-state SRAM
and the 3-stage sequence pipeline are not visible at the ports: BMC, depth 20 (
a frame, the next started and a quiet tail; 28 with ``--all``: two frames and the
tail; the cover check sees a good frame counted). With ``quiet`` = 4 the equality is
refuted (tests/formal): the outcome of a frame comes later than that.
"""

from amaranth.hdl import Assert, Assume, Cover, Elaboratable, Module, ResetSignal, Signal

from .registry import Property, inputs_of, register, register_reach
from .streams import FrameTracker, assume_packet_keep

__all__ = ["CheckerCounts", "PARAMS"]

PARAMS = dict(data_width=64, sources=2, flows=2, tenants=2, bins=2, bin_shift=5)
QUIET = 8


class CheckerCounts(Elaboratable):
    def __init__(self, cover=False, quiet=QUIET):
        from opengse.rtl.tb.traffic_check import TrafficChecker

        self.dut = TrafficChecker(**PARAMS)
        self.cover, self.quiet = cover, quiet

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        s = dut.s_axis
        m.d.comb += Assume(~ResetSignal())
        m.d.comb += Assert(s.ready, "s_axis_tready low")
        assume_packet_keep(m, s)
        trk = FrameTracker(m, s, max_beats=8, name="rx")
        with m.If(s.valid & s.payload.last):
            m.d.comb += Assume(trk.beat >= 7)  # >= 60 bytes at 8 bytes a beat
        got = Signal(32, name="frames_received")
        with m.If(trk.end):
            m.d.sync += got.eq(got + 1)
        quiet = Signal(range(self.quiet + 1), name="quiet")
        with m.If(trk.end):
            m.d.sync += quiet.eq(0)
        with m.Elif(quiet != self.quiet):
            m.d.sync += quiet.eq(quiet + 1)
        outcomes = Signal(35, name="outcomes")
        m.d.comb += outcomes.eq(
            dut.stat_good_frames
            + dut.stat_duplicate
            + dut.stat_late
            + dut.stat_corrupt
            + dut.stat_bad
            + dut.stat_foreign
        )
        frames = dut.stat_frames
        m.d.comb += [
            Assert(frames <= got, "stat_frames counted a frame that did not arrive"),
            Assert(got - frames <= 1, "stat_frames lags more than one frame"),
            Assert(outcomes <= frames, "an outcome for a frame not counted"),
            Assert(frames - outcomes <= 1, "outcomes lag more than one frame"),
        ]
        with m.If(quiet == self.quiet):
            m.d.comb += [
                Assert(frames == got, "a frame received and not counted"),
                Assert(outcomes == frames, "a frame without exactly one outcome"),
            ]
        if self.cover:
            m.d.comb += Cover((dut.stat_good_frames != 0) & (quiet == self.quiet))
        return m


def _build(cover=False):
    top = CheckerCounts(cover=cover)
    return top, inputs_of(top.dut)


_WHY = (
    "k-induction does not close: the header capture, the flow-state SRAM and the sequence pipeline are "
    "not visible at the ports; "
)

COUNTS = register(
    Property(
        name="traffic_check_one_outcome",
        block="traffic_check",
        asserts="stat_frames never ahead of the frames received and at most one behind; the outcomes "
        "(good, duplicate, late, corrupt, bad, foreign) never ahead of stat_frames and at most one behind; "
        "8 clocks after the last frame all equal (exactly one outcome per frame); tready 1 (64-bit, 2x2 "
        "flows)",
        assumptions="rst low after reset; frames >= 60 bytes, contiguous tkeep; content, tuser, host, idle "
        "clocks and hist_addr free",
        mode="bmc",
        depth=20,
        build=_build,
        options={"engine": "smtbmc yices"},
        bounded_why=_WHY + "depth 20 is a frame, the next one started, and a quiet tail after the first "
        "(the cover check sees a good frame counted and quiet at step 16)",
    )
)
DEEP = register(
    Property(
        name="traffic_check_one_outcome_deep",
        block="traffic_check",
        asserts=COUNTS.asserts + "; deep: two whole frames and the quiet tail after both",
        assumptions=COUNTS.assumptions,
        mode="bmc",
        depth=28,
        build=_build,
        options={"engine": "smtbmc yices"},
        fast=False,
        bounded_why=_WHY + "depth 28 is two 60-byte frames and the quiet tail after the second",
    )
)
register_reach(COUNTS, "a good frame counted and the checker quiet")
