"""VOQ buffer manager: a shared packet buffer with per-destination queues.

``VOQBuffer`` stores whole packets in a shared memory of ``buffer_bytes`` cut into
cells of ``cell_bytes``; each of ``queues`` virtual output queues is a linked list of
cells, and the free cells form one more linked list. A packet starts on a cell
boundary and occupies ``ceil(len / cell_bytes)`` cells chained in order.

The buffer is a top of named parts (docs/voq.md, Parts), each its own component:

* :class:`~.accounting.VOQAccounting` (``accounting.py``): the cell counts and the
  queue tables; applies COMMIT, TAKEOFF and FREE events one at a time;
* :class:`~.enqueue.VOQEnqueue` (``enqueue.py``): writes packets into cells, with the
  per-cell admission check :class:`~.admission.VOQAdmission` (``admission.py``);
* :class:`~.walker.VOQWalker` (``walker.py``): plans a release, cell by cell;
* :class:`~.emitter.VOQEmitter` (``emitter.py``): reads the cells out on ``m_axis``,
  frees them, reports the release.

The buffer owns the tables they share (one ``VOQRam`` each, kept as separate
modules), the two FIFOs from walker to emitter, the query port and the counters.

Interface (exported names):

* ``s_axis_*`` (AXI-Stream in, ``data_width`` bits) with ``s_meta_valid/ready,
  s_meta_queue, s_meta_tenant, s_meta_bytes`` (:func:`~opengse.rtl.interfaces.queued_packet`):
  the side channel is consumed together with the first beat of each packet; ``bytes``
  is ignored (the length is counted from the beats). ``tuser[0]`` on the last beat marks a
  bad frame (dropped whole).
  ``tkeep`` is all ones except on the last beat, where the highest set bit gives the
  byte count (a last beat with ``tkeep == 0`` counts as a bad frame).
* ``s_deq_valid/ready, s_deq_queue, s_deq_credit``
  (:func:`~opengse.rtl.interfaces.release_request`): release request. The buffer emits
  whole packets of that queue on ``m_axis_*`` until the credit (bytes) is used (the
  last packet may overrun it) or the queue is empty, then reports the release on
  ``m_deq_done_valid/ready, m_deq_done_queue, m_deq_done_bytes, m_deq_done_pkts``
  (:func:`~opengse.rtl.interfaces.release_report`; after the release's last beat has
  left ``m_axis``; an empty release reports 0/0. With ``early_report`` the report
  leaves as soon as the release is planned, its beats possibly still to come: a
  manager that waits for the report before its next release of the queue then
  overlaps that release with the tail of this one, and no gap opens between them).
  A credit above ``max_credit`` (2** ``credit_width`` minus the credit of the longest
  packet admission can take) counts as ``max_credit``, so the credit used always
  fits ``credit_width`` bits; ``pkts`` is 16 bits.
* ``m_desc_valid/ready, m_desc_queue, m_desc_len, m_desc_last``
  (:func:`~opengse.rtl.interfaces.emitted_packet`): one record per packet leaving
  ``m_axis``, in order, from an 8-entry FIFO: its queue, byte length and ``last`` (the
  last packet of its release). A packet's record is valid no later than its first beat
  is valid on ``m_axis`` (once the earlier records are taken); the buffer starts no new
  packet while the FIFO is full, so a consumer that takes each record at its packet's
  first beat never holds it back. Tie ``ready`` high if unused.
  Credit is used in whole units of ``credit_unit`` bytes: a packet uses its length
  rounded up to a multiple of ``credit_unit``, and ``m_deq_done_bytes`` is the credit
  used (the sum of the rounded lengths; ``credit_unit`` = 1: the bytes sent).
  Requests are served in order, one release at a time.
* Query port (plain signals, read every clock, 1-cycle latency): ``query_queue`` ->
  ``query_pkts, query_bytes, query_cells, query_drops``; ``query_tenant`` ->
  ``query_tenant_cells, query_tenant_drops``.
* ``init_done``: low for ``max(cells, queues)`` cycles after reset while the tables
  are cleared (no input is accepted meanwhile).
* Counters (32-bit): ``stat_enq_pkts, stat_deq_pkts, stat_drop_bad, stat_drop_full,
  stat_drop_queue, stat_drop_tenant, stat_drop_dt``. Cell accounting:
  ``stat_free_cells`` (free list length, sentinel and the cells of the packet being
  written included), ``stat_queued_cells``, ``stat_deq_cells`` (taken off a queue,
  not yet returned), ``stat_enq_cells`` (cells the packet being written occupies);
  invariant ``free + queued + deq == cells``; ``stat_invariant_err`` is a sticky flag
  set if any accounting check fails (it never should).

Admission (per cell, while the packet arrives; the first failing check names the
drop reason; ``o`` = tenant occupancy, ``q`` = queue occupancy, in cells):

* always: a cell must be physically free (``full``) and ``q < queue_limit_cells``
  (``queue``);
* cells with ``o < tenant_reserved_cells`` come from the tenant's reservation and
  are always admitted (no tenant can use another's reservation);
* beyond it: ``o < tenant_limit_cells`` (``tenant``), a cell of the shared pool
  (free cells not reserved for other tenants) must remain (``full``), and the
  dynamic threshold ``q < 2**alpha_log2 * shared_free`` (``dt``).

Timing: 1 beat per clock in and out at the same time for packets of >= 8 beats
(60 B at 64 bits) when a cell holds >= 4 beats (measured: 1.0/1.0 at 1500 B, 1.0/0.988
at 64 B); a packet can be released 4-7 cycles after its last beat; a release's first
beat leaves 13 cycles after its request is accepted (see docs/voq.md; 12 before the
register slice between the descriptor FIFO and the emitter).
"""

