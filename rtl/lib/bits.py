"""Bit-vector helpers shared by blocks."""

from amaranth import Const

__all__ = ["or_all"]


def or_all(vectors, width):
    """Bitwise OR of ``vectors`` (``width`` bits; 0 when there are none)."""
    acc = Const(0, width)
    for v in vectors:
        acc = acc | v
    return acc
