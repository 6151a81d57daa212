"""Test-only composition: GSETagger -> GSEParser(strip=1), for the identity test."""

from amaranth import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from opengse.rtl.catalog import BlockSpec
from opengse.rtl.header.parser import GSEParser, ParsedHeaderLayout
from opengse.rtl.lib.stream import AXIStreamSignature
from opengse.rtl.header.tagger import GSETagger, TaggerHeaderLayout


class TagParseLoop(wiring.Component):
    def __init__(self, data_width):
        self.data_width = data_width
        super().__init__(
            {
                "s_axis": In(AXIStreamSignature(data_width)),
                "s_hdr": In(stream.Signature(TaggerHeaderLayout)),
                "m_axis": Out(AXIStreamSignature(data_width)),
                "m_hdr": Out(stream.Signature(ParsedHeaderLayout)),
            }
        )

    def elaborate(self, platform):
        m = Module()
        m.submodules.tagger = tagger = GSETagger(self.data_width)
        m.submodules.parser = parser = GSEParser(self.data_width, strip=1)
        wiring.connect(m, wiring.flipped(self.s_axis), tagger.s_axis)
        wiring.connect(m, wiring.flipped(self.s_hdr), tagger.s_hdr)
        wiring.connect(m, tagger.m_axis, parser.s_axis)
        wiring.connect(m, parser.m_axis, wiring.flipped(self.m_axis))
        wiring.connect(m, parser.m_hdr, wiring.flipped(self.m_hdr))
        return m


LOOPBACK = BlockSpec(
    name="tag_parse_loop",
    module="gse_tag_parse_loop",
    factory=lambda data_width: TagParseLoop(data_width),
    params={"data_width": 64},
    description="test-only: tagger -> parser(strip)",
)
