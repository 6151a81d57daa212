"""The grant arbiter's grant lane: read-modify-write of each granted slot."""

from amaranth import Module, Mux, Signal, signed
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .bits import and_or
from .occupancy import LaneStages
from .records import GRANT_STAGES, SEQ_BITS, grant_layout, grant_writeback
from .slot_store import SlotReadSignature, SlotWriteSignature

__all__ = ["GrantLane"]


class GrantLane(wiring.Component):
    """``GRANT_STAGES`` = 6 clocks from a decision to the write-back of its slot.

    g1 address (``fire``, ``sel`` and ``idx`` of the pick, registered); g2 the slot's
    word is read (``rd``; whether the grant uses the last quota, ``exh``, and whether
    the slot is ``fresh``, taken from the flags); g3 credit flags, the quota it starts
    from (the weight of the slot's tenant, looked up through ``tenant`` ->
    ``weight``, ``weight_is_1``), and the GRANT leaves (``m_grant``; its ``seq`` is one
    past the slot's last; the FIFO behind it never refuses, ``m_grant.ready`` is not
    looked at); g4 credit split (repaid debt vs backlog served; a grant whose credit
    only repays debt brings no container); g5 the new word; g6 write-back (``wr``,
    bank G; ``wb``: the slot's new flags and the credit released).

    ``stages`` shows which slot each stage holds (for the masks). ``chk_*`` show the
    slot state a grant reads in g3 (for the formal checks; ``valid``: live slots).
    """

    def __init__(self, n, grant_credits, max_inflight, cleft_bits, word_layout):
        self.n, self.grant_credits, self.max_inflight = n, grant_credits, max_inflight
        self.cw, self.word_layout = cleft_bits, word_layout
        self.slot_bits = max(1, (n - 1).bit_length())
        super().__init__(
            {
                "fire": In(1),
                "sel": In(n),
                "idx": In(self.slot_bits),
                "exh": In(n),
                "fresh": In(n),
                "valid": In(n),
                "stages": Out(LaneStages(n, GRANT_STAGES)),
                "rd": Out(SlotReadSignature(n, word_layout)),
                "wr": Out(SlotWriteSignature(n, word_layout)),
                "tenant": Out(12),
                "weight": In(8),
                "weight_is_1": In(1),
                "m_grant": Out(stream.Signature(grant_layout(self.slot_bits))),
                "wb": Out(grant_writeback(n, grant_credits)),
                "chk_grant": Out(1),
                "chk_live": Out(1),
                "chk_demand": Out(16),
                "chk_inflight": Out(range(max_inflight + 1)),
            }
        )

    def elaborate(self, platform):
        m = Module()
        G, K, cw, slot_l = self.grant_credits, self.max_inflight, self.cw, self.word_layout
        SB, PG = self.slot_bits, GRANT_STAGES
        gv, goh = self.stages.v, self.stages.oh
        m.d.sync += [gv[0].eq(self.fire), goh[0].eq(self.sel)]
        for k in range(1, PG):
            m.d.sync += [gv[k].eq(gv[k - 1]), goh[k].eq(goh[k - 1])]
        gidx = [None] + [Signal(SB, name=f"g{k}_idx") for k in range(1, PG + 1)]
        m.d.sync += gidx[1].eq(self.idx)
        for k in range(2, PG + 1):
            m.d.sync += gidx[k].eq(gidx[k - 1])
        m.d.comb += [self.rd.addr.eq(gidx[1]), self.rd.oh.eq(goh[0])]
        g_exh2, g_fresh2 = Signal(), Signal()
        m.d.sync += [g_exh2.eq(and_or(goh[0], self.exh)), g_fresh2.eq(and_or(goh[0], self.fresh))]
        gr3 = Signal(slot_l)
        g_exh3, g_fresh3 = Signal(), Signal()
        m.d.sync += [gr3.eq(self.rd.data), g_exh3.eq(g_exh2), g_fresh3.eq(g_fresh2)]

        # g3. A grant with the last quota refills the slot for its next round.
        wt_g = self.weight
        m.d.comb += self.tenant.eq(gr3.tenant)
        g_nonneg4, g_ltmg4 = Signal(), Signal()
        g_plus4 = Signal(signed(cw))
        gr4 = Signal(slot_l)
        # gr4 carries the word with its new cleft. Quota: g3 weight and what is left,
        # g4 the quota this grant starts from, g5 the quota after it.
        wt4 = Signal(8)
        g_exh4, g_fresh4 = Signal(), Signal()
        m.d.sync += [
            g_nonneg4.eq(gr3.cleft >= 0),
            g_ltmg4.eq(gr3.cleft < -G),
            gr4.eq(gr3),
            gr4.cleft.eq(gr3.cleft + G),
            wt4.eq(wt_g),
            g_exh4.eq(g_exh3),
            g_fresh4.eq(g_fresh3),
        ]
        wt5 = Signal(8)
        g_exh5 = Signal()
        m.d.sync += [wt5.eq(wt4), g_exh5.eq(g_exh4)]
        g_w1 = [None] * 7
        g_w1[4] = Signal(name="g4_w1")
        m.d.sync += g_w1[4].eq(self.weight_is_1)
        for k in (5, 6):
            g_w1[k] = Signal(name=f"g{k}_w1")
            m.d.sync += g_w1[k].eq(g_w1[k - 1])
        m.d.comb += g_plus4.eq(gr4.cleft)
        # The GRANT (fields as read; its seq is one past the last GRANT's).
        gout = self.m_grant.payload
        g_seq3 = Signal(SEQ_BITS)
        m.d.comb += g_seq3.eq(gr3.gseq + 1)
        m.d.comb += [
            gout.slot.eq(gidx[3]),
            gout.src_node.eq(gr3.src_node),
            gout.dgsq.eq(gr3.dgsq),
            gout.tc.eq(gr3.tc),
            gout.tenant.eq(gr3.tenant),
            gout.seq.eq(g_seq3),
            gout.credit.eq(G),
            self.m_grant.valid.eq(gv[2]),
        ]
        m.d.comb += [
            self.chk_grant.eq(gv[2]),
            self.chk_live.eq(and_or(goh[2], self.valid)),
            self.chk_demand.eq(gr3.demand),
            self.chk_inflight.eq(gr3.inflight),
        ]

        # g4. Credit that repays overrun debt serves no backlog. Every grant is expected
        # to bring a container until the source reports it void (REQUEST ``voids``):
        # only the source knows whether its debt or an earlier overrun took the credit.
        g_eff5 = Signal(range(G + 1))
        g_repay5 = Signal(range(G + 1))
        gr5 = Signal(slot_l)
        m.d.sync += [
            g_eff5.eq(Mux(g_nonneg4, G, Mux(g_ltmg4, 0, g_plus4))),
            g_repay5.eq(Mux(g_nonneg4, 0, Mux(g_ltmg4, G, G - g_plus4))),
            gr5.eq(gr4),
            gr5.quota.eq(Mux(g_fresh4, wt4, gr4.quota)),  # the quota it starts from
        ]

        # g5. The new word.
        gw6 = Signal(slot_l)
        g_rel6 = Signal(range(G + 1))
        g_idle6 = Signal()  # a grant from idle: the lease starts
        g_elig6, g_infl6 = Signal(), Signal()
        m.d.sync += [
            gw6.eq(gr5),
            gw6.demand.eq(Mux(gr5.demand > g_eff5, gr5.demand - g_eff5, 0)),
            gw6.inflight.eq(gr5.inflight + 1),
            # (the new word's flags, formed with it)
            g_elig6.eq((gr5.demand > g_eff5) & (gr5.inflight + 1 < K)),
            g_infl6.eq(1),
            gw6.gseq.eq(gr5.gseq + 1),
            gw6.quota.eq(Mux(g_exh5, wt5, gr5.quota - 1)),
            g_rel6.eq(g_repay5),
            g_idle6.eq(gr5.inflight == 0),
        ]

        # g6. Write-back.
        g_wb = gv[PG - 1]
        m.d.comb += [
            self.wr.en.eq(g_wb),
            self.wr.addr.eq(gidx[PG]),
            self.wr.oh.eq(goh[PG - 1]),
            self.wr.data.eq(gw6),
        ]
        wb = self.wb
        m.d.comb += [
            wb.en.eq(g_wb),
            wb.oh.eq(goh[PG - 1]),
            wb.elig.eq(g_elig6),
            wb.infl.eq(g_infl6),
            wb.qlast.eq(gw6.quota == 1),
            wb.w1.eq(g_w1[6]),
            wb.idle.eq(g_idle6),
            wb.release.eq(g_rel6),
        ]
        return m
