"""Bit-vector helpers of the grant arbiter (one-hot picks, encoders, wide ORs)."""

from amaranth import Cat, Mux

from ...lib.bits import or_all

__all__ = ["onehot_first", "rr_first", "and_or", "encode", "pos", "or_all"]


def onehot_first(x):
    """Lowest set bit of ``x`` as a one-hot vector (a carry chain on ECP5)."""
    return x & (-x).as_unsigned()[: len(x)]


def rr_first(above, all_):
    """One-hot of the first set bit of ``above``, else of ``all_`` (``above`` is a
    subset of ``all_``): one carry chain over both, folded."""
    w = len(all_)
    f = onehot_first(Cat(above, all_))
    return f[:w] | f[w:]


def and_or(onehot, bits):
    """``bits[i]`` for the one set bit of ``onehot`` (0 when none)."""
    return (onehot & bits).any()


def encode(onehot, bits):
    """Binary index (``bits`` wide) of the set bit of ``onehot``."""
    return Cat(Cat(onehot[i] for i in range(len(onehot)) if (i >> b) & 1).any() for b in range(bits))


def pos(x):
    """``max(x, 0)``."""
    return Mux(x > 0, x, 0)
