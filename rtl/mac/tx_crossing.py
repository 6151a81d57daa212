"""Transmit clock-domain crossing: the core's AXI-Stream to frame words in ``tx``.

:class:`TxFrameCrossing` holds frames in a :class:`~.async_fifo.RegisteredAsyncFIFO`
of words (written in ``sync``, read in ``tx``) and releases a frame to the transmitter
only when it is complete (store and forward), because once a frame has started on the
wire its bytes must follow at line rate. A second, small one carries one token per
complete frame (written with the frame's last word). Both FIFOs' ``w_rdy``,
``r_rdy`` and ``r_data`` are registers.

Write side (``sync``): ``s_axis`` (AXI-Stream, ``data_width``). A beat is taken when the
data FIFO has room (and, for a last beat, the token FIFO too). Its byte count is the
number of set ``tkeep`` bits, taken from byte 0 up (``tkeep`` is contiguous from bit 0
on a packed stream; a beat with ``tkeep`` 0 counts as one byte). ``tuser`` bit 0 of the
last beat travels with it.

Read side (``tx``): ``o`` (stream of word beats, ``user`` = the ``tuser`` bit), straight
from the data FIFO's output registers. The first word of a frame is offered only when
that frame's token has arrived, or when the data FIFO holds at least ``depth`` words (a
frame longer than the FIFO: it then goes out cut-through, and the transmitter aborts it
if the core falls behind; that flag is registered, a few clocks stale). The token of
each frame is consumed after its last word, so tokens and frames stay paired. After a
``last`` word ``o`` offers nothing for at least one clock until the next token is seen.
Latency: a word reaches the FIFO's output five ``tx`` clocks after the ``sync`` clock
that wrote it (seven from ``data_width`` 16 up: the data FIFO's two
``read_registers``), a token five, and a frame's first word is offered the clock after its
token is seen (``have_token``, registered): about six ``tx`` clocks from the frame's
last beat, three more than with ``AsyncFIFO`` and the register slice that followed it.

Reset: ``rst`` empties both FIFOs (they reset from their write domain), ``tx_rst``
the read-side state.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..lib.stream import AXIStreamSignature

from .async_fifo import RegisteredAsyncFIFO
from .frame_beats import word_layout

__all__ = ["TxFrameCrossing"]


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
        # From 16 bits up a word lasts at least two line clocks, so the read data can be
        # registered twice after the memory (a block RAM's slow output, then only a route
        # to a register the placer can put beside it).
        m.submodules.fifo = fifo = RegisteredAsyncFIFO(
            width=layout.size,
            depth=self._depth,
            r_domain=self._r,
            w_domain=self._w,
            read_registers=2 if self._width >= 16 else 0,
        )
        m.submodules.tokens = tokens = RegisteredAsyncFIFO(
            width=1, depth=self._token_depth, r_domain=self._r, w_domain=self._w
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

        rd = m.d[self._r]
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
        m.d.comb += [
            self.o.valid.eq(fifo.r_rdy & release),
            self.o.payload.eq(word_out),
            fifo.r_en.eq(self.o.ready & release),
        ]
        with m.If(self.o.valid & self.o.ready):
            rd += start.eq(word_out.last)
            with m.If(word_out.last):
                rd += owe_token.eq(1)
        with m.If(owe_token & tokens.r_rdy):
            m.d.comb += tokens.r_en.eq(1)
            rd += owe_token.eq(0)
        return m
