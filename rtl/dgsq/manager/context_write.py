"""ContextWrite: the DGSQ manager's WRITE stage, its decisions and outputs."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ... import interfaces
from ...header.gse_header import GSEType
from .layouts import CREDIT_BITS, LOG_CREDIT_UNIT, calc_layout, context_layout, event_layout, operand_layout

__all__ = ["ContextWrite", "EFFECTS"]

#: What a WRITE does to the flag vectors, the REQUEST FIFO and the counters, applied in
#: the clock after it (``fx_<name>`` ports).
EFFECTS = ("set_pend", "clr_pend", "free", "refresh", "grant", "gap", "unused", "unknown")


class ContextWrite(wiring.Component):
    """The event's outcome: the context's next word, the outputs, the effects.

    Interface: ``en`` (the engine's WRITE clocks), the event (``kind``, context ``q``,
    ``fresh``, operands ``op``, ``pkt_bytes``), the context as read ``c`` and CALC's
    ``res``, ``now`` and ``node_id`` in. Out: the manager's ``m_pkt`` (PKT: ``queue``
    = ``q``, ``tenant`` = the low ``tenant_bits`` of the packet's tenant, ``bytes``),
    ``m_rel`` (GRANT or REL with credit to release: ``queue``, ``credit`` in bytes,
    ``dst_node`` of the context's key) and ``m_req`` (REQ of a live context without a
    release out); ``done`` (WRITE completes this clock: its output, if any, is taken);
    ``w_en``/``w_data`` (the write-back of the context word at ``q``); ``fx_<name>``
    for each of :data:`EFFECTS` (registered: one clock after the WRITE that decided
    it); ``fx_voids``, the void GRANTs it decided (registered likewise);
    ``inc_releases``/``inc_requests`` for the counters (the output's transfer).

    Timing: decisions are combinational from registers only (``res``, ``c``, ``op``);
    an output is valid from the first WRITE clock and held until taken. The payloads
    of all three outputs are driven in every clock (they are the event's registered
    fields; meaningful while valid).
    """

    def __init__(
        self, n_ctx, refresh_ticks, idle_ticks, ttl, tenant_bits, low_water=None, container_units=64
    ):
        self.n_ctx = n_ctx
        self.low_water, self.container_units = low_water, container_units
        self.tenant_bits = tenant_bits
        self.refresh_ticks = refresh_ticks
        self.idle_ticks = idle_ticks
        self.ttl = ttl
        qb = max(1, (n_ctx - 1).bit_length())
        members = {
            "en": In(1),
            "kind": In(event_layout()),
            "q": In(qb),
            "fresh": In(1),
            "op": In(operand_layout()),
            "pkt_bytes": In(16),
            "c": In(context_layout()),
            "res": In(calc_layout(n_ctx)),
            "now": In(16),
            "node_id": In(16),
            "m_pkt": Out(interfaces.queued_packet(qb, tenant_bits)),
            "m_req": Out(interfaces.control_header()),
            "m_rel": Out(interfaces.container_release(qb, CREDIT_BITS)),
            "done": Out(1),
            "w_en": Out(1),
            "w_data": Out(context_layout()),
            "inc_releases": Out(1),
            "inc_requests": Out(1),
            "fx_voids": Out(5),
        }
        members.update({f"fx_{k}": Out(1) for k in EFFECTS})
        super().__init__(members)

    def _view_ran_low(self, u):
        """GRANT: the view it leaves is below the low water and the backlog (``u``
        units) exceeds it by a container, so the REQUEST the packets' rule held back
        is due (lean REQUESTs, ``low_water`` set)."""
        c, res = self.c, self.res
        v_after = Mux(res.g_vdiff[16], 0, res.g_vdiff[:16])
        return (v_after < self.low_water) & c.nz & (u >= v_after + self.container_units)

    def _after_report(self, m):
        """REL: the balance after the report (``r_next``, and whether it is > 0) and the
        next container's credit ``r_rel``. One GRANT, one container: the next container
        takes at most one container's credit of what is left (``r_big``: more is left);
        the rest (GRANTs that came meanwhile) stays in pg for the containers after it
        (the reorder slot and the arbiter's in-flight count are per container)."""
        c, res = self.c, self.res
        r_next = Signal(signed(26))
        r_next_pos = Signal()
        r_big = Signal()
        r_rel = Signal(signed(26))
        m.d.comb += [
            r_next.eq(Mux(res.r_neg, res.r_a, c.pg)),
            r_next_pos.eq(res.r_next_pos),
            r_big.eq(res.r_big),
            r_rel.eq(Mux(r_big, self.container_units << LOG_CREDIT_UNIT, r_next)),
        ]
        return r_next, r_next_pos, r_big, r_rel

    def _payloads(self, m, nxt, r_rel, u):
        """The three outputs' payloads, driven every clock from the event's registered
        fields (meaningful while valid); ``u`` is the REQUEST's backlog (credit units)."""
        c, res, kind = self.c, self.res, self.kind
        r = self.m_req.payload
        m.d.comb += [
            self.m_pkt.payload.queue.eq(self.q),
            # The packet's tenant is the context word's (a hit matched the whole key; a
            # new context takes the packet's key in this WRITE).
            self.m_pkt.payload.tenant.eq(nxt.tenant[: self.tenant_bits]),
            self.m_pkt.payload.bytes.eq(self.pkt_bytes),
            self.m_rel.payload.queue.eq(self.q),
            self.m_rel.payload.credit.eq(Mux(kind.grant, res.g_credit, r_rel)),
            self.m_rel.payload.dst_node.eq(c.dst_node),
            r.type.eq(GSEType.REQUEST.value),
            r.flags.eq(0),
            r.tc.eq(c.tc),
            r.tenant.eq(c.tenant),
            r.src_node.eq(self.node_id),
            r.dst_node.eq(c.dst_node),
            r.port.eq(c.port),
            r.ttl.eq(self.ttl),
            r.seq.eq(c.ack),
            r.next_type.eq(c.voids),
            r.len.eq(u),
            r.dgsq.eq(self.q),
        ]

    def elaborate(self, platform):
        m = Module()
        LCU = LOG_CREDIT_UNIT
        c, res, op, kind, now = self.c, self.res, self.op, self.kind, self.now
        fresh, done = self.fresh, self.done
        valid_q, pend_q = res.valid_q, res.pend_q
        nxt = self.w_data
        m.d.comb += nxt.eq(c)
        write = Signal()
        fx = {k: Signal(name=f"fx_{k}_d") for k in EFFECTS}  # decided (comb)
        set_pend, clr_pend = fx["set_pend"], fx["clr_pend"]
        r_next, r_next_pos, r_big, r_rel = self._after_report(m)
        voids = Signal(5)  # void GRANTs this event decided (a REQUEST reports them)
        voids_nz = Signal()  # voids != 0, without the adder
        g_ok = res.g_ok
        # REQ: any live context, also while a release is out (its backlog figure leaves
        # out the credit granted and not yet reported, so nothing is counted twice); a
        # REQUEST that waited for the release to end starved a queue kept busy by its
        # GRANTs until they ran out
        emit = valid_q
        rel_out = Signal()  # m_rel carries a release request
        u = Signal(16)
        m.d.comb += u.eq(Mux(res.u_sum[19], 0, Mux(res.u_sum[16:19].any(), 0xFFFF, res.u_sum[:16])))

        with m.If(self.en):
            # PKT
            with m.If(kind.pkt):
                m.d.comb += [
                    nxt.backlog.eq(Mux(res.p_nb[24], 0xFFFFFF, res.p_nb[:24])),
                    nxt.nz.eq(c.nz | op.bytes_nz),
                    nxt.ts_act.eq(now),
                    self.m_pkt.valid.eq(1),
                    done.eq(self.m_pkt.ready),
                    write.eq(1),
                ]
                # units(backlog - granted) >= view + container
                #   <=>  backlog > (view + CU - 1) * 64 + granted
                grow_by = res.p_thr_ok & res.p_gt
                if self.low_water is not None:
                    # lean REQUESTs: only while the arbiter's view is below the low water
                    grow_by &= c.view < self.low_water
                grow = ~c.nz | grow_by
                m.d.comb += set_pend.eq(grow | fresh)
                with m.If(fresh):
                    # A new key: what was read is a former context's; start from zero.
                    key = op.pkt_key
                    m.d.comb += [
                        nxt.eq(0),
                        nxt.backlog.eq(Cat(C(0, LCU), op.pkt_cu)),
                        nxt.nz.eq(op.bytes_nz),
                        nxt.ts_act.eq(now),
                        nxt.ts_req.eq(now),
                        nxt.ts_grant.eq(now),
                        nxt.dst_node.eq(key.dst_node),
                        nxt.port.eq(key.port),
                        nxt.tc.eq(key.tc),
                        nxt.tenant.eq(key.tenant),
                    ]
            # GRANT
            with m.If(kind.grant):
                # The write data does not wait for the key check (no write without it).
                rel_g = res.g_rel  # release the credit: g_pos & c.nz & ~c.rel_pending
                unused = res.g_pos & ~c.nz & ~c.rel_pending  # queue ran dry: drop it
                m.d.comb += [
                    # the last GRANT in seq order (one overtaken by a later one, when a
                    # failed uplink moved a queue's control frames, leaves it)
                    nxt.ack.eq(Mux(c.have_ack & res.g_older, c.ack, op.g_seq)),
                    nxt.have_ack.eq(1),
                    nxt.ts_grant.eq(now),
                    nxt.view.eq(Mux(res.g_vdiff[16], 0, res.g_vdiff[:16])),
                    nxt.rel_pending.eq(c.rel_pending | rel_g),
                ]
                with m.If(c.rel_pending):
                    # One GRANT, one container: this credit waits for the release out.
                    m.d.comb += [
                        nxt.pg.eq(res.g_pg),
                        nxt.bal_pg.eq(res.g_balpg),
                        nxt.npg.eq(Mux(c.npg == 15, 15, c.npg + 1)),
                    ]
                with m.Else():
                    m.d.comb += [
                        nxt.balance.eq(Mux(unused, 0, res.g_credit)),
                        nxt.bal_pg.eq(Mux(unused, 0, res.g_credit)),
                        nxt.pg.eq(0),
                    ]
                if self.low_water is not None:
                    with m.If(g_ok & self._view_ran_low(u)):
                        m.d.comb += set_pend.eq(1)
                # No release out and no container for it (the queue ran dry, or the
                # credit only repays debt): a void GRANT, reported by a REQUEST.
                void_g = ~c.rel_pending & ~rel_g
                m.d.comb += nxt.voids.eq(Mux(void_g, res.v_inc, c.voids))
                with m.If(g_ok):
                    m.d.comb += [
                        voids.eq(void_g),
                        voids_nz.eq(void_g),
                        write.eq(1),
                        rel_out.eq(rel_g),
                        fx["unused"].eq(unused),
                        fx["grant"].eq(1),
                        fx["gap"].eq(c.have_ack & (op.g_seq_m1 != c.ack)),
                    ]
                with m.Else():
                    m.d.comb += fx["unknown"].eq(1)
            # REL
            with m.If(kind.rel):
                # The container is done: debt carries over, credit it left unused is
                # dropped (the arbiter releases it at the container's last packet); the
                # credit of GRANTs that came meanwhile starts the next container.
                m.d.comb += [
                    nxt.backlog.eq(Mux(res.r_gt, res.r_diff, 0)),
                    nxt.nz.eq(res.r_gt),
                    nxt.balance.eq(r_rel),
                    nxt.bal_pg.eq(r_next),
                    nxt.pg.eq(Mux(r_big, Mux(res.r_neg, res.r_a_rem, res.pg_rem), 0)),
                    nxt.rel_pending.eq(0),
                    nxt.ts_act.eq(now),
                    write.eq(1),
                ]
                m.d.comb += nxt.rel_pending.eq(res.rel_next)
                # The GRANTs waiting in pg: the next container takes one (all of them
                # when it takes all that is left), the others are void; with no next
                # container all are. A release that sent nothing was void too.
                rel_next = res.rel_next  # r_next_pos & r_gt
                m.d.comb += [
                    nxt.npg.eq(Mux(rel_next & r_big, res.npg_m1, 0)),
                    voids.eq(Mux(rel_next, Mux(r_big, 0, res.npg_m1), c.npg) + res.r_zero),
                    voids_nz.eq(res.r_zero | Mux(rel_next, ~r_big & res.npg_m1_nz, res.npg_nz)),
                    nxt.voids.eq(Mux(rel_next, Mux(r_big, res.v_big, res.v_all), res.v_none)),
                ]
                with m.If(rel_next):
                    m.d.comb += rel_out.eq(1)
                with m.Else():
                    with m.If(r_next_pos):
                        m.d.comb += [nxt.balance.eq(0), nxt.bal_pg.eq(0), nxt.pg.eq(0)]
            with m.If(rel_out):
                m.d.comb += [
                    self.m_rel.valid.eq(1),
                    done.eq(self.m_rel.ready),
                    self.inc_releases.eq(self.m_rel.ready),
                ]
            with m.Elif(kind.grant | kind.rel):
                m.d.comb += done.eq(1)
            # REQ
            with m.If(kind.req):
                with m.If(emit):
                    m.d.comb += [
                        self.m_req.valid.eq(1),
                        nxt.view.eq(u),
                        nxt.ts_req.eq(now),
                        done.eq(self.m_req.ready),
                        write.eq(1),
                        clr_pend.eq(1),
                        self.inc_requests.eq(self.m_req.ready),
                    ]
                with m.Else():
                    m.d.comb += [done.eq(1), clr_pend.eq(1)]
            # SWEEP
            with m.If(kind.sweep):
                m.d.comb += done.eq(1)
                with m.If(valid_q):
                    with m.If(
                        c.nz
                        & ~c.rel_pending
                        & ~pend_q
                        & (res.e_req >= self.refresh_ticks)
                        & (res.e_grant >= self.refresh_ticks)
                    ):
                        m.d.comb += [set_pend.eq(1), fx["refresh"].eq(1)]
                    with m.If(~c.nz & ~c.rel_pending & (res.e_act >= self.idle_ticks)):
                        # A REQUEST still due stays in the FIFO; it finds the context
                        # free (dropped) or reused (then due anyway: a new queue).
                        m.d.comb += fx["free"].eq(1)
                    # Keep the coarse times from aging past the 16-bit wrap.
                    m.d.comb += write.eq(1)
                    with m.If(res.e_req[15]):
                        m.d.comb += nxt.ts_req.eq(now - 2**15)
                    with m.If(res.e_grant[15]):
                        m.d.comb += nxt.ts_grant.eq(now - 2**15)
                    with m.If(res.e_act[15]):
                        m.d.comb += nxt.ts_act.eq(now - 2**15)
        # Effects are decided in WRITE and applied one clock later from registers (q and
        # qoh still hold then: they change at the end of the next ACCEPT and CALC; CALC,
        # the first to look, comes after).
        with m.If(voids_nz):
            m.d.comb += set_pend.eq(1)
        for k in EFFECTS:
            cond = fx[k] & ~pend_q if k == "set_pend" else fx[k]
            m.d.sync += getattr(self, f"fx_{k}").eq(self.en & done & cond)
        m.d.sync += self.fx_voids.eq(Mux(self.en & done & write, voids, 0))
        m.d.comb += self.w_en.eq(self.en & write & done)

        self._payloads(m, nxt, r_rel, u)
        return m
