"""Width conversion between frame bytes and ``data_width``-bit frame words.

* :class:`BytePacker` (receive side, in the ``rx`` domain, no back-pressure): packs
  bytes into words, byte 0 in ``data[7:0]``; a word leaves (``o_valid`` for one cycle,
  registered) when it is full or holds the frame's last byte, with ``count`` = bytes - 1
  and the last byte's ``user``. Unused bytes of a partial word are zero. One word per
  ``data_width / 8`` bytes at most, one clock after its last byte.
* :class:`ByteUnpacker` (transmit side, valid/ready on both sides): splits words into
  bytes, ``count + 1`` of them per word; the last byte of a ``last`` word carries
  ``last`` and the word's ``user``. One byte per clock with no bubble between words
  (the next word is taken in the cycle the current one's last byte leaves).

With ``data_width=8`` both are one register stage (the packer) or a pass-through
holding register (the unpacker).
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .frame_beats import byte_layout, word_layout

__all__ = ["BytePacker", "ByteUnpacker"]


class BytePacker(wiring.Component):
    """Members: ``i_valid``, ``i`` (byte beat); ``o_valid``, ``o`` (word beat)."""

    def __init__(self, data_width, user_width, domain="rx"):
        self._width = data_width
        self._domain = domain
        super().__init__(
            {
                "i_valid": In(1),
                "i": In(byte_layout(user_width)),
                "o_valid": Out(1),
                "o": Out(word_layout(data_width, user_width)),
            }
        )

    def elaborate(self, platform):
        m = Module()
        d = m.d[self._domain]
        n = self._width // 8
        acc = Signal(self._width)
        index = Signal(range(n))
        # o_valid as one expression (not "0, or 1 when ..."), so that Yosys gives it no
        # synchronous reset of its own: a one-flip-flop control set (see async_fifo.py).
        d += self.o_valid.eq(self.i_valid & (self.i.last | (index == n - 1)))
        with m.If(self.i_valid):
            word = Signal(self._width)
            m.d.comb += word.eq(acc)
            for k in range(n):
                with m.If(index == k):
                    m.d.comb += word[8 * k : 8 * (k + 1)].eq(self.i.data)
            with m.If(self.i.last | (index == n - 1)):
                d += [
                    self.o.data.eq(word),
                    self.o.count.eq(index),
                    self.o.last.eq(self.i.last),
                    self.o.user.eq(self.i.user),
                    acc.eq(0),
                    index.eq(0),
                ]
            with m.Else():
                d += [acc.eq(word), index.eq(index + 1)]
        return m


class ByteUnpacker(wiring.Component):
    """Members: ``i`` (in stream of word beats); ``o`` (out stream of byte beats)."""

    def __init__(self, data_width, user_width, domain="tx"):
        self._width = data_width
        self._domain = domain
        super().__init__(
            {
                "i": In(stream.Signature(word_layout(data_width, user_width))),
                "o": Out(stream.Signature(byte_layout(user_width))),
            }
        )

    def elaborate(self, platform):
        m = Module()
        d = m.d[self._domain]
        n = self._width // 8
        held = Signal()
        word = Signal(word_layout(self._width, len(self.i.payload.user)))
        index = Signal(range(n))
        at_end = Signal()
        m.d.comb += at_end.eq(index == word.count)
        byte = Signal(8)
        for k in range(n):
            with m.If(index == k):
                m.d.comb += byte.eq(word.data[8 * k : 8 * (k + 1)])
        m.d.comb += [
            self.o.valid.eq(held),
            self.o.payload.data.eq(byte),
            self.o.payload.last.eq(word.last & at_end),
            self.o.payload.user.eq(word.user),
            self.i.ready.eq(~held | (self.o.ready & at_end)),
        ]
        with m.If(self.i.valid & self.i.ready):
            d += [held.eq(1), word.eq(self.i.payload), index.eq(0)]
        with m.Elif(self.o.ready & held):
            with m.If(at_end):
                d += held.eq(0)
            with m.Else():
                d += index.eq(index + 1)
        return m
