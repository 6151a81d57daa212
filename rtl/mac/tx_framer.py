"""Transmit framing: frame bytes -> GMII with preamble, SFD, padding, FCS and gap.

:class:`TxFramer` runs in the ``tx`` domain. Interface:

* in: ``i`` (stream of byte beats, ``user`` = the core's ``tuser`` bit on the last byte);
* out: ``tx_en``, ``tx_er``, ``txd`` (GMII, registered);
* out: one-cycle pulses ``sent`` (a frame's last FCS byte went out), ``bad`` (that frame
  had ``tuser`` set and was sent with an inverted FCS, so every receiver drops it) and
  ``underrun`` (the frame's next byte was not there in time: the frame was cut short
  with ``tx_er`` and the rest of its bytes are discarded).

On the wire: 7 bytes ``0x55``, the SFD ``0xD5``, the frame's bytes (one per clock; the
input must keep up: the transmit crossing releases only complete frames), zero bytes up
to 60, the FCS (CRC-32, least significant byte first), then at least 12 idle clocks
before the next preamble. Back to back, a frame of ``n`` >= 60 bytes occupies exactly
``8 + n + 4 + 12`` clocks: line rate. ``i.ready`` is high only while frame bytes are
being sent (and while an underrun frame is discarded).
"""

from amaranth.hdl import Const, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .crc32 import CRC32_INIT, crc32_next
from .frame_beats import byte_layout

__all__ = ["TxFramer", "IFG", "MIN_PAYLOAD"]

PREAMBLE, SFD = 0x55, 0xD5
#: Inter-frame gap in byte times.
IFG = 12
#: Frames shorter than this (without FCS) are padded with zeros.
MIN_PAYLOAD = 60


class TxFramer(wiring.Component):
    i: In(stream.Signature(byte_layout(1)))
    tx_en: Out(1)
    tx_er: Out(1)
    txd: Out(8)
    sent: Out(1)
    bad: Out(1)
    underrun: Out(1)

    def __init__(self, domain="tx"):
        self._domain = domain
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        d = m.d[self._domain]
        count = Signal(range(max(MIN_PAYLOAD, IFG) + 1))
        crc = Signal(32, init=CRC32_INIT)
        fcs = Signal(32)
        poison = Signal()

        d += [
            self.tx_en.eq(0),
            self.tx_er.eq(0),
            self.txd.eq(0),
            self.sent.eq(0),
            self.bad.eq(0),
            self.underrun.eq(0),
        ]

        def emit(byte, er=0):
            m.d[self._domain] += [self.tx_en.eq(1), self.tx_er.eq(er), self.txd.eq(byte)]

        with m.FSM(domain=self._domain):
            with m.State("IDLE"):
                with m.If(self.i.valid):
                    d += count.eq(0)
                    m.next = "PREAMBLE"
            with m.State("PREAMBLE"):
                d += count.eq(count + 1)
                with m.If(count == 7):
                    emit(SFD)
                    d += [count.eq(0), crc.eq(CRC32_INIT), poison.eq(0)]
                    m.next = "DATA"
                with m.Else():
                    emit(PREAMBLE)
            with m.State("DATA"):
                m.d.comb += self.i.ready.eq(1)
                with m.If(self.i.valid):
                    emit(self.i.payload.data)
                    d += crc.eq(crc32_next(crc, self.i.payload.data))
                    with m.If(count != MIN_PAYLOAD):
                        d += count.eq(count + 1)
                    with m.If(self.i.payload.last):
                        d += poison.eq(self.i.payload.user[0])
                        with m.If(count + 1 < MIN_PAYLOAD):
                            m.next = "PAD"
                        with m.Else():
                            m.next = "FCS_LOAD"
                with m.Else():
                    emit(0, er=1)
                    d += self.underrun.eq(1)
                    m.next = "DISCARD"
            with m.State("PAD"):
                emit(0)
                d += [crc.eq(crc32_next(crc, Const(0, 8))), count.eq(count + 1)]
                with m.If(count + 1 == MIN_PAYLOAD):
                    m.next = "FCS_LOAD"
            with m.State("FCS_LOAD"):
                # FCS = inverted register; a poisoned frame sends the register itself.
                value = Signal(32)
                m.d.comb += value.eq(crc ^ (~poison).replicate(32))
                emit(value[:8])
                d += [fcs.eq(value >> 8), count.eq(1)]
                m.next = "FCS"
            with m.State("FCS"):
                emit(fcs[:8])
                d += [fcs.eq(fcs >> 8), count.eq(count + 1)]
                with m.If(count == 3):
                    d += [self.sent.eq(1), self.bad.eq(poison), count.eq(0)]
                    m.next = "GAP"
            with m.State("DISCARD"):
                m.d.comb += self.i.ready.eq(1)
                with m.If(self.i.valid & self.i.payload.last):
                    d += count.eq(0)
                    m.next = "GAP"
            with m.State("GAP"):
                # IFG - 1 clocks here; IDLE is the last idle clock before the preamble.
                d += count.eq(count + 1)
                with m.If(count == IFG - 2):
                    m.next = "IDLE"
        return m
