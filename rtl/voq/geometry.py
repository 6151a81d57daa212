"""The sizes of one VOQ buffer: its parameters, checked, and every width derived from them.

:class:`VOQGeometry` is built once by :class:`~opengse.rtl.voq.buffer.VOQBuffer` and
handed to each of its parts, so that the records they exchange
(:mod:`opengse.rtl.voq.records`) come out the same width on both sides.
"""

from ..config import GSEConfig
from ..header.gse_header import CREDIT_UNIT_BYTES
from ..interfaces import FIELD_BITS, PKT_COUNT_BITS
from ..lib.stream import check_data_width

__all__ = ["VOQGeometry", "log2_exact"]


def log2_exact(x, what):
    """log2 of a power of two; a clear error for anything else."""
    if not isinstance(x, int) or x < 1 or x & (x - 1):
        raise ValueError(f"{what} must be a power of two, not {x!r}")
    return x.bit_length() - 1


class VOQGeometry:
    """Parameters of a VOQ buffer (see docs/voq.md) and the widths derived from them.

    Derived: ``bpb`` bytes per beat, ``cb`` beats per cell, ``n`` cells, ``cw`` cell id
    bits, ``cnw`` cell count bits (0..n), ``lw`` packet/queue byte count bits (0..n *
    cell_bytes), ``bw`` bits of the credit used by one release, ``qw``/``tw`` queue and
    tenant id bits, ``dw`` bits of the sum of unused reservations; ``lbpb``, ``lcb``,
    ``lcellb``, ``lcu`` the log2 of beat, cell-in-beats, cell and credit unit sizes.
    """

    def __init__(
        self,
        data_width=64,
        buffer_bytes=65536,
        cell_bytes=256,
        queues=1024,
        tenants=16,
        queue_limit_cells=128,
        tenant_reserved_cells=8,
        tenant_limit_cells=192,
        alpha_log2=1,
        credit_width=GSEConfig().credit_bits,
        counter_width=32,
        credit_unit=CREDIT_UNIT_BYTES,
    ):
        self.data_width = check_data_width(data_width)
        self.bpb = data_width // 8
        self.lbpb = log2_exact(self.bpb, "data_width/8")
        self.lcellb = log2_exact(cell_bytes, "cell_bytes")
        if cell_bytes < 2 * self.bpb:
            raise ValueError("a cell must hold at least 2 beats (cell_bytes >= data_width/4)")
        self.cell_bytes = cell_bytes
        self.cb = cell_bytes // self.bpb
        self.lcb = log2_exact(self.cb, "cell_bytes/(data_width/8)")
        if buffer_bytes % cell_bytes:
            raise ValueError("buffer_bytes must be a multiple of cell_bytes")
        self.n = buffer_bytes // cell_bytes
        log2_exact(self.n, "buffer_bytes/cell_bytes")
        if self.n < 4:
            raise ValueError("the buffer needs at least 4 cells")
        self.buffer_bytes = buffer_bytes
        self.queues, self.tenants = queues, tenants
        self.qw = max(1, log2_exact(queues, "queues"))
        self.tw = max(1, log2_exact(tenants, "tenants"))
        if queues < 2 or tenants < 2:
            raise ValueError("queues and tenants must be >= 2")
        self.res, self.tlim, self.qlim = (tenant_reserved_cells, tenant_limit_cells, queue_limit_cells)
        if tenant_reserved_cells < 0 or tenants * tenant_reserved_cells > self.n - 1:
            raise ValueError(f"tenants * tenant_reserved_cells must be <= cells - 1 = {self.n - 1}")
        if not 1 <= tenant_limit_cells <= self.n or not 1 <= queue_limit_cells <= self.n:
            raise ValueError(f"limits must be 1..{self.n} cells")
        if not -4 <= alpha_log2 <= 4:
            raise ValueError("alpha_log2 must be in -4..4")
        self.alpha_log2 = alpha_log2
        self.credit_width = credit_width
        # Credit is used in whole units: a packet counts as its length rounded up.
        self.lcu = log2_exact(credit_unit, "credit_unit")
        if credit_unit > buffer_bytes:
            raise ValueError("credit_unit must not exceed buffer_bytes")
        self.credit_unit = credit_unit
        if not 1 <= counter_width <= 32:
            raise ValueError("counter_width must be 1..32")
        self.counter_width = counter_width  # < 32 only to shrink formal checks

        self.cw = max(1, log2_exact(self.n, "cells"))  # cell id
        self.cnw = self.cw + 1  # cell count 0..N
        self.lw = (self.n * cell_bytes).bit_length()  # packet/queue bytes 0..N*S
        self.bw = credit_width  # credit used by one release
        self.max_pkt_bytes = min(self.n - 1, queue_limit_cells) * cell_bytes
        if self.max_pkt_bytes >= 1 << FIELD_BITS["len"]:
            raise ValueError(
                f"a packet may be {self.max_pkt_bytes} B, more than the "
                f"{FIELD_BITS['len']}-bit length of m_desc: lower "
                f"queue_limit_cells or cell_bytes"
            )
        max_pkt_credit = -(-self.max_pkt_bytes // credit_unit) * credit_unit
        self.max_credit = (1 << credit_width) - max_pkt_credit
        if self.max_credit < 1:
            raise ValueError(
                f"credit_width {credit_width} cannot hold the credit of one packet of {self.max_pkt_bytes} B"
            )
        if self.n > 1 << PKT_COUNT_BITS:
            raise ValueError(
                f"at most {1 << PKT_COUNT_BITS} cells (release reports count "
                f"packets in {PKT_COUNT_BITS} bits)"
            )
        self.dw = max(1, (tenants * tenant_reserved_cells).bit_length())
