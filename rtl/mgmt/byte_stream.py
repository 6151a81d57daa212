"""BeatsToBytes and BytesToBeats: an AXI4-Stream packet stream, one byte per transfer.

The management responder handles a few frames per second and parses them a byte at a
time, which keeps its logic small; these two convert at its edges.
"""

from amaranth import Cat, Const, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..lib.stream import AXIStreamSignature, check_data_width

__all__ = ["byte_layout", "BeatsToBytes", "BytesToBeats"]


def byte_layout(user_width=1):
    """One byte of a packet: ``data``, ``last`` (the packet's last byte), ``user`` (the
    ``tuser`` of the beat the byte came in)."""
    return data.StructLayout({"data": 8, "last": 1, "user": user_width})


class BeatsToBytes(wiring.Component):
    """``s_axis`` (in, AXI4-Stream of ``data_width``, ``user_width``) -> ``m_bytes`` (out,
    :func:`byte_layout`): the bytes of each beat, byte 0 first.

    ``tkeep`` must be contiguous from byte 0 (what every block of the project emits):
    the bytes up to the first clear ``tkeep`` bit are passed. A beat with ``tkeep[0]``
    clear (no byte at all) passes its byte 0 with ``user[0]`` (frame error) set, so
    the packet it belongs to is dropped as bad. Throughput: one byte per clock; a beat is taken in
    the clock its last byte goes (so back-to-back beats flow without a gap).

    Timing: the beat is held in a shift register that moves a byte down per byte taken,
    so ``m_bytes``' byte is a register (no byte multiplexer) and "last byte of the
    beat" is one register bit; ``s_axis.tready`` is ``~full | (m_bytes.ready & that
    bit)``."""

    def __init__(self, data_width=64, user_width=1):
        self.data_width, self.user_width = check_data_width(data_width), user_width
        super().__init__(
            {
                "s_axis": In(AXIStreamSignature(data_width, user_width)),
                "m_bytes": Out(stream.Signature(byte_layout(user_width))),
            }
        )

    def elaborate(self, platform):
        m = Module()
        n = self.data_width // 8
        s, o = self.s_axis, self.m_bytes
        beat_data, beat_last, beat_user = Signal(self.data_width), Signal(), Signal(self.user_width)
        more = Signal(n - 1)  # more[0]: a byte follows the one on the output (tkeep, shifted)
        no_byte = Signal()  # tkeep[0] was 0
        full = Signal()
        end_of_beat = ~more[0] if n > 1 else Const(1, 1)
        m.d.comb += [
            o.valid.eq(full),
            o.payload.data.eq(beat_data[:8]),
            o.payload.last.eq(beat_last & end_of_beat),
            o.payload.user.eq(Cat(beat_user[0] | no_byte, beat_user[1:])),
            s.ready.eq(~full | (o.ready & end_of_beat)),
        ]
        with m.If(o.valid & o.ready):
            m.d.sync += [beat_data.eq(beat_data >> 8), more.eq(more >> 1)]
            with m.If(end_of_beat):
                m.d.sync += full.eq(0)
        with m.If(s.valid & s.ready):
            m.d.sync += [
                beat_data.eq(s.payload.data),
                beat_last.eq(s.payload.last),
                beat_user.eq(s.payload.user),
                more.eq(s.payload.keep[1:]),
                no_byte.eq(~s.payload.keep[0]),
                full.eq(1),
            ]
        return m


class BytesToBeats(wiring.Component):
    """``s_bytes`` (in, :func:`byte_layout` with a 1-bit ``user``) -> ``m_axis`` (out,
    AXI4-Stream of ``data_width``): packs bytes into beats, byte 0 in ``tdata[7:0]``;
    a beat leaves when full or at the packet's last byte (``tkeep`` marks its bytes,
    ``tuser`` is the last byte's ``user``). Throughput: one byte per clock, less one
    clock per beat while the full beat waits to be taken (``s_bytes.ready`` is low
    while a beat is held)."""

    def __init__(self, data_width=64):
        self.data_width = check_data_width(data_width)
        super().__init__(
            {"s_bytes": In(stream.Signature(byte_layout(1))), "m_axis": Out(AXIStreamSignature(data_width))}
        )

    def elaborate(self, platform):
        m = Module()
        n = self.data_width // 8
        i, o = self.s_bytes, self.m_axis
        idx = Signal(range(n))
        m.d.comb += i.ready.eq(~o.valid)
        with m.If(o.valid & o.ready):
            m.d.sync += [o.valid.eq(0), o.payload.keep.eq(0), o.payload.data.eq(0)]
        with m.If(i.valid & i.ready):
            m.d.sync += [
                o.payload.data.word_select(idx, 8).eq(i.payload.data),
                o.payload.keep.bit_select(idx, 1).eq(1),
                idx.eq(idx + 1),
            ]
            with m.If(i.payload.last | (idx == n - 1)):
                m.d.sync += [
                    o.valid.eq(1),
                    o.payload.last.eq(i.payload.last),
                    o.payload.user.eq(i.payload.user),
                ]
                m.d.sync += idx.eq(0)
        return m
