"""PauseGate: the sending side of a paused link: no new frame starts while ``pause`` is 1."""

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..catalog import BlockSpec
from .stream import AXIStreamSignature, check_data_width

__all__ = ["PauseGate", "EXPORTS"]


class PauseGate(wiring.Component):
    """Holds a packet stream at frame boundaries while ``pause`` is 1.

    The sender's half of the PFC-like rule of the fabric (docs/ecmp.md): the receiver's
    :class:`~opengse.rtl.lib.pause_fifo.PauseFIFO` raises ``pause``, the link carries it
    back, and this gate, the last thing before the sending port, stops the port: a frame
    already started finishes, the next one waits. Everything behind the port waits with
    it (head-of-line blocking, as in real PFC).

    Parameters
    ----------
    data_width, user_width : int
        Width of ``tdata`` (a power of two, 8..512) and ``tuser``.

    Interface
    ---------
    ``s_axis`` : ``In(AXIStreamSignature(data_width, user_width))``
        Frames in.
    ``m_axis`` : ``Out(AXIStreamSignature(data_width, user_width))``
        The same frames, unchanged. ``tvalid = s_axis.tvalid & open`` and
        ``s_axis.tready = m_axis.tready & open``, combinationally; ``open`` is 1
        inside a frame (after its first beat moved), while a first beat already
        offered waits to be taken (AXI: ``tvalid`` once raised stays until the
        transfer), or while ``pause`` is 0.
    ``pause`` : ``In(1)``
        From the link (the receiver's PauseFIFO, delayed by the link). Acts in the
        same clock: a frame whose first beat is offered in a clock with ``pause`` = 1
        (and was not offered before) does not start.
    ``stat_pause_cycles`` : ``Out(32)``
        Clocks with ``pause`` = 1 (wrapping).
    ``stat_held_cycles`` : ``Out(32)``
        Clocks in which a frame was waiting at the gate because of ``pause`` (the
        port's time lost to pause; wrapping).

    Timing: no register on the path, no latency, one beat per clock.
    """

    def __init__(self, data_width=64, user_width=1):
        self.data_width = check_data_width(data_width)
        sig = AXIStreamSignature(data_width, user_width)
        super().__init__(
            {
                "s_axis": In(sig),
                "m_axis": Out(sig),
                "pause": In(1),
                "stat_pause_cycles": Out(32),
                "stat_held_cycles": Out(32),
            }
        )

    def elaborate(self, platform):
        m = Module()
        s, o = self.s_axis, self.m_axis
        in_frame = Signal()  # a first beat has moved, the last has not
        offered = Signal()  # a beat was offered and not taken in the last clock
        gate_open = Signal()
        m.d.comb += [
            gate_open.eq(in_frame | offered | ~self.pause),
            o.payload.eq(s.payload),
            o.valid.eq(s.valid & gate_open),
            s.ready.eq(o.ready & gate_open),
        ]
        m.d.sync += offered.eq(o.valid & ~o.ready)
        with m.If(s.valid & s.ready):
            m.d.sync += in_frame.eq(~s.payload.last)
        with m.If(self.pause):
            m.d.sync += self.stat_pause_cycles.eq(self.stat_pause_cycles + 1)
        with m.If(s.valid & ~gate_open):
            m.d.sync += self.stat_held_cycles.eq(self.stat_held_cycles + 1)
        return m


EXPORTS = [
    BlockSpec(
        name="pause_gate",
        module="gse_pause_gate",
        factory=PauseGate,
        params={"data_width": 64, "user_width": 1},
        description="sending side of a paused link: an AXI4-Stream passes unchanged, "
        "but no new frame starts while pause is 1 (a started frame finishes)",
    )
]
