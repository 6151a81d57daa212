"""Counters of sub-blocks as ports of a composing top (test tops, later the leaf).

Every ``stat_<name>`` member of a block's signature (a 32-bit counter, or an array of
them) becomes the top's ``<prefix>_stat_<name>`` of the same shape.
"""

__all__ = ["stat_names", "stat_members", "forward_stats"]


def stat_names(block):
    """The block's counter names (without ``stat_``), in signature order."""
    return [n[len("stat_") :] for n in block.signature.members if n.startswith("stat_")]


def stat_members(prefix, block):
    """Signature members ``{prefix}_stat_<name>`` for a top that forwards ``block``'s
    counters (same flow, shape and array dimensions)."""
    return {f"{prefix}_stat_{n}": block.signature.members[f"stat_{n}"] for n in stat_names(block)}


def forward_stats(m, top, prefix, block):
    """Drive ``top``'s ``{prefix}_stat_*`` ports from ``block``'s counters."""

    def drive(dst, src):
        if isinstance(dst, (list, tuple)):  # an array member
            for d, s in zip(dst, src):
                drive(d, s)
        else:
            m.d.comb += dst.eq(src)

    for n in stat_names(block):
        drive(getattr(top, f"{prefix}_stat_{n}"), getattr(block, f"stat_{n}"))
