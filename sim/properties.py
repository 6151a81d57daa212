"""The formal properties of the blocks, in one registry: ``gse formal`` runs them.

Each :class:`Property` names the block, what it asserts, the assumptions it makes,
its mode (``bmc``: bounded to ``depth`` clocks; ``prove``: k-induction, unbounded;
``cover``: a reachability check that keeps the others from being vacuous) and how to
build its wrapper (an Elaboratable with ``Assert``/``Assume``/``Cover`` statements
around the block). The regression runs the same wrappers (tests/*/test_*_formal.py).
"""
from dataclasses import dataclass, field

from amaranth.hdl import Assert, Assume, Elaboratable, Module, Mux, Signal, Value
from amaranth.lib.wiring import In

from .formal import prove

__all__ = ["Property", "PROPERTIES", "register", "run_property", "inputs_of"]


@dataclass
class Property:
    name: str
    block: str
    asserts: str
    assumptions: str
    mode: str
    depth: int
    build: object               # () -> (wrapper, ports)
    options: dict = field(default_factory=dict)   # engine / script for prove()

    def summary(self):
        return {"name": self.name, "block": self.block, "mode": self.mode,
                "depth": self.depth, "asserts": self.asserts,
                "assumptions": self.assumptions}


PROPERTIES = {}


def register(prop):
    if prop.name in PROPERTIES:
        raise ValueError(f"property {prop.name!r} registered twice")
    PROPERTIES[prop.name] = prop
    return prop


def inputs_of(block):
    """The block's input signals (free for the solver); logic reaching no assertion is
    then removed by Yosys, which keeps the problem small."""
    return [Value.cast(sig) for _path, member, sig in block.signature.flatten(block)
            if member.flow == In]


def run_property(prop, workdir, *, depth=None, timeout=None):
    """Run one property; returns :class:`~opengse.sim.formal.FormalResult` (no raise)."""
    top, ports = prop.build()
    return prove(top, ports=ports, depth=depth or prop.depth, mode=prop.mode,
                 workdir=workdir, timeout=timeout, check=False, **prop.options)


# ---- parser ----------------------------------------------------------------------------

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
            m.d.sync += beats.eq(Mux(dut.s_axis.payload.last, 0,
                                     Mux(beats == self.min_beats, beats, beats + 1)))
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


register(Property(
    name="parser_never_stalls", block="parser",
    asserts="s_axis_tready is 1 in every clock s_axis_tvalid is, after reset (strip=0, 64-bit)",
    assumptions="m_axis_tready and m_hdr_ready always 1; frames of >= 60 bytes (no tlast "
                "before the 8th beat); every other input free (content, tkeep, tuser, rst)",
    mode="bmc", depth=20, build=_parser_never_stalls(0),
    options={"engine": "smtbmc yices"}))
