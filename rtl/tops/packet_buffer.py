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
    * ``level``: beats written and not yet read (committed or not), a register.
    * ``stat_*``: count one clock after the event (the strobe is registered first).

    Timing: ``s_axis.tready`` is logic of registers only (``full`` is the top bit of a
    level register), so the write side never waits on a compare.
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
        rd = Signal(aw + 1)  # next beat to leave
        discard = Signal()  # throwing away the rest of an oversize packet
        # wr - rd kept as a register: ``full`` is its top bit (level <= depth, a power
        # of two), so the write side's ready is not a subtractor and a compare deep
        committed = Signal()  # a packet was committed in the last clock
        lvl = Signal(aw + 1)
        full = lvl[aw]
        m.d.comb += self.level.eq(lvl)

        # -- write side, as flat sums of products of s_axis and registers (what a
        # beat does is decided in two or three LUT levels)
        advance = o.valid & o.ready
        o_valid = Signal(name="o_valid")
        # only the packet being written is inside: cw == rd, which is ~o_valid
        # (rd != the cw of one clock before) unless a packet was committed just now
        oversize = full & ~o_valid & ~committed
        if self.drop_full:
            # no room for this beat: the packet goes whole (oversize or not)
            m.d.comb += s.ready.eq(1)
            start_drop = s.valid & ~discard & full
        else:
            m.d.comb += s.ready.eq(~full | discard | oversize)
            start_drop = s.valid & ~discard & oversize
        last, user = s.payload.last, s.payload.user
        write = Signal()  # the beat goes into the SRAM (taken, no drop under way or starting)
        commit, bad, inc, rewind = Signal(), Signal(), Signal(), Signal()
        m.d.comb += [
            write.eq(s.valid & ~discard & ~full),
            commit.eq(s.valid & ~discard & ~full & last & ~user),
            bad.eq(s.valid & ~discard & ~full & last & user),
            inc.eq(s.valid & ~discard & ~full & ~(last & user)),  # wr + 1
            rewind.eq(bad | start_drop),  # wr back to cw
            mem.w_en.eq(write),
            mem.w_addr.eq(wr[:aw]),
            mem.w_data.eq(Cat(s.payload.data, s.payload.keep, last)),
        ]
        with m.If(rewind):
            m.d.sync += wr.eq(cw)
        with m.Elif(inc):
            m.d.sync += wr.eq(wr + 1)
        with m.If(commit):
            m.d.sync += cw.eq(wr + 1)
        m.d.sync += committed.eq(commit)
        # the rest of a dropped packet is taken and thrown away
        with m.If(start_drop & ~last):
            m.d.sync += discard.eq(1)
        with m.Elif(s.valid & last):
            m.d.sync += discard.eq(0)
        # counters count a strobe registered the clock before (one clock late), so that
        # their clock enable is a register
        bad_s, oversize_s, full_s = Signal(), Signal(), Signal()
        m.d.sync += [bad_s.eq(bad), oversize_s.eq(start_drop & oversize), full_s.eq(start_drop & ~oversize)]
        with m.If(bad_s):
            m.d.sync += self.stat_drop_bad.eq(self.stat_drop_bad + 1)
        with m.If(oversize_s):
            m.d.sync += self.stat_drop_oversize.eq(self.stat_drop_oversize + 1)
        if self.drop_full:
            with m.If(full_s):
                m.d.sync += self.stat_drop_full.eq(self.stat_drop_full + 1)

        # the level's next value: every candidate an adder on registers, the late
        # write/read strobes only select
        rd1 = Signal(aw + 1, init=1, name="rd1")  # rd + 1, a register
        with m.If(rewind):
            m.d.sync += lvl.eq(Mux(advance, cw - rd1, cw - rd))
        with m.Elif(inc & ~advance):
            m.d.sync += lvl.eq(lvl + 1)
        with m.Elif(~inc & advance):
            m.d.sync += lvl.eq(lvl - 1)

        # -- read side: the SRAM's read register is the output register
        # rd + 1 and the output's valid are registers: the consumer's ready reaches the
        # block RAM's read address through one multiplexer, not an adder
        rd_next = Mux(advance, rd1, rd)
        # = rd != cw_d in the next clock; both compares on registers, advance selects
        m.d.sync += o_valid.eq(Mux(advance, rd1 != cw, rd != cw))
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
