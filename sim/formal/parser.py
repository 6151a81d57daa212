"""Parser: it never stalls on frames of at least 60 bytes."""

from amaranth.hdl import Assert, Assume, Elaboratable, Module, Mux, Signal

from .registry import Property, inputs_of, register

__all__ = ["ParserNeverStalls"]


class ParserNeverStalls(Elaboratable):
    """With its outputs always ready, the parser takes every beat offered, in the clock
    it is offered, whatever frames of at least 60 bytes carry: malformed headers, any
    ``tkeep``/``tuser``, frames without ``tlast`` for a while (every other input is
    free, reset included)."""

    def __init__(self, data_width=64, strip=0, min_bytes=60):
        from opengse.rtl.header.parser import GSEParser

        self.dut = GSEParser(data_width=data_width, strip=strip)
        self.min_beats = max(1, -(-min_bytes // (data_width // 8)))

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        m.d.comb += [Assume(dut.m_axis.ready), Assume(dut.m_hdr.ready)]
        # Frames of at least 60 bytes (the brief's line-rate contract): no tlast before
        # the frame's 8th beat at 64 bits. Shorter frames are dropped and counted, and
        # two back-to-back one-beat runts cost a clock (found by this property).
        beats = Signal(range(self.min_beats + 1))
        with m.If(dut.s_axis.valid & dut.s_axis.ready):
            m.d.sync += beats.eq(
                Mux(dut.s_axis.payload.last, 0, Mux(beats == self.min_beats, beats, beats + 1))
            )
        with m.If(dut.s_axis.valid & dut.s_axis.payload.last):
            m.d.comb += Assume(beats >= self.min_beats - 1)
        # One clock after reset (the reset itself is free: any clock may be one).
        after_reset = Signal()
        m.d.sync += after_reset.eq(1)
        with m.If(after_reset & dut.s_axis.valid):
            m.d.comb += Assert(dut.s_axis.ready, "the parser held an offered beat")
        return m


def _parser_never_stalls(strip, min_bytes=60):
    def build():
        top = ParserNeverStalls(strip=strip, min_bytes=min_bytes)
        return top, inputs_of(top.dut)

    return build


register(
    Property(
        name="parser_never_stalls",
        block="parser",
        asserts="s_axis_tready is 1 in every clock s_axis_tvalid is, after reset (strip=0, 64-bit)",
        assumptions="m_axis_tready and m_hdr_ready always 1; frames of >= 60 bytes (no tlast "
        "before the 8th beat); every other input free (content, tkeep, tuser, rst)",
        mode="bmc",
        depth=20,
        build=_parser_never_stalls(0),
        options={"engine": "smtbmc yices"},
        bounded_why="k-induction fails (tried k = 12): in an unreachable state the wrapper's "
        "count of a frame's beats and the parser's window position disagree, and idle clocks "
        "keep that state for any k; depth 20 is two 60-byte frames and a third one started",
    )
)
