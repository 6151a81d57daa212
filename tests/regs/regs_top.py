"""Test-only composition: a tagger and a parser behind one AXI4-Lite register bank.

``s_axis`` -> GSETagger -> GSEParser(strip=1) -> ``m_axis`` / ``m_hdr``. The bench gives
one header per frame on ``s_hdr`` (every field the tagger stamps but ``src_node`` and
``ttl``); those two come from the RW registers ``ingress.node_id`` and ``ingress.ttl``,
so configuration written over the bus changes what the frames carry (and a ``ttl`` of 0
makes the parser drop them). ``ingress.events`` is a W1C register of sticky flags:
bit 0 the parser dropped a frame, bit 1 the tagger dropped a spoofed frame, bit 2 a
frame marked bad passed. ``sys.uptime`` starts at ``uptime_init`` (near a 32-bit carry in
the test). Every counter of both blocks is an RO register, wired by
:func:`~opengse.rtl.regs.blocks.connect_block`.
"""

from amaranth import Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from opengse.rtl.catalog import BlockSpec
from opengse.rtl.header.parser import GSEParser, ParsedHeaderLayout
from opengse.rtl.header.tagger import GSETagger, TaggerHeaderLayout
from opengse.rtl.lib.stream import AXIStreamSignature
from opengse.rtl.regs.bank import AXI4LiteRegisterBank
from opengse.rtl.regs.blocks import block_registers, connect_block
from opengse.rtl.regs.description import Access, Register, RegisterBlock, RegisterMap
from opengse.rtl.regs.from_signature import connect_registers
from opengse.rtl.regs.system import SystemCounters, system_block

#: What the bench gives per frame: the tagger's header without src_node and ttl.
BENCH_FIELDS = tuple(n for n, _ in TaggerHeaderLayout if n not in ("src_node", "ttl"))
BenchHeaderLayout = data.StructLayout({n: TaggerHeaderLayout[n].shape for n in BENCH_FIELDS})

EVENT_PARSER_DROP, EVENT_SPOOF, EVENT_BAD_FRAME = 1, 2, 4
PARSER_DROPS = ("drop_runt", "drop_ver", "drop_type", "drop_ttl")


def ingress_block():
    return RegisterBlock(
        "ingress",
        [
            Register("node_id", 16, Access.RW, doc="src_node stamped into every frame"),
            Register("ttl", 8, Access.RW, reset=64, doc="ttl stamped into every frame"),
            Register(
                "events",
                3,
                Access.W1C,
                doc="bit 0: parser dropped a frame; bit 1: tagger dropped a spoofed "
                "frame; bit 2: a frame marked bad passed",
            ),
        ],
        doc="the test top's own registers",
    )


def top_map(data_width=64):
    tagger, parser = GSETagger(data_width), GSEParser(data_width, strip=1)
    for c in (tagger, parser):
        c._MustUse__silence = True
    return RegisterMap(
        [
            system_block(),
            block_registers("tagger", tagger),
            block_registers("parser", parser),
            ingress_block(),
        ],
        name="top",
        doc="test top: tagger + parser",
    )


def block_counters(regmap):
    """``{bank port: 1}``: the tagger's and parser's 32-bit counters (one per frame)."""
    return {
        f"{blk.name}_{reg.name}": 1
        for blk, reg in regmap.registers()
        if blk.name in ("tagger", "parser") and reg.width == 32 and reg.access == Access.RO
    }


class RegsTop(wiring.Component):
    """``counter_store``: the blocks' counters are kept in the bank's CounterStore."""

    def __init__(self, data_width=64, uptime_init=0, counter_store=0):
        self.data_width, self.uptime_init = data_width, uptime_init
        self.regmap = top_map(data_width)
        counters = block_counters(self.regmap) if counter_store else None
        self._bank = AXI4LiteRegisterBank(self.regmap, addr_width=12, counters=counters)  # a 4 KB window
        axil = {n: m for n, m in self._bank.signature.members.items() if n.startswith("s_axil_")}
        super().__init__(
            {
                "s_axis": In(AXIStreamSignature(data_width)),
                "s_hdr": In(stream.Signature(BenchHeaderLayout)),
                "m_axis": Out(AXIStreamSignature(data_width)),
                "m_hdr": Out(stream.Signature(ParsedHeaderLayout)),
                **axil,
            }
        )

    def elaborate(self, platform):
        m = Module()
        m.submodules.bank = bank = self._bank
        m.submodules.tagger = tagger = GSETagger(self.data_width)
        m.submodules.parser = parser = GSEParser(self.data_width, strip=1)
        m.submodules.sys = sysc = SystemCounters(self.regmap.fingerprint(), self.uptime_init)
        for name, member in bank.signature.members.items():
            if name.startswith("s_axil_"):
                ours, theirs = getattr(self, name), getattr(bank, name)
                m.d.comb += theirs.eq(ours) if member.flow == In else ours.eq(theirs)
        connect_registers(m, bank, self.regmap["sys"], sysc, skip=("scratch",))
        connect_block(m, bank, "tagger", self.regmap["tagger"], tagger)
        connect_block(m, bank, "parser", self.regmap["parser"], parser)

        # Frames: bench header + the two configured fields -> tagger -> parser.
        wiring.connect(m, wiring.flipped(self.s_axis), tagger.s_axis)
        for name in BENCH_FIELDS:
            m.d.comb += tagger.s_hdr.payload[name].eq(self.s_hdr.payload[name])
        m.d.comb += [
            tagger.s_hdr.payload.src_node.eq(bank.ingress_node_id),
            tagger.s_hdr.payload.ttl.eq(bank.ingress_ttl),
            tagger.s_hdr.valid.eq(self.s_hdr.valid),
            self.s_hdr.ready.eq(tagger.s_hdr.ready),
        ]
        wiring.connect(m, tagger.m_axis, parser.s_axis)
        wiring.connect(m, parser.m_axis, wiring.flipped(self.m_axis))
        wiring.connect(m, parser.m_hdr, wiring.flipped(self.m_hdr))

        # Event flags: a counter that moved this clock.
        def moved(counter):
            last = Signal.like(counter)
            m.d.sync += last.eq(counter)
            return last != counter

        drop = 0
        for n in PARSER_DROPS:
            drop = drop | moved(getattr(parser, f"stat_{n}"))
        m.d.comb += bank.ingress_events.eq(
            drop
            | (moved(tagger.stat_drop_spoof) << 1)
            | ((moved(tagger.stat_err_frame) | moved(parser.stat_err_frame)) << 2)
        )
        return m


TOP = BlockSpec(
    name="regs_top",
    module="gse_regs_top",
    factory=lambda data_width, uptime_init, counter_store: RegsTop(data_width, uptime_init, counter_store),
    params={"data_width": 64, "uptime_init": 0, "counter_store": 0},
    description="test-only: tagger + parser behind an AXI4-Lite register bank",
)