from amaranth.hdl import Array, Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out, connect, flipped

from .. import interfaces
from ..catalog import BlockSpec
from ..config import GSEConfig
from ..header.gse_header import CREDIT_UNIT_BYTES
from ..lib.skid_buffer import skid_between
from ..lib.sram import VOQRam
from ..lib.stream import AXIStreamSignature
from .accounting import VOQAccounting
from .counter_ram import VOQCounterRAM
from .emitter import VOQEmitter
from .enqueue import VOQEnqueue
from .geometry import VOQGeometry
from .records import DROP_REASONS, cell_desc_layout, join_ram_read, join_ram_write, pkt_layout, qcnt_layout
from .walker import VOQWalker

__all__ = ["VOQBuffer", "EXPORTS", "DROP_REASONS"]

#: Depth of the FIFOs from the walker to the emitter (cell descriptors, reports).
DESC_DEPTH = 4
#: Depth of ``m_desc``'s FIFO: packets the walker may plan ahead of the records taken
#: (more than the walker-to-``m_axis`` pipeline holds, so that a consumer taking each
#: record at its packet's first beat never holds the buffer back).
PKT_DEPTH = 8


class VOQBuffer(wiring.Component):
    #: The parts (a subclass may swap one, e.g. a mutated copy in the co-simulation test).
    Accounting, Enqueue, Walker, Emitter = VOQAccounting, VOQEnqueue, VOQWalker, VOQEmitter

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
        early_report=False,
    ):
        self.early_report = bool(early_report)
        g = self.geometry = VOQGeometry(
            data_width=data_width,
            buffer_bytes=buffer_bytes,
            cell_bytes=cell_bytes,
            queues=queues,
            tenants=tenants,
            queue_limit_cells=queue_limit_cells,
            tenant_reserved_cells=tenant_reserved_cells,
            tenant_limit_cells=tenant_limit_cells,
            alpha_log2=alpha_log2,
            credit_width=credit_width,
            counter_width=counter_width,
            credit_unit=credit_unit,
        )
        self.data_width, self.bpb, self.n = g.data_width, g.bpb, g.n
        self.cell_bytes, self.buffer_bytes = g.cell_bytes, g.buffer_bytes
        self.queues, self.tenants = g.queues, g.tenants
        self.credit_width, self.credit_unit, self.counter_width = (
            g.credit_width,
            g.credit_unit,
            g.counter_width,
        )
        self.max_credit = g.max_credit
        cnw, lw = g.cnw, g.lw
        members = {
            "s_axis": In(AXIStreamSignature(data_width)),
            "s_meta": In(interfaces.queued_packet(g.qw, g.tw)),
            "s_deq": In(interfaces.release_request(g.qw, credit_width)),
            "m_axis": Out(AXIStreamSignature(data_width)),
            "m_desc": Out(interfaces.emitted_packet(g.qw)),
            "m_deq_done": Out(interfaces.release_report(g.qw, credit_width)),
            "query_queue": In(g.qw),
            "query_pkts": Out(cnw),
            "query_bytes": Out(lw),
            "query_cells": Out(cnw),
            "query_drops": Out(32),
            "query_tenant": In(g.tw),
            "query_tenant_cells": Out(cnw),
            "query_tenant_drops": Out(32),
            "init_done": Out(1),
            "stat_free_cells": Out(cnw),
            "stat_queued_cells": Out(cnw),
            "stat_deq_cells": Out(cnw),
            "stat_enq_cells": Out(cnw),
            "stat_invariant_err": Out(1),
            "stat_enq_pkts": Out(32),
            "stat_deq_pkts": Out(32),
        }
        for r in DROP_REASONS:
            members[f"stat_drop_{r}"] = Out(32)
        super().__init__(members)

        # Internal events, exposed (not as ports) for the formal wrapper's shadow model.
        self.tap_cell_we = Signal()
        self.tap_cell_wcell = Signal(g.cw)
        self.tap_enq_start = Signal()
        self.tap_commit = Signal()
        self.tap_commit_cells = Signal(cnw)
        self.tap_rd = Signal()
        self.tap_rd_cell = Signal(g.cw)
        self.tap_free = Signal()
        self.tap_free_cells = Signal(cnw)
        self.tap_commit_pend = Signal()
        self.tap_commit_pend_cells = Signal(cnw)
        self.tap_free_pend = Signal()
        self.tap_free_pend_cells = Signal(cnw)

    # ------------------------------------------------------------------------------
    def elaborate(self, platform):
        m = Module()
        g = self.geometry
        N, Q, T = g.n, g.queues, g.tenants
        qcnt_w = qcnt_layout(g).size

        # ---- tables (each its own module in the exported Verilog) ----
        m.submodules.cell_ram = cell_ram = VOQRam(g.data_width, N * g.cb, 1)  # r0 emitter
        m.submodules.link_ram = link_ram = VOQRam(g.cw, N, 3)  # r0 enq, r1 walker, r2 acct
        m.submodules.qhead_ram = qhead_ram = VOQRam(g.cw, Q, 2)  # r0 acct, r1 walker
        m.submodules.qtail_ram = qtail_ram = VOQRam(g.cw, Q, 1)  # r0 acct
        m.submodules.qcnt_ram = qcnt_ram = VOQRam(qcnt_w, Q, 4)  # acct, walker, enq, query
        m.submodules.pkt_ram = pkt_ram = VOQRam(pkt_layout(g).size, N, 1)  # r0 walker
        m.submodules.queue_drops = qdrop = VOQCounterRAM(Q, g.counter_width)
        m.submodules.tenant_drops = tdrop = VOQCounterRAM(T, g.counter_width)

        # ---- parts ----
        m.submodules.accounting = acct = self.Accounting(g)
        m.submodules.enqueue = enq = self.Enqueue(g)
        m.submodules.walker = walk = self.Walker(g)
        m.submodules.emitter = emit = self.Emitter(g, early_report=self.early_report)
        m.submodules.desc_fifo = desc_fifo = SyncFIFOBuffered(
            width=cell_desc_layout(g).size, depth=DESC_DEPTH
        )
        m.submodules.done_fifo = done_fifo = SyncFIFOBuffered(
            width=interfaces.release_report_layout(g.qw, g.credit_width).size, depth=DESC_DEPTH
        )
        m.submodules.pkt_fifo = pkt_fifo = SyncFIFOBuffered(
            width=interfaces.emitted_packet_layout(g.qw).size, depth=PKT_DEPTH
        )

        connect(m, flipped(self.s_axis), enq.s_axis)
        connect(m, flipped(self.s_meta), enq.s_meta)
        connect(m, flipped(self.s_deq), walk.s_deq)
        connect(m, emit.m_axis, flipped(self.m_axis))
        connect(m, emit.m_deq_done, flipped(self.m_deq_done))
        connect(m, enq.m_commit, acct.s_commit)
        connect(m, walk.m_takeoff, acct.s_takeoff)
        connect(m, emit.m_free, acct.s_free)
        connect(m, walk.m_cell, desc_fifo.w_stream)
        # a register slice: the emitter's take of a descriptor does not run into the
        # FIFO's read logic (one clock more from walker to emitter, full rate)
        skid_between(m, "desc_skid", desc_fifo.r_stream, emit.s_cell)
        connect(m, walk.m_done, done_fifo.w_stream)
        connect(m, done_fifo.r_stream, emit.s_done)
        connect(m, walk.m_pkt, pkt_fifo.w_stream)
        connect(m, pkt_fifo.r_stream, flipped(self.m_desc))
        m.d.comb += [
            acct.counters_ready.eq(qdrop.init_done & tdrop.init_done),
            enq.init_done.eq(acct.init_done),
            walk.init_done.eq(acct.init_done),
            enq.free_cells.eq(acct.free_cells),
            enq.deficit.eq(acct.deficit),
            enq.occ.eq(acct.occ),
            # drops: one counter event for both tables at once
            qdrop.inc_valid.eq(enq.m_drop.valid),
            qdrop.inc_index.eq(enq.m_drop.payload.queue),
            tdrop.inc_valid.eq(enq.m_drop.valid),
            tdrop.inc_index.eq(enq.m_drop.payload.tenant),
            enq.m_drop.ready.eq(qdrop.inc_ready & tdrop.inc_ready),
        ]
        join_ram_write(m, cell_ram, enq.cell_w)
        join_ram_read(m, cell_ram, 0, emit.cell_rd)
        join_ram_write(m, link_ram, acct.link_w)
        join_ram_read(m, link_ram, 0, enq.link_rd)
        join_ram_read(m, link_ram, 1, walk.link_rd)
        join_ram_read(m, link_ram, 2, acct.link_rd)
        join_ram_write(m, qhead_ram, acct.qhead_w)
        join_ram_read(m, qhead_ram, 0, acct.qhead_rd)
        join_ram_read(m, qhead_ram, 1, walk.qhead_rd)
        join_ram_write(m, qtail_ram, acct.qtail_w)
        join_ram_read(m, qtail_ram, 0, acct.qtail_rd)
        join_ram_write(m, qcnt_ram, acct.qcnt_w)
        join_ram_read(m, qcnt_ram, 0, acct.qcnt_rd)
        join_ram_read(m, qcnt_ram, 1, walk.qcnt_rd)
        join_ram_read(m, qcnt_ram, 2, enq.qcnt_rd)
        join_ram_write(m, pkt_ram, enq.pkt_w)
        join_ram_read(m, pkt_ram, 0, walk.pkt_rd)

        # ---- the sticky accounting check ----
        inv_err = Signal()
        with m.If(acct.check_fail | enq.check_fail | walk.check_fail):
            m.d.sync += inv_err.eq(1)

        # ---- query port and statistics ----
        q_addr, q_data = qcnt_ram.read(3)
        q_view = data.View(qcnt_layout(g), q_data)
        occ = Array(acct.occ[i] for i in range(T))
        tq = Signal(g.cnw)
        m.d.sync += tq.eq(occ[self.query_tenant])
        m.d.comb += [
            q_addr.eq(self.query_queue),
            self.query_pkts.eq(q_view.pkts),
            self.query_bytes.eq(q_view.bytes),
            self.query_cells.eq(q_view.cells),
            qdrop.query_index.eq(self.query_queue),
            self.query_drops.eq(qdrop.query_data),
            tdrop.query_index.eq(self.query_tenant),
            self.query_tenant_drops.eq(tdrop.query_data),
            self.query_tenant_cells.eq(tq),
            self.init_done.eq(acct.init_done),
            self.stat_free_cells.eq(acct.free_cells),
            self.stat_queued_cells.eq(acct.queued_cells),
            self.stat_deq_cells.eq(acct.deq_cells),
            self.stat_enq_cells.eq(enq.enq_cells),
            self.stat_invariant_err.eq(inv_err),
            self.stat_enq_pkts.eq(acct.enq_pkts),
            self.stat_deq_pkts.eq(emit.deq_pkts),
        ]
        for i, r in enumerate(DROP_REASONS):
            m.d.comb += getattr(self, f"stat_drop_{r}").eq(enq.drops[i])

        # Taps for the formal shadow model.
        m.d.comb += [
            self.tap_cell_we.eq(enq.tap_cell_we),
            self.tap_cell_wcell.eq(enq.tap_cell_wcell),
            self.tap_enq_start.eq(enq.tap_start),
            self.tap_commit.eq(enq.tap_commit),
            self.tap_commit_cells.eq(enq.tap_commit_cells),
            self.tap_rd.eq(emit.tap_rd),
            self.tap_rd_cell.eq(emit.tap_rd_cell),
            self.tap_free.eq(emit.tap_free),
            self.tap_free_cells.eq(emit.tap_free_cells),
            self.tap_commit_pend.eq(enq.m_commit.valid),
            self.tap_commit_pend_cells.eq(enq.m_commit.payload.cells),
            self.tap_free_pend.eq(emit.m_free.valid),
            self.tap_free_pend_cells.eq(emit.m_free.payload.cells),
        ]
        return m


