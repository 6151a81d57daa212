"""The VOQ buffer's enqueue: writes arriving packets into cells and commits them.

:class:`VOQEnqueue` writes each packet's beats straight into the cells at the head of
the free list (they stay in the free list while being written, so a drop needs no cell
returns: the next packet simply reuses them), asks :class:`~.admission.VOQAdmission`
about each cell as it is entered, follows the free list's links to the next cell, and
at the last beat either posts a COMMIT (the packet's cells, cut off the free list, to
be appended to its queue by the accounting unit) or drops the packet.

Interface:

* ``s_axis`` (AXI-Stream) and ``s_meta`` in (:func:`~opengse.rtl.interfaces.queued_packet`:
  ``queue``, ``tenant``, ``bytes``): the side channel is taken together with the
  packet's first beat. ``bytes`` is ignored: the length is counted from the beats.
  ``tuser[0]`` on the last beat, or a
  last beat with ``tkeep == 0``, marks a bad frame.
* ``init_done``, ``free_cells``, ``deficit``, ``occ`` in: the accounting state
  (:class:`~.accounting.VOQAccounting`).
* ``m_commit`` out: the packet to commit (a register, held until ``ready``); a new
  packet may finish only once the previous commit is taken.
* ``m_drop`` out: a dropped packet's queue and tenant, for the drop counter tables;
  ``valid`` is raised only in a cycle where ``ready`` is high.
* Tables: ``cell_w`` (packet data), ``pkt_w`` (length and tenant at a packet's first
  cell), ``link_rd`` (the next free cell), ``qcnt_rd`` (the queue's occupancy).
* ``enq_cells`` out: cells the packet being written occupies (0 when none or dropping);
  ``drops`` out: packets dropped per reason (``DROP_REASONS`` order, wrapping; a
  clock after the drop);
  ``check_fail`` out: the queue row read for admission is inconsistent.

Timing: a packet of >= 8 beats goes in at 1 beat per clock when a cell holds >= 4
beats; the first cell's verdict is known 6 cycles after the first beat (the input
waits at a cell boundary until the next cell is admitted and its link read). A commit
is posted when the last beat is accepted if the packet's last cell is admitted by then.
"""

from types import SimpleNamespace

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .. import interfaces
from ..lib.stream import AXIStreamSignature
from .admission import VOQAdmission
from .records import (
    DROP_REASONS,
    R_BAD,
    commit_layout,
    drop_layout,
    pack,
    pkt_layout,
    qcnt_layout,
    ram_read_port,
    ram_write_port,
)

__all__ = ["VOQEnqueue"]


