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
    for k in range(depth):
        nxt_v = valids[k + 1] if k + 1 < depth else C(0)
        kept = Mux(pop, nxt_v, valids[k])
        kept_prev = Mux(pop, valids[k], valids[k - 1]) if k > 0 else C(1)
        with m.If(push & ~kept & kept_prev):
            m.d.sync += [entries[k].eq(w_data), valids[k].eq(1)]
        with m.Elif(pop):
            m.d.sync += valids[k].eq(nxt_v)
            if k + 1 < depth:
                m.d.sync += entries[k].eq(entries[k + 1])
    return entries, valids
