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
  ``free == 0`` / ``free - 1 < deficit``); the buffer keeps the sticky flag.
"""

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
                with m.If(c_pend):
                    m.d.sync += [
                        ev_kind.eq(EV_COMMIT),
                        ev_q.eq(c.queue),
                        ev_t.eq(c.tenant),
                        ev_cells.eq(c.cells),
                        ev_len.eq(c.len),
                        ev_head.eq(c.head),
                        ev_tail.eq(c.tail),
                        o_old.eq(occ[c.tenant]),
                    ]
                    m.next = "C2"
                with m.Elif(u_pend):
                    m.d.sync += [
                        ev_kind.eq(EV_TAKEOFF),
                        ev_q.eq(u.queue),
                        ev_cells.eq(u.cells),
                        ev_len.eq(u.len),
                        ev_tail.eq(u.last),
                    ]
                    m.next = "C2"
                with m.Elif(f_pend):
                    # FREE reads no table: 2 cycles (so COMMIT + TAKEOFF + FREE of one
                    # 8-beat packet each fit in 8 cycles).
                    m.d.sync += [
                        ev_kind.eq(EV_FREE),
                        ev_t.eq(f.tenant),
                        ev_cells.eq(f.cells),
                        ev_head.eq(f.head),
                        ev_tail.eq(f.tail),
                        o_old.eq(occ[f.tenant]),
                        o_new.eq(occ[f.tenant] - f.cells),
                        rmo.eq(Const(R, signed(cnw + 2)) - occ[f.tenant]),
                    ]
                    m.next = "C3"
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
                        nonempty = r_qcnt.pkts != 0
                        consumed = Mux(ev_cells < dold, ev_cells, dold)
                        m.d.comb += [
                            link_w.en.eq(nonempty),
                            link_w.addr.eq(r_qptr.tail),
                            link_w.data.eq(ev_head),
                            qptr_w_en.eq(1),
                            qptr_w_addr.eq(ev_q),
                            qtail_w_en.eq(1),
                            qptr_w_data.as_value().eq(
                                pack(qptr_l, head=Mux(nonempty, r_qptr.head, ev_head), tail=ev_tail)
                            ),
                            qcnt_w.en.eq(1),
                            qcnt_w.addr.eq(ev_q),
                            qcnt_w.data.eq(
                                pack(
                                    qcnt_l,
                                    pkts=r_qcnt.pkts + 1,
                                    bytes=r_qcnt.bytes + ev_len,
                                    cells=r_qcnt.cells + ev_cells,
                                )
                            ),
                            self.s_commit.ready.eq(1),
                        ]
                        m.d.sync += [
                            F.eq(F - ev_cells),
                            occ[ev_t].eq(o_old + ev_cells),
                            D.eq(D - consumed),
                            queued.eq(queued + ev_cells),
                            enq_pkts.eq(enq_pkts + 1),
                        ]
                        with m.If(F <= ev_cells):
                            m.d.comb += fail.eq(1)
                    with m.Case(EV_TAKEOFF):
                        m.d.comb += [
                            qptr_w_en.eq(1),
                            qptr_w_addr.eq(ev_q),
                            qptr_w_data.as_value().eq(pack(qptr_l, head=r_link, tail=r_qptr.tail)),
                            qcnt_w.en.eq(1),
                            qcnt_w.addr.eq(ev_q),
                            qcnt_w.data.eq(
                                pack(
                                    qcnt_l,
                                    pkts=r_qcnt.pkts - 1,
                                    bytes=r_qcnt.bytes - ev_len,
                                    cells=r_qcnt.cells - ev_cells,
                                )
                            ),
                            self.s_takeoff.ready.eq(1),
                        ]
                        m.d.sync += [queued.eq(queued - ev_cells), deq_cells.eq(deq_cells + ev_cells)]
                        with m.If(
                            (r_qcnt.pkts == 0)
                            | (r_qcnt.cells < ev_cells)
                            | (r_qcnt.bytes < ev_len)
                            | (queued < ev_cells)
                        ):
                            m.d.comb += fail.eq(1)
                    with m.Case(EV_FREE):
                        back = Signal(signed(cnw + 3))  # R - occupancy after the free
                        m.d.comb += [
                            back.eq(Const(R, signed(cnw + 3)) - o_new),
                            link_w.en.eq(1),
                            link_w.addr.eq(free_tail),
                            link_w.data.eq(ev_head),
                            self.s_free.ready.eq(1),
                        ]
                        # deficit regained: all cells if the tenant was at or below its
                        # reservation, else what the free takes it below.
                        regained = Mux(rmo >= 0, ev_cells, Mux(back > 0, back, 0))
                        m.d.sync += [
                            free_tail.eq(ev_tail),
                            F.eq(F + ev_cells),
                            occ[ev_t].eq(o_new),
                            D.eq(D + regained),
                            deq_cells.eq(deq_cells - ev_cells),
                        ]
                        with m.If((deq_cells < ev_cells) | (o_old < ev_cells)):
                            m.d.comb += fail.eq(1)

        # Standing invariants, checked every cycle.
        with m.If(((F + queued + deq_cells)[: cnw + 1] != N) | (F == 0) | (F - 1 < D)):
            m.d.comb += fail.eq(1)
        return m
