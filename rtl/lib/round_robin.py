"""next_in_turn: the round-robin choice shared by muxes, sprayers and schedulers."""

from amaranth.hdl import Signal

__all__ = ["next_in_turn"]


def next_in_turn(m, candidates, after):
    """``(nxt, ok)``, combinational: the first of ``candidates`` (a bit per index) after
    index ``after`` in turn (``after`` itself last); ``nxt`` is 0 and ``ok`` 0 when no
    bit is set. One priority chain per value of ``after``."""
    n = len(candidates)
    nxt, ok = Signal(len(after)), Signal()
    with m.Switch(after):
        for r in range(n):
            with m.Case(r):
                for k in reversed(range(n)):
                    idx = (r + 1 + k) % n
                    with m.If(candidates[idx]):
                        m.d.comb += [nxt.eq(idx), ok.eq(1)]
    return nxt, ok
