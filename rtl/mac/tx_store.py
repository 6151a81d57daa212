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
    ``i`` (one for the frame count, one for the SRAM's read). The memory is an
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

        produce = Signal(aw)
        consume = Signal(aw)
        level = Signal(aw + 1)  # words in the SRAM (not counting its read register)
        frames = Signal(range(self.depth + 1))  # last words written, not yet seen read
        start = Signal(init=1)  # the next word read is a frame's first
        full = level[aw]  # level == depth
        write = Signal()
        read = Signal()
        m.d.comb += [
            write.eq(self.i.valid & ~full),
            self.i.ready.eq(~full),
            mem.w_en.eq(write),
            mem.w_addr.eq(produce),
            mem.w_data.eq(self.i.payload.as_value()),
        ]

        # The word read in the last clock is in the SRAM's read register now: only then
        # is its `last` known, so the gate below takes it into account at once (a frame
        # ends, the next one may not have arrived whole).
        out_valid = Signal()
        prev_read = Signal()
        out = Signal(layout)
        m.d.comb += out.eq(mem.r0_data)
        ended = Signal()
        m.d.comb += ended.eq(prev_read & out.last)
        at_start = Mux(prev_read, out.last, start)
        complete = Mux(ended, frames >= 2, frames != 0)  # a whole frame waits
        release = ~at_start | complete | full
        m.d.comb += [
            read.eq((level != 0) & release & (~out_valid | self.o.ready)),
            mem.r0_en.eq(read),
            mem.r0_addr.eq(consume),
            self.o.valid.eq(out_valid),
            self.o.payload.eq(out),
        ]
        m.d.sync += [
            prev_read.eq(read),
            start.eq(at_start),
            out_valid.eq(read | (out_valid & ~self.o.ready)),
            level.eq(level + write - read),
            frames.eq(frames + (write & self.i.payload.last) - ended),
        ]
        with m.If(write):
            m.d.sync += produce.eq(produce + 1)
        with m.If(read):
            m.d.sync += consume.eq(consume + 1)
        return m
