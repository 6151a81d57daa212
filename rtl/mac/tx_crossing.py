"""Transmit clock-domain crossing: the core's AXI-Stream to frame words in ``tx``.

:class:`TxFrameCrossing` stores frames in the core's clock and crosses them in a small
one:

* the **store** (``sync``): a :class:`~.async_fifo.RegisteredAsyncFIFO` of ``depth``
  words with both sides in ``sync`` (a block RAM at the MAC's sizes), and a second,
  small one of one token per complete frame (written with the frame's last word). A
  frame leaves the store only when it is complete (store and forward), because once a
  frame has started on the wire its bytes must follow at line rate;
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
store has room (and, for a last beat, the token FIFO too). Its byte count is the
number of set ``tkeep`` bits, taken from byte 0 up (``tkeep`` is contiguous from bit 0
on a packed stream; a beat with ``tkeep`` 0 counts as one byte). ``tuser`` bit 0 of the
last beat travels with it.

Read side (``tx``): ``o`` (stream of word beats, ``user`` = the ``tuser`` bit), straight
from the crossing's output registers. A frame's first word leaves the store only when
that frame's token has arrived, or when the store holds at least ``depth`` words (a
frame longer than the store: it then goes out cut-through, and the transmitter aborts
it if the core falls behind; that flag is registered, a few clocks stale). The token of
each frame is consumed after its last word, so tokens and frames stay paired. After a
``last`` word the store offers nothing for at least one clock until the next token is
seen. Latency: a frame's first word leaves the store about eight ``sync`` clocks after
the frame's last beat (the token's five, ``have_token``, the store's output stage), and
reaches ``o`` five ``tx`` clocks after that.

Reset: ``rst`` empties the store and the crossing (they reset from their write
domain), ``tx_rst`` the crossing's read side.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..lib.stream import AXIStreamSignature

from .async_fifo import RegisteredAsyncFIFO
from .frame_beats import word_layout

__all__ = ["TxFrameCrossing", "CROSSING_WORDS"]

#: Words of the crossing FIFO (LUT RAM): its read side takes one word per
#: ``data_width / 8`` transmit clocks while the store fills it one a core clock.
CROSSING_WORDS = 16


class TxFrameCrossing(wiring.Component):
    def __init__(self, data_width, depth, token_depth, w_domain="sync", r_domain="tx"):
        self._width = data_width
        self._depth = depth
        self._token_depth = token_depth
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
        layout = word_layout(self._width, 1)
        # The store: both sides in the write domain (see the module docstring).
        m.submodules.fifo = fifo = RegisteredAsyncFIFO(
            width=layout.size, depth=self._depth, r_domain=self._w, w_domain=self._w
        )
        m.submodules.tokens = tokens = RegisteredAsyncFIFO(
            width=1, depth=self._token_depth, r_domain=self._w, w_domain=self._w
        )
        m.submodules.crossing = crossing = RegisteredAsyncFIFO(
            width=layout.size, depth=CROSSING_WORDS, r_domain=self._r, w_domain=self._w
        )
        n = self._width // 8
        beat = self.s_axis.payload

        word_in = Signal(layout)
        count = Signal(range(n))
        ones = Signal(range(n + 1))
        m.d.comb += ones.eq(sum(beat.keep[k] for k in range(n)))
        with m.If(ones != 0):  # bytes = set tkeep bits, at least one
            m.d.comb += count.eq(ones - 1)
        # Both FIFOs' w_rdy are registers: a last beat waits for room in both.
        token_room = tokens.w_rdy
        m.d.comb += [
            word_in.data.eq(beat.data),
            word_in.count.eq(count),
            word_in.last.eq(beat.last),
            word_in.user.eq(beat.user[0] & beat.last),
            self.s_axis.ready.eq(fifo.w_rdy & (token_room | ~beat.last)),
            fifo.w_data.eq(word_in.as_value()),
            # the FIFOs ignore w_en while not w_rdy: no w_rdy in their own w_en
            fifo.w_en.eq(self.s_axis.valid & (token_room | ~beat.last)),
            tokens.w_data.eq(0),
            tokens.w_en.eq(self.s_axis.valid & beat.last & fifo.w_rdy),
        ]

        rd = m.d[self._w]  # the store's read side
        start = Signal(init=1)  # the next word read is a frame's first
        owe_token = Signal()  # a frame went out; its token is not consumed yet
        # The FIFO's r_rdy and r_data are registers and its r_en only loads its output
        # registers, so the frame gate below acts on the FIFO directly.
        word_out = Signal(layout)
        full = Signal()
        m.d.comb += word_out.eq(fifo.r_data)
        # Registered (stale): only decides when an over-long frame may start. The FIFO
        # holds at least `depth` words only when the frame is longer than the FIFO: its
        # writer stops with depth - 1 or depth words in the memory and three after it.
        rd += full.eq(fifo.r_level >= fifo.depth)
        # A token is there, registered: tokens leave only by the read below, so "one was
        # there and none was read" still holds a clock later (arrivals show one clock
        # late).
        have_token = Signal()
        rd += have_token.eq(tokens.r_rdy & ~tokens.r_en)
        release = Signal()
        m.d.comb += release.eq(~start | (~owe_token & (have_token | full)))
        moved = Signal()
        m.d.comb += [
            moved.eq(fifo.r_rdy & release & crossing.w_rdy),
            crossing.w_data.eq(word_out.as_value()),
            # the FIFOs ignore w_en and r_en while not ready
            crossing.w_en.eq(fifo.r_rdy & release),
            fifo.r_en.eq(crossing.w_rdy & release),
            self.o.valid.eq(crossing.r_rdy),
            self.o.payload.eq(crossing.r_data),
            crossing.r_en.eq(self.o.ready),
        ]
        with m.If(moved):
            rd += start.eq(word_out.last)
            with m.If(word_out.last):
                rd += owe_token.eq(1)
        with m.If(owe_token & tokens.r_rdy):
            m.d.comb += tokens.r_en.eq(1)
            rd += owe_token.eq(0)
        return m
