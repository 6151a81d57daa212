"""PacketBuffer: a store-and-forward packet FIFO in SRAM that drops bad frames whole."""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..lib.sram import SRAM
from ..lib.stream import AXIStreamSignature, check_data_width

__all__ = ["PacketBuffer"]


class PacketBuffer(wiring.Component):
    """``depth`` beats (a power of two) of AXI4-Stream packets.

    * ``s_axis``: packets in; ``tuser`` on a last beat marks the packet bad (the
      cut-through contract of brief section 3): the whole packet is discarded (the write
      pointer goes back to the last committed packet) and ``stat_drop_bad`` counts it.
      ``tready`` is low while the buffer is full: a good packet is never dropped.
      A packet longer than ``depth`` beats can never fit: when the buffer is full and
      holds nothing but that packet, it is discarded (the rest is taken and thrown
      away) and ``stat_drop_oversize`` counts it.
    * ``drop_full`` (parameter, default False): instead of dropping ``tready`` when full,
      the buffer is always ready and a packet that finds it full is discarded whole (the
      write pointer goes back to the last committed packet, the rest of the packet is
      taken and thrown away) and ``stat_drop_full`` counts it (a member only with
      ``drop_full``). For a buffer that must never back-pressure its sender (the leaf's
      per-uplink admission queues, docs/leaf.md "All-to-all").
    * ``m_axis``: committed packets only (store-and-forward), ``tuser`` 0. A packet
      becomes visible 2 clocks after its last beat was written; then 1 beat per clock.
      ``tdata``/``tkeep``/``tlast`` come straight from the SRAM's read register.
    * ``level``: beats written and not yet read (committed or not).
    """

    def __init__(self, depth, data_width=64, drop_full=False):
        if depth < 2 or depth & (depth - 1):
            raise ValueError(f"depth must be a power of two >= 2, not {depth!r}")
        self.depth = depth
        self.data_width = check_data_width(data_width)
        self.drop_full = bool(drop_full)
        members = {
            "s_axis": In(AXIStreamSignature(data_width)),
            "m_axis": Out(AXIStreamSignature(data_width)),
            "level": Out(range(depth + 1)),
            "stat_drop_bad": Out(32),
            "stat_drop_oversize": Out(32),
        }
        if self.drop_full:
            members["stat_drop_full"] = Out(32)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        w = self.data_width
        kw = w // 8
        aw = (self.depth - 1).bit_length()
        m.submodules.mem = mem = SRAM(w + kw + 1, self.depth)
        s, o = self.s_axis, self.m_axis

        wr = Signal(aw + 1)  # next write (speculative, inside the current packet)
        cw = Signal(aw + 1)  # end of the last committed packet
        cw_d = Signal(aw + 1)  # cw one clock later: the SRAM read register has caught up
        rd = Signal(aw + 1)  # next beat to leave
        discard = Signal()  # throwing away the rest of an oversize packet

        full = Signal()
        m.d.comb += [full.eq((wr - rd)[: aw + 1] == self.depth), self.level.eq(wr - rd)]
        m.d.sync += cw_d.eq(cw)

        # -- write side
        oversize = full & (cw == rd)  # only the packet being written is inside
        overflow = Signal()  # drop_full: no room for this beat, the packet goes whole
        if self.drop_full:
            m.d.comb += [s.ready.eq(1), overflow.eq(full & ~oversize)]
        else:
            m.d.comb += s.ready.eq(~full | discard | oversize)
        take = s.valid & s.ready
        with m.If(take):
            with m.If(discard | oversize | overflow):
                with m.If(s.payload.last):
                    m.d.sync += discard.eq(0)
                with m.Else():
                    m.d.sync += discard.eq(1)
                with m.If(~discard):
                    m.d.sync += wr.eq(cw)
                    with m.If(oversize):
                        m.d.sync += self.stat_drop_oversize.eq(self.stat_drop_oversize + 1)
                    if self.drop_full:
                        with m.Else():
                            m.d.sync += self.stat_drop_full.eq(self.stat_drop_full + 1)
            with m.Else():
                m.d.comb += [
                    mem.w_en.eq(1),
                    mem.w_addr.eq(wr[:aw]),
                    mem.w_data.eq(Cat(s.payload.data, s.payload.keep, s.payload.last)),
                ]
                with m.If(s.payload.last & s.payload.user):
                    m.d.sync += [wr.eq(cw), self.stat_drop_bad.eq(self.stat_drop_bad + 1)]
                with m.Elif(s.payload.last):
                    m.d.sync += [wr.eq(wr + 1), cw.eq(wr + 1)]
                with m.Else():
                    m.d.sync += wr.eq(wr + 1)

        # -- read side: the SRAM's read register is the output register
        # rd + 1 and the output's valid are registers: the consumer's ready reaches the
        # block RAM's read address through one multiplexer, not an adder
        advance = o.valid & o.ready
        rd1, o_valid = Signal(aw + 1, init=1, name="rd1"), Signal(name="o_valid")
        rd_next = Mux(advance, rd1, rd)
        m.d.sync += o_valid.eq(rd_next != cw)  # = rd != cw_d in the next clock
        m.d.comb += [
            o.valid.eq(o_valid),
            mem.r0_addr.eq(rd_next[:aw]),
            o.payload.data.eq(mem.r0_data[:w]),
            o.payload.keep.eq(mem.r0_data[w : w + kw]),
            o.payload.last.eq(mem.r0_data[w + kw]),
            o.payload.user.eq(0),
        ]
        with m.If(advance):
            m.d.sync += [rd.eq(rd1), rd1.eq(rd1 + 1)]
        return m
