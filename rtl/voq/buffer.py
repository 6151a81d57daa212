"""VOQ buffer manager: a shared packet buffer with per-destination queues.

``VOQBuffer`` stores whole packets in a shared memory of ``buffer_bytes`` cut into
cells of ``cell_bytes``; each of ``queues`` virtual output queues is a linked list of
cells, and the free cells form one more linked list. A packet starts on a cell
boundary and occupies ``ceil(len / cell_bytes)`` cells chained in order.

Interface (exported names):

* ``s_axis_*`` (AXI-Stream in, ``data_width`` bits) with ``s_meta_valid/ready,
  s_meta_queue, s_meta_tenant``: the side channel is consumed together with the first
  beat of each packet. ``tuser[0]`` on the last beat marks a bad frame (dropped whole).
  ``tkeep`` is all ones except on the last beat, where the highest set bit gives the
  byte count (a last beat with ``tkeep == 0`` counts as a bad frame).
* ``s_deq_valid/ready, s_deq_queue, s_deq_credit``: release request. The buffer emits
  whole packets of that queue on ``m_axis_*`` until the credit (bytes) is used (the
  last packet may overrun it) or the queue is empty, then reports the release on
  ``m_deq_done_valid/ready, m_deq_done_queue, m_deq_done_bytes, m_deq_done_pkts``
  (after the release's last beat has left ``m_axis``; an empty release reports 0/0).
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
beat leaves 12 cycles after its request is accepted (see docs/voq.md).
"""
from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, Value, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from ..catalog import BlockSpec
from ..header.gse_header import CREDIT_UNIT_BYTES
from ..lib.stream import AXIStreamSignature, check_data_width
from .counter_ram import VOQCounterRAM
from ..lib.sram import VOQRam

__all__ = ["VOQBuffer", "EXPORTS", "DROP_REASONS"]

DROP_REASONS = ("bad", "full", "queue", "tenant", "dt")
_R_BAD, _R_FULL, _R_QUEUE, _R_TENANT, _R_DT = range(5)


def _log2(x, what):
    if not isinstance(x, int) or x < 1 or x & (x - 1):
        raise ValueError(f"{what} must be a power of two, not {x!r}")
    return x.bit_length() - 1


def _pack(layout, **fields):
    """Cat() of struct fields in layout order (for memory write data)."""
    return Cat(*(Value.cast(fields[name])[:field.width] for name, field in layout))


