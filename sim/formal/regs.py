"""Register bank: a write to an RO register has no effect, and registers change only
through writes to their own address.

A small map (:func:`small_map`): one block with an RO register (``status``, 8 bits), an
RW register (``ctrl``, 8 bits, reset 0x5A) and W1C event bits (``events``, 4 bits). The
AXI4-Lite bus (every channel, any address, data, strobes, any handshake timing), the RO
value and the events are free; ``rst`` low after reset. The wrapper keeps the address of
the write being answered (taken at the AW handshake; one write is in flight at a time)
and asserts every clock:

* a write takes effect in the clock ``bvalid`` rises; one to the RO word answers SLVERR;
* ``blk_ctrl`` changes only in such a clock, for a write to its own word (so a write to
  RO, to ``events`` or to an unmapped address leaves it alone);
* a bit of ``blk_events_sticky`` falls only in such a clock, for a write to its word.
"""

from amaranth.hdl import Assert, Assume, Cover, Elaboratable, Module, ResetSignal, Signal

from .registry import Property, inputs_of, register, register_reach

__all__ = ["RegsROWrite", "small_map"]

SLVERR = 0b10


def small_map():
    from opengse.rtl.regs.description import Access, Register, RegisterBlock, RegisterMap

    return RegisterMap(
        [
            RegisterBlock(
                "blk",
                [
                    Register("status", 8, Access.RO, doc="an RO value"),
                    Register("ctrl", 8, Access.RW, reset=0x5A, doc="an RW register"),
                    Register("events", 4, Access.W1C, doc="sticky events"),
                ],
                doc="formal",
            )
        ],
        name="f",
        doc="formal",
    )


class RegsROWrite(Elaboratable):
    def __init__(self, cover=False):
        from opengse.rtl.regs.bank import AXI4LiteRegisterBank

        self.cover = cover
        self.map = small_map()
        self.dut = AXI4LiteRegisterBank(self.map)

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        m.d.comb += Assume(~ResetSignal())
        word = lambda reg: self.map.address("blk", reg) >> 2  # noqa: E731
        aw = Signal(len(dut.s_axil_awaddr))
        with m.If(dut.s_axil_awvalid & dut.s_axil_awready):
            m.d.sync += aw.eq(dut.s_axil_awaddr)
        b_prev = Signal()
        m.d.sync += b_prev.eq(dut.s_axil_bvalid)
        took = dut.s_axil_bvalid & ~b_prev  # the write being answered took effect now
        w_word = aw[2:]
        with m.If(took & (w_word == word("status"))):
            m.d.comb += Assert(dut.s_axil_bresp == SLVERR, "write to RO not answered SLVERR")
        ctrl, sticky = dut.blk_ctrl, dut.blk_events_sticky
        ctrl_prev, sticky_prev = Signal.like(ctrl, init=0x5A), Signal.like(sticky)
        m.d.sync += [ctrl_prev.eq(ctrl), sticky_prev.eq(sticky)]
        after_reset = Signal()
        m.d.sync += after_reset.eq(1)
        with m.If(after_reset & (ctrl != ctrl_prev)):
            m.d.comb += Assert(took & (w_word == word("ctrl")), "ctrl changed without a write to it")
        with m.If(after_reset & ((sticky_prev & ~sticky) != 0)):
            m.d.comb += Assert(took & (w_word == word("events")), "sticky bit cleared without a write to it")
        if self.cover:
            m.d.comb += [
                Cover(took & (w_word == word("status")), "a write to RO"),
                Cover(after_reset & (ctrl != ctrl_prev), "ctrl written"),
                Cover(after_reset & ((sticky_prev & ~sticky) != 0), "a sticky bit cleared"),
            ]
        return m


def _build(cover=False):
    top = RegsROWrite(cover=cover)
    return top, inputs_of(top.dut)


RO_WRITE = register(
    Property(
        name="regs_ro_write_no_effect",
        block="register_bank",
        asserts="a write to RO answers SLVERR; the RW register changes and W1C bits clear only "
        "in the clock a write to their own word takes effect (RO 8 bits, RW 8, W1C 4)",
        assumptions="rst low after reset; the whole AXI4-Lite bus, the RO value and the events free",
        mode="bmc",
        depth=12,
        build=_build,
        options={"engine": "smtbmc yices"},
        bounded_why="k-induction fails at any k: the wrapper's copy of the write address is not "
        "tied to the bank's held one in an unreachable state where the response is never taken "
        "(bready low); depth 12 covers several whole write transactions",
    )
)
register_reach(RO_WRITE, "a write to RO, a change of ctrl and a sticky clear")
