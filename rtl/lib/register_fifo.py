"""A short FIFO of registers, for a few entries that every output must see at once."""

from amaranth import *

__all__ = ["register_fifo"]


def register_fifo(m, name, depth, shape, push, w_data, pop):
    """Add a FIFO of ``depth`` registers of ``shape`` to module ``m``.

    Entries shift towards entry 0 (the head) on ``pop``; a ``push`` lands in the first
    free entry (counted after the pop). The caller guarantees no push when full and no
    pop when empty. Returns ``(entries, valids)``: every entry and its valid bit are
    registers, so "full" (``valids[-1]``) and "empty" (``~valids[0]``) are too.
    """
    entries = [Signal(shape, name=f"{name}{k}") for k in range(depth)]
    valids = [Signal(name=f"{name}{k}_valid") for k in range(depth)]
    # Each entry's enable is written flat (``pop``, or a push into the first free
    # entry), so that a late ``pop`` adds one gate to the enables, not the whole slot
    # selection (the parsers' and the tagger's windows sit on a ready chain).
    for k in range(depth):
        v, v_next = valids[k], valids[k + 1] if k + 1 < depth else C(0)
        v_prev = valids[k - 1] if k > 0 else C(1)
        fill_stay = ~v & v_prev  # the first free entry, no pop
        fill_pop = v & ~v_next  # the first free entry once the head leaves
        with m.If(pop | (push & fill_stay)):
            m.d.sync += valids[k].eq(Mux(pop, v_next | (push & fill_pop), 1))
            with m.If(push & Mux(pop, fill_pop, fill_stay)):
                m.d.sync += entries[k].eq(w_data)
            if k + 1 < depth:
                with m.Else():
                    m.d.sync += entries[k].eq(entries[k + 1])
    return entries, valids
