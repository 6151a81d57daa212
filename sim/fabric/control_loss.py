"""ControlLoss: spoils a random fraction of the REQUEST and GRANT frames on a link.

Sits between a sender and its :class:`~opengse.rtl.tb.link.FabricLink`. A frame lost
on a real wire arrives with a bad FCS and the receiving MAC drops it; here the frame
leaves with ``tuser`` bit 0 set on its last beat, which every receiving buffer of the
fabric drops whole (brief section 3). Only GSE REQUEST (type 1) and GRANT (type 2)
frames are spoiled; DATA and PROBE frames pass untouched.
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from opengse.rtl.header.gse_header import GSE_ETHERTYPE, GSEType
from opengse.rtl.lib.stream import AXIStreamSignature

__all__ = ["ControlLoss"]


class ControlLoss(wiring.Component):
    """Pass-through (no register, no latency) that spoils control frames at random.

    Parameters: ``data_width`` (64 or wider: the EtherType and GSE type byte, frame
    bytes 12-14, must lie in one beat, beat 1 at 64 bits), ``seed`` (the LFSR's start,
    non-zero).

    Interface:

    * ``s_axis`` -> ``m_axis``: the same beats in the same clock; ``s_axis.tready`` =
      ``m_axis.tready``.
    * ``threshold`` (in, 32): a REQUEST or GRANT frame is spoiled when the 32-bit LFSR,
      stepped once per frame, is below it: loss rate = ``threshold / 2**32`` (0: none).
    * ``stat_ctl`` (out): control frames seen; ``stat_spoiled``: of which spoiled.
    """

    def __init__(self, data_width=64, seed=1):
        if data_width < 64:
            raise ValueError("ControlLoss needs data_width >= 64")
        self.data_width = data_width
        self.seed = (seed * 0x9E3779B1) & 0xFFFFFFFF or 1
        sig = AXIStreamSignature(data_width)
        super().__init__(
            {
                "s_axis": In(sig),
                "m_axis": Out(sig),
                "threshold": In(32),
                "stat_ctl": Out(32),
                "stat_spoiled": Out(32),
            }
        )

    def elaborate(self, platform):
        m = Module()
        s, o = self.s_axis, self.m_axis
        bpb = self.data_width // 8
        m.d.comb += [o.valid.eq(s.valid), o.payload.eq(s.payload), s.ready.eq(o.ready)]
        lfsr = Signal(32, init=self.seed)
        beat = Signal(range(3))
        spoil = Signal()
        step = s.valid & s.ready

        def byte(k):  # frame byte k, in the beat that carries it
            return s.payload.data.word_select(k % bpb, 8)

        beat_of = 12 // bpb  # bytes 12..14 in one beat (data_width >= 64)
        is_ctl = (
            (byte(12) == (GSE_ETHERTYPE >> 8))
            & (byte(13) == (GSE_ETHERTYPE & 0xFF))
            & ((byte(14)[:4] == GSEType.REQUEST) | (byte(14)[:4] == GSEType.GRANT))
        )
        with m.If(step):
            with m.If(s.payload.last):
                m.d.sync += [beat.eq(0), spoil.eq(0)]
            with m.Elif(beat <= beat_of):
                m.d.sync += beat.eq(beat + 1)
            with m.If((beat == beat_of) & is_ctl):
                hit = lfsr < self.threshold
                m.d.sync += [
                    self.stat_ctl.eq(self.stat_ctl + 1),
                    # Galois LFSR, x^32 + x^22 + x^2 + x + 1
                    lfsr.eq((lfsr >> 1) ^ Mux(lfsr[0], 0x80200003, 0)),
                ]
                with m.If(hit):
                    m.d.sync += self.stat_spoiled.eq(self.stat_spoiled + 1)
                with m.If(~s.payload.last):
                    m.d.sync += spoil.eq(hit)
                with m.Elif(hit):
                    m.d.comb += o.payload.user[0].eq(1)
            with m.If(spoil & s.payload.last):
                m.d.comb += o.payload.user[0].eq(1)
        return m
