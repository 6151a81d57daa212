"""The grant arbiter's per-slot flip-flops: what the pick needs of every slot at once."""

from amaranth import Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .records import N_CLASSES, engine_writeback, grant_writeback

__all__ = ["SlotFlags"]


class SlotFlags(wiring.Component):
    """Per-slot flags of ``n`` slots, kept in flip-flops (the rest of a slot's state is
    its word in the :class:`~.slot_store.SlotStore`).

    Outputs (registers): ``valid`` (live), ``elig`` (demand > 0 and fewer than
    ``max_inflight`` containers in flight), ``inq`` (still in the current round of its
    class), ``fresh`` (refilled by a new round: its next grant starts from its weight),
    ``exh`` (a grant now would use the slot's last quota: ``fresh ? w1 : qlast``, formed
    from their next values), ``inflnz`` (containers in flight), ``tc_oh[i]`` (the
    slot's class, one-hot), and ``slots_used`` (population count of ``valid``, two
    clocks behind).

    Inputs, applied at the next clock edge, later ones winning:

    * the pick's round bookkeeping: ``new_round`` puts the slots of ``round_slots`` in
      the round (fresh); else a grant entering the grant lane (``picked``,
      ``picked_oh``) leaves its slot in the round unless it used the last quota;
    * ``claim_en``/``claim_oh``: a REQUEST in the engine's E stage makes its slot live;
    * ``g_wb`` (:func:`~.records.grant_writeback`), ``e_wb``
      (:func:`~.records.engine_writeback`): the lanes' write-backs. A REQUEST that
      took a new slot puts it in the round with its weight as quota and sets its class.
    """

    def __init__(self, n, grant_credits, cleft_bits):
        self.n = n
        super().__init__(
            {
                "valid": Out(n),
                "elig": Out(n),
                "inq": Out(n),
                "fresh": Out(n),
                "exh": Out(n),
                "inflnz": Out(n),
                "tc_oh": Out(data.ArrayLayout(N_CLASSES, n)),
                "slots_used": Out(max(1, (n - 1).bit_length()) + 1),
                "new_round": In(1),
                "round_slots": In(n),
                "picked": In(1),
                "picked_oh": In(n),
                "claim_en": In(1),
                "claim_oh": In(n),
                "g_wb": In(grant_writeback(n, grant_credits)),
                "e_wb": In(engine_writeback(n, cleft_bits)),
            }
        )

    def elaborate(self, platform):
        m = Module()
        n = self.n
        valid, elig, inq, fresh = self.valid, self.elig, self.inq, self.fresh
        exh, inflnz, tc_oh = self.exh, self.inflnz, self.tc_oh
        qlast = Signal(n)  # the next grant uses the slot's last quota
        w1 = Signal(n)  # its weight is 1 (as of its last write-back)
        fresh_n, w1_n, qlast_n = Signal(n), Signal(n), Signal(n)
        m.d.comb += [fresh_n.eq(fresh), w1_n.eq(w1), qlast_n.eq(qlast)]

        # Round bookkeeping at the pick: a new round puts every slot of the class in it
        # with its weight as quota (``fresh``: applied at its next grant); a grant with
        # the last quota takes its slot out of the round.
        for i in range(n):
            with m.If(self.new_round & self.round_slots[i]):
                m.d.sync += inq[i].eq(1)
                m.d.comb += fresh_n[i].eq(1)
            with m.Elif(self.picked & self.picked_oh[i]):
                m.d.sync += inq[i].eq(~exh[i])
                m.d.comb += fresh_n[i].eq(0)

        # A REQUEST's slot is live from its first clock in E on (written every clock in
        # E: a write-back of the slot in that clock may clear it).
        for i in range(n):
            with m.If(self.claim_en & self.claim_oh[i]):
                m.d.sync += valid[i].eq(1)

        # Both lanes' write-backs.
        g, e = self.g_wb, self.e_wb
        for i in range(n):
            with m.If(g.en & g.oh[i]):
                m.d.sync += [elig[i].eq(g.elig), inflnz[i].eq(g.infl)]
                m.d.comb += [qlast_n[i].eq(g.qlast), w1_n[i].eq(g.w1)]
            with m.If(e.en & e.oh[i]):
                m.d.sync += [valid[i].eq(e.live), elig[i].eq(e.elig), inflnz[i].eq(e.infl)]
                with m.If(e.req):
                    m.d.sync += tc_oh[i].eq(1 << e.tc)
                    with m.If(~e.hit):
                        m.d.sync += inq[i].eq(1)
                        m.d.comb += [fresh_n[i].eq(0), qlast_n[i].eq(e.q1), w1_n[i].eq(e.q1)]

        m.d.sync += [
            fresh.eq(fresh_n),
            w1.eq(w1_n),
            qlast.eq(qlast_n),
            exh.eq((fresh_n & w1_n) | (~fresh_n & qlast_n)),
        ]

        # Live slots: a population count, registered in two steps.
        groups = [valid[g_ : g_ + 8] for g_ in range(0, n, 8)]
        part = [Signal(range(len(v) + 1), name=f"used_part{k}") for k, v in enumerate(groups)]
        for p_, v in zip(part, groups):
            m.d.sync += p_.eq(sum(v[j] for j in range(len(v))))
        m.d.sync += self.slots_used.eq(sum(part))
        return m
