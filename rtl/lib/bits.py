"""Bit-vector helpers shared by blocks."""

from amaranth import Const, Mux

__all__ = ["or_all", "mux_tree"]


def or_all(vectors, width):
    """Bitwise OR of ``vectors`` (``width`` bits; 0 when there are none)."""
    acc = Const(0, width)
    for v in vectors:
        acc = acc | v
    return acc


def mux_tree(values, sel, width, missing=0):
    """``values[sel]`` as a binary tree of 2-to-1 multiplexers on the bits of ``sel``
    (``values``: index -> value of ``width`` bits; a missing index is ``missing``). Unlike
    indexing an ``Array``, which Yosys builds as a shifter over all the values, this maps
    to about one LUT4 per 2 values and bit (with the slices' PFUMX)."""
    absent = Const(missing, width)

    def tree(lo, bits):
        if bits == 0:
            return values.get(lo)
        half = 1 << (bits - 1)
        a, b = tree(lo, bits - 1), tree(lo + half, bits - 1)
        if a is None and b is None:
            return None
        return Mux(sel[bits - 1], absent if b is None else b, absent if a is None else a)

    out = tree(0, len(sel))
    return absent if out is None else out
