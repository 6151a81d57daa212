"""TxFrameStore: the MAC's transmit store, where a frame waits until it is complete.

Once a frame has started on the wire its bytes must follow at line rate, so the MAC
sends a frame only when all of it is at hand: this store holds frame words in the core's
clock (``sync``) and lets a frame's first word out only when the frame's last word is in
the store. A frame longer than the store can never be complete in it: when the store is
full and holds no complete frame, the frame at its head goes out cut-through (the
transmitter then aborts it if the core falls behind).
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..lib.sram import SRAM
from .frame_beats import word_layout

__all__ = ["TxFrameStore"]


class TxFrameStore(wiring.Component):
    """``depth`` words (a power of two) of frame words (:func:`~.frame_beats.word_layout`
    with a 1-bit ``user``), all in ``sync``.

    * ``i``: words in. ``i.ready`` is a register: low only while the store is full.
    * ``o``: words out, straight from the SRAM's read register; a frame's words follow
      one another as fast as ``o`` takes them and ``i`` has brought them.

    Timing: a frame's first word is on ``o`` two clocks after its last word was taken on
    ``i`` (one for the credit, one for the SRAM's read). The memory is an
    :class:`~opengse.rtl.lib.sram.SRAM` with a read enable (a block RAM on the ECP5, a
    ``gse_sram_1r1w_<depth>x<width>_en`` module in the export, reset-less); the
    pointers and counts reset with ``sync``. Capacity: ``depth`` words in the SRAM and
    one in its read register.
    """

    def __init__(self, data_width, depth):
        if depth < 2 or depth & (depth - 1):
            raise ValueError(f"depth must be a power of two >= 2, not {depth!r}")
        self.data_width = data_width
        self.depth = depth
        layout = word_layout(data_width, 1)
        super().__init__({"i": In(stream.Signature(layout)), "o": Out(stream.Signature(layout))})

    def elaborate(self, platform):
        m = Module()
        layout = word_layout(self.data_width, 1)
        aw = (self.depth - 1).bit_length()
        m.submodules.mem = mem = SRAM(layout.size, self.depth, read_en=True)

        # The read side decides from registers only: nothing read from the SRAM (a block
        # RAM's 5.8 ns clock-to-output on the ECP5 -6 grade) feeds back into the next
        # read. `credit` counts the words of complete frames not yet read: the words of
        # a frame join it when its last word is written, so a frame's first word is read
        # only then, and a frame ends exactly where the credit runs out. A frame longer
        # than the store cannot complete in it: when the store is full and no credit is
        # left (the head frame is incomplete), `cut` lets its words out as they come,
        # and once its last word is written the credit is the words of it still unread.
        produce = Signal(aw)
        consume = Signal(aw)
        level = Signal(aw + 1)  # words in the SRAM (not counting its read register)
        nonempty = Signal()  # level != 0, registered
        wcount = Signal(aw + 1)  # words of the frame being written so far (< depth + 1)
        credit = Signal(range(self.depth + 2))
        has_credit = Signal()  # credit != 0, registered
        cut = Signal()  # the head frame is longer than the store and goes out cut-through
        full = level[aw]  # level == depth
        write = Signal()
        read = Signal()
        out_valid = Signal()
        last_in = self.i.payload.last
        m.d.comb += [
            write.eq(self.i.valid & ~full),
            self.i.ready.eq(~full),
            mem.w_en.eq(write),
            mem.w_addr.eq(produce),
            mem.w_data.eq(self.i.payload.as_value()),
            read.eq(nonempty & (has_credit | cut) & (~out_valid | self.o.ready)),
            mem.r0_en.eq(read),
            mem.r0_addr.eq(consume),
            self.o.valid.eq(out_valid),
            self.o.payload.eq(mem.r0_data),
        ]
        level_next = Signal.like(level)
        credit_next = Signal.like(credit)
        m.d.comb += level_next.eq(level + write - read)
        with m.If(cut):
            # no credit while cutting through; the long frame's unread words once whole
            m.d.comb += credit_next.eq(Mux(write & last_in, level_next, 0))
        with m.Else():
            m.d.comb += credit_next.eq(credit + Mux(write & last_in, wcount + 1, 0) - read)
        m.d.sync += [
            level.eq(level_next),
            nonempty.eq(level_next != 0),
            credit.eq(credit_next),
            has_credit.eq(credit_next != 0),
            out_valid.eq(read | (out_valid & ~self.o.ready)),
        ]
        with m.If(write):
            m.d.sync += [produce.eq(produce + 1), wcount.eq(Mux(last_in, 0, wcount + 1))]
        with m.If(read):
            m.d.sync += consume.eq(consume + 1)
        with m.If(cut & write & last_in):
            m.d.sync += cut.eq(0)
        with m.Elif(full & ~has_credit):
            m.d.sync += cut.eq(1)
        return m
