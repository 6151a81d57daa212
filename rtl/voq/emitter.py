"""The VOQ buffer's emitter: reads released cells out on ``m_axis``, frees them, reports.

:class:`VOQEmitter` reads the beats of each cell named by a descriptor, 1 beat per
clock, into a 4-entry output FIFO (a read is issued only if the FIFO will have room,
so back-pressure on ``m_axis`` never loses one), posts FREE (the packet's cells back
to the free list) when a packet's last beat has been read, and lets a release's
report out after the release's last beat has left ``m_axis``.

Interface:

* ``s_cell`` in: cell descriptors from the walker (:func:`~.records.cell_desc_layout`;
  a ``nodata`` descriptor carries only the end of an empty release).
* ``s_done`` in: the walker's release reports, in release order.
* ``cell_rd``: read port of the packet data (address = cell, beat).
* ``m_free`` out: the FREE event (a register, held until ``ready``); a packet's last
  beat is not read while the previous FREE is pending.
* ``m_axis`` out: the packets (``tuser`` = 0; ``tkeep`` all ones but on the last beat).
* ``m_deq_done`` out: one report per release, valid once the release's last beat (or,
  for an empty release, its marker) has left the output FIFO; with ``early_report``
  as soon as the walker has planned it (the credit used is known then), while its
  beats may still be on their way out.
* ``deq_pkts`` out: packets sent (last beats that left ``m_axis``).

Timing: a descriptor's first beat is on ``m_axis`` 4 cycles after the descriptor is
at the head of ``s_cell`` (load, RAM read, 2 cycles through the output FIFO).
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from ..lib.stream import AXIStreamSignature
from .. import interfaces
from .records import cell_desc_layout, free_layout, ram_read_port

__all__ = ["VOQEmitter"]

OUT_DEPTH = 4


class VOQEmitter(wiring.Component):
    def __init__(self, geometry, early_report=False):
        g = self.g = geometry
        self.early_report = bool(early_report)
        super().__init__(
            {
                "s_cell": In(stream.Signature(cell_desc_layout(g))),
                "s_done": In(interfaces.release_report(g.qw, g.credit_width)),
                "cell_rd": Out(ram_read_port(g.n * g.cb, g.data_width)),
                "m_free": Out(stream.Signature(free_layout(g))),
                "m_axis": Out(AXIStreamSignature(g.data_width)),
                "m_deq_done": Out(interfaces.release_report(g.qw, g.credit_width)),
                "deq_pkts": Out(g.counter_width),
            }
        )
        # Internal events, for the formal wrapper's shadow model (through VOQBuffer).
        self.tap_rd, self.tap_rd_cell = Signal(), Signal(g.cw)
        self.tap_free, self.tap_free_cells = Signal(), Signal(g.cnw)

    def elaborate(self, platform):
        m = Module()
        g = self.g
        BPB, lbpb, lcb, cw, cnw = g.bpb, g.lbpb, g.lcb, g.cw, g.cnw
        desc_l = cell_desc_layout(g)

        f_pend = Signal()  # the FREE posted, not yet applied
        f = data.View(free_layout(g), Signal(free_layout(g).size))
        m.d.comb += [self.m_free.valid.eq(f_pend), self.m_free.payload.eq(f)]
        with m.If(self.m_free.ready):
            m.d.sync += f_pend.eq(0)

        out_l = data.StructLayout(
            {"data": g.data_width, "last": 1, "kc": max(1, lbpb), "rel_end": 1, "phantom": 1}
        )
        m.submodules.out_fifo = out_fifo = SyncFIFOBuffered(width=out_l.size, depth=OUT_DEPTH)
        x_v = Signal()
        x = data.View(desc_l, Signal(desc_l.size))
        x_b = Signal(lcb)
        x_pkt_head = Signal(cw)
        x_pkt_cells = Signal(cnw)
        m1_v, m1_last, m1_kc, m1_rel, m1_ph = (Signal(), Signal(), Signal(max(1, lbpb)), Signal(), Signal())
        # beats in the FIFO or on their way (w_level + m1_v), kept as a register of its
        # own: the FIFO's level logic does not precede the issue decision
        n_out = Signal(range(OUT_DEPTH + 2))
        can_issue = n_out < OUT_DEPTH
        x_done = Signal()  # the loaded descriptor is finished
        issue = Signal()
        final = x_b == x.lidx
        need_free = x.last & final
        m.d.comb += self.cell_rd.addr.eq(Cat(x_b, x.cell))
        with m.If(x_v & can_issue):
            with m.If(x.nodata):
                m.d.comb += x_done.eq(1)
                m.d.sync += [m1_v.eq(1), m1_ph.eq(1), m1_rel.eq(1), m1_last.eq(0)]
            with m.Elif(~(need_free & f_pend)):
                m.d.comb += issue.eq(1)
                m.d.sync += [
                    m1_v.eq(1),
                    m1_ph.eq(0),
                    m1_last.eq(need_free),
                    m1_kc.eq(x.kc),
                    m1_rel.eq(x.rel_end & need_free),
                    x_b.eq(x_b + 1),
                ]
                with m.If(final):
                    m.d.comb += x_done.eq(1)
                    m.d.sync += x_b.eq(0)
                    with m.If(x.first):
                        m.d.sync += [x_pkt_head.eq(x.cell), x_pkt_cells.eq(1)]
                    with m.Else():
                        m.d.sync += x_pkt_cells.eq(x_pkt_cells + 1)
                    with m.If(x.last):
                        m.d.sync += [
                            f_pend.eq(1),
                            f.head.eq(Mux(x.first, x.cell, x_pkt_head)),
                            f.tail.eq(x.cell),
                            f.tenant.eq(x.tenant),
                            f.cells.eq(Mux(x.first, 1, x_pkt_cells + 1)),
                        ]
            with m.Else():
                m.d.sync += m1_v.eq(0)
        with m.Else():
            m.d.sync += m1_v.eq(0)
        with m.If(~x_v | x_done):
            m.d.comb += self.s_cell.ready.eq(1)
            m.d.sync += [x_v.eq(self.s_cell.valid), x.as_value().eq(self.s_cell.payload.as_value())]
        # m1_v's next value: set in the branches above (the sync statements), as comb
        m1_next = x_v & can_issue & (x.nodata | ~(need_free & f_pend))
        m.d.sync += n_out.eq(n_out + m1_next - (out_fifo.r_en & out_fifo.r_rdy))
        out_w = data.View(out_l, out_fifo.w_data)
        m.d.comb += [
            out_fifo.w_en.eq(m1_v),
            out_w.data.eq(self.cell_rd.data),
            out_w.last.eq(m1_last),
            out_w.kc.eq(m1_kc),
            out_w.rel_end.eq(m1_rel),
            out_w.phantom.eq(m1_ph),
        ]

        out_r = data.View(out_l, out_fifo.r_data)
        keep = Cat(Const(1, 1), *((out_r.kc >= i) | ~out_r.last for i in range(1, BPB)))
        axis = self.m_axis
        m.d.comb += [
            axis.valid.eq(out_fifo.r_rdy & ~out_r.phantom),
            axis.payload.data.eq(out_r.data),
            axis.payload.keep.eq(keep),
            axis.payload.last.eq(out_r.last),
            axis.payload.user.eq(0),
            out_fifo.r_en.eq(out_r.phantom | axis.ready),
        ]
        done = self.m_deq_done
        done_fire = done.valid & done.ready
        if self.early_report:
            sent = Const(1)  # the walker's report goes out as it comes
        else:
            # reports held until their release's end has left the output FIFO
            popped_rel = out_fifo.r_rdy & out_fifo.r_en & out_r.rel_end
            done_credit = Signal(3)
            m.d.sync += done_credit.eq(done_credit + popped_rel - done_fire)
            sent = done_credit != 0
        m.d.comb += [
            done.valid.eq(self.s_done.valid & sent),
            done.payload.eq(self.s_done.payload),
            self.s_done.ready.eq(done_fire),
        ]
        with m.If(axis.valid & axis.ready & axis.payload.last):
            m.d.sync += self.deq_pkts.eq(self.deq_pkts + 1)

        m.d.comb += [
            self.tap_rd.eq(issue),
            self.tap_rd_cell.eq(x.cell),
            self.tap_free.eq(issue & need_free),
            self.tap_free_cells.eq(Mux(x.first, 1, x_pkt_cells + 1)),
        ]
        return m
