"""EventEngine: the DGSQ manager's stage sequencer and its ACCEPT stage."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ... import interfaces
from ...header.gse_header import GSEType
from .layouts import CREDIT_BITS, LOG_CREDIT_UNIT, event_layout, operand_layout

__all__ = ["EventEngine"]


class EventEngine(wiring.Component):
    """One event at a time: ACCEPT picks it, CALC and WRITE (other parts) follow.

    Interface: the manager's inputs ``s_rel_done``, ``s_grant``, ``s_pkt`` (their
    ``ready``; of a release report only ``queue`` and ``bytes`` are used, ``pkts`` is
    ignored); from :class:`~.context_cam.ContextCAM` the packet's lookup (``pk_hit``,
    ``pk_new``, ``pk_q``, ``pk_current``, ``pk_go``); from
    :class:`~.request_scheduler.RequestScheduler` the control event (``ctl_due``,
    ``ctl_sweep``, ``ctl_q``) and ``ctl_take`` back. Out: the stage (``st_idle`` =
    ACCEPT, ``st_calc``, ``st_write``; one-hot), the event's ``kind``, its context
    ``q`` (with copies ``q_sel`` and ``q_dec`` for its two wide consumers), ``q_next``
    (the context memory's read address: the context of the event being accepted),
    ``fresh`` (the packet allocated its context), the registered operands ``op`` and the
    packet's length ``pkt_bytes``;
    ``inc_alloc``/``inc_pool_full`` for the counters. ``done`` in: WRITE completes.

    Priority at ACCEPT: release report, GRANT, packet, control event (a REQUEST from
    the FIFO, or a sweep step). Packets and control events alternate while both wait
    (``turn``); a packet whose key has no context while none is free is held
    (lossless back-pressure), counted once in ``inc_pool_full``, and a control event
    runs instead. Timing: 3 clocks per event at least (ACCEPT, CALC, WRITE; WRITE
    lasts until its output is taken); ACCEPT registers everything it picks.
    """

    def __init__(self, n_ctx):
        self.n_ctx = n_ctx
        qb = max(1, (n_ctx - 1).bit_length())
        super().__init__(
            {
                "s_rel_done": In(interfaces.release_report(qb, CREDIT_BITS)),
                "s_grant": In(interfaces.grant_in()),
                "s_pkt": In(interfaces.packet_descriptor()),
                "pk_hit": In(1),
                "pk_new": In(1),
                "pk_q": In(qb),
                "pk_current": In(1),
                "pk_go": In(1),
                "ctl_due": In(1),
                "ctl_sweep": In(1),
                "ctl_q": In(qb),
                "ctl_take": Out(1),
                "done": In(1),
                "st_idle": Out(1, init=1),
                "st_calc": Out(1),
                "st_write": Out(1),
                "kind": Out(event_layout()),
                "q": Out(qb),
                # Copies of q for its two wide consumers (the flag bit selects, the one-hot
                # decode), to spread the fanout; distinct reset values keep Yosys from
                # merging them.
                "q_sel": Out(qb, init=1),
                "q_dec": Out(qb, init=(n_ctx - 1) & ((1 << qb) - 1)),
                "q_next": Out(qb),
                "fresh": Out(1),
                "op": Out(operand_layout()),
                "pkt_bytes": Out(16),
                "inc_alloc": Out(1),
                "inc_pool_full": Out(1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        n = self.n_ctx
        qb = len(self.q)
        LCU = LOG_CREDIT_UNIT
        kind, op, q_next = self.kind, self.op, self.q_next
        blocked = Signal()  # this packet was already counted as pool-full
        turn = Signal()  # alternate packets and REQUEST/sweep work

        def ctl_event():
            m.d.comb += self.ctl_take.eq(1)
            m.d.sync += [kind.sweep.eq(self.ctl_sweep), kind.req.eq(~self.ctl_sweep)]

        # The read address, in every clock (the memory's read matters in ACCEPT only):
        # the pick's priority as below, from registered flags (pk_go: the packet's
        # lookup is current and it has a context), so few LUTs precede the memory.
        pkt_turn = ~turn | ~self.ctl_due
        pkt_take = Signal()
        m.d.comb += [
            pkt_take.eq(self.s_pkt.valid & self.pk_go & pkt_turn),
            q_next.eq(
                Mux(
                    self.s_rel_done.valid,
                    self.s_rel_done.payload.queue,
                    Mux(
                        self.s_grant.valid,
                        self.s_grant.payload.dgsq[:qb],
                        Mux(pkt_take, self.pk_q, self.ctl_q),
                    ),
                )
            ),
        ]

        with m.If(self.st_idle):
            m.d.sync += [
                self.st_idle.eq(0),
                self.st_calc.eq(1),
                self.fresh.eq(0),
                kind.eq(0),
                self.q.eq(q_next),
                self.q_sel.eq(q_next),
                self.q_dec.eq(q_next),
            ]
            with m.If(self.s_rel_done.valid):
                m.d.comb += self.s_rel_done.ready.eq(1)
                m.d.sync += [kind.rel.eq(1), op.rel_bytes.eq(self.s_rel_done.payload.bytes)]
            with m.Elif(self.s_grant.valid):
                # Checked against the context in CALC/WRITE (unknown: counted, no effect).
                gi = self.s_grant.payload
                m.d.comb += self.s_grant.ready.eq(1)
                m.d.sync += [
                    kind.grant.eq(1),
                    op.g_src_node.eq(gi.src_node),
                    op.g_port.eq(gi.port),
                    op.g_seq.eq(gi.seq),
                    op.g_len.eq(gi.len),
                    op.g_pre.eq((gi.type == GSEType.GRANT.value) & (gi.dgsq < n)),
                    op.g_seq_m1.eq(gi.seq - 1),
                    op.g_neg.eq(-(gi.len << 6)),
                ]
            with m.Elif(pkt_take):
                pk = self.s_pkt.payload
                m.d.comb += self.s_pkt.ready.eq(1)
                m.d.sync += [
                    kind.pkt.eq(1),
                    self.pkt_bytes.eq(pk.bytes),
                    op.bytes_nz.eq(pk.bytes != 0),
                    op.pkt_cu.eq(pk.bytes[LCU:] + pk.bytes[:LCU].any()),
                    blocked.eq(0),
                    turn.eq(1),
                    op.pkt_key.dst_node.eq(pk.dst_node),
                    op.pkt_key.port.eq(pk.port),
                    op.pkt_key.tc.eq(pk.tc),
                    op.pkt_key.tenant.eq(pk.tenant),
                ]
                with m.If(~self.pk_hit):
                    m.d.sync += self.fresh.eq(1)
                    m.d.comb += self.inc_alloc.eq(1)
            with m.Elif(self.s_pkt.valid & self.pk_current & pkt_turn):
                # no context for the key and none free: held
                with m.If(~blocked):
                    m.d.sync += blocked.eq(1)
                    m.d.comb += self.inc_pool_full.eq(1)
                m.d.sync += turn.eq(0)
                ctl_event()
            with m.Else():
                m.d.sync += turn.eq(0)
                ctl_event()

        with m.If(self.st_calc):
            m.d.sync += [self.st_calc.eq(0), self.st_write.eq(1)]
        with m.If(self.st_write & self.done):
            m.d.sync += [self.st_write.eq(0), self.st_idle.eq(1)]
        return m
