"""Transmit clock-domain crossing: the core's AXI-Stream to frame words in ``tx``.

:class:`TxFrameCrossing` stores frames in the core's clock and crosses them in a small
FIFO:

* the **store** (``sync``): a :class:`~.tx_store.TxFrameStore` of ``depth`` words (an
  SRAM: a block RAM at the MAC's sizes). A frame leaves it only when it is complete
  (store and forward), because once a frame has started on the wire its bytes must
  follow at line rate;
* the **crossing** (``sync`` -> ``tx``): a :class:`~.async_fifo.RegisteredAsyncFIFO` of
  :data:`CROSSING_WORDS` words (LUT RAM), cut-through.

Why the store is on the core side: a block RAM read in ``tx`` put its output (5.8 ns
clock-to-output on the ECP5 -6 grade, and no output register Yosys maps) and the route
from wherever the placer put it into the 8 ns of the 125 MHz transmit clock; on the
Colorlight leaf that missed 125 MHz on every try (103.8-118.1 MHz). In the core's
clock it has the core's period, and ``tx`` reads LUT RAM beside its own logic, as in
the self-test. A released frame moves from the store at one word a ``sync`` clock,
which is at least the line's rate (the MAC requires ``clk`` >= 125 MHz x 8 /
``data_width``), so the crossing does not run dry in the middle of a frame.

Write side (``sync``): ``s_axis`` (AXI-Stream, ``data_width``). A beat is taken when the
store has room. Its byte count is the number of set ``tkeep`` bits, taken from byte 0
up (``tkeep`` is contiguous from bit 0 on a packed stream; a beat with ``tkeep`` 0
counts as one byte). ``tuser`` bit 0 of the last beat travels with it.

Read side (``tx``): ``o`` (stream of word beats, ``user`` = the ``tuser`` bit), straight
from the crossing's output registers. A frame longer than the store goes out
cut-through once the store is full (see :class:`~.tx_store.TxFrameStore`). Latency: a
frame's first word leaves the store two ``sync`` clocks after the frame's last beat,
and reaches ``o`` five ``tx`` clocks after that.

Reset: ``rst`` empties the store and the crossing (the crossing resets from its write
domain), ``tx_rst`` the crossing's read side.
"""

from amaranth.hdl import DomainRenamer, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..lib.stream import AXIStreamSignature

from .async_fifo import RegisteredAsyncFIFO
from .frame_beats import word_layout
from .tx_store import TxFrameStore

__all__ = ["TxFrameCrossing", "CROSSING_WORDS"]

#: Words of the crossing FIFO (LUT RAM): its read side takes one word per
#: ``data_width / 8`` transmit clocks while the store fills it one a core clock.
CROSSING_WORDS = 16


class TxFrameCrossing(wiring.Component):
    def __init__(self, data_width, depth, w_domain="sync", r_domain="tx"):
        self._width = data_width
        self._depth = depth
        self._w = w_domain
        self._r = r_domain
        super().__init__(
            {
                "s_axis": In(AXIStreamSignature(data_width)),
                "o": Out(stream.Signature(word_layout(data_width, 1))),
            }
        )

    def elaborate(self, platform):
        m = Module()
        m.submodules.store = store = DomainRenamer(self._w)(TxFrameStore(self._width, self._depth))
        m.submodules.crossing = crossing = RegisteredAsyncFIFO(
            width=word_layout(self._width, 1).size, depth=CROSSING_WORDS, r_domain=self._r, w_domain=self._w
        )
        n = self._width // 8
        beat = self.s_axis.payload
        word = store.i.payload
        ones = Signal(range(n + 1))
        m.d.comb += ones.eq(sum(beat.keep[k] for k in range(n)))
        with m.If(ones != 0):  # bytes = set tkeep bits, at least one
            m.d.comb += word.count.eq(ones - 1)
        m.d.comb += [
            word.data.eq(beat.data),
            word.last.eq(beat.last),
            word.user.eq(beat.user[0] & beat.last),
            store.i.valid.eq(self.s_axis.valid),
            self.s_axis.ready.eq(store.i.ready),
            # the crossing ignores w_en while not w_rdy, and r_en while not r_rdy
            crossing.w_en.eq(store.o.valid),
            crossing.w_data.eq(store.o.payload.as_value()),
            store.o.ready.eq(crossing.w_rdy),
            self.o.valid.eq(crossing.r_rdy),
            self.o.payload.eq(crossing.r_data),
            crossing.r_en.eq(self.o.ready),
        ]
        return m
