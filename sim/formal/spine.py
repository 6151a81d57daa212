"""Spine: every frame leaves with ``ttl`` one lower, and control goes ahead of data at
an output.

Configuration (:data:`PARAMS`): 2 ports, 64-bit, 2 nodes, 64-byte data queues, the
table and counters as ports (``config_ports``, not the AXI4-Lite bank). Inputs,
routes and back-pressure are free; ``rst`` low after reset.

* ``spine_ttl_decrement``: the wrapper makes each input frame carry its own expectation
  (an assumption on content only: frame byte 24, the high byte of ``seq``, equals byte
  23, ``ttl``; the spine passes byte 24 unchanged) and asserts that every frame leaving
  any output has byte 23 = byte 24 - 1, whatever the order frames leave in.
* ``spine_control_first``: the spine is elaborated by the wrapper so that it can watch
  the strict-priority mux of output 0 (submodule ``out_mux_0``: input 0 control queue,
  input 1 data queue); a data frame starts there only in a clock no control frame is
  offered (the mux's output is ``m_axis_0``).
"""

from amaranth.hdl import Assert, Assume, Cover, Elaboratable, Module, ResetSignal, Signal

from .registry import Property, inputs_of, register, register_reach
from .streams import FrameTracker, byte_of

__all__ = ["SpineTTL", "SpineControlFirst", "PARAMS"]

PARAMS = dict(ports=2, data_width=64, nodes=2, buffer_bytes=64, config_ports=True)  # routes as ports: free
TTL, MARK = 23, 24  # frame bytes


class SpineTTL(Elaboratable):
    def __init__(self, cover=False, **params):
        from opengse.rtl.tops.spine import GSESpine

        self.cover = cover
        self.dut = GSESpine(**{**PARAMS, **params})
        self.bpb = self.dut.data_width // 8

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        m.d.comb += Assume(~ResetSignal())
        (tb, tl), (mb, ml) = divmod(TTL, self.bpb), divmod(MARK, self.bpb)
        for i in range(dut.ports):
            for axis, kind in ((dut.s_axis[i], "in"), (dut.m_axis[i], "out")):
                t = FrameTracker(m, axis, name=f"{kind}{i}")
                ttl = Signal(8, name=f"{kind}{i}_ttl")
                with m.If(t.fire & t.at(tb)):
                    m.d.sync += ttl.eq(byte_of(axis, tl))
                ttl_now = byte_of(axis, tl) if tb == mb else ttl
                with m.If(t.at(mb)):
                    if kind == "in":
                        m.d.comb += Assume(byte_of(axis, ml) == ttl_now)
                    else:
                        m.d.comb += Assert(ttl_now == byte_of(axis, ml) - 1, "ttl not decremented by one")
                        if self.cover and i == 0:
                            m.d.comb += Cover(axis.valid, "a frame's ttl leaves output 0")
        return m


class SpineControlFirst(Elaboratable):
    def __init__(self, cover=False, **params):
        from opengse.rtl.tops.spine import GSESpine

        self.cover = cover
        self.dut = GSESpine(**{**PARAMS, **params})

    def elaborate(self, platform):
        m = Module()
        inner = self.dut.elaborate(platform)
        self.dut._MustUse__silence = True  # elaborated here, by hand
        m.submodules.dut = inner
        m.d.comb += Assume(~ResetSignal())
        mux = inner.submodules["out_mux_0"]
        ctl, dat = mux.s_axis[0], mux.s_axis[1]
        td = FrameTracker(m, dat, name="data")
        with m.If(td.fire & td.at(0)):
            m.d.comb += Assert(~ctl.valid, "a data frame started while a control frame was offered")
        if self.cover:
            m.d.comb += Cover(td.fire & td.at(0), "a data frame starts at output 0")
        return m


def _build(cls):
    def build(cover=False):
        top = cls(cover=cover)
        return top, inputs_of(top.dut)

    return build


_ASSUMES = "rst low after reset; frames, routes (s_route), route read-back and every tready free"

TTL_PROP = register(
    Property(
        name="spine_ttl_decrement",
        block="spine",
        asserts="every frame leaving any output has ttl one lower than it arrived with (2 ports, "
        "64-bit, 2 nodes, 64-byte data queues)",
        assumptions=_ASSUMES + "; each input frame carries its ttl again in byte 24 (content "
        "marker; the spine does not touch it)",
        mode="bmc",
        depth=22,
        build=_build(SpineTTL),
        options={"engine": "smtbmc yices"},
        fast=False,
        bounded_why="store-and-forward queues (SRAM) and four parsers: far from inductive; "
        "depth 22 lets a 4-beat frame through parser, queues and muxes (13 clocks from its last "
        "beat in to its first out; the cover checks reach both events)",
    )
)
CTL_PROP = register(
    Property(
        name="spine_control_first",
        block="spine",
        asserts="at output 0 a data frame starts only in a clock no control frame is offered "
        "(strict priority at every frame boundary)",
        assumptions=_ASSUMES,
        mode="bmc",
        depth=22,
        build=_build(SpineControlFirst),
        options={"engine": "smtbmc yices"},
        fast=False,
        bounded_why="as spine_ttl_decrement",
    )
)
register_reach(TTL_PROP, "a frame's ttl byte leaves output 0")
register_reach(CTL_PROP, "a data frame starts at output 0's priority mux")
