"""The grant arbiter's pick: one grant decision per clock from per-slot flags."""

from amaranth import C, Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .bits import encode, rr_first
from .records import N_CLASSES

__all__ = ["Pick"]

NH = 2  # the pick's halves: even and odd slots


class Pick(wiring.Component):
    """Strict priority across classes, round-robin in rounds within the top class.

    Inputs (from :class:`~.slot_flags.SlotFlags`): ``valid``, ``elig``, ``inq``,
    ``exh``, ``tc_oh``; ``mask_pre`` (slots with an operation in flight or targeted by
    the engine, :class:`~.occupancy.LaneOccupancy`); ``dec_ok`` and ``room_ok`` (a
    grant fits the egress room and the GRANT FIFO, :class:`~.credit.CreditGate`).

    Outputs (combinational, from registers): ``fire`` (a grant is decided this clock),
    ``sel`` (its slot, one-hot), ``idx`` (its index, encoded from the candidates),
    ``new_round`` (the grant starts a new round of the top class, whose slots are
    ``round_slots``); ``class_any`` (some class has an eligible slot, registered);
    counters ``stat_grants`` and ``stat_room_stall`` (a candidate waited for room).

    Stages: A registers which classes have an eligible slot, and a clock later the top
    class (one-hot; a change of class takes effect a clock late); B registers the top
    class's eligible slots; C1 registers per half the next slot in round-robin order
    (thermometer pointer, one carry chain) among the unmasked eligible slots still in
    the round (``c_q``) and among all of them (``c_a``); C2 decides from registers only:
    a half that did not grant last clock grants its candidate, or starts a new round.
    """

    def __init__(self, n):
        self.n = n
        self.slot_bits = max(1, (n - 1).bit_length())
        super().__init__(
            {
                "valid": In(n),
                "elig": In(n),
                "inq": In(n),
                "exh": In(n),
                "tc_oh": In(data.ArrayLayout(N_CLASSES, n)),
                "mask_pre": In(n),
                "dec_ok": In(1),
                "room_ok": In(1),
                "fire": Out(1),
                "sel": Out(n),
                "idx": Out(self.slot_bits),
                "new_round": Out(1),
                "round_slots": Out(n),
                "class_any": Out(1),
                "stat_grants": Out(32),
                "stat_room_stall": Out(32),
            }
        )

    def elaborate(self, platform):
        m = Module()
        n, SB = self.n, self.slot_bits
        valid, elig, inq, exh, tc_oh = self.valid, self.elig, self.inq, self.exh, self.tc_oh
        col = [Cat(tc_oh[i][c] for i in range(n)) for c in range(N_CLASSES)]
        # The pick's mask: one register holding last clock's grant and every lane stage
        # (next clock one stage on, or written back: the pick's view of it is a clock
        # late) and the engine's target in B or E. ``mask_np`` also holds the slots not
        # above the round-robin pointer. (So each per-slot input of C1's carry chains is
        # one LUT of three flip-flops.)
        mask, mask_np = Signal(n), Signal(n, init=(1 << n) - 1)
        g_d = Signal(n)  # last clock's grant (one-hot)

        # ---- Stage A: which classes have an eligible slot (registered) ---------------
        live_elig = Signal(n)
        m.d.comb += live_elig.eq(valid & elig)
        a_any = Signal(N_CLASSES)
        m.d.sync += a_any.eq(Cat((live_elig & col[c]).any() for c in range(N_CLASSES)))
        m.d.comb += self.class_any.eq(a_any.any())

        # ---- Stage B: the top class and its eligible slots (registered) ---------------
        top_r = Signal(N_CLASSES)
        m.d.sync += top_r.eq(0)
        for c in range(N_CLASSES):
            with m.If(a_any[c]):
                m.d.sync += top_r.eq(1 << c)
        b_valid = Signal()
        b_ce = Signal(n)  # eligible slots of the top class
        b_col = self.round_slots  # all slots of the top class
        in_top = Signal(n)
        m.d.comb += in_top.eq(Cat((tc_oh[i] & top_r).any() for i in range(n)))
        m.d.sync += [b_valid.eq(a_any.any()), b_col.eq(in_top), b_ce.eq(live_elig & in_top)]

        # ---- Stage C: the pick, in two halves (even / odd slots) -----------------------
        # C1 (one clock ahead) registers each half's candidates; C2 decides from
        # registers only: a half may grant when it did not grant last clock (its
        # candidates do not know that grant yet), so the loop from a decision back to
        # the state its half picks from is two clocks long.
        halves = [list(range(h, n, NH)) for h in range(NH)]

        def half(v, h):
            return Cat(v[i] for i in halves[h])

        ptr = [Signal(len(halves[h]), name=f"ptr{h}") for h in range(NH)]  # thermometer
        c_q = [Signal(len(halves[h]), name=f"c_q{h}") for h in range(NH)]
        c_a = [Signal(len(halves[h]), name=f"c_a{h}") for h in range(NH)]
        cq_any, ca_any = Signal(NH), Signal(NH)
        q_m, a_m = Signal(n), Signal(n)
        q_p, a_p = Signal(n), Signal(n)
        m.d.comb += [
            q_m.eq(b_ce & inq & ~mask),
            a_m.eq(b_ce & ~mask),
            q_p.eq(b_ce & inq & ~mask_np),
            a_p.eq(b_ce & ~mask_np),
        ]
        for h in range(NH):
            qm_h, am_h = half(q_m, h), half(a_m, h)
            qh, ah = half(q_p, h), half(a_p, h)
            # Round-robin as one carry chain over (above the pointer, all): the first set
            # bit of the doubled vector, folded.
            m.d.sync += [
                c_q[h].eq(rr_first(qh, qm_h)),
                c_a[h].eq(rr_first(ah, am_h)),
                cq_any[h].eq(qm_h.any()),
                ca_any[h].eq(am_h.any()),
            ]
        # Whether the class still has eligible slots in the round (masked or not). A grant
        # with its last quota leaves the round a clock after it (from the grant lane's
        # stage 1): until then ``g1_exh`` discounts it. This clock's grant is one of the
        # registered candidates: the OR is formed for each of them (and for none) from
        # registers and registered as it is; the decision selects one after the
        # register (``useq_d``, ``last_h``), so no 64-bit OR is behind the decision.
        g1_exh = Signal(n)  # registered at the pick: sel & exh
        any_q = Signal()  # (selected from the registered ORs, below)
        q_left = Signal(n)
        m.d.comb += q_left.eq(b_ce & inq & ~g1_exh)

        def spread(v, h):
            out = Signal(n, name=f"spread{h}_{v.name}")
            m.d.comb += [out[i].eq(v[j]) for j, i in enumerate(halves[h])]
            return out

        q_left_if = {}  # (useq, half) -> any in the round after that grant
        for h in range(NH):
            for u, c in ((1, c_q[h]), (0, c_a[h])):
                q_left_if[u, h] = (q_left & ~(spread(c, h) & exh)).any()
        o_if = {k: Signal(name=f"o_if{k[0]}{k[1]}") for k in q_left_if}
        o_none = Signal()
        m.d.sync += [o_if[k].eq(v) for k, v in q_left_if.items()]
        m.d.sync += o_none.eq(q_left.any())
        nr_d = Signal()  # a new round started last clock: all of the class is in it
        useq, useq_d = Signal(), Signal()
        last_h = Signal(NH)  # the half that granted last clock
        m.d.comb += any_q.eq(
            Mux(
                useq_d,
                Mux(last_h[0], o_if[1, 0], Mux(last_h[1], o_if[1, 1], o_none)),
                Mux(last_h[0], o_if[0, 0], Mux(last_h[1], o_if[0, 1], o_none)),
            )
        )
        m.d.comb += useq.eq(any_q & ~nr_d)
        pref = Signal()  # the half preferred when both may grant
        # What each half would do for either choice (in-round or all) is formed from
        # registers; the choice (``useq``) selects late.
        has, has_q, has_a = Signal(NH), Signal(NH), Signal(NH)
        m.d.comb += [has_q.eq(cq_any & ~last_h), has_a.eq(ca_any & ~last_h), has.eq(Mux(useq, has_q, has_a))]
        cand_any = Signal()
        m.d.comb += cand_any.eq(has.any())
        sel = self.sel
        go, go_q, go_a = Signal(NH), Signal(NH), Signal(NH)
        dec_ok = self.dec_ok
        # A half grants when it may and, if both may, when it is preferred.
        for g_, hv in ((go_q, has_q), (go_a, has_a)):
            m.d.comb += [
                g_[0].eq(dec_ok & hv[0] & (~hv[1] | ~pref)),
                g_[1].eq(dec_ok & hv[1] & (~hv[0] | pref)),
            ]
        m.d.comb += [go.eq(Mux(useq, go_q, go_a)), self.fire.eq(go.any())]
        for h in range(NH):
            for j, i in enumerate(halves[h]):
                m.d.comb += sel[i].eq(Mux(useq, c_q[h][j] & go_q[h], c_a[h][j] & go_a[h]))
        # The slot index (registered by the grant lane with the decision) is encoded from
        # the candidates, not from the decision, so the block-RAM read address comes
        # from a register.
        idx_sel = [Mux(useq, encode(c_q[h], SB - 1), encode(c_a[h], SB - 1)) for h in range(NH)]
        m.d.comb += self.idx.eq(Mux(go[1], Cat(C(1, 1), idx_sel[1]), Cat(C(0, 1), idx_sel[0])))
        new_round = self.new_round
        m.d.comb += new_round.eq(~any_q & ~nr_d & go_a.any())  # (= fire & ~useq & ~nr_d)
        m.d.sync += [g1_exh.eq(sel & exh), nr_d.eq(new_round), last_h.eq(go), useq_d.eq(useq)]
        with m.If(self.fire):
            m.d.sync += pref.eq(go[0])
        m.d.sync += g_d.eq(sel)
        ptr_n = [Signal.like(ptr[h], name=f"ptr_n{h}") for h in range(NH)]
        for h in range(NH):
            gd_h = half(g_d, h)
            # Thermometer of the half's slots above its last grant (the pick is two
            # clocks behind: harmless, the granted slot is masked).
            m.d.comb += ptr_n[h].eq(Mux(gd_h.any(), ~(gd_h | (gd_h - 1)[: len(gd_h)]), ptr[h]))
            m.d.sync += ptr[h].eq(ptr_n[h])
        mask_n = Signal(n)
        m.d.comb += mask_n.eq(self.mask_pre | sel)
        # (``mask_np`` takes the pointer as it is, a clock behind ``ptr_n``: harmless, the
        # slot of the grant that moves it is masked.)
        m.d.sync += [mask.eq(mask_n), mask_np.eq(mask_n | ~Cat(ptr[i % NH][i // NH] for i in range(n)))]
        with m.If(b_valid & cand_any & ~self.room_ok):
            m.d.sync += self.stat_room_stall.eq(self.stat_room_stall + 1)
        with m.If(self.fire):
            m.d.sync += self.stat_grants.eq(self.stat_grants + 1)
        return m
