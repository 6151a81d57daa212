"""Fabric link: a wire of exactly ``delay`` clocks that, when it fails, delivers only
whole frames or frames closed as bad.

:class:`LinkWire` around rtl/tb/link.py (64-bit, ``delay`` 2: the register chain; 6:
the SRAM ring) keeps its own delay line of the input (beat, ``tvalid``, ``pause_in``)
and asserts every clock:

* ``s_axis_tready`` is 1 and ``pause_out`` is ``pause_in`` of ``delay`` clocks before
  (0 in the first ``delay`` clocks) while ``fail`` is 0, and 0 while it is 1;
* in a clock with ``fail`` 0, the beat sent ``delay`` clocks before is on ``m_axis``
  exactly when it is a frame's first beat or its frame was delivered whole so far (the
  rest of a frame cut by a failure is lost, as documented), and nothing else is;
* whatever ``fail`` does, a beat delivered is the one sent ``delay`` clocks before, or
  the close of a cut frame (``tlast`` 1, ``tuser`` bit 0 set); the receiver sees frames
  well-formed: a frame's first beat only between frames, a later beat only inside a
  frame whose beats so far were all delivered, and a close exactly in the first failed
  clock of a frame it had started: so every frame it receives is whole, or closed bad.

Input ``tuser`` bit 0 is assumed 0 (content only: the link only copies it), so a close
is told from a delivered beat; everything else (beats, ``tlast`` anywhere, ``fail``,
``pause_in``, ``m_axis_tready``, which the link does not obey) is free. The link's
frame state (``mid``, ``passing``) is not visible at the ports and idle clocks keep a
disagreeing copy hidden, so k-induction does not close: BMC to depth 20 (delay 2:
several frames, cut and resumed) and 16 (delay 6).
"""

from amaranth.hdl import Assert, Assume, Cat, Cover, Elaboratable, Module, ResetSignal, Signal
from amaranth.lib import data

from .registry import Property, inputs_of, register, register_reach

__all__ = ["LinkWire"]


class LinkWire(Elaboratable):
    def __init__(self, cover=False, delay=2, lag=None):
        from opengse.rtl.tb.link import FabricLink

        self.dut = FabricLink(data_width=64, user_width=1, delay=delay)
        self.cover, self.delay = cover, delay
        self.lag = delay if lag is None else lag  # what the wrapper expects (refuted: delay - 1)

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        s, o = dut.s_axis, dut.m_axis
        m.d.comb += Assume(~ResetSignal())
        m.d.comb += Assert(s.ready, "s_axis_tready low: the wire refused a beat")
        with m.If(s.valid):
            m.d.comb += Assume(s.payload.user[0] == 0)
        word = Cat(s.payload.as_value(), s.valid, dut.pause_in)
        line = [Signal(len(word), name=f"wire{i}") for i in range(self.lag)]
        m.d.sync += line[0].eq(word)
        for a, b in zip(line, line[1:]):
            m.d.sync += b.eq(a)
        n = len(s.payload.as_value())
        exp = line[-1]
        exp_beat, exp_valid, exp_pause = exp[:n], exp[n], exp[n + 1]
        exp_view = data.View(s.payload.shape(), exp_beat)

        m.d.comb += Assert(
            dut.pause_out == (exp_pause & ~dut.fail),
            "pause_out is not pause_in delay clocks later (0 while failed)",
        )
        is_close = o.valid & o.payload.user[0]
        with m.If(o.valid & ~is_close):
            m.d.comb += [
                Assert(exp_valid, "a beat delivered that was not sent delay clocks before"),
                Assert(o.payload.as_value() == exp_beat, "a beat changed on the wire"),
            ]
        with m.If(is_close):
            m.d.comb += Assert(o.payload.last, "a cut frame not closed with tlast")

        # the receiver's view: frames well-formed
        rx_mid = Signal(name="rx_mid")  # a delivered frame is open
        raw_mid = Signal(name="raw_mid")  # the wire's frame is open
        raw_clean = Signal(name="raw_clean")  # every beat of the wire's open frame delivered
        with m.If(exp_valid):
            m.d.sync += raw_mid.eq(~exp_view.last)
        with m.If(o.valid):
            m.d.sync += rx_mid.eq(~o.payload.last)
        delivered = o.valid & ~is_close
        with m.If(~dut.fail):
            m.d.comb += Assert(
                o.valid == (exp_valid & (~raw_mid | raw_clean)),
                "a beat lost or made while the link is up (other than the rest of a cut frame)",
            )
        with m.If(exp_valid):
            m.d.sync += raw_clean.eq(Cat(delivered, ~raw_mid | raw_clean).all() & ~exp_view.last)
        with m.Elif(is_close):  # closed between beats: the rest of the frame is lost
            m.d.sync += raw_clean.eq(0)
        with m.If(delivered & ~raw_mid):
            m.d.comb += Assert(~rx_mid, "a first beat delivered inside a delivered frame")
        with m.If(delivered & raw_mid):
            m.d.comb += Assert(rx_mid & raw_clean, "a later beat of a frame not delivered whole so far")
        m.d.comb += Assert(is_close == (dut.fail & rx_mid), "a close not exactly at the first failed clock")
        if self.cover:
            # a frame cut and closed, then a whole frame delivered after the link came back
            cut = Signal(name="was_cut")
            with m.If(is_close):
                m.d.sync += cut.eq(1)
            m.d.comb += Cover(cut & delivered & o.payload.last & raw_mid)
        return m


def _build(delay):
    def build(cover=False):
        top = LinkWire(cover=cover, delay=delay)
        return top, inputs_of(top.dut)

    return build


_WHY = (
    "k-induction does not close: the link's frame state (mid, passing) is not visible at the ports "
    "and idle clocks keep the wrapper's copy disagreeing for any k; depth {d} holds several frames, "
    "cut by fail and resumed"
)

WIRE = register(
    Property(
        name="fabric_link_wire",
        block="fabric_link",
        asserts="s_axis_tready 1; pause_out = pause_in delay clocks before, 0 while failed; with fail 0 "
        "every beat arrives delay clocks later unchanged (but the rest of a cut frame) and nothing "
        "else; with fail free, a delivered beat is the one sent delay clocks before or a close "
        "(tlast, tuser), frames at the receiver whole or closed bad, the close exactly in the first "
        "failed clock (64-bit, delay 2: register chain)",
        assumptions="rst low after reset; input tuser bit 0 = 0 (to tell a close); beats, tlast, fail, "
        "pause_in and m_axis_tready free",
        mode="bmc",
        depth=20,
        build=_build(2),
        options={"engine": "smtbmc yices"},
        bounded_why=_WHY.format(d=20),
    )
)
register_reach(WIRE, "a frame cut and closed, then a later frame's last beat delivered whole")

RING = register(
    Property(
        name="fabric_link_wire_ring",
        block="fabric_link",
        asserts="as fabric_link_wire, delay 6: the SRAM ring (reset-less words, counted once written)",
        assumptions=WIRE.assumptions,
        mode="bmc",
        depth=16,
        build=_build(6),
        options={"engine": "smtbmc yices"},
        bounded_why=_WHY.format(d=16) + "; past the ring's priming (6 clocks)",
    )
)
