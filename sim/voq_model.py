"""Reference model of the VOQ buffer: a deque per queue and the same admission rules.

Independent of the RTL (plain Python, written from docs/voq.md). The model applies
each packet and each release atomically, so it predicts the buffer exactly whenever
enqueue and dequeue are not overlapping in time (tests run such phases to check
drop reasons exactly); under overlap it is used to check order, contents and the
release rule, not admission.

Admission of a packet of ``c`` cells for queue ``q``, tenant ``t`` is decided cell by
cell (``k`` = cells of this packet already taken); the first failing check drops the
packet and names the reason:

* ``full``:   no free cell left beyond the one sentinel cell the free list keeps;
* ``queue``:  queue occupancy + k >= queue_limit_cells;
* cells with tenant occupancy + k < tenant_reserved_cells: admitted;
* ``tenant``: tenant occupancy + k >= tenant_limit_cells;
* ``full``:   no cell of the shared pool left (free cells beyond the sentinel minus
  the unused reservations of all other tenants);
* ``dt``:     queue occupancy + k >= 2**alpha_log2 * shared free cells.

A frame marked bad (or whose last beat has no byte) is dropped as ``bad`` when no
admission check failed first. Only the cells of its counted bytes are checked: a last
beat with ``tkeep == 0`` counts 0 bytes, so a cell it alone would go into (the bytes
before it fill whole cells, or there are none) is not checked and cannot name the
reason.

Release: whole packets while the credit used is below the credit; a packet uses its
length rounded up to a multiple of ``credit_unit`` (the last may overrun); the report
is the credit used (:meth:`VOQModel.credit_used`). A credit above
:attr:`VOQModel.max_credit` (``2**credit_width`` minus the credit of the longest packet
admission can take, ``min(cells - 1, queue_limit_cells)`` cells) counts as
``max_credit``, so that the credit used fits ``credit_width`` bits.

Per packet released, :meth:`VOQModel.emitted` gives the record the buffer hands out on
``m_desc``: ``(queue, len, last)``, ``last`` on the release's last packet.
"""

from collections import deque
from dataclasses import dataclass, field

__all__ = ["VOQModel", "Packet", "DROP_REASONS", "credit_bytes"]


def credit_bytes(nbytes, unit=64):
    """Credit a packet of ``nbytes`` uses: its length rounded up to whole units of
    ``unit`` bytes (64: the GSE credit unit)."""
    return -(-nbytes // unit) * unit


DROP_REASONS = ("bad", "full", "queue", "tenant", "dt")


@dataclass
class Packet:
    queue: int
    tenant: int
    data: bytes
    bad: bool = False
    tag: int = 0  # test bookkeeping only

    def __len__(self):
        return len(self.data)


@dataclass
class VOQModel:
    data_width: int = 64
    buffer_bytes: int = 65536
    cell_bytes: int = 256
    queues: int = 1024
    tenants: int = 16
    queue_limit_cells: int = 128
    tenant_reserved_cells: int = 8
    tenant_limit_cells: int = 192
    alpha_log2: int = 1
    credit_width: int = 24
    counter_width: int = 32
    credit_unit: int = 1
    q: list = field(default_factory=list, init=False)
    drops: dict = field(default_factory=dict, init=False)

    def __post_init__(self):
        self.cells = self.buffer_bytes // self.cell_bytes
        self.free = self.cells  # free list length, sentinel included
        self.q = [deque() for _ in range(self.queues)]
        self.qcells = [0] * self.queues
        self.qbytes = [0] * self.queues
        self.occ = [0] * self.tenants
        self.drops = {r: 0 for r in DROP_REASONS}
        self.queue_drops = [0] * self.queues
        self.tenant_drops = [0] * self.tenants
        self.enq_pkts = 0
        self.deq_pkts = 0

    # -- helpers --------------------------------------------------------------------
    def cells_of(self, nbytes):
        return -(-nbytes // self.cell_bytes)

    def credit_of(self, nbytes):
        """Credit a packet of ``nbytes`` uses: its length rounded up to whole units."""
        return credit_bytes(nbytes, self.credit_unit)

    def credit_used(self, pkts):
        """Credit a release of ``pkts`` used (what the done report carries)."""
        return sum(self.credit_of(len(p)) for p in pkts)

    @property
    def max_credit(self):
        """The largest credit a release may use (larger credits count as this)."""
        longest = min(self.cells - 1, self.queue_limit_cells) * self.cell_bytes
        return (1 << self.credit_width) - self.credit_of(longest)

    @staticmethod
    def emitted(pkts):
        """The ``m_desc`` records of one release's packets: ``(queue, len, last)``."""
        return [(p.queue, len(p.data), i == len(pkts) - 1) for i, p in enumerate(pkts)]

    def deficit(self):
        r = self.tenant_reserved_cells
        return sum(max(0, r - o) for o in self.occ)

    def admit_reason(self, queue, tenant, ncells):
        """None if a packet of ``ncells`` cells is admitted now, else the drop reason."""
        r, o, qc = self.tenant_reserved_cells, self.occ[tenant], self.qcells[queue]
        others = self.deficit() - max(0, r - o)
        for k in range(ncells):
            avail = self.free - 1 - k
            if avail < 1:
                return "full"
            if qc + k >= self.queue_limit_cells:
                return "queue"
            if o + k < r:
                continue
            if o + k >= self.tenant_limit_cells:
                return "tenant"
            shared = avail - others
            if shared < 1:
                return "full"
            lim = shared << self.alpha_log2 if self.alpha_log2 >= 0 else shared >> -self.alpha_log2
            if qc + k >= lim:
                return "dt"
        return None

    # -- operations -----------------------------------------------------------------
    def enqueue(self, pkt):
        """Offer a packet; returns None if queued, else the drop reason."""
        nbytes = len(pkt.data)
        ncells = self.cells_of(nbytes)  # 0 for a frame with no byte (bad): no cell charged
        reason = self.admit_reason(pkt.queue, pkt.tenant, ncells)
        if reason is None and (pkt.bad or nbytes == 0):
            reason = "bad"
        if reason is not None:
            self.drops[reason] += 1
            self.queue_drops[pkt.queue] += 1
            self.tenant_drops[pkt.tenant] += 1
            return reason
        self.q[pkt.queue].append(pkt)
        self.qcells[pkt.queue] += ncells
        self.qbytes[pkt.queue] += nbytes
        self.occ[pkt.tenant] += ncells
        self.free -= ncells
        self.enq_pkts += 1
        return None

    def release(self, queue, credit):
        """Dequeue request: the packets released (whole, while the credit used is below
        ``credit``; the last may overrun)."""
        out, sent = [], 0
        credit = min(credit, self.max_credit)
        if credit == 0:
            return out
        while self.q[queue] and sent < credit:
            pkt = self.q[queue].popleft()
            n = self.cells_of(len(pkt.data))
            self.qcells[queue] -= n
            self.qbytes[queue] -= len(pkt.data)
            self.occ[pkt.tenant] -= n
            self.free += n
            self.deq_pkts += 1
            sent += self.credit_of(len(pkt.data))
            out.append(pkt)
        return out

    def backlog(self, queue):
        return len(self.q[queue]), self.qbytes[queue], self.qcells[queue]

    def queued_cells(self):
        return sum(self.qcells)
