"""The VOQ buffer's accounting unit: the one writer of the queue tables and cell counts.

:class:`VOQAccounting` applies the three events that change shared state, one at a time:

* COMMIT (``s_commit``, from the enqueue): a packet's cells are appended to its queue's
  linked list (link write + queue head/tail/count update);
* TAKEOFF (``s_takeoff``, from the walker): the packet at a queue's head is taken off
  it (new head = the link of its last cell);
* FREE (``s_free``, from the emitter): a sent packet's cells are appended to the free
  list (after its sentinel tail).

Interface:

* ``s_commit``, ``s_takeoff``, ``s_free``: event streams. The unit picks the next event
  in its IDLE state, priority COMMIT > TAKEOFF > FREE (a packet's TAKEOFF is always
  posted before its FREE, so per-queue counts never go negative), and asserts the
  event's ``ready`` in the cycle it applies it (the transfer): 3 cycles after picking a
  COMMIT or TAKEOFF (issue reads, register, compute + write), 2 after a FREE (which
  reads no table). The payload must stay put while ``valid`` is high.
* Tables (ports of :func:`~opengse.rtl.voq.records.ram_read_port` /
  ``ram_write_port``): ``link_w``/``link_rd`` (next-cell pointers), ``qhead_*``,
  ``qtail_*`` (per-queue first/last cell), ``qcnt_*`` (per-queue packets, bytes,
  cells). The unit is their only writer.
* ``counters_ready`` in: the drop counter tables have cleared themselves.
* ``init_done`` out: low while the tables clear after reset (``max(cells, queues)``
  cycles: link[i] = i + 1, every queue empty) and until ``counters_ready``.
* State, out (registers): ``free_cells`` (free list length, its sentinel included),
  ``deficit`` (sum over tenants of their unused reservation), ``occ`` (cells per
  tenant), ``queued_cells``, ``deq_cells`` (taken off a queue, not yet freed),
  ``enq_pkts`` (commits applied).
* ``check_fail`` out: high in a cycle an accounting check fails (an event would make a
  count negative, a queue row is inconsistent, or ``free + queued + deq != cells`` /
  ``free == 0`` / ``free - 1 < deficit``, these a clock late); the buffer keeps the
  sticky flag.
"""

from types import SimpleNamespace

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .records import (
    commit_layout,
    free_layout,
    pack,
    qcnt_layout,
    qptr_layout,
    ram_read_port,
    ram_write_port,
    takeoff_layout,
)

__all__ = ["VOQAccounting"]

EV_COMMIT, EV_TAKEOFF, EV_FREE = 0, 1, 2


