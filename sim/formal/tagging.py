"""Tagger and untag (parser with ``strip=1``): a frame grows by 18 bytes, and shrinks by 18.

Both wrappers keep the lengths of the frames that went in (a :class:`ShadowQueue`) and
compare, at each output frame's last beat, the length that came out with the next one
expected. Frames on ``s_axis`` are contiguous (:func:`assume_packet_keep`); content,
``tuser``, idle clocks and back-pressure are free.
"""

from amaranth.hdl import Assert, Assume, Cover, Elaboratable, Module, ResetSignal

from .registry import Property, inputs_of, register, register_reach
from .streams import FrameTracker, ShadowQueue, assume_packet_keep, byte_of

__all__ = ["TaggerLength", "UntagLength"]

GSE_ETHERTYPE = 0x88B5
TAG_BYTES = 18
#: 64 bits, the product width: a minimum frame is 2 beats in and 4 out, so a short depth
#: sees several frames (each BMC step past 12 costs several times the one before: step 14
#: ran for minutes); at 16 bits a tagged frame is 16 beats and depth 20 saw none leave.
DATA_WIDTH = 64


class TaggerLength(Elaboratable):
    """``GSETagger`` (64-bit): every frame of 14 bytes or more that does not carry the GSE
    EtherType leaves 18 bytes longer, in order; nothing else leaves."""

    def __init__(self, data_width=DATA_WIDTH, grow=TAG_BYTES, cover=False):
        from opengse.rtl.header.tagger import GSETagger

        self.dut = GSETagger(data_width=data_width)
        self.bpb, self.grow, self.cover = data_width // 8, grow, cover

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        s, o = dut.s_axis, dut.m_axis
        assume_packet_keep(m, s)
        m.d.comb += Assume(~ResetSignal())
        i = FrameTracker(m, s, name="in")
        q = FrameTracker(m, o, name="out")
        # not a spoof: frame bytes 12-13 are not the GSE EtherType; not a runt
        b12, l12 = divmod(12, self.bpb)
        with m.If(i.at(b12)):
            m.d.comb += Assume(
                (byte_of(s, l12) != GSE_ETHERTYPE >> 8) | (byte_of(s, l12 + 1) != GSE_ETHERTYPE & 0xFF)
            )
        with m.If(s.valid & s.payload.last):
            m.d.comb += Assume(i.length >= 14)
        lens = ShadowQueue(m, len(i.length), 4, name="tagger_lengths")
        lens.push(m, i.end, i.length)
        lens.pop(m, q.end, "a frame left that never came in")
        with m.If(q.end):
            m.d.comb += Assert(q.length == lens.head + self.grow, "tagged frame is not 18 bytes longer")
        if self.cover:
            m.d.comb += Cover(q.end & (lens.level == 2), "a frame left, another behind it")
        return m


class UntagLength(Elaboratable):
    """``GSEParser`` with ``strip=1`` (64-bit): every well-formed GSE frame (the GSE
    EtherType, ``ver`` 1, a known ``type``, ``ttl`` > 0, 32 bytes or more) leaves 18 bytes
    shorter, in order; nothing else leaves."""

    def __init__(self, data_width=DATA_WIDTH, shrink=TAG_BYTES, cover=False):
        from opengse.rtl.header.parser import GSEParser

        self.dut = GSEParser(data_width=data_width, strip=1)
        self.bpb, self.shrink, self.cover = data_width // 8, shrink, cover

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        s, o = dut.s_axis, dut.m_axis
        assume_packet_keep(m, s)
        m.d.comb += Assume(~ResetSignal())
        i = FrameTracker(m, s, name="in")
        q = FrameTracker(m, o, name="out")

        def assume_byte(k, cond):
            beat, lane = divmod(k, self.bpb)
            with m.If(i.at(beat)):
                m.d.comb += Assume(cond(byte_of(s, lane)))

        assume_byte(12, lambda b: b == GSE_ETHERTYPE >> 8)
        assume_byte(13, lambda b: b == GSE_ETHERTYPE & 0xFF)
        assume_byte(14, lambda b: (b[4:8] == 1) & (b[0:4] < 4))  # ver 1, type 0..3
        assume_byte(23, lambda b: b != 0)  # ttl
        with m.If(s.valid & s.payload.last):
            m.d.comb += Assume(i.length >= 32)
        lens = ShadowQueue(m, len(i.length), 4, name="untag_lengths")
        lens.push(m, i.end, i.length)
        lens.pop(m, q.end, "a frame left that never came in")
        with m.If(q.end):
            m.d.comb += Assert(q.length + self.shrink == lens.head, "untagged frame is not 18 bytes shorter")
        if self.cover:
            m.d.comb += Cover(q.end, "an untagged frame left")
        return m


def _build(cls):
    def build(cover=False):
        top = cls(cover=cover)
        return top, inputs_of(top.dut)

    return build


_WHY = (
    "the frame realigner's partial-beat state is not inductive relative to the shadow "
    "lengths; the depth lets whole frames out (2 minimum frames back to back for the tagger, "
    "the first out with another in flight for untag; the cover check shows it)"
)

TAGGER = register(
    Property(
        name="tagger_len_plus_18",
        block="tagger",
        asserts="each frame leaves exactly 18 bytes longer, in order, none out of nothing (64-bit)",
        assumptions="contiguous tkeep; frames >= 14 bytes without the GSE EtherType (spoofs and "
        "runts are dropped by design); rst low after reset; content, tuser, s_hdr, idle "
        "clocks and m_axis_tready free",
        mode="bmc",
        depth=12,
        build=_build(TaggerLength),
        options={"engine": "smtbmc yices"},
        bounded_why=_WHY,
    )
)
UNTAG = register(
    Property(
        name="untag_len_minus_18",
        block="parser",
        asserts="with strip=1 each well-formed GSE frame leaves exactly 18 bytes shorter, in "
        "order, none out of nothing (64-bit)",
        assumptions="contiguous tkeep; GSE EtherType, ver 1, type 0-3, ttl > 0, >= 32 bytes "
        "(malformed frames are dropped by design); rst low after reset; other content, "
        "tuser (len errors only flag), idle clocks, m_axis_tready and m_hdr_ready free",
        mode="bmc",
        depth=14,
        build=_build(UntagLength),
        options={"engine": "smtbmc yices"},
        bounded_why=_WHY,
    )
)
register_reach(TAGGER, "a tagged frame leaves with another one in flight")
register_reach(UNTAG, "an untagged frame leaves")
