"""Sizes of a reorder buffer, derived once from its build parameters.

Every part of :class:`~opengse.rtl.pktc.reorder.ReorderBuffer` takes one
:class:`ReorderGeometry`, so that the slot numbering (``src * W + seq mod W``), the
word format of the slot RAM and the header position agree everywhere.
"""

from amaranth.hdl import Cat, Const

from ...header.gse_header import GSE_ETHERTYPE, TAGGED_HEADER_BYTES
from ...lib.stream import check_data_width

__all__ = ["ReorderGeometry", "log2_exact"]


def log2_exact(x, what):
    if not isinstance(x, int) or x < 1 or x & (x - 1):
        raise ValueError(f"{what} must be a power of two, not {x!r}")
    return x.bit_length() - 1


class ReorderGeometry:
    """Checked parameters and derived sizes.

    * ``bpb`` bytes per beat; ``hdr_beat``: the beat holding tagged header byte 31.
    * ``nslots`` = ``sources`` x ``window``; a slot holds ``slot_beats`` RAM words.
    * RAM word: data, last, byte count - 1 of the beat (``word_bits``).
    * ``jobs``: containers of one source handed to the reader and not yet released
      (at most ``window``: the source's next slot to schedule then never wraps onto
      one still being read).
    * ``skip_distance`` D: 0 (off), or 1..W-1: a FIRST frame stored D or more ahead of
      the next ``seq`` due proves that head lost (the sources keep at most D
      containers of one source in flight to this buffer); see ``scheduler.py``.
    """

    def __init__(
        self,
        data_width=64,
        sources=4,
        window=8,
        slot_bytes=8192,
        timeout=4096,
        ethertype=GSE_ETHERTYPE,
        skip_distance=0,
    ):
        self.data_width = check_data_width(data_width)
        self.bpb = data_width // 8
        if not isinstance(sources, int) or not 1 <= sources <= 256:
            raise ValueError(f"sources must be 1..256, not {sources!r}")
        self.sources = sources
        self.window = window
        self.win_bits = log2_exact(window, "window")
        if window > 1 << 14:
            raise ValueError("window must be below 2**14 (half the seq space)")
        if not isinstance(slot_bytes, int) or slot_bytes < 2 * TAGGED_HEADER_BYTES:
            raise ValueError(f"slot_bytes must be at least {2 * TAGGED_HEADER_BYTES}")
        self.slot_bytes = slot_bytes
        self.slot_beats = slot_bytes // self.bpb
        self.slot_bits = log2_exact(self.slot_beats, "slot_bytes / bytes per beat")
        if not isinstance(timeout, int) or timeout < 1:
            raise ValueError("timeout must be >= 1")
        self.timeout = timeout
        if not isinstance(ethertype, int) or not 0 <= ethertype < 1 << 16:
            raise ValueError(f"ethertype must be 0..0xFFFF, not {ethertype!r}")
        self.ethertype = ethertype
        if not isinstance(skip_distance, int) or not (skip_distance == 0 or 1 <= skip_distance < window):
            raise ValueError(f"skip_distance must be 0 (off) or 1..window-1, not {skip_distance!r}")
        self.skip_distance = skip_distance
        self.src_bits = max(1, (sources - 1).bit_length())
        self.nslots = sources * window
        self.slot_index_bits = max(1, (self.nslots - 1).bit_length())
        self.cnt_bits = max(1, log2_exact(self.bpb, "bytes per beat"))
        self.word_bits = data_width + 1 + self.cnt_bits
        self.depth = self.nslots * self.slot_beats
        self.hdr_beat = (TAGGED_HEADER_BYTES - 1) // self.bpb
        self.jobs = min(window, 4)

    def slot(self, src, seq_low):
        """Slot index ``src * W + seq mod W`` (``src``: a Value or an int; ``seq_low``: a
        Value whose low ``win_bits`` are used)."""
        parts = []
        if self.win_bits:
            parts.append(seq_low[: self.win_bits])
        if self.sources > 1:
            parts.append(Const(src, self.src_bits) if isinstance(src, int) else src[: self.src_bits])
        return Cat(*parts) if parts else Const(0, 1)
