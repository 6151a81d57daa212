"""Receive clock-domain crossing: frame words from ``rx`` to the core's AXI-Stream.

:class:`RxFrameCrossing` is a :class:`~.async_fifo.RegisteredAsyncFIFO` of frame words
(written in ``rx``, read in ``sync``) with the overrun policy of a receive MAC. It is
cut-through: a word is readable five ``sync`` clocks after the ``rx`` clock that wrote
it (the FIFO's pointer synchroniser, registered "memory holds a word", memory read and
output register; three more than ``AsyncFIFO``), whether or not its frame is complete.

Write side (``rx``, no back-pressure: the line does not wait): ``i_valid``, ``i`` (word
beat, ``user`` = :class:`~.frame_beats.RxStatus`).

"Full" below is ``room`` low: the FIFO's registered ``w_rdy`` low (it keeps one or
two entries in hand; every word written is taken).

* A frame whose first word finds the FIFO full (or still owing the end of an overrun
  frame, below) is dropped whole: none of it is written; ``dropped`` pulses (in
  ``sync``) when its last word has gone by.
* A frame that fills the FIFO part-way loses the rest of its words; as soon as there is
  room again one terminating word is written (data 0, ``last``, status ``OVERRUN``), so
  the part already in the FIFO leaves with ``tuser`` set and the next buffer drops it.
* Nothing else is ever lost: while the core takes words at least as fast as the line
  delivers them, the FIFO never fills.

Read side (``sync``): ``m_axis`` (AXI-Stream, ``data_width``): ``tvalid`` and the word
are registers of the FIFO's output stage; ``tkeep`` from the word's count, ``tuser`` bit
0 on a last beat whose status is not ``OK``; ``status`` is that beat's
:class:`~.frame_beats.RxStatus` (meaningful on a last beat), for the counters.

Reset: ``rx_rst`` empties the FIFO (it resets from its write domain); ``rst`` resets the
read-side state only.
"""

from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.cdc import PulseSynchronizer
from amaranth.lib.wiring import In, Out

from ..lib.stream import AXIStreamSignature

from .async_fifo import RegisteredAsyncFIFO
from .frame_beats import STATUS_WIDTH, RxStatus, word_layout

__all__ = ["RxFrameCrossing"]


class RxFrameCrossing(wiring.Component):
    def __init__(self, data_width, depth, w_domain="rx", r_domain="sync"):
        self._width = data_width
        self._depth = depth
        self._w = w_domain
        self._r = r_domain
        super().__init__(
            {
                "i_valid": In(1),
                "i": In(word_layout(data_width, STATUS_WIDTH)),
                "m_axis": Out(AXIStreamSignature(data_width)),
                "status": Out(STATUS_WIDTH),
                "dropped": Out(1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        layout = word_layout(self._width, STATUS_WIDTH)
        m.submodules.fifo = fifo = RegisteredAsyncFIFO(
            width=layout.size, depth=self._depth, r_domain=self._r, w_domain=self._w
        )
        m.submodules.dropped_sync = dropped = PulseSynchronizer(self._w, self._r)
        wd = m.d[self._w]

        in_frame = Signal()  # the input is inside a frame (its first word went by)
        writing = Signal()  # ... and that frame is being written
        discard = Signal()  # ... and that frame is dropped whole
        owe_end = Signal()  # an overrun frame still needs its terminating word
        terminator = Signal(layout)
        m.d.comb += [terminator.last.eq(1), terminator.user.eq(RxStatus.OVERRUN)]

        # ``room``: the FIFO can take a word in this clock: its ``w_rdy``, a register.
        # The state below and ``w_en`` look at it, so every word this side writes is
        # taken (the write pointer's Gray compare, the rx domain's longest path when it
        # fed this state through AsyncFIFO's w_rdy, is gone).
        room = Signal()
        m.d.comb += room.eq(fifo.w_rdy)
        first = ~in_frame
        want = owe_end | (self.i_valid & ((first & ~owe_end) | writing))
        m.d.comb += [
            fifo.w_data.eq(Mux(owe_end, terminator.as_value(), self.i.as_value())),
            fifo.w_en.eq(want & room),
            dropped.i.eq(0),
        ]
        with m.If(owe_end & room):
            wd += owe_end.eq(0)
        with m.If(self.i_valid):
            wd += in_frame.eq(~self.i.last)
            with m.If(first):
                with m.If(room & ~owe_end):
                    wd += [writing.eq(~self.i.last), discard.eq(0)]
                with m.Else():
                    wd += [writing.eq(0), discard.eq(~self.i.last)]
                    m.d.comb += dropped.i.eq(self.i.last)
            with m.Elif(writing):
                with m.If(~room):
                    wd += [writing.eq(0), owe_end.eq(1)]
                with m.If(self.i.last):
                    wd += writing.eq(0)
            with m.Elif(discard):
                with m.If(self.i.last):
                    wd += discard.eq(0)
                    m.d.comb += dropped.i.eq(1)

        word = Signal(layout)
        n = self._width // 8
        keep = Signal(n)
        m.d.comb += [
            word.eq(fifo.r_data),
            keep.eq((Const(2, n + 1) << word.count) - 1),
            self.m_axis.valid.eq(fifo.r_rdy),
            fifo.r_en.eq(self.m_axis.ready),
            self.m_axis.payload.data.eq(word.data),
            self.m_axis.payload.keep.eq(keep),
            self.m_axis.payload.last.eq(word.last),
            self.m_axis.payload.user.eq(word.last & (word.user != RxStatus.OK)),
            self.status.eq(word.user),
            self.dropped.eq(dropped.o),
        ]
        return m