class VOQAccounting(wiring.Component):
    def __init__(self, geometry):
        g = self.g = geometry
        qcnt_w = qcnt_layout(g).size
        super().__init__(
            {
                "s_commit": In(stream.Signature(commit_layout(g))),
                "s_takeoff": In(stream.Signature(takeoff_layout(g))),
                "s_free": In(stream.Signature(free_layout(g))),
                "counters_ready": In(1),
                "link_w": Out(ram_write_port(g.n, g.cw)),
                "link_rd": Out(ram_read_port(g.n, g.cw)),
                "qhead_w": Out(ram_write_port(g.queues, g.cw)),
                "qhead_rd": Out(ram_read_port(g.queues, g.cw)),
                "qtail_w": Out(ram_write_port(g.queues, g.cw)),
                "qtail_rd": Out(ram_read_port(g.queues, g.cw)),
                "qcnt_w": Out(ram_write_port(g.queues, qcnt_w)),
                "qcnt_rd": Out(ram_read_port(g.queues, qcnt_w)),
                "init_done": Out(1),
                "free_cells": Out(g.cnw),
                "deficit": Out(g.dw),
                "occ": Out(data.ArrayLayout(g.cnw, g.tenants)),
                "queued_cells": Out(g.cnw),
                "deq_cells": Out(g.cnw),
                "enq_pkts": Out(g.counter_width),
                "check_fail": Out(1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        g = self.g
        N, Q, R, T = g.n, g.queues, g.res, g.tenants
        cw, cnw, lw, qw, tw = g.cw, g.cnw, g.lw, g.qw, g.tw
        qptr_l, qcnt_l = qptr_layout(g), qcnt_layout(g)

        F = Signal(cnw, init=N)  # free list length, sentinel included
        free_tail = Signal(cw, init=N - 1)
        D = Signal(g.dw, init=T * R)  # sum over tenants of max(0, R - occ)
        occ = Array(Signal(cnw, name=f"occ{i}") for i in range(T))
        queued = Signal(cnw)
        deq_cells = Signal(cnw)
        enq_pkts = Signal(g.counter_width)
        init_done = Signal()
        fail = self.check_fail
        m.d.comb += [
            self.free_cells.eq(F),
            self.deficit.eq(D),
            self.queued_cells.eq(queued),
            self.deq_cells.eq(deq_cells),
            self.enq_pkts.eq(enq_pkts),
            self.init_done.eq(init_done),
            *(self.occ[i].eq(occ[i]) for i in range(T)),
        ]

        c, c_pend = self.s_commit.payload, self.s_commit.valid
        u, u_pend = self.s_takeoff.payload, self.s_takeoff.valid
        f, f_pend = self.s_free.payload, self.s_free.valid

        ev_kind = Signal(2)
        ev_q, ev_t = Signal(qw), Signal(tw)
        ev_cells, ev_len = Signal(cnw), Signal(lw)
        ev_head, ev_tail = Signal(cw), Signal(cw)
        o_old = Signal(cnw)
        o_new = Signal(signed(cnw + 2))  # FREE: occupancy after the event
        rmo = Signal(signed(cnw + 2))  # R - occ (before the event)
        r_qptr = data.View(qptr_l, Signal(qptr_l.size))
        r_qcnt = data.View(qcnt_l, Signal(qcnt_l.size))
        r_link = Signal(cw)
        init_idx = Signal(range(max(N, Q) + 1))

        # head and tail live in two tables (the walker reads only heads), written together
        qptr_w_en, qptr_w_addr = Signal(), Signal(range(Q))
        qptr_w_data = data.View(qptr_l, Signal(qptr_l.size))
        qtail_w_en = Signal()
        m.d.comb += [
            self.qhead_w.en.eq(qptr_w_en),
            self.qhead_w.addr.eq(qptr_w_addr),
            self.qhead_w.data.eq(qptr_w_data.head),
            self.qtail_w.en.eq(qptr_w_en & qtail_w_en),
            self.qtail_w.addr.eq(qptr_w_addr),
            self.qtail_w.data.eq(qptr_w_data.tail),
        ]
        a_qptr_addr = Signal(range(Q))
        a_qptr_data = Cat(self.qhead_rd.data, self.qtail_rd.data)
        m.d.comb += [self.qhead_rd.addr.eq(a_qptr_addr), self.qtail_rd.addr.eq(a_qptr_addr)]
        link_w, qcnt_w = self.link_w, self.qcnt_w
        m.d.comb += [
            a_qptr_addr.eq(Mux(c_pend, c.queue, u.queue)),
            self.qcnt_rd.addr.eq(Mux(c_pend, c.queue, u.queue)),
            self.link_rd.addr.eq(u.last),
        ]
        dold = Signal(cnw)
        m.d.comb += dold.eq(Mux(rmo > 0, rmo, 0))
        st = SimpleNamespace(
            R=R,
            cnw=cnw,
            qptr_l=qptr_l,
            qcnt_l=qcnt_l,
            F=F,
            free_tail=free_tail,
            D=D,
            occ=occ,
            queued=queued,
            deq_cells=deq_cells,
            enq_pkts=enq_pkts,
            fail=fail,
            c=c,
            c_pend=c_pend,
            u=u,
            u_pend=u_pend,
            f=f,
            f_pend=f_pend,
            ev_kind=ev_kind,
            ev_q=ev_q,
            ev_t=ev_t,
            ev_cells=ev_cells,
            ev_len=ev_len,
            ev_head=ev_head,
            ev_tail=ev_tail,
            o_old=o_old,
            o_new=o_new,
            rmo=rmo,
            r_qptr=r_qptr,
            r_qcnt=r_qcnt,
            r_link=r_link,
            qptr_w_en=qptr_w_en,
            qptr_w_addr=qptr_w_addr,
            qptr_w_data=qptr_w_data,
            qtail_w_en=qtail_w_en,
            link_w=link_w,
            qcnt_w=qcnt_w,
            dold=dold,
        )
        with m.FSM(name="acct"):
            with m.State("INIT"):
                # Clear the tables after reset: link[i] = i + 1, every queue empty.
                m.d.comb += [
                    link_w.en.eq(init_idx < N),
                    link_w.addr.eq(init_idx),
                    link_w.data.eq(init_idx + 1),
                    qptr_w_en.eq(init_idx < Q),
                    qptr_w_addr.eq(init_idx),
                    qptr_w_data.as_value().eq(0),
                    qtail_w_en.eq(1),
                    qcnt_w.en.eq(init_idx < Q),
                    qcnt_w.addr.eq(init_idx),
                    qcnt_w.data.eq(0),
                ]
                m.d.sync += init_idx.eq(init_idx + 1)
                with m.If(init_idx == max(N, Q) - 1):
                    m.next = "IDLE"
            with m.State("IDLE"):
                m.d.comb += init_done.eq(self.counters_ready)
                self._pick_event(m, st)
            with m.State("C2"):
                m.d.comb += init_done.eq(1)
                m.d.sync += [
                    r_qptr.as_value().eq(a_qptr_data),
                    r_qcnt.as_value().eq(self.qcnt_rd.data),
                    r_link.eq(self.link_rd.data),
                    rmo.eq(Const(R, signed(cnw + 2)) - o_old),
                ]
                m.next = "C3"
            with m.State("C3"):
                m.d.comb += init_done.eq(1)
                m.next = "IDLE"
                with m.Switch(ev_kind):
                    with m.Case(EV_COMMIT):
                        self._apply_commit(m, st)
                    with m.Case(EV_TAKEOFF):
                        self._apply_takeoff(m, st)
                    with m.Case(EV_FREE):
                        self._apply_free(m, st)

        # Standing invariants, checked every cycle on the state of the clock before
        # (the sums and compares registered: no carry chain reaches the sticky flag).
        inv_sum = Signal(cnw + 1, init=N)
        inv_low = Signal()
        m.d.sync += [inv_sum.eq(F + queued + deq_cells), inv_low.eq((F == 0) | (F - 1 < D))]
        with m.If((inv_sum != N) | inv_low):
            m.d.comb += fail.eq(1)
        return m

    def _pick_event(self, m, st):
        """IDLE: the next event (COMMIT > TAKEOFF > FREE) and its operands, registered."""
        with m.If(st.c_pend):
            m.d.sync += [
                st.ev_kind.eq(EV_COMMIT),
                st.ev_q.eq(st.c.queue),
                st.ev_t.eq(st.c.tenant),
                st.ev_cells.eq(st.c.cells),
                st.ev_len.eq(st.c.len),
                st.ev_head.eq(st.c.head),
                st.ev_tail.eq(st.c.tail),
                st.o_old.eq(st.occ[st.c.tenant]),
            ]
            m.next = "C2"
        with m.Elif(st.u_pend):
            m.d.sync += [
                st.ev_kind.eq(EV_TAKEOFF),
                st.ev_q.eq(st.u.queue),
                st.ev_cells.eq(st.u.cells),
                st.ev_len.eq(st.u.len),
                st.ev_tail.eq(st.u.last),
            ]
            m.next = "C2"
        with m.Elif(st.f_pend):
            # FREE reads no table: 2 cycles (so COMMIT + TAKEOFF + FREE of one
            # 8-beat packet each fit in 8 cycles).
            m.d.sync += [
                st.ev_kind.eq(EV_FREE),
                st.ev_t.eq(st.f.tenant),
                st.ev_cells.eq(st.f.cells),
                st.ev_head.eq(st.f.head),
                st.ev_tail.eq(st.f.tail),
                st.o_old.eq(st.occ[st.f.tenant]),
                st.o_new.eq(st.occ[st.f.tenant] - st.f.cells),
                st.rmo.eq(Const(st.R, signed(st.cnw + 2)) - st.occ[st.f.tenant]),
            ]
            m.next = "C3"

    def _apply_commit(self, m, st):
        """C3 of a COMMIT: the packet's cells appended to its queue (link, head/tail, counts)."""
        nonempty = st.r_qcnt.pkts != 0
        consumed = Mux(st.ev_cells < st.dold, st.ev_cells, st.dold)
        m.d.comb += [
            st.link_w.en.eq(nonempty),
            st.link_w.addr.eq(st.r_qptr.tail),
            st.link_w.data.eq(st.ev_head),
            st.qptr_w_en.eq(1),
            st.qptr_w_addr.eq(st.ev_q),
            st.qtail_w_en.eq(1),
            st.qptr_w_data.as_value().eq(
                pack(st.qptr_l, head=Mux(nonempty, st.r_qptr.head, st.ev_head), tail=st.ev_tail)
            ),
            st.qcnt_w.en.eq(1),
            st.qcnt_w.addr.eq(st.ev_q),
            st.qcnt_w.data.eq(
                pack(
                    st.qcnt_l,
                    pkts=st.r_qcnt.pkts + 1,
                    bytes=st.r_qcnt.bytes + st.ev_len,
                    cells=st.r_qcnt.cells + st.ev_cells,
                )
            ),
            self.s_commit.ready.eq(1),
        ]
        m.d.sync += [
            st.F.eq(st.F - st.ev_cells),
            st.occ[st.ev_t].eq(st.o_old + st.ev_cells),
            st.D.eq(st.D - consumed),
            st.queued.eq(st.queued + st.ev_cells),
            st.enq_pkts.eq(st.enq_pkts + 1),
        ]
        with m.If(st.F <= st.ev_cells):
            m.d.comb += st.fail.eq(1)

    def _apply_takeoff(self, m, st):
        """C3 of a TAKEOFF: the queue's head packet taken off it (new head = its last cell's link)."""
        m.d.comb += [
            st.qptr_w_en.eq(1),
            st.qptr_w_addr.eq(st.ev_q),
            st.qptr_w_data.as_value().eq(pack(st.qptr_l, head=st.r_link, tail=st.r_qptr.tail)),
            st.qcnt_w.en.eq(1),
            st.qcnt_w.addr.eq(st.ev_q),
            st.qcnt_w.data.eq(
                pack(
                    st.qcnt_l,
                    pkts=st.r_qcnt.pkts - 1,
                    bytes=st.r_qcnt.bytes - st.ev_len,
                    cells=st.r_qcnt.cells - st.ev_cells,
                )
            ),
            self.s_takeoff.ready.eq(1),
        ]
        m.d.sync += [st.queued.eq(st.queued - st.ev_cells), st.deq_cells.eq(st.deq_cells + st.ev_cells)]
        with m.If(
            (st.r_qcnt.pkts == 0)
            | (st.r_qcnt.cells < st.ev_cells)
            | (st.r_qcnt.bytes < st.ev_len)
            | (st.queued < st.ev_cells)
        ):
            m.d.comb += st.fail.eq(1)

    def _apply_free(self, m, st):
        """C3 of a FREE: the packet's cells appended to the free list, after its sentinel tail."""
        back = Signal(signed(st.cnw + 3))  # R - occupancy after the free
        m.d.comb += [
            back.eq(Const(st.R, signed(st.cnw + 3)) - st.o_new),
            st.link_w.en.eq(1),
            st.link_w.addr.eq(st.free_tail),
            st.link_w.data.eq(st.ev_head),
            self.s_free.ready.eq(1),
        ]
        # deficit regained: all cells if the tenant was at or below its
        # reservation, else what the free takes it below.
        regained = Mux(st.rmo >= 0, st.ev_cells, Mux(back > 0, back, 0))
        m.d.sync += [
            st.free_tail.eq(st.ev_tail),
            st.F.eq(st.F + st.ev_cells),
            st.occ[st.ev_t].eq(st.o_new),
            st.D.eq(st.D + regained),
            st.deq_cells.eq(st.deq_cells - st.ev_cells),
        ]
        with m.If((st.deq_cells < st.ev_cells) | (st.o_old < st.ev_cells)):
            m.d.comb += st.fail.eq(1)
