"""CounterStore: 32-bit counters kept in one block RAM, from the low bits of counters
that live in their blocks.

A register bank with many counters spends two LUT-sized cells per counter bit: a flip-flop
and a carry-chain adder bit in the block, and an input of the bank's read multiplexer.
Here a block's counter is read only through its low ``bits`` (Yosys then keeps only
those bits of the block's register and adder: nothing else loads the rest), and the
store keeps each counter's whole 32-bit value in RAM as ``{high, low}``, refreshed by a
round-robin scan that visits one counter per clock: it reads the counter's stored
``{high, low}`` and its present low bits ``cur`` and writes ``{high + (cur < low),
cur}`` (the low bits wrapped once since the last visit exactly when ``cur`` is below
``low``). That is exact while a counter advances by less than ``2**bits`` between two
visits; :func:`counter_bits` sizes ``bits`` for it.

A read waits for the scan's next visit of its counter and returns the word the visit
writes: the counter's value in a clock between the request and the answer, as a read of
a live register gives. The RAM has one read port, the scan's.

Parameters: ``addrs`` (the RAM address of counter ``i``; a bank uses its word index),
``bits``.

Interface:

* ``count`` (in, ``bits`` per counter): the counters' low bits; each counts from 0 at
  reset and wraps.
* ``rd_en`` (in), ``rd_addr`` (in): a read of the counter at RAM address ``rd_addr``
  (it must be one of ``addrs``), taken in the clock of ``rd_en``; ``rd_valid`` (out)
  falls in the next clock and rises with ``rd_data`` (out, 32) at most
  ``max(len(addrs), 4) + 4`` clocks after ``rd_en``; both hold until the next
  ``rd_en``.

Timing: the scan's slot ``j`` registers its address and the live bits through a
two-stage multiplexer (16-to-1 on ``j``'s low bits, registered, then on the rest), reads
the RAM, registers its word and writes the sum: a visit is 5 clocks from slot to write,
one slot per clock. There is no reset of the RAM: the first pass after reset writes
``{0, cur}`` (exact: no counter has advanced ``2**bits`` since reset), so reads are
answered from the first clock.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..lib.bits import mux_tree
from ..lib.sram import SRAM

__all__ = ["CounterStore", "counter_bits"]

_MIN_SLOTS = 4  # a counter's write lands before the scan reads its word again
_VISIT = 5  # clocks from a slot to its write
_GROUP_BITS = 4  # the first multiplexer stage picks within groups of 16 counters


def counter_bits(n, max_step):
    """Low bits per counter for ``n`` counters that advance by at most ``max_step`` per
    clock: a counter is visited every ``max(n, 4)`` clocks (and its first visit after
    reset comes within ``max(n, 4) + 5``), so it must not advance ``2**bits`` in that."""
    if n < 1 or max_step < 1:
        raise ValueError("counter_bits needs n >= 1 and max_step >= 1")
    return (max_step * (max(n, _MIN_SLOTS) + _VISIT)).bit_length()


class CounterStore(wiring.Component):
    """See the module docstring."""

    def __init__(self, addrs, bits):
        addrs = list(addrs)
        if not addrs or len(set(addrs)) != len(addrs) or min(addrs) < 0:
            raise ValueError("addrs: one distinct RAM address per counter, at least one")
        if not 1 <= bits < 32:
            raise ValueError(f"bits must be 1..31, not {bits}")
        self.addrs, self.bits = addrs, bits
        self.addr_width = max(1, max(addrs).bit_length())
        super().__init__(
            {
                "count": In(bits).array(len(addrs)),
                "rd_en": In(1),
                "rd_addr": In(self.addr_width),
                "rd_valid": Out(1),
                "rd_data": Out(32),
            }
        )

    def elaborate(self, platform):
        m = Module()
        K, n, aw = self.bits, len(self.addrs), self.addr_width
        slots = max(n, _MIN_SLOTS)
        m.submodules.ram = ram = SRAM(32, 1 << aw)
        addrs = self.addrs + [self.addrs[0]] * (slots - n)
        count = list(self.count) + [Const(0, K)] * (slots - n)

        # Slot j (stage A) -> the group's pick on j's low bits (B) -> the pick of a
        # group, the RAM read (C) -> the RAM's word, registered (D) -> the write (E).
        j = Signal(range(slots))
        m.d.sync += j.eq(Mux(j == slots - 1, 0, j + 1))
        lo_bits = min(_GROUP_BITS, max(1, (slots - 1).bit_length()))
        groups = [count[g : g + (1 << lo_bits)] for g in range(0, slots, 1 << lo_bits)]
        b_pick = [Signal(K, name=f"b_pick_{g}") for g in range(len(groups))]
        b_j = Signal(range(slots))
        m.d.sync += b_j.eq(j)
        for reg, members in zip(b_pick, groups):
            m.d.sync += reg.eq(mux_tree(dict(enumerate(members)), j[:lo_bits], K))
        # what the write needs of the slot number: a real counter's (not padding), the last
        c_real, c_last, c_cur = Signal(), Signal(), Signal(K)
        hi = b_j[lo_bits:]
        pick = mux_tree(dict(enumerate(b_pick)), hi, K) if len(hi) else b_pick[0]
        m.d.sync += [c_real.eq(b_j < n), c_last.eq(b_j == n - 1), c_cur.eq(pick)]
        c_addr = Signal(aw)
        m.d.sync += c_addr.eq(mux_tree({i: Const(a, aw) for i, a in enumerate(addrs)}, b_j, aw))
        # stage C's address is registered (c_addr) and presented to the RAM in D's clock
        d_real, d_last, d_cur, d_addr = Signal(), Signal(), Signal(K), Signal(aw)
        m.d.comb += ram.r0_addr.eq(c_addr)
        m.d.sync += [d_real.eq(c_real), d_last.eq(c_last), d_cur.eq(c_cur), d_addr.eq(c_addr)]
        e_real, e_last, e_cur, e_addr, e_word = Signal(), Signal(), Signal(K), Signal(aw), Signal(32)
        m.d.sync += [
            e_real.eq(d_real),
            e_last.eq(d_last),
            e_cur.eq(d_cur),
            e_addr.eq(d_addr),
            e_word.eq(ram.r0_data),
        ]

        # Write: the first pass after reset writes {0, cur} (the RAM is undefined).
        cleared, valid = Signal(), Signal()
        delay = Signal(range(_VISIT))  # e_* hold a real slot from the 5th clock on
        with m.If(delay != _VISIT - 1):
            m.d.sync += delay.eq(delay + 1)
        m.d.comb += valid.eq((delay == _VISIT - 1) & e_real)
        with m.If(valid & e_last):
            m.d.sync += cleared.eq(1)
        word = Signal(32)
        m.d.comb += [
            word.eq(Cat(e_cur, Mux(cleared, e_word[K:] + (e_cur < e_word[:K]), 0))),
            ram.w_en.eq(valid),
            ram.w_addr.eq(e_addr),
            ram.w_data.eq(word),
        ]

        # A read: the word written by the first visit of the address whose slot came at
        # or after the clock of rd_en (writes in the next VISIT - 1 clocks are older).
        pending, want, age = Signal(), Signal(aw), Signal(range(_VISIT))
        with m.If(self.rd_en):
            m.d.sync += [pending.eq(1), want.eq(self.rd_addr), age.eq(_VISIT - 2), self.rd_valid.eq(0)]
        with m.Elif(age != 0):
            m.d.sync += age.eq(age - 1)
        with m.Elif(pending & valid & (e_addr == want)):
            m.d.sync += [pending.eq(0), self.rd_valid.eq(1), self.rd_data.eq(word)]
        return m
