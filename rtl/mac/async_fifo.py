"""RegisteredAsyncFIFO: an asynchronous FIFO whose flags and read data are registers.

Amaranth's :class:`~amaranth.lib.fifo.AsyncFIFO` computes ``w_rdy`` and ``r_rdy`` from
Gray-pointer compares, and its read address from ``r_en`` through the pointer adder, in
the clock that uses them: on the ECP5 leaf the write side's full compare -> pointer
adder -> Gray encode, the read side's empty compare -> adder -> block RAM address, and
the block RAM's output into the consumer's logic were 9-10 ns (model) paths of the MAC
crossings. This FIFO has the same interface (and is an ``AsyncFIFO``, so the export
keeps it as a ``gse_cdc_async_fifo_<depth>x<width>`` module of its own) with:

* ``w_rdy`` a register, from the write side's view of the level one clock old: high
  while that is at most ``depth - 2``, so with one write a clock the memory never holds
  more than ``depth`` words. It can be low with one or two entries free;
* ``w_level`` a register: words in the memory as the write side sees them (its own
  writes up to the previous clock, the reads the synchroniser has brought);
* ``r_rdy`` and ``r_data`` registers: the memory is read ahead into a three-word output
  stage (``r_rdy`` = its first word is there), whose fill decides the next read from
  registered state only, so a read every clock is sustained;
* ``r_level`` a register, a clock or two old: words the read side knows of (in the
  memory, being read, in the output stage), up to ``depth + 3``. When the reader stops
  and the writer fills the memory it settles at ``depth + 2`` or ``depth + 3``.

Capacity: ``depth`` words in the memory plus three in the output stage. Latency: a
word written in write clock ``t`` is on ``r_data`` five read clocks after the write
pointer leaves ``t`` (two synchroniser flip-flops, the registered "memory holds a
word", the read of the memory, the output register), three more than ``AsyncFIFO``.

Pointers cross as Gray code through two-flip-flop ``FFSynchronizer`` chains each way.
Reset, as ``AsyncFIFO``: the write domain's reset empties the FIFO and reaches the read
side as ``r_rst`` (an ``AsyncFFSynchronizer``: set at once, released two read clocks
after the write reset ends). The write reset holds the write pointers at 0, ``r_rst``
the read pointers (``AsyncFIFO`` loads the synchronised write pointer instead) and
empties the output stage; the read domain's own reset leaves the FIFO's contents (its
state is reset-less). ``r_rdy`` is a register: a word already in
the output stage when the write side resets can still be read in the clock ``r_rst``
rises.
"""

from amaranth.hdl import Cat, Module, Mux, ResetSignal, Signal
from amaranth.lib.cdc import AsyncFFSynchronizer, FFSynchronizer
from amaranth.lib.fifo import AsyncFIFO
from amaranth.lib.memory import Memory

__all__ = ["RegisteredAsyncFIFO"]


def _gray(value):
    return value ^ value[1:]


def _xor_tree(bits):
    if len(bits) == 1:
        return bits[0]
    half = len(bits) // 2
    return _xor_tree(bits[:half]) ^ _xor_tree(bits[half:])


def _binary(gray):
    # Each bit its own balanced XOR tree: the running XOR (AsyncFIFO's) maps to a chain
    # of LUTs as deep as the pointer is wide.
    return Cat(*(_xor_tree([gray[j] for j in range(i, len(gray))]) for i in range(len(gray))))


