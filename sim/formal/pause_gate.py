"""Pause gate: never cuts a frame, holds a frame only when paused, changes nothing.

:class:`GateRules` around rtl/lib/pause_gate.py (64-bit) keeps, from the ports, whether
a frame has started (its first beat moved, its last not) and whether a beat was offered
and not taken in the last clock, and asserts every clock:

* the beat passes unchanged (``m_axis`` payload = ``s_axis`` payload) and a beat moves
  at the input exactly when it moves at the output (nothing lost, nothing made);
* inside a frame the gate is open: ``m_axis_tvalid`` = ``s_axis_tvalid`` and
  ``s_axis_tready`` = ``m_axis_tready`` whatever ``pause`` does (a frame is never cut);
* with ``pause`` = 0 the gate is open (it holds data only when paused);
* a first beat that was not offered before does not leave in a clock with ``pause`` = 1
  (one that was offered does: ``strict=True`` claims otherwise and is refuted, so the
  AXI exception is real);
* ``m_axis`` keeps the valid/ready rule (a beat once offered stays, unchanged);
* ``stat_pause_cycles`` grows by one exactly in the clock after one with ``pause`` = 1.

The wrapper's frame state is its own copy of the gate's, built from the same
handshakes: the gate's is not visible at the ports, and an idle input keeps a
disagreeing pair for any k, so k-induction does not close; BMC to depth 12 covers
several frames, pauses rising inside a frame and held first beats.
"""

from amaranth.hdl import Assert, Assume, Cover, Elaboratable, Module, ResetSignal, Signal

from .registry import Property, inputs_of, register, register_reach
from .stream_blocks import assert_stream_rules
from .streams import assume_stream_rules

__all__ = ["GateRules"]


class GateRules(Elaboratable):
    def __init__(self, cover=False, data_width=64, honour_offer=True, strict=False):
        from opengse.rtl.lib.pause_gate import PauseGate

        self.dut = PauseGate(data_width=data_width)
        self.cover, self.honour_offer, self.strict = cover, honour_offer, strict

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        s, o, pause = dut.s_axis, dut.m_axis, dut.pause
        m.d.comb += Assume(~ResetSignal())
        if self.honour_offer:
            assume_stream_rules(m, s, "s_axis")
        in_frame = Signal(name="in_frame")
        offered = Signal(name="offered")
        s_fire = s.valid & s.ready
        o_fire = o.valid & o.ready
        with m.If(s_fire):
            m.d.sync += in_frame.eq(~s.payload.last)
        m.d.sync += offered.eq(o.valid & ~o.ready)
        m.d.comb += [
            Assert(o.payload.as_value() == s.payload.as_value(), "a beat changed through the gate"),
            Assert(s_fire == o_fire, "a beat moved on one side only"),
        ]
        with m.If(in_frame | ~pause):
            m.d.comb += [
                Assert(o.valid == s.valid, "gate closed inside a frame, or while not paused"),
                Assert(s.ready == o.ready, "gate closed inside a frame, or while not paused"),
            ]
        # strict (refuted): also a first beat offered before pause rose would wait
        with m.If(pause & ~in_frame & (1 if self.strict else ~offered)):
            m.d.comb += Assert(~o.valid, "a frame started in a paused clock")
        assert_stream_rules(m, o, "m_axis")
        started = Signal(name="started")
        prev = Signal(32, name="pause_cycles_prev")
        was = Signal(name="was_paused")
        m.d.sync += [started.eq(1), prev.eq(dut.stat_pause_cycles), was.eq(pause)]
        with m.If(started):
            m.d.comb += Assert(dut.stat_pause_cycles == (prev + was)[:32], "stat_pause_cycles wrong")
        if self.cover:
            # a pause rises inside a frame and the frame still goes on, after a held beat
            m.d.comb += Cover(pause & in_frame & o_fire & (dut.stat_held_cycles != 0))
        return m


def _build(cover=False):
    top = GateRules(cover=cover)
    return top, inputs_of(top.dut)


RULES = register(
    Property(
        name="pause_gate_frames_whole",
        block="pause_gate",
        asserts="beats pass unchanged, a beat moves in exactly when one moves out; inside a frame and "
        "whenever pause is 0 the gate is open (never cuts a frame, holds only when paused); a first beat "
        "not offered before does not leave in a paused clock; m_axis keeps the valid/ready rule; "
        "stat_pause_cycles exact (64-bit)",
        assumptions="rst low after reset; s_axis follows the valid/ready rule; data, keep, last, user, "
        "pause and m_axis_tready free",
        mode="bmc",
        depth=12,
        build=_build,
        options={"engine": "smtbmc yices"},
        bounded_why="k-induction does not close (tried k = 6): the gate's in-frame flag is not visible "
        "at the ports, and an idle input keeps the wrapper's copy disagreeing with it for any k; depth "
        "12 holds several frames, a pause rising inside one and a held first beat",
    )
)
register_reach(RULES, "a pause rising inside a frame that still moves on, after a first beat was held")
