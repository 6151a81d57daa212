"""Counters of sub-blocks as ports of a composing top (test tops, the leaf).

Every ``stat_<name>`` member of a block's signature (a 32-bit counter, or an array of
them) becomes the top's ``<prefix>_stat_<name>`` of the same shape. With ``nested``,
the block's own forwarded counters (``<part>_stat_<name>``, a composed block's parts)
come along too, as ``<prefix>_<part>_stat_<name>``.
"""

__all__ = ["stat_names", "stat_members", "forward_stats"]


def stat_names(block):
    """The block's counter names (without ``stat_``), in signature order."""
    return [n[len("stat_") :] for n in block.signature.members if n.startswith("stat_")]


def _counter_members(block, nested):
    return [n for n in block.signature.members if n.startswith("stat_") or (nested and "_stat_" in n)]


def stat_members(prefix, block, nested=False):
    """Signature members ``{prefix}_stat_<name>`` (and with ``nested``
    ``{prefix}_<part>_stat_<name>``) for a top that forwards ``block``'s counters (same
    flow, shape and array dimensions)."""
    members = block.signature.members
    return {f"{prefix}_{n}": members[n] for n in _counter_members(block, nested)}


def forward_stats(m, top, prefix, block, nested=False):
    """Drive ``top``'s ports of :func:`stat_members` from ``block``'s counters."""

    def drive(dst, src):
        if isinstance(dst, (list, tuple)):  # an array member
            for d, s in zip(dst, src):
                drive(d, s)
        else:
            m.d.comb += dst.eq(src)

    for n in _counter_members(block, nested):
        drive(getattr(top, f"{prefix}_{n}"), getattr(block, n))