class RegisteredAsyncFIFO(AsyncFIFO):
    """See the module docstring. Parameters as ``AsyncFIFO`` (``width``, ``depth`` a power
    of two of at least 4, ``r_domain``, ``w_domain``)."""

    def __init__(self, *, width, depth, r_domain="read", w_domain="write"):
        if depth < 4 or depth & (depth - 1):
            raise ValueError(f"RegisteredAsyncFIFO: depth must be a power of two >= 4, not {depth}")
        super().__init__(width=width, depth=depth, r_domain=r_domain, w_domain=w_domain, exact_depth=True)

    def elaborate(self, platform):
        m = Module()
        bits = self._ctr_bits
        wd, rd = m.d[self._w_domain], m.d[self._r_domain]
        m.submodules.storage = storage = Memory(shape=self.width, depth=self.depth, init=[])
        w_port = storage.write_port(domain=self._w_domain)
        r_port = storage.read_port(domain=self._r_domain)

        # ---- write side -----------------------------------------------------------
        wptr = Signal(bits)
        wptr_nxt = Signal(bits)
        wgray = Signal(bits)
        rgray_w = Signal(bits)  # the read pointer, synchronised
        rptr_w = Signal(bits)
        do_write = Signal()
        m.d.comb += [
            do_write.eq(self.w_en & self.w_rdy),
            wptr_nxt.eq(wptr + do_write),
            w_port.addr.eq(wptr[:-1]),
            w_port.data.eq(self.w_data),
            w_port.en.eq(do_write),
        ]
        wd += [wptr.eq(wptr_nxt), wgray.eq(_gray(wptr_nxt)), rptr_w.eq(_binary(rgray_w))]
        level_w = Signal(bits)
        m.d.comb += level_w.eq(wptr - rptr_w)
        # From registers only: with at most one write since, depth - 2 leaves room.
        wd += [self.w_level.eq(level_w), self.w_rdy.eq(level_w <= self.depth - 2)]

        # ---- read side ------------------------------------------------------------
        # Reset-less (the write side's reset clears it, through r_rst, as AsyncFIFO).
        rgray = Signal(bits, reset_less=True)  # Gray of raddr, updated with it
        raddr = Signal(bits, reset_less=True)  # next word to read from the memory
        wgray_r = Signal(bits)
        wptr_r = Signal(bits, reset_less=True)
        m.submodules.produce_cdc = FFSynchronizer(wgray, wgray_r, o_domain=self._r_domain)
        m.submodules.consume_cdc = FFSynchronizer(rgray, rgray_w, o_domain=self._w_domain)

        # Output stage: head (r_data) and two words behind it, valid bits v0, v1, v2
        # filled from v0 up. `pending`: a word was read from the memory in the last clock
        # and is on its output now, arriving at the stage. (Separate valid bits: a
        # vector whose bit 0 is r_rdy leaves that bit of its name unused in the export,
        # which lint flags.)
        v0, v1, v2 = (Signal(reset_less=True, name=f"v{i}") for i in range(3))
        head = Signal(self.width, reset_less=True)
        b1 = Signal(self.width, reset_less=True)
        b2 = Signal(self.width, reset_less=True)
        pending = Signal(reset_less=True)
        word = r_port.data
        r_rst = Signal()
        m.submodules.rst_cdc = AsyncFFSynchronizer(
            ResetSignal(self._w_domain, allow_reset_less=True), r_rst, o_domain=self._r_domain
        )
        # Read the memory when it holds a word and the output stage will have room for
        # it whatever is popped (fill + words in flight < 3). "Holds a word" is
        # registered: the clock before, both possible next read pointers (this one, this
        # one + 1) were compared with the synchronised write pointer, and `pending` says
        # which it became. The write pointer is then a clock older: it only grows, so the
        # answer errs only towards waiting. (The Gray compare into the pointer adder was
        # 12 LUT levels.) The next pointers are muxes of registers (raddr, + 1, + 2), so
        # `issue` meets no adder on its way to them.
        rgray_p1 = Signal(bits, init=1, reset_less=True)  # Gray of raddr + 1
        raddr_p1 = Signal(bits, init=1, reset_less=True)  # raddr + 1
        raddr_p2 = Signal(bits, init=2, reset_less=True)  # raddr + 2
        ne0 = Signal(reset_less=True)
        ne1 = Signal(reset_less=True)
        rd += [ne0.eq(rgray != wgray_r), ne1.eq(rgray_p1 != wgray_r)]
        issue = Signal()
        raddr_nxt = Signal(bits)
        raddr_p1_nxt = Signal(bits)
        m.d.comb += [
            issue.eq(Mux(pending, ne1, ne0) & (v0 + v1 + v2 + pending < 3)),
            raddr_nxt.eq(Mux(issue, raddr_p1, raddr)),
            raddr_p1_nxt.eq(Mux(issue, raddr_p2, raddr_p1)),
            r_port.addr.eq(raddr[:-1]),
            r_port.en.eq(1),
            self.r_rdy.eq(v0),
            self.r_data.eq(head),
        ]
        rd += [raddr.eq(raddr_nxt), raddr_p1.eq(raddr_p1_nxt)]
        rd += raddr_p2.eq(Mux(issue, raddr_p2 + 1, raddr_p2))
        rd += [rgray.eq(_gray(raddr_nxt)), rgray_p1.eq(_gray(raddr_p1_nxt))]
        rd += pending.eq(issue)

        pop = Signal()
        m.d.comb += pop.eq(self.r_en & v0)
        # Each register loads when it is popped from or empty: the head from b1 if that
        # holds a word, else from the memory; b1 likewise from b2; b2 from the memory.
        with m.If(pop | ~v0):
            rd += head.eq(Mux(v1, b1, word))
        with m.If(pop | ~v1):
            rd += b1.eq(Mux(v2, b2, word))
        with m.If(pop | ~v2):
            rd += b2.eq(word)
        # The valid bits shift out on a pop without an arrival, in on an arrival without
        # a pop. Written as AND-OR, not as assignments of constants under conditions:
        # Yosys turns "v2 <= 0 when ..." into a synchronous reset of v2 alone, a control
        # set of one flip-flop that nextpnr's placer could not legalise on the
        # Colorlight leaf (every seed that failed, failed on a `v2`).
        out_ = Signal()
        in_ = Signal()
        hold = Signal()
        m.d.comb += [out_.eq(pop & ~pending), in_.eq(~pop & pending), hold.eq(~(out_ | in_))]
        rd += [
            v0.eq((out_ & v1) | in_ | (hold & v0)),
            v1.eq((out_ & v2) | (in_ & v0) | (hold & v1)),
            v2.eq((in_ & v1) | (hold & v2)),
        ]

        # r_level, registered twice: memory words seen, plus the word in flight.
        rd += wptr_r.eq(_binary(wgray_r))
        in_stage = Signal(2, reset_less=True)
        rd += in_stage.eq(v0 + v1 + v2 + pending)
        rd += self.r_level.eq(wptr_r - raddr + in_stage)

        # The write side's reset holds its pointers at 0 and r_rst (set at once, released
        # two read clocks after it) holds the read pointers at 0: a synchronous reset to
        # a constant, no load of the synchronised pointer into the read address.
        with m.If(r_rst):
            rd += [raddr.eq(0), raddr_p1.eq(1), raddr_p2.eq(2), rgray.eq(0), rgray_p1.eq(1)]
            rd += [ne0.eq(0), ne1.eq(0), v0.eq(0), v1.eq(0), v2.eq(0), self.r_rst.eq(1)]
            rd += pending.eq(0)
        with m.Else():
            rd += self.r_rst.eq(0)
        return m