def _keep_modules(**params):
    return {
        "cell_ram": "gse_voq_cell_ram",
        "link_ram": "gse_voq_link_ram",
        "qhead_ram": "gse_voq_qhead_ram",
        "qtail_ram": "gse_voq_qtail_ram",
        "qcnt_ram": "gse_voq_qcnt_ram",
        "pkt_ram": "gse_voq_pkt_ram",
        "queue_drops.ram": "gse_voq_queue_drop_ram",
        "tenant_drops.ram": "gse_voq_tenant_drop_ram",
    }


EXPORTS = [
    BlockSpec(
        name="voq",
        module="gse_voq_buffer",
        factory=VOQBuffer,
        params={
            "data_width": 64,
            "buffer_bytes": 65536,
            "cell_bytes": 256,
            "queues": 1024,
            "tenants": 16,
            "queue_limit_cells": 128,
            "tenant_reserved_cells": 8,
            "tenant_limit_cells": 192,
            "alpha_log2": 1,
            "credit_width": GSEConfig().credit_bits,
            "counter_width": 32,
            "credit_unit": CREDIT_UNIT_BYTES,
            "early_report": False,
        },
        description="VOQ buffer manager: shared cell buffer, per-queue linked lists, "
        "admission (queue limit, tenant reservation/limit, dynamic threshold), "
        "credit-based whole-packet release",
        keep_modules=_keep_modules,
    )
]
