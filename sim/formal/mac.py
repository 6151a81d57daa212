"""MAC transmit framer: what goes on the GMII wire is a well-formed Ethernet frame.

:class:`TxWire` drives rtl/mac/tx_framer.py (in ``sync`` here; the MAC runs it in
``tx``) with a free byte stream (valid, data, last, user: any frame length, the input
may fall behind and cause an underrun) and watches only its outputs. A *run* is a
stretch of clocks with ``tx_en`` high. It asserts every clock:

* a run begins with seven ``0x55`` and the SFD ``0xD5``, with ``tx_er`` low;
* ``tx_er`` only inside a run, together with ``underrun``, and as its last clock (an
  underrun cuts the frame: the run ends the clock after);
* between two runs at least 12 idle clocks (IFG; ``min_gap`` raises the claim);
* a run without ``tx_er`` lasts exactly 8 + max(n, 60) + 4 clocks, n the beats taken
  while it ran (preamble and SFD, the frame padded to 60 bytes, the FCS): no gap inside
  a frame and the padding exact; ``sent`` rises in its last clock, ``bad`` only then.

Two properties: ``mac_tx_preamble`` (the bytes: they bring the data path and the CRC
into the solver's cone; depth 30, fast) and ``mac_tx_gap_and_length`` (the rest, with
no byte in its cone; depth 96, ``--all``). BMC only: the framer's state (FSM, byte
count) is not visible at its ports, and a frame's bytes may run for any number of
clocks, so no k closes the induction; depth 96 takes a 60-byte frame from the first
clock after reset through its gap to the next preamble (the cover check reaches that
second start), depth 30 a frame cut by an underrun and the next one's preamble.
"""

from amaranth.hdl import Assert, Assume, Cover, Elaboratable, Module, Mux, ResetSignal, Signal

from .registry import Property, inputs_of, register, register_reach

__all__ = ["TxWire"]

PRE, SFD, IFG, MIN = 0x55, 0xD5, 12, 60


class TxWire(Elaboratable):
    def __init__(self, cover=False, min_gap=IFG, check_bytes=True, check_timing=True):
        from opengse.rtl.mac.tx_framer import TxFramer

        self.dut = TxFramer(domain="sync")
        self.cover, self.min_gap = cover, min_gap
        # The two halves: the bytes (preamble, SFD) bring the data path and the CRC into
        # the solver's cone; the timing (gap, length, sent) does not.
        self.check_bytes, self.check_timing = check_bytes, check_timing

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        m.d.comb += Assume(~ResetSignal())
        en, er, txd = dut.tx_en, dut.tx_er, dut.txd
        prev_en, prev_er, prev_sent = Signal(), Signal(), Signal()
        pos = Signal(8)  # clocks of the current run, this one included (saturates)
        idle = Signal(8, init=255)  # idle clocks since the last run (saturates)
        beats = Signal(8)  # input beats taken while this run ran
        had_er = Signal()
        runs = Signal(2)  # runs started (saturates): the cover check's second start
        m.d.sync += [prev_en.eq(en), prev_er.eq(er), prev_sent.eq(dut.sent)]
        take = dut.i.valid & dut.i.ready
        pos_now = Signal(8)
        m.d.comb += pos_now.eq(0)
        with m.If(en):
            m.d.comb += pos_now.eq(1)
            with m.If(prev_en):
                m.d.comb += pos_now.eq(pos + (pos != 255))
            m.d.sync += [pos.eq(pos_now), idle.eq(0)]
            m.d.sync += beats.eq((Mux(prev_en, beats, 0) + take)[:8])
            m.d.sync += had_er.eq((had_er & prev_en) | er)
        with m.Else():
            m.d.sync += idle.eq(idle + (idle != 255))
        with m.If(en & ~prev_en):
            m.d.sync += runs.eq(runs + (runs != 3))
        if self.check_bytes:
            with m.If(en & (pos_now <= 7)):
                m.d.comb += Assert((txd == PRE) & ~er, "preamble byte wrong")
            with m.If(en & (pos_now == 8)):
                m.d.comb += Assert((txd == SFD) & ~er, "SFD wrong")
        if not self.check_timing:
            if self.cover:
                m.d.comb += Cover(en & ~prev_en & (runs == 1), "a second frame's preamble")
            return m
        with m.If(en & ~prev_en):
            m.d.comb += Assert(idle >= self.min_gap, "fewer idle clocks between two frames than the IFG")
        m.d.comb += [
            Assert(~er | en, "tx_er outside a frame"),
            Assert(er == dut.underrun, "tx_er without an underrun, or an underrun without tx_er"),
            Assert(~prev_er | ~en, "the frame went on after tx_er"),
            Assert(~dut.sent | en, "sent outside a frame"),
            Assert(~dut.bad | dut.sent, "bad without sent"),
        ]
        with m.If(prev_en & ~en):  # a run ended last clock
            wanted = 8 + 4 + Mux(beats < MIN, MIN, beats)
            with m.If(~had_er):
                m.d.comb += [
                    Assert(pos == wanted, "frame length on the wire is not 8 + max(n, 60) + 4"),
                    Assert(prev_sent, "sent not in the frame's last clock"),
                ]
            with m.Else():
                m.d.comb += Assert(~prev_sent, "an underrun frame counted as sent")
        m.d.comb += Assert(~prev_sent | ~en, "the frame went on after sent")
        if self.cover:
            m.d.comb += Cover(en & ~prev_en & (runs == 1) & (idle == IFG), "a second frame, 12 idle clocks")
        return m


def _build(**kw):
    def build(cover=False):
        top = TxWire(cover=cover, **kw)
        return top, inputs_of(top.dut)

    return build


_ASSUMES = "rst low after reset; input bytes, last, user and valid free (underruns included)"

BYTES = register(
    Property(
        name="mac_tx_preamble",
        block="mac",
        asserts="on the GMII side of the transmit framer every frame (every run of tx_en) starts with "
        "7 x 0x55 and the SFD 0xD5, tx_er low",
        assumptions=_ASSUMES,
        mode="bmc",
        depth=30,
        build=_build(check_timing=False),
        options={"engine": "smtbmc yices"},
        bounded_why="the framer's FSM and byte count are not visible at its ports and a frame's bytes "
        "may run for any number of clocks: no k closes the induction; depth 30 holds a first frame "
        "cut by an underrun and the next frame's preamble (the cover check reaches it)",
    )
)
TIMING = register(
    Property(
        name="mac_tx_gap_and_length",
        block="mac",
        asserts="on the GMII side of the transmit framer: tx_er only with underrun and as a frame's "
        "last clock; >= 12 idle clocks between frames; a frame without tx_er lasts exactly "
        "8 + max(n, 60) + 4 clocks for its n input bytes (no gap inside, padding to 60 bytes) and "
        "ends with sent; bad only with sent",
        assumptions=_ASSUMES,
        mode="bmc",
        depth=96,
        build=_build(check_bytes=False),
        options={"engine": "smtbmc yices"},
        fast=False,
        bounded_why="as mac_tx_preamble; depth 96 takes a 60-byte frame from reset through its gap to "
        "the next frame's start (clock 86; the cover check reaches it)",
    )
)
register_reach(BYTES, "a second frame's preamble")
register_reach(TIMING, "a second frame starting after exactly 12 idle clocks")
