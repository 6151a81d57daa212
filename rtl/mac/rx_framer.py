"""Receive framing: GMII bytes -> frame bytes without preamble, SFD and FCS, with status.

:class:`RxFramer` runs in the ``rx`` domain at one byte per clock and never stalls (the
line does not wait). Interface:

* in: ``rx_dv``, ``rx_er``, ``rxd`` (GMII, one byte per clock while ``rx_dv``);
* out: ``valid`` + ``beat`` (:func:`~.frame_beats.byte_layout` with a 3-bit
  :class:`~.frame_beats.RxStatus` as ``user``), one beat per clock at most, no ready;
* out: ``no_sfd`` pulses (one cycle) when a carrier (``rx_dv`` high) ends without an SFD.

Framing: bytes before the first ``0xD5`` (SFD) are the preamble and are skipped whatever
their value. From the SFD until ``rx_dv`` falls every byte goes through the CRC-32 and a
five-byte delay line: a byte leaves when the fifth after it arrives, so the last four
bytes (the FCS) never leave; when ``rx_dv`` falls the oldest byte left in the line leaves
as the last beat, the cycle after the last byte on the wire, with the status:
``RX_ERROR`` if ``rx_er`` was seen during the carrier, else ``RUNT`` if fewer than 64
bytes came (FCS included), else ``BAD_FCS`` if the CRC register is not the residue, else
``OK``. A frame of four bytes or fewer after the SFD has no byte to deliver: it leaves
as one beat (data 0, last, status ``RUNT`` or ``RX_ERROR``) so that every frame is seen
and counted downstream.

Timing: a byte leaves 5 clocks after it entered (the delay line) plus one register.
"""

from amaranth.hdl import Array, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .crc32 import CRC32_INIT, CRC32_RESIDUE, crc32_next
from .frame_beats import STATUS_WIDTH, RxStatus, byte_layout

__all__ = ["RxFramer", "MIN_FRAME"]

SFD = 0xD5
#: Shortest legal frame, FCS included.
MIN_FRAME = 64
_DELAY = 5


class RxFramer(wiring.Component):
    rx_dv: In(1)
    rx_er: In(1)
    rxd: In(8)
    valid: Out(1)
    beat: Out(byte_layout(STATUS_WIDTH))
    no_sfd: Out(1)

    def __init__(self, domain="rx"):
        self._domain = domain
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        d = m.d[self._domain]

        in_frame = Signal()  # SFD seen, carrier still on
        carrier = Signal()  # rx_dv was high since the last frame or idle
        error = Signal()  # rx_er seen during this carrier
        crc = Signal(32, init=CRC32_INIT)
        fill = Signal(range(_DELAY + 1))  # bytes in the delay line
        length = Signal(range(MIN_FRAME + 1))  # bytes since the SFD, saturating at 64
        line = Array(Signal(8, name=f"line{i}") for i in range(_DELAY))

        d += [self.valid.eq(0), self.no_sfd.eq(0)]

        with m.If(self.rx_dv):
            d += carrier.eq(1)
            with m.If(self.rx_er):
                d += error.eq(1)
            with m.If(in_frame):
                d += crc.eq(crc32_next(crc, self.rxd))
                d += line[0].eq(self.rxd)
                for i in range(1, _DELAY):
                    d += line[i].eq(line[i - 1])
                with m.If(fill == _DELAY):
                    d += [
                        self.valid.eq(1),
                        self.beat.data.eq(line[_DELAY - 1]),
                        self.beat.last.eq(0),
                        self.beat.user.eq(RxStatus.OK),
                    ]
                with m.Else():
                    d += fill.eq(fill + 1)
                with m.If(length != MIN_FRAME):
                    d += length.eq(length + 1)
            with m.Elif(self.rxd == SFD):
                d += [in_frame.eq(1), crc.eq(CRC32_INIT), fill.eq(0), length.eq(0)]
        with m.Else():
            d += [carrier.eq(0), error.eq(0), in_frame.eq(0)]
            with m.If(in_frame):
                status = Signal(STATUS_WIDTH)
                with m.If(error):
                    m.d.comb += status.eq(RxStatus.RX_ERROR)
                with m.Elif(length != MIN_FRAME):
                    m.d.comb += status.eq(RxStatus.RUNT)
                with m.Elif(crc != CRC32_RESIDUE):
                    m.d.comb += status.eq(RxStatus.BAD_FCS)
                with m.Else():
                    m.d.comb += status.eq(RxStatus.OK)
                d += [self.valid.eq(1), self.beat.last.eq(1), self.beat.user.eq(status)]
                with m.If(fill == _DELAY):
                    d += self.beat.data.eq(line[_DELAY - 1])
                with m.Else():
                    d += self.beat.data.eq(0)
            with m.Elif(carrier):
                d += self.no_sfd.eq(1)
        return m
