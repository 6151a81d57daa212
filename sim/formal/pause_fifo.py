"""Pause FIFO: always ready, XOFF/XON exactly as documented, no overflow and nothing
lost while the sender keeps within the headroom.

:class:`FifoHeadroom` around rtl/lib/pause_fifo.py (8-bit beats, a store of 8 beats,
XOFF 2 beats, XON 1 beat) asserts every clock:

* ``s_axis_tready`` is 1 (the link never waits);
* ``pause`` is 1 in the clock after ``level`` > XOFF, 0 in the clock after
  ``level`` < XON, and otherwise what it was (the thresholds and the hysteresis);
* while the sender sends at most :data:`HEADROOM` beats per pause (counted from the
  clock ``pause`` is seen high until it falls), nothing overflows: ``stat_drop_overflow``
  stays 0, every beat leaves, in order, none lost or repeated, with its ``last`` and
  ``tuser`` = 0 (the frames are not cut);
* ``m_axis`` keeps the valid/ready rule.

The headroom: ``pause`` rises the clock after ``level`` passes XOFF, so the store holds
at most XOFF + 2 beats when the sender sees it, and a beat that is not a frame's last
needs two free words (rtl/lib/pause_fifo.py); so ``depth - XOFF - 3`` = 3 beats more
always fit. One beat more (4) is refuted (tests/formal/test_formal_refuted.py): the
bound is tight and the property is not vacuous.

Beats describe themselves: the wrapper assumes each beat's data carries the count of
beats taken before it (mod 16) and its ``last`` (content only: the store does not look
at it) and asserts the beats leaving carry the counts in order. The store's SRAM,
pointers and output slice are not visible at the ports, so k-induction does not close;
BMC to depth 12 fills the store past XOFF and through the whole headroom to a full
store (the cover check reaches it at step 9); 16 passes too, with ``--all``
(``pause_fifo_headroom_deep``).
"""

from amaranth.hdl import Assert, Assume, Cover, Elaboratable, Module, ResetSignal, Signal

from .registry import Property, inputs_of, register, register_reach
from .stream_blocks import SEQ, assert_stream_rules

__all__ = ["FifoHeadroom", "PARAMS", "HEADROOM"]

PARAMS = dict(data_width=8, depth_bytes=8, xoff_bytes=2, xon_bytes=1)
HEADROOM = 8 - 2 - 3  # beats the sender may still send while pause is high


class FifoHeadroom(Elaboratable):
    def __init__(self, cover=False, headroom=HEADROOM):
        from opengse.rtl.lib.pause_fifo import PauseFIFO

        self.dut = PauseFIFO(**PARAMS)
        self.cover, self.headroom = cover, headroom

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        s, o = dut.s_axis, dut.m_axis
        m.d.comb += Assume(~ResetSignal())
        m.d.comb += Assert(s.ready, "s_axis_tready low: the link would lose a beat")

        # the thresholds, one clock apart
        started = Signal(name="started")
        prev_level = Signal.like(dut.level, name="prev_level")
        prev_pause = Signal(name="prev_pause")
        m.d.sync += [started.eq(1), prev_level.eq(dut.level), prev_pause.eq(dut.pause)]
        want = (prev_level > dut.xoff) | (prev_pause & ~(prev_level < dut.xon))
        with m.If(started):
            m.d.comb += Assert(dut.pause == want, "pause not as XOFF/XON say")
        with m.Else():
            m.d.comb += Assert(~dut.pause, "pause out of reset")

        # the sender: at most `headroom` beats while pause is high
        paused_beats = Signal(range(self.headroom + 2), name="paused_beats")
        with m.If(~dut.pause):
            m.d.sync += paused_beats.eq(0)
        with m.Elif(s.valid):
            m.d.sync += paused_beats.eq(paused_beats + 1)
        with m.If(s.valid & dut.pause):
            m.d.comb += Assume(paused_beats < self.headroom)

        # self-describing beats: in order, none lost, frames not cut
        n_in = Signal(SEQ, name="n_in")
        n_out = Signal(SEQ, name="n_out")
        with m.If(s.valid):
            m.d.sync += n_in.eq(n_in + 1)
            m.d.comb += [
                Assume(s.payload.data[:SEQ] == n_in),
                Assume(s.payload.data[SEQ] == s.payload.last),
                Assume(s.payload.user == 0),
                Assume(s.payload.keep == 1),
            ]
        with m.If(o.valid & o.ready):
            m.d.sync += n_out.eq(n_out + 1)
        with m.If(o.valid):
            m.d.comb += [
                Assert(o.payload.data[:SEQ] == n_out, "a beat lost, repeated or reordered"),
                Assert(o.payload.data[SEQ] == o.payload.last, "a frame cut (last moved)"),
                Assert(o.payload.user == 0, "a frame flagged bad without overflow"),
            ]
        m.d.comb += Assert(dut.stat_drop_overflow == 0, "overflow within the headroom")
        assert_stream_rules(m, o, "m_axis")
        if self.cover:
            m.d.comb += Cover((paused_beats == self.headroom) & (dut.level == 7) & o.valid & o.ready)
        return m


def _build(cover=False):
    top = FifoHeadroom(cover=cover)
    return top, inputs_of(top.dut)


HEAD = register(
    Property(
        name="pause_fifo_headroom",
        block="pause_fifo",
        asserts="s_axis_tready always 1; pause set the clock after level > XOFF, cleared the clock after "
        f"level < XON, held between; with at most {HEADROOM} beats sent per pause no overflow, every beat "
        "leaves in order with its last and tuser 0; m_axis keeps the valid/ready rule (8-bit, 8 beats, "
        "XOFF 2, XON 1)",
        assumptions=f"rst low after reset; the sender sends at most {HEADROOM} beats while pause is high; "
        "each beat's data carries the count of beats before it (mod 16) and its last, tuser 0, one byte; "
        "when beats come, pause's length and m_axis_tready free",
        mode="bmc",
        depth=12,
        build=_build,
        options={"engine": "smtbmc yices"},
        bounded_why="k-induction does not close: the SRAM, the pointers and the output slice are not "
        "visible at the ports; depth 12 fills the store past XOFF and through the whole headroom to a "
        "full store (reached at step 9)",
    )
)
DEEP = register(
    Property(
        name="pause_fifo_headroom_deep",
        block="pause_fifo",
        asserts=HEAD.asserts + "; deep enough to fill and drain the store",
        assumptions=HEAD.assumptions,
        mode="bmc",
        depth=16,
        build=_build,
        options={"engine": "smtbmc yices"},
        fast=False,
        bounded_why="as pause_fifo_headroom; depth 16 also drains the full store",
    )
)
register_reach(
    HEAD, "the full store (7 beats + the slice) after the whole headroom, the output moving", depth=16
)