class VOQBuffer(wiring.Component):
    def __init__(self, data_width=64, buffer_bytes=65536, cell_bytes=256, queues=1024,
                 tenants=16, queue_limit_cells=128, tenant_reserved_cells=8,
                 tenant_limit_cells=192, alpha_log2=1, credit_width=16, counter_width=32,
                 credit_unit=CREDIT_UNIT_BYTES):
        self.data_width = check_data_width(data_width)
        self.bpb = data_width // 8
        self.lbpb = _log2(self.bpb, "data_width/8")
        self.lcellb = _log2(cell_bytes, "cell_bytes")
        if cell_bytes < 2 * self.bpb:
            raise ValueError("a cell must hold at least 2 beats (cell_bytes >= data_width/4)")
        self.cell_bytes = cell_bytes
        self.cb = cell_bytes // self.bpb
        self.lcb = _log2(self.cb, "cell_bytes/(data_width/8)")
        if buffer_bytes % cell_bytes:
            raise ValueError("buffer_bytes must be a multiple of cell_bytes")
        self.n = buffer_bytes // cell_bytes
        _log2(self.n, "buffer_bytes/cell_bytes")
        if self.n < 4:
            raise ValueError("the buffer needs at least 4 cells")
        self.buffer_bytes = buffer_bytes
        self.queues, self.tenants = queues, tenants
        self.qw = max(1, _log2(queues, "queues"))
        self.tw = max(1, _log2(tenants, "tenants"))
        if queues < 2 or tenants < 2:
            raise ValueError("queues and tenants must be >= 2")
        self.res, self.tlim, self.qlim = tenant_reserved_cells, tenant_limit_cells, queue_limit_cells
        if tenant_reserved_cells < 0 or tenants * tenant_reserved_cells > self.n - 1:
            raise ValueError(f"tenants * tenant_reserved_cells must be <= cells - 1 = {self.n - 1}")
        if not 1 <= tenant_limit_cells <= self.n or not 1 <= queue_limit_cells <= self.n:
            raise ValueError(f"limits must be 1..{self.n} cells")
        if not -4 <= alpha_log2 <= 4:
            raise ValueError("alpha_log2 must be in -4..4")
        self.alpha_log2 = alpha_log2
        self.credit_width = credit_width
        # Credit is used in whole units: a packet counts as its length rounded up.
        self.lcu = _log2(credit_unit, "credit_unit")
        if credit_unit > buffer_bytes:
            raise ValueError("credit_unit must not exceed buffer_bytes")
        self.credit_unit = credit_unit
        if not 1 <= counter_width <= 32:
            raise ValueError("counter_width must be 1..32")
        self.counter_width = counter_width        # < 32 only to shrink formal checks

        self.cw = max(1, _log2(self.n, "cells"))          # cell id
        self.cnw = self.cw + 1                             # cell count 0..N
        self.lw = (self.n * cell_bytes).bit_length()       # packet/queue bytes 0..N*S
        self.bw = max(credit_width, self.lw) + 1           # bytes sent in one release
        self.dw = max(1, (tenants * tenant_reserved_cells).bit_length())

        meta = data.StructLayout({"queue": self.qw, "tenant": self.tw})
        deq = data.StructLayout({"queue": self.qw, "credit": credit_width})
        done = data.StructLayout({"queue": self.qw, "bytes": self.bw, "pkts": self.cnw})
        members = {
            "s_axis": In(AXIStreamSignature(data_width)),
            "s_meta": In(stream.Signature(meta)),
            "s_deq": In(stream.Signature(deq)),
            "m_axis": Out(AXIStreamSignature(data_width)),
            "m_deq_done": Out(stream.Signature(done)),
            "query_queue": In(self.qw),
            "query_pkts": Out(self.cnw),
            "query_bytes": Out(self.lw),
            "query_cells": Out(self.cnw),
            "query_drops": Out(32),
            "query_tenant": In(self.tw),
            "query_tenant_cells": Out(self.cnw),
            "query_tenant_drops": Out(32),
            "init_done": Out(1),
            "stat_free_cells": Out(self.cnw),
            "stat_queued_cells": Out(self.cnw),
            "stat_deq_cells": Out(self.cnw),
            "stat_enq_cells": Out(self.cnw),
            "stat_invariant_err": Out(1),
            "stat_enq_pkts": Out(32),
            "stat_deq_pkts": Out(32),
        }
        for r in DROP_REASONS:
            members[f"stat_drop_{r}"] = Out(32)
        super().__init__(members)

        # Internal events, exposed (not as ports) for the formal wrapper's shadow model.
        self.tap_cell_we = Signal()
        self.tap_cell_wcell = Signal(self.cw)
        self.tap_enq_start = Signal()
        self.tap_commit = Signal()
        self.tap_commit_cells = Signal(self.cnw)
        self.tap_rd = Signal()
        self.tap_rd_cell = Signal(self.cw)
        self.tap_free = Signal()
        self.tap_free_cells = Signal(self.cnw)
        self.tap_commit_pend = Signal()
        self.tap_commit_pend_cells = Signal(self.cnw)
        self.tap_free_pend = Signal()
        self.tap_free_pend_cells = Signal(self.cnw)

    # ------------------------------------------------------------------------------
    def elaborate(self, platform):
        m = Module()
        N, CB, BPB, W = self.n, self.cb, self.bpb, self.data_width
        cw, cnw, lw, qw, tw = self.cw, self.cnw, self.lw, self.qw, self.tw
        R, L, QL, T = self.res, self.tlim, self.qlim, self.tenants
        lcb, lbpb, lcu = self.lcb, self.lbpb, self.lcu

        qptr_l = data.StructLayout({"head": cw, "tail": cw})
        qcnt_l = data.StructLayout({"pkts": cnw, "bytes": lw, "cells": cnw})
        pkt_l = data.StructLayout({"len": lw, "tenant": tw})

        # ---- memories (each its own module in the exported Verilog) ----
        m.submodules.cell_ram = cell_ram = VOQRam(W, N * CB, 1)      # r0 emitter
        m.submodules.link_ram = link_ram = VOQRam(cw, N, 3)          # r0 enq, r1 walker, r2 acct
        m.submodules.qhead_ram = qhead_ram = VOQRam(cw, self.queues, 2)  # r0 acct, r1 walker
        m.submodules.qtail_ram = qtail_ram = VOQRam(cw, self.queues, 1)  # r0 acct
        m.submodules.qcnt_ram = qcnt_ram = VOQRam(qcnt_l.size, self.queues, 4)  # acct, walker, enq, query
        m.submodules.pkt_ram = pkt_ram = VOQRam(pkt_l.size, N, 1)    # r0 walker
        m.submodules.queue_drops = qdrop = VOQCounterRAM(self.queues, self.counter_width)
        m.submodules.tenant_drops = tdrop = VOQCounterRAM(T, self.counter_width)

        # ---- accounting state (owned by the accounting unit) ----
        F = Signal(cnw, init=N)                 # free list length, sentinel included
        free_tail = Signal(cw, init=N - 1)
        D = Signal(self.dw, init=T * R)         # sum over tenants of max(0, R - occ)
        occ = Array(Signal(cnw, name=f"occ{i}") for i in range(T))
        queued = Signal(cnw)
        deq_cells = Signal(cnw)
        inv_err = Signal()
        init_done = Signal()
        fhead = Signal(cw, init=0)              # free list head (owned by the enqueue)

        # Event holding registers: one per source; cleared when the event is applied.
        c_pend, c_q, c_t, c_cells, c_len, c_head, c_tail = (
            Signal(), Signal(qw), Signal(tw), Signal(cnw), Signal(lw), Signal(cw), Signal(cw))
        u_pend, u_q, u_len, u_cells, u_last = Signal(), Signal(qw), Signal(lw), Signal(cnw), Signal(cw)
        f_pend, f_head, f_tail, f_cells, f_t = Signal(), Signal(cw), Signal(cw), Signal(cnw), Signal(tw)

        stat_enq_pkts = Signal(self.counter_width)
        stat_deq_pkts = Signal(self.counter_width)
        stat_drop = [Signal(self.counter_width, name=f"drop_{r}") for r in DROP_REASONS]

        # ================================================================================
        # Accounting unit: applies COMMIT (enqueue), QUPDATE (walker: one packet off a
        # queue) and FREE (emitter: a packet's cells back to the free list) one at a
        # time, 3 cycles each (issue reads, register, compute + write), so no forwarding
        # is needed (FREE, which reads no RAM, takes 2). Priority COMMIT > QUPDATE > FREE (a packet's QUPDATE is always
        # posted before its FREE, so per-queue counts never go negative).
        # ================================================================================
        EV_COMMIT, EV_QUPD, EV_FREE = 0, 1, 2
        ev_kind = Signal(2)
        ev_q, ev_t = Signal(qw), Signal(tw)
        ev_cells, ev_len = Signal(cnw), Signal(lw)
        ev_head, ev_tail = Signal(cw), Signal(cw)
        o_old = Signal(cnw)
        o_new = Signal(signed(cnw + 2))                # FREE: occupancy after the event
        rmo = Signal(signed(cnw + 2))                  # R - occ (before the event)
        r_qptr = data.View(qptr_l, Signal(qptr_l.size))
        r_qcnt = data.View(qcnt_l, Signal(qcnt_l.size))
        r_link = Signal(cw)
        init_idx = Signal(range(max(N, self.queues) + 1))

        # head and tail live in two RAMs (the walker reads only heads), written together
        qptr_w_en, qptr_w_addr = Signal(), Signal(range(self.queues))
        qptr_w_data = data.View(qptr_l, Signal(qptr_l.size))
        qtail_w_en = Signal()
        m.d.comb += [
            qhead_ram.w_en.eq(qptr_w_en), qhead_ram.w_addr.eq(qptr_w_addr),
            qhead_ram.w_data.eq(qptr_w_data.head),
            qtail_ram.w_en.eq(qptr_w_en & qtail_w_en), qtail_ram.w_addr.eq(qptr_w_addr),
            qtail_ram.w_data.eq(qptr_w_data.tail),
        ]
        a_qptr_addr = Signal(range(self.queues))
        a_qptr_data = Cat(qhead_ram.r0_data, qtail_ram.r0_data)
        m.d.comb += [qhead_ram.r0_addr.eq(a_qptr_addr), qtail_ram.r0_addr.eq(a_qptr_addr)]
        a_qcnt_addr, a_qcnt_data = qcnt_ram.read(0)
        a_link_addr, a_link_data = link_ram.read(2)
        sel_commit = c_pend
        sel_qupd = ~c_pend & u_pend
        m.d.comb += [
            a_qptr_addr.eq(Mux(sel_commit, c_q, u_q)),
            a_qcnt_addr.eq(Mux(sel_commit, c_q, u_q)),
            a_link_addr.eq(u_last),
        ]
        dold = Signal(cnw)
        m.d.comb += dold.eq(Mux(rmo > 0, rmo, 0))
        with m.FSM(name="acct"):
            with m.State("INIT"):
                # Clear the tables after reset: link[i] = i + 1, every queue empty.
                m.d.comb += [
                    link_ram.w_en.eq(init_idx < N), link_ram.w_addr.eq(init_idx),
                    link_ram.w_data.eq(init_idx + 1),
                    qptr_w_en.eq(init_idx < self.queues), qptr_w_addr.eq(init_idx),
                    qptr_w_data.as_value().eq(0), qtail_w_en.eq(1),
                    qcnt_ram.w_en.eq(init_idx < self.queues), qcnt_ram.w_addr.eq(init_idx),
                    qcnt_ram.w_data.eq(0),
                ]
                m.d.sync += init_idx.eq(init_idx + 1)
                with m.If(init_idx == max(N, self.queues) - 1):
                    m.next = "IDLE"
            with m.State("IDLE"):
                m.d.comb += init_done.eq(qdrop.init_done & tdrop.init_done)
                with m.If(c_pend):
                    m.d.sync += [ev_kind.eq(EV_COMMIT), ev_q.eq(c_q), ev_t.eq(c_t),
                                 ev_cells.eq(c_cells), ev_len.eq(c_len),
                                 ev_head.eq(c_head), ev_tail.eq(c_tail), o_old.eq(occ[c_t])]
                    m.next = "C2"
                with m.Elif(u_pend):
                    m.d.sync += [ev_kind.eq(EV_QUPD), ev_q.eq(u_q), ev_cells.eq(u_cells),
                                 ev_len.eq(u_len), ev_tail.eq(u_last)]
                    m.next = "C2"
                with m.Elif(f_pend):
                    # FREE reads no RAM: 2 cycles (so COMMIT + QUPDATE + FREE of one
                    # 8-beat packet each fit in 8 cycles).
                    m.d.sync += [ev_kind.eq(EV_FREE), ev_t.eq(f_t), ev_cells.eq(f_cells),
                                 ev_head.eq(f_head), ev_tail.eq(f_tail), o_old.eq(occ[f_t]),
                                 o_new.eq(occ[f_t] - f_cells),
                                 rmo.eq(Const(R, signed(cnw + 2)) - occ[f_t])]
                    m.next = "C3"
            with m.State("C2"):
                m.d.comb += init_done.eq(1)
                m.d.sync += [r_qptr.as_value().eq(a_qptr_data), r_qcnt.as_value().eq(a_qcnt_data),
                             r_link.eq(a_link_data), rmo.eq(Const(R, signed(cnw + 2)) - o_old)]
                m.next = "C3"
            with m.State("C3"):
                m.d.comb += init_done.eq(1)
                m.next = "IDLE"
                with m.Switch(ev_kind):
                    with m.Case(EV_COMMIT):
                        nonempty = r_qcnt.pkts != 0
                        consumed = Mux(ev_cells < dold, ev_cells, dold)
                        m.d.comb += [
                            link_ram.w_en.eq(nonempty), link_ram.w_addr.eq(r_qptr.tail),
                            link_ram.w_data.eq(ev_head),
                            qptr_w_en.eq(1), qptr_w_addr.eq(ev_q), qtail_w_en.eq(1),
                            qptr_w_data.as_value().eq(_pack(qptr_l, head=Mux(nonempty, r_qptr.head, ev_head),
                                                     tail=ev_tail)),
                            qcnt_ram.w_en.eq(1), qcnt_ram.w_addr.eq(ev_q),
                            qcnt_ram.w_data.eq(_pack(qcnt_l, pkts=r_qcnt.pkts + 1,
                                                     bytes=r_qcnt.bytes + ev_len,
                                                     cells=r_qcnt.cells + ev_cells)),
                        ]
                        m.d.sync += [F.eq(F - ev_cells), occ[ev_t].eq(o_old + ev_cells),
                                     D.eq(D - consumed), queued.eq(queued + ev_cells),
                                     c_pend.eq(0), stat_enq_pkts.eq(stat_enq_pkts + 1)]
                        with m.If(F <= ev_cells):
                            m.d.sync += inv_err.eq(1)
                    with m.Case(EV_QUPD):
                        m.d.comb += [
                            qptr_w_en.eq(1), qptr_w_addr.eq(ev_q),
                            qptr_w_data.as_value().eq(_pack(qptr_l, head=r_link, tail=r_qptr.tail)),
                            qcnt_ram.w_en.eq(1), qcnt_ram.w_addr.eq(ev_q),
                            qcnt_ram.w_data.eq(_pack(qcnt_l, pkts=r_qcnt.pkts - 1,
                                                     bytes=r_qcnt.bytes - ev_len,
                                                     cells=r_qcnt.cells - ev_cells)),
                        ]
                        m.d.sync += [queued.eq(queued - ev_cells), deq_cells.eq(deq_cells + ev_cells),
                                     u_pend.eq(0)]
                        with m.If((r_qcnt.pkts == 0) | (r_qcnt.cells < ev_cells) |
                                  (r_qcnt.bytes < ev_len) | (queued < ev_cells)):
                            m.d.sync += inv_err.eq(1)
                    with m.Case(EV_FREE):
                        back = Signal(signed(cnw + 3))     # R - occupancy after the free
                        m.d.comb += [
                            back.eq(Const(R, signed(cnw + 3)) - o_new),
                            link_ram.w_en.eq(1), link_ram.w_addr.eq(free_tail),
                            link_ram.w_data.eq(ev_head),
                        ]
                        # deficit regained: all cells if the tenant was at or below its
                        # reservation, else what the free takes it below.
                        regained = Mux(rmo >= 0, ev_cells, Mux(back > 0, back, 0))
                        m.d.sync += [free_tail.eq(ev_tail), F.eq(F + ev_cells),
                                     occ[ev_t].eq(o_new), D.eq(D + regained),
                                     deq_cells.eq(deq_cells - ev_cells), f_pend.eq(0)]
                        with m.If((deq_cells < ev_cells) | (o_old < ev_cells)):
                            m.d.sync += inv_err.eq(1)

        # Standing invariants, checked every cycle (registered).
        with m.If(((F + queued + deq_cells)[:cnw + 1] != N) | (F == 0) | (F - 1 < D)):
            m.d.sync += inv_err.eq(1)

        # ================================================================================
        # Enqueue: writes beats into the cells at the head of the free list (they stay
        # in the free list until the packet commits, so a drop needs no cell returns),
        # checks admission for each cell, and at the last beat posts COMMIT.
        # ================================================================================
        beat = self.s_axis.payload
        kcount = Signal(range(BPB + 1))          # bytes in this beat: highest keep bit + 1
        for i in range(BPB):
            with m.If(beat.keep[i]):
                m.d.comb += kcount.eq(i + 1)

        e_active = Signal()                      # beats of a packet still to come
        e_fin = Signal()                         # last beat written, waiting to finish
        e_fin_bad = Signal()
        e_fin_len = Signal(lw + 1)
        e_q, e_t = Signal(qw), Signal(tw)
        e_cur, e_head = Signal(cw), Signal(cw)
        e_beat = Signal(lcb)
        e_kk = Signal(cnw)                       # index of the current cell in the packet
        e_len = Signal(lw + 1)                   # bytes before the current beat
        e_drop = Signal()
        e_reason = Signal(3)
        e_pid = Signal()
        e_qc_raw, e_qc_corr = Signal(cnw), Signal(cnw)
        e_qc_pk, e_qc_by = Signal(cnw), Signal(lw)
        e_qc_st = Signal(2)                      # 0 wait read, 1 read in flight, 2 valid
        e_cell_ok = Signal()                     # the current cell is admitted
        e_nxt, e_nxt_v, e_link_pend = Signal(cw), Signal(), Signal()

        drop_rdy = qdrop.inc_ready & tdrop.inc_ready
        e_busy = e_active | e_fin

        # -- per-queue occupancy for admission (corrected for a commit not yet applied) --
        en_qaddr, en_qdata = qcnt_ram.read(2)
        en_qdata_v = data.View(qcnt_l, en_qdata)
        start = Signal()
        m.d.comb += start.eq(~e_busy & init_done & self.s_axis.valid & self.s_meta.valid)
        m.d.comb += en_qaddr.eq(Mux(start, self.s_meta.payload.queue, e_q))
        with m.If(start):
            m.d.sync += [e_qc_st.eq(1), e_qc_corr.eq(Mux(c_pend & (c_q == self.s_meta.payload.queue),
                                                         c_cells, 0))]
        with m.Elif(e_qc_st == 1):
            m.d.sync += [e_qc_raw.eq(en_qdata_v.cells), e_qc_st.eq(2),
                         e_qc_pk.eq(en_qdata_v.pkts), e_qc_by.eq(en_qdata_v.bytes)]
        with m.If((e_qc_st == 2) & (((e_qc_pk == 0) != (e_qc_raw == 0)) |
                                    ((e_qc_pk == 0) != (e_qc_by == 0)))):
            m.d.sync += inv_err.eq(1)

        # -- admission pipeline, tagged with (pid, kk); snapshot in S1, result in S5 --
        # Every input only moves in the safe direction while a result is in flight
        # (frees raise F by at least what they raise D; the own pending commit is
        # subtracted explicitly), so a result stays valid when it arrives.
        def sg(x):
            return Cat(x, Const(0, 1)).as_signed()
        tag = Cat(e_kk, e_pid)
        s1_v, s1_tag = Signal(), Signal(cnw + 1)
        s1_F, s1_D, s1_o, s1_kk, s1_pc, s1_pco, s1_oc = (
            Signal(cnw), Signal(self.dw), Signal(cnw), Signal(cnw), Signal(cnw), Signal(cnw),
            Signal(cnw))
        m.d.sync += [
            s1_v.eq(e_busy & ~e_drop & ~e_cell_ok), s1_tag.eq(tag),
            s1_F.eq(F), s1_D.eq(D), s1_o.eq(occ[e_t]), s1_kk.eq(e_kk),
            s1_pc.eq(Mux(c_pend, c_cells, 0)),
            s1_pco.eq(Mux(c_pend & (c_t == e_t), c_cells, 0)),
            s1_oc.eq(occ[c_t]),
        ]
        SW = cnw + self.dw + 4
        s2_v, s2_tag = Signal(), Signal(cnw + 1)
        s2_A = Signal(signed(SW))        # free cells beyond the packet's prefix and the sentinel
        s2_o, s2_ok, s2_D = Signal(signed(SW)), Signal(signed(SW)), Signal(signed(SW))
        s2_pc, s2_ocd = Signal(cnw), Signal(cnw)   # pending commit; its tenant's deficit
        m.d.sync += [
            s2_v.eq(s1_v), s2_tag.eq(s1_tag),
            s2_A.eq(sg(s1_F) - sg(s1_pc) - sg(s1_kk) - 1),
            s2_o.eq(sg(s1_o) + sg(s1_pco)),
            s2_ok.eq(sg(s1_o) + sg(s1_pco) + sg(s1_kk)),
            s2_D.eq(sg(s1_D)),
            s2_pc.eq(s1_pc),
            s2_ocd.eq(Mux(s1_oc < R, R - s1_oc, 0)),
        ]
        s3_v, s3_tag = Signal(), Signal(cnw + 1)
        s3_A, s3_ok, s3_AD, s3_own = (Signal(signed(SW)), Signal(signed(SW)),
                                      Signal(signed(SW)), Signal(signed(SW)))
        s3_cons = Signal(cnw)        # reservation the pending commit consumes (not yet in D)
        m.d.sync += [
            s3_v.eq(s2_v), s3_tag.eq(s2_tag), s3_A.eq(s2_A), s3_ok.eq(s2_ok),
            s3_AD.eq(s2_A - s2_D),
            s3_own.eq(Mux(s2_o < R, R - s2_o, 0)),
            s3_cons.eq(Mux(s2_pc < s2_ocd, s2_pc, s2_ocd)),
        ]
        s4_v, s4_tag = Signal(), Signal(cnw + 1)
        s4_sf = Signal(signed(SW))        # shared-pool cells left for this cell
        s4_full, s4_res, s4_cap = Signal(), Signal(), Signal()
        m.d.sync += [
            s4_v.eq(s3_v), s4_tag.eq(s3_tag),
            s4_sf.eq(s3_AD + s3_own + s3_cons),
            s4_full.eq(s3_A < 1), s4_res.eq(s3_ok < R), s4_cap.eq(s3_ok >= L),
        ]
        qk = Signal(signed(cnw + 3))
        m.d.comb += qk.eq(sg(e_qc_raw) + sg(e_qc_corr) + sg(e_kk))
        if self.alpha_log2 >= 0:
            dt_lim = s4_sf << self.alpha_log2
        else:
            dt_lim = s4_sf >> -self.alpha_log2
        qlim = qk >= QL
        dt_bad = qk >= dt_lim
        s5_v, s5_tag, s5_pass, s5_reason = Signal(), Signal(cnw + 1), Signal(), Signal(3)
        m.d.sync += [s5_v.eq(s4_v & (e_qc_st == 2)), s5_tag.eq(s4_tag)]
        with m.If(s4_full):
            m.d.sync += [s5_pass.eq(0), s5_reason.eq(_R_FULL)]
        with m.Elif(qlim):
            m.d.sync += [s5_pass.eq(0), s5_reason.eq(_R_QUEUE)]
        with m.Elif(s4_res):
            m.d.sync += [s5_pass.eq(1), s5_reason.eq(0)]
        with m.Elif(s4_cap):
            m.d.sync += [s5_pass.eq(0), s5_reason.eq(_R_TENANT)]
        with m.Elif(s4_sf < 1):
            m.d.sync += [s5_pass.eq(0), s5_reason.eq(_R_FULL)]
        with m.Elif(dt_bad):
            m.d.sync += [s5_pass.eq(0), s5_reason.eq(_R_DT)]
        with m.Else():
            m.d.sync += [s5_pass.eq(1), s5_reason.eq(0)]
        adm_now = Signal()
        m.d.comb += adm_now.eq(s5_v & (s5_tag == tag) & e_busy & ~e_drop & ~e_cell_ok)
        with m.If(adm_now):
            with m.If(s5_pass):
                m.d.sync += e_cell_ok.eq(1)
            with m.Else():
                m.d.sync += [e_drop.eq(1), e_reason.eq(s5_reason)]

        # -- next cell: link[cur]. Safe to read as soon as the current cell is known not
        # to be the free list's sentinel (S2 says a free cell lies beyond it): its link
        # is then already written and stays put. --
        en_laddr, en_ldata = link_ram.read(0)
        m.d.comb += en_laddr.eq(e_cur)
        link_safe = s2_v & (s2_tag == tag) & (s2_A >= 1)
        with m.If(e_link_pend):
            m.d.sync += [e_nxt.eq(en_ldata), e_nxt_v.eq(1), e_link_pend.eq(0)]
        with m.Elif(e_busy & ~e_drop & ~e_nxt_v & (e_cell_ok | link_safe)):
            m.d.sync += e_link_pend.eq(1)
        can_move = e_cell_ok & e_nxt_v

        # -- beats --
        wr_en, wr_cell, wr_beat = Signal(), Signal(cw), Signal(lcb)
        m.d.comb += [cell_ram.w_en.eq(wr_en), cell_ram.w_addr.eq(Cat(wr_beat, wr_cell)),
                     cell_ram.w_data.eq(beat.data)]
        finish_now = Signal()          # finish in this cycle (last beat or pending fin)
        fin_bad = Signal()
        fin_len = Signal(lw + 1)
        drop_post = Signal()
        drop_reason = Signal(3)
        commit_post = Signal()
        with m.If(start):
            m.d.comb += [self.s_axis.ready.eq(1), self.s_meta.ready.eq(1),
                         wr_en.eq(1), wr_cell.eq(fhead), wr_beat.eq(0)]
            m.d.sync += [
                e_q.eq(self.s_meta.payload.queue), e_t.eq(self.s_meta.payload.tenant),
                e_cur.eq(fhead), e_head.eq(fhead), e_beat.eq(1), e_kk.eq(0), e_len.eq(BPB),
                e_drop.eq(0), e_pid.eq(~e_pid), e_cell_ok.eq(0), e_nxt_v.eq(0),
                e_link_pend.eq(0),
                e_active.eq(~beat.last), e_fin.eq(beat.last),
                e_fin_bad.eq(beat.user[0] | (kcount == 0)), e_fin_len.eq(kcount),
            ]
        with m.Elif(e_active & self.s_axis.valid):
            with m.If(~beat.last):
                at_end = e_beat == CB - 1
                with m.If(e_drop):
                    m.d.comb += self.s_axis.ready.eq(1)
                with m.Elif(~at_end | can_move):
                    m.d.comb += [self.s_axis.ready.eq(1), wr_en.eq(1), wr_cell.eq(e_cur),
                                 wr_beat.eq(e_beat)]
                    m.d.sync += [e_beat.eq(e_beat + 1), e_len.eq(e_len + BPB)]
                    with m.If(at_end):
                        m.d.sync += [e_cur.eq(e_nxt), e_kk.eq(e_kk + 1), e_cell_ok.eq(0),
                                     e_nxt_v.eq(0)]
            with m.Else():
                # The last beat: written now (unless dropping); finish now if possible,
                # else wait in e_fin.
                m.d.comb += [self.s_axis.ready.eq(1), wr_en.eq(~e_drop), wr_cell.eq(e_cur),
                             wr_beat.eq(e_beat), fin_bad.eq(beat.user[0] | (kcount == 0)),
                             fin_len.eq(e_len + kcount)]
                m.d.sync += [e_active.eq(0), e_fin.eq(1), e_fin_bad.eq(fin_bad),
                             e_fin_len.eq(fin_len)]
                m.d.comb += finish_now.eq(1)
        with m.Elif(e_fin):
            m.d.comb += [finish_now.eq(1), fin_bad.eq(e_fin_bad), fin_len.eq(e_fin_len)]

        with m.If(finish_now):
            with m.If(e_drop | fin_bad):
                # A bad frame still waits for its current cell's admission verdict, so
                # the drop reason does not depend on timing (admission reasons win).
                with m.If(drop_rdy & (e_drop | e_cell_ok)):
                    m.d.comb += [drop_post.eq(1), drop_reason.eq(Mux(e_drop, e_reason, _R_BAD))]
                    m.d.sync += [e_fin.eq(0), e_active.eq(0)]
            with m.Elif(can_move & ~c_pend):
                m.d.comb += commit_post.eq(1)
                m.d.sync += [
                    e_fin.eq(0), e_active.eq(0), fhead.eq(e_nxt),
                    c_pend.eq(1), c_q.eq(e_q), c_t.eq(e_t), c_cells.eq(e_kk + 1),
                    c_len.eq(fin_len), c_head.eq(e_head), c_tail.eq(e_cur),
                ]
        m.d.comb += [
            pkt_ram.w_en.eq(commit_post), pkt_ram.w_addr.eq(e_head),
            pkt_ram.w_data.eq(_pack(pkt_l, len=fin_len, tenant=e_t)),
            qdrop.inc_valid.eq(drop_post), qdrop.inc_index.eq(e_q),
            tdrop.inc_valid.eq(drop_post), tdrop.inc_index.eq(e_t),
        ]
        with m.If(drop_post):
            with m.Switch(drop_reason):
                for i, cnt in enumerate(stat_drop):
                    with m.Case(i):
                        m.d.sync += cnt.eq(cnt + 1)

        # ================================================================================
        # Dequeue walker: plans a release. Reads the queue's head and packet count, then
        # follows the links, 4 cycles per cell (read, register, compute, decide), pushing one
        # descriptor per cell for the emitter and one QUPDATE per packet.
        # ================================================================================
        desc_l = data.StructLayout({
            "cell": cw, "lidx": lcb, "first": 1, "last": 1, "kc": max(1, lbpb),
            "tenant": tw, "rel_end": 1, "nodata": 1})
        done_l = self.m_deq_done.payload.shape()
        m.submodules.desc_fifo = desc_fifo = SyncFIFOBuffered(width=desc_l.size, depth=4)
        m.submodules.done_fifo = done_fifo = SyncFIFOBuffered(width=done_l.size, depth=4)
        desc_w = data.View(desc_l, desc_fifo.w_data)
        done_w = data.View(done_l, done_fifo.w_data)

        w_q = Signal(qw)
        w_credit = Signal(self.credit_width)
        w_p = Signal(cnw)
        w_cur = Signal(cw)
        w_pstart = Signal()
        w_rem = Signal(cnw)
        w_len = Signal(lw)
        w_cells = Signal(cnw)
        w_ten = Signal(tw)
        w_sent_u = Signal(self.bw - lcu)     # credit used so far, in credit units
        w_sent_p = Signal(cnw)
        w_r_link = Signal(cw)
        w_snap_bytes, w_snap_cells = Signal(lw), Signal(cnw)
        w_c_lastpkt = Signal()
        w_c_len, w_c_ten, w_c_newu = Signal(lw), Signal(tw), Signal(self.bw - lcu)
        w_c_lm1 = Signal(self.lcellb)        # (len - 1) mod cell_bytes: last beat, keep
        w_c_rem, w_c_last, w_c_cells = Signal(cnw), Signal(), Signal(cnw)
        w_r_pkt = data.View(pkt_l, Signal(pkt_l.size))

        wq_addr, wq_data = qhead_ram.read(1)
        wc_addr, wc_data = qcnt_ram.read(1)
        wl_addr, wl_data = link_ram.read(1)
        m.d.comb += [pkt_ram.r0_addr.eq(w_cur), wl_addr.eq(w_cur)]
        wq_view = data.View(data.StructLayout({"head": cw}), wq_data)
        wc_view = data.View(qcnt_l, wc_data)
        with m.FSM(name="walker"):
            with m.State("IDLE"):
                m.d.comb += [wq_addr.eq(self.s_deq.payload.queue), wc_addr.eq(self.s_deq.payload.queue),
                             self.s_deq.ready.eq(init_done & ~u_pend & done_fifo.w_rdy)]
                with m.If(self.s_deq.valid & self.s_deq.ready):
                    m.d.sync += [w_q.eq(self.s_deq.payload.queue),
                                 w_credit.eq(self.s_deq.payload.credit)]
                    m.next = "SNAP1"
            with m.State("SNAP1"):
                m.d.comb += [wq_addr.eq(w_q), wc_addr.eq(w_q)]
                m.d.sync += [w_p.eq(wc_view.pkts), w_cur.eq(wq_view.head), w_pstart.eq(1),
                             w_sent_u.eq(0), w_sent_p.eq(0),
                             w_snap_bytes.eq(wc_view.bytes), w_snap_cells.eq(wc_view.cells)]
                m.next = "SNAP2"
            with m.State("SNAP2"):
                # a queue is empty in packets, bytes and cells at once, or in none
                with m.If(((w_p == 0) != (w_snap_cells == 0)) | ((w_p == 0) != (w_snap_bytes == 0))):
                    m.d.sync += inv_err.eq(1)
                with m.If((w_p == 0) | (w_credit == 0)):
                    with m.If(desc_fifo.w_rdy):
                        m.d.comb += [desc_fifo.w_en.eq(1), desc_w.nodata.eq(1), desc_w.rel_end.eq(1),
                                     done_fifo.w_en.eq(1), done_w.queue.eq(w_q),
                                     done_w.bytes.eq(0), done_w.pkts.eq(0)]
                        m.next = "IDLE"
                with m.Else():
                    m.next = "READ"
            with m.State("READ"):
                with m.If(desc_fifo.w_rdy & ~u_pend):
                    m.next = "WAIT"
            with m.State("WAIT"):
                m.d.sync += [w_r_link.eq(wl_data), w_r_pkt.as_value().eq(pkt_ram.r0_data)]
                m.next = "CALC"
            with m.State("CALC"):
                # Registered arithmetic on the packet length (keeps PUSH short).
                c_len = Mux(w_pstart, w_r_pkt.len, w_len)
                c_lm1 = Signal(lw)
                m.d.comb += c_lm1.eq(c_len - 1)
                c_rem_first = c_lm1 >> self.lcellb
                c_rem = Mux(w_pstart, c_rem_first, w_rem)
                m.d.sync += [w_c_len.eq(c_len), w_c_lm1.eq(c_lm1[:self.lcellb]),
                             w_c_ten.eq(Mux(w_pstart, w_r_pkt.tenant, w_ten)),
                             # credit used, in units: + the length rounded up, as one carry
                             # chain (the round-up is its carry-in)
                             w_c_newu.eq(w_sent_u + c_len[lcu:] + c_len[:lcu].any()),
                             w_c_rem.eq(c_rem), w_c_last.eq(c_rem == 0),
                             w_c_cells.eq(Mux(w_pstart, c_rem_first + 1, w_cells)),
                             w_c_lastpkt.eq(w_sent_p + 1 == w_p)]
                m.next = "PUSH"
            with m.State("PUSH"):
                len_cur = w_c_len
                ten_cur = w_c_ten
                lm1 = w_c_lm1
                rem = w_c_rem
                is_last = w_c_last
                cells_cur = w_c_cells
                new_u = w_c_newu
                new_b = Cat(Const(0, lcu), new_u)     # credit used, bytes
                new_p = w_sent_p + 1
                rel_end = is_last & ((new_b >= w_credit) | w_c_lastpkt)
                m.d.comb += [
                    desc_fifo.w_en.eq(1), desc_w.cell.eq(w_cur),
                    desc_w.lidx.eq(Mux(is_last, (lm1 >> lbpb)[:lcb], CB - 1)),
                    desc_w.first.eq(w_pstart), desc_w.last.eq(is_last),
                    desc_w.kc.eq(lm1[:max(1, lbpb)] if lbpb else 0),
                    desc_w.tenant.eq(ten_cur), desc_w.rel_end.eq(rel_end),
                ]
                m.d.sync += [w_cur.eq(w_r_link), w_pstart.eq(is_last), w_rem.eq(rem - 1)]
                with m.If(w_pstart):
                    m.d.sync += [w_len.eq(w_c_len), w_ten.eq(w_c_ten), w_cells.eq(w_c_cells)]
                with m.If(is_last):
                    m.d.sync += [u_pend.eq(1), u_q.eq(w_q), u_len.eq(len_cur), u_cells.eq(cells_cur),
                                 u_last.eq(w_cur), w_sent_u.eq(new_u), w_sent_p.eq(new_p)]
                with m.If(rel_end):
                    m.d.comb += [done_fifo.w_en.eq(1), done_w.queue.eq(w_q),
                                 done_w.bytes.eq(new_b), done_w.pkts.eq(new_p)]
                    m.next = "IDLE"
                with m.Else():
                    m.next = "READ"

        # ================================================================================
        # Emitter: reads the cells named by the descriptors, 1 beat per clock, into a
        # 4-entry output FIFO (credit-checked so back-pressure never loses a read), and
        # posts FREE when a packet's last beat has been read.
        # ================================================================================
        out_l = data.StructLayout({"data": W, "last": 1, "kc": max(1, lbpb), "rel_end": 1,
                                   "phantom": 1})
        m.submodules.out_fifo = out_fifo = SyncFIFOBuffered(width=out_l.size, depth=4)
        x_v = Signal()
        x = data.View(desc_l, Signal(desc_l.size))
        desc_r = data.View(desc_l, desc_fifo.r_data)
        x_b = Signal(lcb)
        x_pkt_head = Signal(cw)
        x_pkt_cells = Signal(cnw)
        m1_v, m1_last, m1_kc, m1_rel, m1_ph = Signal(), Signal(), Signal(max(1, lbpb)), Signal(), Signal()
        can_issue = (out_fifo.w_level + m1_v) < 4
        x_done = Signal()                                  # the loaded descriptor is finished
        issue = Signal()
        final = x_b == x.lidx
        need_free = x.last & final
        m.d.comb += cell_ram.r0_addr.eq(Cat(x_b, x.cell))
        with m.If(x_v & can_issue):
            with m.If(x.nodata):
                m.d.comb += x_done.eq(1)
                m.d.sync += [m1_v.eq(1), m1_ph.eq(1), m1_rel.eq(1), m1_last.eq(0)]
            with m.Elif(~(need_free & f_pend)):
                m.d.comb += issue.eq(1)
                m.d.sync += [m1_v.eq(1), m1_ph.eq(0), m1_last.eq(need_free), m1_kc.eq(x.kc),
                             m1_rel.eq(x.rel_end & need_free), x_b.eq(x_b + 1)]
                with m.If(final):
                    m.d.comb += x_done.eq(1)
                    m.d.sync += x_b.eq(0)
                    with m.If(x.first):
                        m.d.sync += [x_pkt_head.eq(x.cell), x_pkt_cells.eq(1)]
                    with m.Else():
                        m.d.sync += x_pkt_cells.eq(x_pkt_cells + 1)
                    with m.If(x.last):
                        m.d.sync += [f_pend.eq(1), f_head.eq(Mux(x.first, x.cell, x_pkt_head)),
                                     f_tail.eq(x.cell), f_t.eq(x.tenant),
                                     f_cells.eq(Mux(x.first, 1, x_pkt_cells + 1))]
            with m.Else():
                m.d.sync += m1_v.eq(0)
        with m.Else():
            m.d.sync += m1_v.eq(0)
        with m.If(~x_v | x_done):
            m.d.comb += desc_fifo.r_en.eq(1)
            m.d.sync += [x_v.eq(desc_fifo.r_rdy), x.as_value().eq(desc_r.as_value())]
        out_w = data.View(out_l, out_fifo.w_data)
        m.d.comb += [out_fifo.w_en.eq(m1_v), out_w.data.eq(cell_ram.r0_data), out_w.last.eq(m1_last),
                     out_w.kc.eq(m1_kc), out_w.rel_end.eq(m1_rel), out_w.phantom.eq(m1_ph)]

        out_r = data.View(out_l, out_fifo.r_data)
        keep = Cat(Const(1, 1), *((out_r.kc >= i) | ~out_r.last for i in range(1, BPB)))
        m.d.comb += [
            self.m_axis.valid.eq(out_fifo.r_rdy & ~out_r.phantom),
            self.m_axis.payload.data.eq(out_r.data), self.m_axis.payload.keep.eq(keep),
            self.m_axis.payload.last.eq(out_r.last), self.m_axis.payload.user.eq(0),
            out_fifo.r_en.eq(out_r.phantom | self.m_axis.ready),
        ]
        popped_rel = out_fifo.r_rdy & out_fifo.r_en & out_r.rel_end
        done_credit = Signal(3)
        done_fire = self.m_deq_done.valid & self.m_deq_done.ready
        m.d.sync += done_credit.eq(done_credit + popped_rel - done_fire)
        m.d.comb += [self.m_deq_done.valid.eq(done_fifo.r_rdy & (done_credit != 0)),
                     self.m_deq_done.payload.eq(done_fifo.r_data), done_fifo.r_en.eq(done_fire)]
        with m.If(self.m_axis.valid & self.m_axis.ready & self.m_axis.payload.last):
            m.d.sync += stat_deq_pkts.eq(stat_deq_pkts + 1)

        # ================================================================================
        # Query port and statistics.
        # ================================================================================
        q_addr, q_data = qcnt_ram.read(3)
        q_view = data.View(qcnt_l, q_data)
        tq = Signal(cnw)
        m.d.sync += tq.eq(occ[self.query_tenant])
        m.d.comb += [
            q_addr.eq(self.query_queue),
            self.query_pkts.eq(q_view.pkts), self.query_bytes.eq(q_view.bytes),
            self.query_cells.eq(q_view.cells),
            qdrop.query_index.eq(self.query_queue), self.query_drops.eq(qdrop.query_data),
            tdrop.query_index.eq(self.query_tenant), self.query_tenant_drops.eq(tdrop.query_data),
            self.query_tenant_cells.eq(tq),
            self.init_done.eq(init_done),
            self.stat_free_cells.eq(F), self.stat_queued_cells.eq(queued),
            self.stat_deq_cells.eq(deq_cells),
            self.stat_enq_cells.eq(Mux(e_busy & ~e_drop, e_kk + 1, 0)),
            self.stat_invariant_err.eq(inv_err),
            self.stat_enq_pkts.eq(stat_enq_pkts), self.stat_deq_pkts.eq(stat_deq_pkts),
        ]
        for r, cnt in zip(DROP_REASONS, stat_drop):
            m.d.comb += getattr(self, f"stat_drop_{r}").eq(cnt)

        # Taps for the formal shadow model.
        m.d.comb += [
            self.tap_cell_we.eq(wr_en), self.tap_cell_wcell.eq(wr_cell),
            self.tap_enq_start.eq(start),
            self.tap_commit.eq(commit_post), self.tap_commit_cells.eq(e_kk + 1),
            self.tap_rd.eq(issue), self.tap_rd_cell.eq(x.cell),
            self.tap_free.eq(issue & need_free),
            self.tap_free_cells.eq(Mux(x.first, 1, x_pkt_cells + 1)),
            self.tap_commit_pend.eq(c_pend), self.tap_commit_pend_cells.eq(c_cells),
            self.tap_free_pend.eq(f_pend), self.tap_free_pend_cells.eq(f_cells),
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


EXPORTS = [BlockSpec(
    name="voq", module="gse_voq_buffer", factory=VOQBuffer,
    params={"data_width": 64, "buffer_bytes": 65536, "cell_bytes": 256, "queues": 1024,
            "tenants": 16, "queue_limit_cells": 128, "tenant_reserved_cells": 8,
            "tenant_limit_cells": 192, "alpha_log2": 1, "credit_width": 16,
            "counter_width": 32, "credit_unit": CREDIT_UNIT_BYTES},
    description="VOQ buffer manager: shared cell buffer, per-queue linked lists, "
                "admission (queue limit, tenant reservation/limit, dynamic threshold), "
                "credit-based whole-packet release",
    keep_modules=_keep_modules,
)]
