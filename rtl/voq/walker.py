"""The VOQ buffer's release walker: plans a release, cell by cell.

:class:`VOQWalker` takes a release request (``queue``, ``credit``), reads the queue's
head and packet count, then follows the links of its cells, 4 cycles per cell (read,
register, compute, push), pushing one cell descriptor per cell for the emitter and
taking each packet off the queue (TAKEOFF to the accounting unit) as its last cell is
pushed. Packets go whole while the credit used is below the credit and the queue (as
it was when the request started) has packets; a packet uses its length rounded up to
a multiple of ``credit_unit``.

Interface:

* ``s_deq`` in (:func:`~opengse.rtl.interfaces.release_request`: ``queue``,
  ``credit``): taken when the walker is idle, the tables are ready, no TAKEOFF is
  pending and the report FIFO has room. A credit above ``max_credit``
  (:class:`~.geometry.VOQGeometry`) counts as ``max_credit``.
* ``init_done`` in.
* ``m_cell`` out: cell descriptors (:func:`~.records.cell_desc_layout`), one per cell,
  the last cell of the release marked ``rel_end``; an empty release (credit 0 or empty
  queue) is one ``nodata`` descriptor. ``valid`` is raised only after ``ready`` was
  seen in the cycle that started the cell (the FIFO behind it has one reader only).
* ``m_done`` out: the release's report (:func:`~opengse.rtl.interfaces.release_report`:
  ``queue``, ``bytes`` = credit used, ``pkts``), pushed with its last descriptor (the
  emitter holds it back until that cell is out).
* ``m_pkt`` out: one record per packet (:func:`~opengse.rtl.interfaces.emitted_packet`:
  ``queue``, ``len``, ``last`` = the last packet of its release), pushed with the
  packet's first cell descriptor; a first cell waits until ``ready`` was seen (the
  FIFO behind it has one reader only).
* ``m_takeoff`` out: the packet taken off its queue (a register, held until ``ready``).
* Tables: ``qhead_rd``, ``qcnt_rd`` (the queue at the start), ``link_rd`` and ``pkt_rd``
  (the next cell and, at a packet's first cell, its length and tenant).
* ``check_fail`` out: the queue row is empty in some of packets, bytes and cells but
  not in all.

Timing: the first descriptor is pushed 6 cycles after the request is accepted; the
next request is taken as soon as the last descriptor of this one is pushed.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .. import interfaces
from .records import cell_desc_layout, pkt_layout, qcnt_layout, ram_read_port, takeoff_layout

__all__ = ["VOQWalker"]


class VOQWalker(wiring.Component):
    def __init__(self, geometry):
        g = self.g = geometry
        super().__init__(
            {
                "s_deq": In(interfaces.release_request(g.qw, g.credit_width)),
                "init_done": In(1),
                "m_cell": Out(stream.Signature(cell_desc_layout(g))),
                "m_done": Out(interfaces.release_report(g.qw, g.credit_width)),
                "m_pkt": Out(interfaces.emitted_packet(g.qw)),
                "m_takeoff": Out(stream.Signature(takeoff_layout(g))),
                "qhead_rd": Out(ram_read_port(g.queues, g.cw)),
                "qcnt_rd": Out(ram_read_port(g.queues, qcnt_layout(g).size)),
                "link_rd": Out(ram_read_port(g.n, g.cw)),
                "pkt_rd": Out(ram_read_port(g.n, pkt_layout(g).size)),
                "check_fail": Out(1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        g = self.g
        CB, cw, cnw, lw, lcb, lbpb, lcu = g.cb, g.cw, g.cnw, g.lw, g.lcb, g.lbpb, g.lcu
        pkt_l, qcnt_l = pkt_layout(g), qcnt_layout(g)
        desc_w, done_w = self.m_cell.payload, self.m_done.payload
        desc_rdy, done_rdy = self.m_cell.ready, self.m_done.ready
        pkt_w, pkt_rdy = self.m_pkt.payload, self.m_pkt.ready

        u_pend = Signal()  # the TAKEOFF posted, not yet applied
        u = data.View(takeoff_layout(g), Signal(takeoff_layout(g).size))
        m.d.comb += [self.m_takeoff.valid.eq(u_pend), self.m_takeoff.payload.eq(u)]
        with m.If(self.m_takeoff.ready):
            m.d.sync += u_pend.eq(0)

        w_q = Signal(g.qw)
        w_credit = Signal(g.credit_width)
        w_p = Signal(cnw)
        w_cur = Signal(cw)
        w_pstart = Signal()
        w_rem = Signal(cnw)
        w_len = Signal(lw)
        w_cells = Signal(cnw)
        w_ten = Signal(g.tw)
        w_sent_u = Signal(g.bw - lcu)  # credit used so far, in credit units
        w_sent_p = Signal(cnw)
        w_r_link = Signal(cw)
        w_c_lastpkt = Signal()
        w_c_len, w_c_ten, w_c_newu = Signal(lw), Signal(g.tw), Signal(g.bw - lcu)
        w_c_lm1 = Signal(g.lcellb)  # (len - 1) mod cell_bytes: last beat, keep
        w_c_rem, w_c_last, w_c_cells = Signal(cnw), Signal(), Signal(cnw)
        w_r_pkt = data.View(pkt_l, Signal(pkt_l.size))
        # SNAP1's tests, registered for SNAP2 (no compare before its outputs' valid)
        w_credit_zero, w_none, w_bad = Signal(), Signal(), Signal()
        # the credit in whole units, rounded up (new_b >= credit <=> new_u >= this), and
        # CALC's test of it, registered for PUSH (no compare before its outputs' valid)
        w_credit_u = Signal(g.credit_width - lcu + 1)
        w_c_full = Signal()

        wq_addr, wc_addr = self.qhead_rd.addr, self.qcnt_rd.addr
        m.d.comb += [self.pkt_rd.addr.eq(w_cur), self.link_rd.addr.eq(w_cur)]
        wq_view = data.View(data.StructLayout({"head": cw}), self.qhead_rd.data)
        wc_view = data.View(qcnt_l, self.qcnt_rd.data)
        s_deq = self.s_deq
        with m.FSM(name="walker"):
            with m.State("IDLE"):
                m.d.comb += [
                    wq_addr.eq(s_deq.payload.queue),
                    wc_addr.eq(s_deq.payload.queue),
                    s_deq.ready.eq(self.init_done & ~u_pend & done_rdy),
                ]
                with m.If(s_deq.valid & s_deq.ready):
                    credit = s_deq.payload.credit
                    m.d.sync += [
                        w_q.eq(s_deq.payload.queue),
                        w_credit.eq(Mux(credit > g.max_credit, g.max_credit, credit)),
                        w_credit_zero.eq(credit == 0),
                    ]
                    m.next = "SNAP1"
            with m.State("SNAP1"):
                m.d.comb += [wq_addr.eq(w_q), wc_addr.eq(w_q)]
                m.d.sync += [
                    w_p.eq(wc_view.pkts),
                    w_cur.eq(wq_view.head),
                    w_pstart.eq(1),
                    w_sent_u.eq(0),
                    w_sent_p.eq(0),
                    w_none.eq((wc_view.pkts == 0) | w_credit_zero),
                    w_credit_u.eq(w_credit[lcu:] + w_credit[:lcu].any()),
                    # a queue is empty in packets, bytes and cells at once, or in none
                    w_bad.eq(
                        ((wc_view.pkts == 0) != (wc_view.cells == 0))
                        | ((wc_view.pkts == 0) != (wc_view.bytes == 0))
                    ),
                ]
                m.next = "SNAP2"
            with m.State("SNAP2"):
                with m.If(w_bad):
                    m.d.comb += self.check_fail.eq(1)
                with m.If(w_none):
                    with m.If(desc_rdy):
                        m.d.comb += [
                            self.m_cell.valid.eq(1),
                            desc_w.nodata.eq(1),
                            desc_w.rel_end.eq(1),
                            self.m_done.valid.eq(1),
                            done_w.queue.eq(w_q),
                            done_w.bytes.eq(0),
                            done_w.pkts.eq(0),
                        ]
                        m.next = "IDLE"
                with m.Else():
                    m.next = "READ"
            with m.State("READ"):
                # a packet's first cell waits for room for the packet's record too
                with m.If(desc_rdy & ~u_pend & (pkt_rdy | ~w_pstart)):
                    m.next = "WAIT"
            with m.State("WAIT"):
                m.d.sync += [w_r_link.eq(self.link_rd.data), w_r_pkt.as_value().eq(self.pkt_rd.data)]
                m.next = "CALC"
            with m.State("CALC"):
                # Registered arithmetic on the packet length (keeps PUSH short).
                c_len = Mux(w_pstart, w_r_pkt.len, w_len)
                c_lm1 = Signal(lw)
                m.d.comb += c_lm1.eq(c_len - 1)
                c_rem_first = c_lm1 >> g.lcellb
                c_rem = Mux(w_pstart, c_rem_first, w_rem)
                c_newu = Signal(g.bw - lcu)
                m.d.comb += c_newu.eq(w_sent_u + c_len[lcu:] + c_len[:lcu].any())
                m.d.sync += [
                    w_c_len.eq(c_len),
                    w_c_lm1.eq(c_lm1[: g.lcellb]),
                    w_c_ten.eq(Mux(w_pstart, w_r_pkt.tenant, w_ten)),
                    # credit used, in units: + the length rounded up, as one carry
                    # chain (the round-up is its carry-in)
                    w_c_newu.eq(c_newu),
                    w_c_full.eq(c_newu >= w_credit_u),
                    w_c_rem.eq(c_rem),
                    w_c_last.eq(c_rem == 0),
                    w_c_cells.eq(Mux(w_pstart, c_rem_first + 1, w_cells)),
                    w_c_lastpkt.eq(w_sent_p + 1 == w_p),
                ]
                m.next = "PUSH"
            with m.State("PUSH"):
                is_last = w_c_last
                new_u = w_c_newu
                new_b = Cat(Const(0, lcu), new_u)  # credit used, bytes
                new_p = w_sent_p + 1
                rel_end = is_last & (w_c_full | w_c_lastpkt)
                m.d.comb += [
                    self.m_cell.valid.eq(1),
                    desc_w.cell.eq(w_cur),
                    desc_w.lidx.eq(Mux(is_last, (w_c_lm1 >> lbpb)[:lcb], CB - 1)),
                    desc_w.first.eq(w_pstart),
                    desc_w.last.eq(is_last),
                    desc_w.kc.eq(w_c_lm1[: max(1, lbpb)] if lbpb else 0),
                    desc_w.tenant.eq(w_c_ten),
                    desc_w.rel_end.eq(rel_end),
                ]
                m.d.sync += [w_cur.eq(w_r_link), w_pstart.eq(is_last), w_rem.eq(w_c_rem - 1)]
                with m.If(w_pstart):
                    m.d.sync += [w_len.eq(w_c_len), w_ten.eq(w_c_ten), w_cells.eq(w_c_cells)]
                    # the packet's record: known at its first cell (length and credit)
                    m.d.comb += [
                        self.m_pkt.valid.eq(1),
                        pkt_w.queue.eq(w_q),
                        pkt_w.len.eq(w_c_len),
                        pkt_w.last.eq(w_c_full | w_c_lastpkt),
                    ]
                with m.If(is_last):
                    m.d.sync += [
                        u_pend.eq(1),
                        u.queue.eq(w_q),
                        u.len.eq(w_c_len),
                        u.cells.eq(w_c_cells),
                        u.last.eq(w_cur),
                        w_sent_u.eq(new_u),
                        w_sent_p.eq(new_p),
                    ]
                with m.If(rel_end):
                    m.d.comb += [
                        self.m_done.valid.eq(1),
                        done_w.queue.eq(w_q),
                        done_w.bytes.eq(new_b),
                        done_w.pkts.eq(new_p),
                    ]
                    m.next = "IDLE"
                with m.Else():
                    m.next = "READ"
        return m