class VOQEnqueue(wiring.Component):
    def __init__(self, geometry):
        g = self.g = geometry
        super().__init__(
            {
                "s_axis": In(AXIStreamSignature(g.data_width)),
                "s_meta": In(interfaces.queued_packet(g.qw, g.tw)),
                "init_done": In(1),
                "free_cells": In(g.cnw),
                "deficit": In(g.dw),
                "occ": In(data.ArrayLayout(g.cnw, g.tenants)),
                "m_commit": Out(stream.Signature(commit_layout(g))),
                "m_drop": Out(stream.Signature(drop_layout(g))),
                "cell_w": Out(ram_write_port(g.n * g.cb, g.data_width)),
                "pkt_w": Out(ram_write_port(g.n, pkt_layout(g).size)),
                "link_rd": Out(ram_read_port(g.n, g.cw)),
                "qcnt_rd": Out(ram_read_port(g.queues, qcnt_layout(g).size)),
                "enq_cells": Out(g.cnw),
                "drops": Out(data.ArrayLayout(g.counter_width, len(DROP_REASONS))),
                "check_fail": Out(1),
            }
        )
        # Internal events, for the formal wrapper's shadow model (through VOQBuffer).
        self.tap_cell_we, self.tap_cell_wcell = Signal(), Signal(g.cw)
        self.tap_start, self.tap_commit = Signal(), Signal()
        self.tap_commit_cells = Signal(g.cnw)

    def elaborate(self, platform):
        m = Module()
        g = self.g
        BPB, CB, cw, cnw, lw = g.bpb, g.cb, g.cw, g.cnw, g.lw
        m.submodules.admission = adm = VOQAdmission(g)
        occ = Array(self.occ[i] for i in range(g.tenants))
        F, D, init_done = self.free_cells, self.deficit, self.init_done

        beat = self.s_axis.payload
        kcount = Signal(range(BPB + 1))  # bytes in this beat: highest keep bit + 1
        for i in range(BPB):
            with m.If(beat.keep[i]):
                m.d.comb += kcount.eq(i + 1)
        knone = ~beat.keep.any()  # kcount == 0, without the encoder

        fhead = Signal(cw, init=0)  # free list head
        c_pend = Signal()  # the commit posted, not yet applied
        c = data.View(commit_layout(g), Signal(commit_layout(g).size))
        m.d.comb += [self.m_commit.valid.eq(c_pend), self.m_commit.payload.eq(c)]
        with m.If(self.m_commit.ready):
            m.d.sync += c_pend.eq(0)

        e_active = Signal()  # beats of a packet still to come
        e_fin = Signal()  # last beat written, waiting to finish
        e_fin_bad = Signal()
        e_fin_len = Signal(lw + 1)
        # The current cell holds no counted byte (yet): only a last beat with tkeep == 0
        # went into it. Such a cell is not one of the packet's cells (docs/voq.md), so an
        # admission verdict against it does not name the drop reason of the (bad) frame.
        e_empty = Signal()
        e_q, e_t = Signal(g.qw), Signal(g.tw)
        e_cur, e_head = Signal(cw), Signal(cw)
        e_beat = Signal(g.lcb)
        e_kk = Signal(cnw)  # index of the current cell in the packet
        e_len = Signal(lw + 1)  # bytes before the current beat
        e_drop = Signal()
        e_reason = Signal(3)
        e_pid = Signal()
        e_qc_raw, e_qc_corr = Signal(cnw), Signal(cnw)
        e_qc_pk, e_qc_by = Signal(cnw), Signal(lw)
        e_qc_st = Signal(2)  # 0 wait read, 1 read in flight, 2 valid
        e_cell_ok = Signal()  # the current cell is admitted
        e_nxt, e_nxt_v, e_link_pend = Signal(cw), Signal(), Signal()

        drop_rdy = self.m_drop.ready
        e_busy = e_active | e_fin

        # -- per-queue occupancy for admission (corrected for a commit not yet applied) --
        en_qdata_v = data.View(qcnt_layout(g), self.qcnt_rd.data)
        start = Signal()
        m.d.comb += start.eq(~e_busy & init_done & self.s_axis.valid & self.s_meta.valid)
        m.d.comb += self.qcnt_rd.addr.eq(Mux(start, self.s_meta.payload.queue, e_q))
        with m.If(start):
            m.d.sync += [
                e_qc_st.eq(1),
                e_qc_corr.eq(Mux(c_pend & (c.queue == self.s_meta.payload.queue), c.cells, 0)),
            ]
        with m.Elif(e_qc_st == 1):
            m.d.sync += [
                e_qc_raw.eq(en_qdata_v.cells),
                e_qc_st.eq(2),
                e_qc_pk.eq(en_qdata_v.pkts),
                e_qc_by.eq(en_qdata_v.bytes),
            ]
        with m.If(
            (e_qc_st == 2) & (((e_qc_pk == 0) != (e_qc_raw == 0)) | ((e_qc_pk == 0) != (e_qc_by == 0)))
        ):
            m.d.comb += self.check_fail.eq(1)

        st = SimpleNamespace(
            g=g,
            adm=adm,
            F=F,
            D=D,
            occ=occ,
            c=c,
            c_pend=c_pend,
            e_active=e_active,
            e_fin=e_fin,
            e_q=e_q,
            e_t=e_t,
            e_cur=e_cur,
            e_head=e_head,
            e_kk=e_kk,
            e_drop=e_drop,
            e_reason=e_reason,
            e_pid=e_pid,
            e_qc_raw=e_qc_raw,
            e_qc_corr=e_qc_corr,
            e_qc_st=e_qc_st,
            e_cell_ok=e_cell_ok,
            e_nxt=e_nxt,
            e_busy=e_busy,
            drop_rdy=drop_rdy,
            fhead=fhead,
        )
        # -- admission: one question per clock while the current cell has no verdict --
        tag = self._admission(m, st)

        # -- next cell: link[cur]. Safe to read as soon as the current cell is known not
        # to be the free list's sentinel (a free cell lies beyond it): its link is then
        # already written and stays put. --
        m.d.comb += self.link_rd.addr.eq(e_cur)
        link_safe = adm.m_room.valid & (adm.m_room.payload.tag == tag) & adm.m_room.payload.room
        with m.If(e_link_pend):
            m.d.sync += [e_nxt.eq(self.link_rd.data), e_nxt_v.eq(1), e_link_pend.eq(0)]
        with m.Elif(e_busy & ~e_drop & ~e_nxt_v & (e_cell_ok | link_safe)):
            m.d.sync += e_link_pend.eq(1)
        can_move = e_cell_ok & e_nxt_v

        # -- beats --
        wr_en, wr_cell, wr_beat = Signal(), Signal(cw), Signal(g.lcb)
        m.d.comb += [
            self.cell_w.en.eq(wr_en),
            self.cell_w.addr.eq(Cat(wr_beat, wr_cell)),
            self.cell_w.data.eq(beat.data),
        ]
        finish_now = Signal()  # finish in this cycle (last beat or pending fin)
        fin_bad = Signal()
        fin_len = Signal(lw + 1)
        fin_empty = Signal()  # the last cell holds no counted byte (implies fin_bad)
        drop_post = Signal()
        drop_reason = Signal(3)
        commit_post = Signal()
        with m.If(start):
            m.d.comb += [
                self.s_axis.ready.eq(1),
                self.s_meta.ready.eq(1),
                wr_en.eq(1),
                wr_cell.eq(fhead),
                wr_beat.eq(0),
            ]
            m.d.sync += [
                e_q.eq(self.s_meta.payload.queue),
                e_t.eq(self.s_meta.payload.tenant),
                e_cur.eq(fhead),
                e_head.eq(fhead),
                e_beat.eq(1),
                e_kk.eq(0),
                e_len.eq(BPB),
                e_drop.eq(0),
                e_pid.eq(~e_pid),
                e_cell_ok.eq(0),
                e_nxt_v.eq(0),
                e_link_pend.eq(0),
                e_active.eq(~beat.last),
                e_fin.eq(beat.last),
                e_fin_bad.eq(beat.user[0] | knone),
                e_fin_len.eq(kcount),
                e_empty.eq(beat.last & knone),
            ]
        with m.Elif(e_active & self.s_axis.valid):
            with m.If(~beat.last):
                at_end = e_beat == CB - 1
                with m.If(e_drop):
                    m.d.comb += self.s_axis.ready.eq(1)
                    m.d.sync += e_empty.eq(0)
                with m.Elif(~at_end | can_move):
                    m.d.comb += [self.s_axis.ready.eq(1), wr_en.eq(1), wr_cell.eq(e_cur), wr_beat.eq(e_beat)]
                    m.d.sync += [e_beat.eq(e_beat + 1), e_len.eq(e_len + BPB), e_empty.eq(at_end)]
                    with m.If(at_end):
                        m.d.sync += [e_cur.eq(e_nxt), e_kk.eq(e_kk + 1), e_cell_ok.eq(0), e_nxt_v.eq(0)]
            with m.Else():
                # The last beat: written now (unless dropping); finish now if possible,
                # else wait in e_fin.
                m.d.comb += [
                    self.s_axis.ready.eq(1),
                    wr_en.eq(~e_drop),
                    wr_cell.eq(e_cur),
                    wr_beat.eq(e_beat),
                    fin_bad.eq(beat.user[0] | knone),
                    fin_len.eq(e_len + kcount),
                    fin_empty.eq(e_empty & knone),
                ]
                m.d.sync += [e_active.eq(0), e_fin.eq(1), e_fin_bad.eq(fin_bad), e_fin_len.eq(fin_len)]
                m.d.sync += e_empty.eq(fin_empty)
                m.d.comb += finish_now.eq(1)
        with m.Elif(e_fin):
            m.d.comb += [finish_now.eq(1), fin_bad.eq(e_fin_bad), fin_len.eq(e_fin_len)]
            m.d.comb += fin_empty.eq(e_empty)

        st.can_move, st.finish_now, st.fin_bad, st.fin_len = can_move, finish_now, fin_bad, fin_len
        st.fin_empty = fin_empty
        st.drop_post, st.drop_reason, st.commit_post = drop_post, drop_reason, commit_post
        self._finish(m, st)
        m.d.comb += [
            self.enq_cells.eq(Mux(e_busy & ~e_drop, e_kk + 1, 0)),
            self.tap_cell_we.eq(wr_en),
            self.tap_cell_wcell.eq(wr_cell),
            self.tap_start.eq(start),
            self.tap_commit.eq(commit_post),
            self.tap_commit_cells.eq(e_kk + 1),
        ]
        return m

    def _admission(self, m, st):
        """The admission question for the current cell (one per clock while it has no verdict),
        and its verdict: admitted, or the packet dropped with the reason. Returns the tag."""

        def sg(x):
            return Cat(x, Const(0, 1)).as_signed()

        tag = Cat(st.e_kk, st.e_pid)
        q = st.adm.s_cell.payload
        m.d.comb += [
            st.adm.s_cell.valid.eq(st.e_busy & ~st.e_drop & ~st.e_cell_ok),
            q.tag.eq(tag),
            q.kk.eq(st.e_kk),
            q.free.eq(st.F),
            q.deficit.eq(st.D),
            q.occ.eq(st.occ[st.e_t]),
            q.pend.eq(Mux(st.c_pend, st.c.cells, 0)),
            q.pend_own.eq(Mux(st.c_pend & (st.c.tenant == st.e_t), st.c.cells, 0)),
            q.pend_occ.eq(st.occ[st.c.tenant]),
            st.adm.queue_cells.eq(sg(st.e_qc_raw) + sg(st.e_qc_corr) + sg(st.e_kk)),
            st.adm.queue_cells_valid.eq(st.e_qc_st == 2),
        ]
        verdict = st.adm.m_verdict
        adm_now = Signal()
        m.d.comb += adm_now.eq(
            verdict.valid & (verdict.payload.tag == tag) & st.e_busy & ~st.e_drop & ~st.e_cell_ok
        )
        with m.If(adm_now):
            with m.If(verdict.payload.admit):
                m.d.sync += st.e_cell_ok.eq(1)
            with m.Else():
                m.d.sync += [st.e_drop.eq(1), st.e_reason.eq(verdict.payload.reason)]
        return tag

    def _finish(self, m, st):
        """The packet's end: a drop posted (with its reason, counted), or its commit posted
        (free list head moved on, the packet's length and tenant written)."""
        with m.If(st.finish_now):
            with m.If(st.e_drop | st.fin_bad):
                # A bad frame still waits for its current cell's admission verdict, so
                # the drop reason does not depend on timing (admission reasons win), and
                # so that no stale verdict of it can reach a later packet. A verdict
                # against an empty last cell (only a tkeep == 0 beat in it) is ignored:
                # that cell is not the packet's, the frame is dropped as bad.
                with m.If(st.drop_rdy & (st.e_drop | st.e_cell_ok)):
                    reason = Mux(st.e_drop & ~st.fin_empty, st.e_reason, R_BAD)
                    m.d.comb += [st.drop_post.eq(1), st.drop_reason.eq(reason)]
                    m.d.sync += [st.e_fin.eq(0), st.e_active.eq(0)]
            with m.Elif(st.can_move & ~st.c_pend):
                m.d.comb += st.commit_post.eq(1)
                m.d.sync += [
                    st.e_fin.eq(0),
                    st.e_active.eq(0),
                    st.fhead.eq(st.e_nxt),
                    st.c_pend.eq(1),
                    st.c.queue.eq(st.e_q),
                    st.c.tenant.eq(st.e_t),
                    st.c.cells.eq(st.e_kk + 1),
                    st.c.len.eq(st.fin_len),
                    st.c.head.eq(st.e_head),
                    st.c.tail.eq(st.e_cur),
                ]
        m.d.comb += [
            self.pkt_w.en.eq(st.commit_post),
            self.pkt_w.addr.eq(st.e_head),
            self.pkt_w.data.eq(pack(pkt_layout(st.g), len=st.fin_len, tenant=st.e_t)),
            self.m_drop.valid.eq(st.drop_post),
            self.m_drop.payload.queue.eq(st.e_q),
            self.m_drop.payload.tenant.eq(st.e_t),
        ]
        # the drop counters a clock later, from a registered one-hot strobe (the end of
        # the packet's beat logic does not reach their enables)
        inc = Signal(len(DROP_REASONS))
        m.d.sync += inc.eq(Mux(st.drop_post, 1 << st.drop_reason, 0))
        for i in range(len(DROP_REASONS)):
            with m.If(inc[i]):
                m.d.sync += self.drops[i].eq(self.drops[i] + 1)
