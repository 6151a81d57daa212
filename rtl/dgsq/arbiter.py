"""GrantArbiter: the DGSQ grant scheduler of one egress port (brief section 4)."""
from amaranth import *
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from ..catalog import BlockSpec
from ..header.gse_header import CONTAINER_BYTES, CREDIT_UNIT_BYTES
from ..lib.sram import VOQRam

__all__ = ["GrantArbiter", "request_layout", "arrival_layout", "grant_layout", "cfg_layout",
           "N_CLASSES"]

N_CLASSES = 8          # traffic classes 0..7, 7 highest
SEQ_BITS = 16
DEBT_MAX = 511         # credit units an overrun may leave as debt (clamped)

# Operations of the slot-update pipeline.
OP_REQ, OP_ARR, OP_EXP, OP_GNT = range(4)
#: Stages of the two slot-update lanes, entry to write-back (see the class docstring).
GRANT_STAGES = 6
ENGINE_STAGES = 8


def request_layout():
    """A decoded REQUEST: who asks (``src_node``, ``dgsq``), for what class and tenant,
    the source's backlog in credit units, and ``seq``: the sequence number of the last
    GRANT that queue received (the source's acknowledgement, see docs/dgsq.md)."""
    return data.StructLayout({"src_node": 16, "dgsq": 16, "tc": 3, "tenant": 12,
                              "backlog": 16, "seq": SEQ_BITS})


def arrival_layout():
    """Data of a granted container that arrived at the egress: ``credits`` credit units
    from queue (``src_node``, ``dgsq``); ``last`` marks the container's last packet."""
    return data.StructLayout({"src_node": 16, "dgsq": 16, "credits": 16, "last": 1})


def grant_layout(slot_bits):
    return data.StructLayout({"slot": slot_bits, "src_node": 16, "dgsq": 16, "tc": 3,
                              "tenant": 12, "credit": 16, "seq": SEQ_BITS})


def cfg_layout(tid_bits):
    return data.StructLayout({"tenant": tid_bits, "weight": 8})


def slot_layout(inflight_bits, cleft_bits):
    """One word of the slot memory: a requester's key, class, tenant and credit state."""
    return data.StructLayout({
        "src_node": 16, "dgsq": 16, "tc": 3, "tenant": 12,
        "demand": 16,                    # credit units still to grant
        "inflight": inflight_bits,       # containers granted and not yet arrived
        "cleft": signed(cleft_bits),     # credit granted minus arrived (negative: debt)
        "gseq": SEQ_BITS,                # seq of the last GRANT sent
        "quota": 8,                      # grants left in this round (when in the round)
        "rc": 2,                         # grants settled (container done, or debt only), not acknowledged
    })


def _onehot_first(x):
    # Lowest set bit of x as a one-hot vector (a carry chain on ECP5).
    return x & (-x).as_unsigned()[:len(x)]


def _rr_first(above, all_):
    """One-hot of the first set bit of ``above``, else of ``all_`` (``above`` is a
    subset of ``all_``): one carry chain over both, folded."""
    w = len(all_)
    f = _onehot_first(Cat(above, all_))
    return f[:w] | f[w:]


def _and_or(onehot, bits):
    """``bits[i]`` for the one set bit of ``onehot`` (0 when none)."""
    return (onehot & bits).any()


def _encode(onehot, bits):
    return Cat(Cat(onehot[i] for i in range(len(onehot)) if (i >> b) & 1).any()
               for b in range(bits))


def _pos(x):
    return Mux(x > 0, x, 0)


class GrantArbiter(wiring.Component):
    """Grant arbiter of one egress port: one grant decision per clock.

    Requesters occupy ``n_req`` slots allocated on demand: a REQUEST from a new
    (``src_node``, ``dgsq``) takes the lowest free slot (a CAM over the slot keys); a
    slot is freed when it has neither demand nor a container in flight. Each grant
    is one container of ``grant_credits`` credit units, issued only while
    ``outstanding + grant_credits <= min(egress_room, buffer_credits)``, where
    ``outstanding`` is credit granted and not yet arrived: nothing granted can
    overflow the egress buffer. Strict priority across traffic classes (7 highest);
    within a class weighted round-robin: a slot gets ``weight[tenant % n_tenants]``
    grants per round (per-requester weights set per tenant, run-time writable).

    Parameters: ``n_req`` (slots, default 64), ``buffer_credits`` (egress buffer in
    credit units), ``grant_credits`` (container, default 64 = 4096 B),
    ``max_inflight`` (containers in flight per slot), ``n_tenants`` (entries of the
    weight table, power of two), ``lease_cycles`` (a slot whose containers made no
    progress for this long has their credit written off: lost GRANT or data).

    Interface:

    * ``s_req`` (:func:`request_layout`): decoded REQUESTs.
    * ``s_arr`` (:func:`arrival_layout`): arrivals of granted data, per packet.
    * ``s_cfg`` (:func:`cfg_layout`): weight writes, always ready.
    * ``m_grant`` (:func:`grant_layout`): one GRANT per decision; ``seq`` counts the
      grants of that slot (gaps show the source a lost GRANT).
    * ``egress_room``: free space of the egress buffer in credit units.
    * ``outstanding``, ``slots_used`` and ``stat_*`` counters (see docs/dgsq.md).

    Architecture and timing (docs/dgsq.md has the details). Only what the pick needs
    for all slots at once lives in flip-flops (per slot: live, eligible, class,
    in-round, fresh, last-quota, lease age; and the CAM keys). The rest of a slot's
    state is one word in block RAM, in two banks (kept modules
    ``gse_grant_slot_ram_g`` / ``_e``) with a live-value table: the **grant lane**
    (``GRANT_STAGES`` = 6 clocks: address, read, credit flags + GRANT out, credit
    split, new word, write-back) writes bank G, the **engine lane** (``ENGINE_STAGES``
    = 8 clocks) bank E, each reads both: two read-modify-writes per clock. The pick:
    stage A registers which classes have an eligible slot (and a clock later the top
    class), stage B the top class's eligible slots, stage C1 registers per half (even /
    odd slots) the next slot in
    round-robin order among those still in the round and among all (carry-chain
    priority pick from a thermometer pointer), stage C2 decides from registers only:
    a half that did not grant last clock grants its candidate, or starts a new round.
    The engine (REQUESTs, arrival reports via a same-queue accumulator, lease
    expiries, checked in the lane) is accept -> CAM compare -> target (two clocks;
    with forwarding of keys not yet written, known from a same-key flag set at the
    accept) -> enter (when the target has no
    operation in a lane, checked a clock ahead): one operation per 2 clocks. A slot
    with an operation in a lane is masked from the pick and waited for by the engine,
    so no slot ever has two operations in flight (formally checked). So: one decision
    per clock while each half of the top class has at least 4 eligible slots; a
    single requester is granted at most every 8 clocks. GRANTs leave through an
    8-entry FIFO 3 clocks after their decision.
    """

    def __init__(self, n_req=64, buffer_credits=1024, grant_credits=CONTAINER_BYTES // CREDIT_UNIT_BYTES,
                 max_inflight=2, n_tenants=16, lease_cycles=8192):
        if n_req < 2:
            raise ValueError("n_req must be at least 2")
        if n_tenants < 1 or n_tenants & (n_tenants - 1):
            raise ValueError("n_tenants must be a power of two")
        if not 1 <= grant_credits <= buffer_credits < 2 ** 16:
            raise ValueError("need 1 <= grant_credits <= buffer_credits < 65536")
        if max_inflight < 1:
            raise ValueError("max_inflight must be >= 1")
        if lease_cycles < 16:
            raise ValueError("lease_cycles must be >= 16")
        self.n_req = n_req
        self.buffer_credits = buffer_credits
        self.grant_credits = grant_credits
        self.max_inflight = max_inflight
        self.n_tenants = n_tenants
        self.lease_cycles = lease_cycles
        self.slot_bits = max(1, (n_req - 1).bit_length())
        self.tid_bits = max(1, (n_tenants - 1).bit_length())
        super().__init__({
            "s_req": In(stream.Signature(request_layout())),
            "s_arr": In(stream.Signature(arrival_layout())),
            "s_cfg": In(stream.Signature(cfg_layout(self.tid_bits))),
            "m_grant": Out(stream.Signature(grant_layout(self.slot_bits))),
            "egress_room": In(16),
            "outstanding": Out(16),
            "slots_used": Out(self.slot_bits + 1),
            "stat_grants": Out(32),
            "stat_requests": Out(32),
            "stat_req_no_slot": Out(32),
            "stat_arr_unknown": Out(32),
            "stat_lease_expired": Out(32),
            "stat_room_stall": Out(32),
        })
        n, K, G = n_req, max_inflight, grant_credits
        self.cw = max(K * G, DEBT_MAX).bit_length() + 2
        self.slot_l = slot_layout(max(1, K.bit_length()), self.cw)
        # Visible to the formal checks (tests/test_dgsq_formal.py).
        self.valid = Signal(n)
        self.outst = Signal(range(buffer_credits + 1))     # counted (one clock behind)
        self.outst_now = Signal(range(buffer_credits + G + 1))  # incl. last clock's grant
        self.g_fire = Signal()              # a grant decided this clock
        self.g_sel = Signal(n)              # its slot (one-hot)
        self.chk_grant = Signal()           # a grant's slot state is being read (stage 3)
        self.chk_live = Signal()            # ... its slot is live
        self.chk_demand = Signal(16)        # ... its demand before the grant
        self.chk_inflight = Signal(range(K + 1))
        self.gv = Signal(GRANT_STAGES)      # grant lane: stage k+1 holds a grant
        self.goh = [Signal(n, name=f"g{k}_oh") for k in range(1, GRANT_STAGES + 1)]
        self.ev = Signal(ENGINE_STAGES)     # engine lane
        self.eoh = [Signal(n, name=f"e{k}_oh") for k in range(1, ENGINE_STAGES + 1)]
        #: (valid, slot one-hot) of every stage of both lanes
        self.pipe = ([(self.gv[k], self.goh[k]) for k in range(GRANT_STAGES)]
                     + [(self.ev[k], self.eoh[k]) for k in range(ENGINE_STAGES)])

    def elaborate(self, platform):
        m = Module()
        n, G, K = self.n_req, self.grant_credits, self.max_inflight
        BUF = self.buffer_credits
        cw = self.cw
        AGE_MAX = 4
        slot_l = self.slot_l
        SB = self.slot_bits

        weights = Array(Signal(8, init=1, name=f"weight{t}") for t in range(self.n_tenants))
        m.d.comb += self.s_cfg.ready.eq(1)
        # (``wone``: whether each weight is 1, kept alongside so that the grant lane reads
        # it from one flip-flop per tenant.)
        wone = Signal(self.n_tenants, init=(1 << self.n_tenants) - 1)
        with m.If(self.s_cfg.valid):
            m.d.sync += [weights[self.s_cfg.payload.tenant].eq(
                             Mux(self.s_cfg.payload.weight == 0, 1, self.s_cfg.payload.weight)),
                         wone.bit_select(self.s_cfg.payload.tenant, 1).eq(
                             self.s_cfg.payload.weight <= 1)]

        def weight_of(tenant):
            return weights[tenant[:self.tid_bits]] if self.n_tenants > 1 else weights[0]

        def weight_is_1(tenant):
            return wone.bit_select(tenant[:self.tid_bits], 1) if self.n_tenants > 1 else wone[0]

        # ---- Per-slot flip-flops -----------------------------------------------------
        valid = self.valid
        elig = Signal(n)            # demand != 0 and inflight < K
        inq = Signal(n)             # still in the current round of its class
        qlast = Signal(n)           # the next grant uses the slot's last quota
        fresh = Signal(n)           # refilled by a new round: its quota is its weight
        w1 = Signal(n)              # its weight is 1 (as of its last write-back)
        exh = Signal(n)             # a grant now would use the slot's last quota (registered:
                                    # fresh ? w1 : qlast, from their next values)
        inflnz = Signal(n)          # containers in flight (lease running)
        tc_oh = [Signal(N_CLASSES, name=f"tc_oh{i}") for i in range(n)]
        age = [Signal(3, name=f"age{i}") for i in range(n)]
        ksrc = [Signal(16, name=f"ksrc{i}") for i in range(n)]
        kdgsq = [Signal(16, name=f"kdgsq{i}") for i in range(n)]
        col = [Cat(tc_oh[i][c] for i in range(n)) for c in range(N_CLASSES)]
        fresh_n, w1_n, qlast_n = Signal(n), Signal(n), Signal(n)
        m.d.comb += [fresh_n.eq(fresh), w1_n.eq(w1), qlast_n.eq(qlast)]

        # ---- Slot memory: two banks, one per lane (2 writes + 2 reads per clock) ------
        # Bank G is written by the grant lane, bank E by the engine lane; each has a
        # read port per lane; ``lvt`` says which bank holds a slot's latest word.
        m.submodules.ram_g = ram_g = VOQRam(slot_l.size, n, n_read=2)
        m.submodules.ram_e = ram_e = VOQRam(slot_l.size, n, n_read=2)
        lvt = Signal(n)

        # ---- Lane registers: stage k (1-based) of a lane at index k-1 -------------------
        PG, PE = GRANT_STAGES, ENGINE_STAGES
        gv, goh = self.gv, self.goh
        ev, eoh = self.ev, self.eoh
        # Slot sets over the lanes, OR-ed a clock early so none is a wide OR behind a
        # register: r_busy: an operation in a lane (past stage 1); r_next: ... that is
        # still there next clock (with stage 1: E's check a clock ahead); the pick's
        # mask (below).
        def stages(lane_v, lane_oh, ks):
            return [Mux(lane_v[k], lane_oh[k], 0) for k in ks]
        r_busy, r_next = Signal(n), Signal(n)
        m.d.sync += [
            r_busy.eq(_or_all(stages(gv, goh, range(PG - 1)) + stages(ev, eoh, range(PE - 1)), n)),
            r_next.eq(_or_all(stages(gv, goh, range(PG - 2)) + stages(ev, eoh, range(PE - 2)), n)),
        ]
        # The pick's mask: one register holding last clock's grant and every lane stage
        # (next clock one stage on, or written back: the pick's view of it is a clock
        # late) and the engine's target in B or E. ``mask_np`` also holds the slots not
        # above the round-robin pointer. (So each per-slot input of C1's carry chains is
        # one LUT of three flip-flops.)
        mask, mask_np = Signal(n), Signal(n, init=(1 << n) - 1)
        mask_pre = Signal(n)
        g_d = Signal(n)             # last clock's grant (one-hot)

        # ---- Stage A: which classes have an eligible slot (registered) ---------------
        live_elig = Signal(n)
        m.d.comb += live_elig.eq(valid & elig)
        a_any = Signal(N_CLASSES)
        m.d.sync += a_any.eq(Cat((live_elig & col[c]).any() for c in range(N_CLASSES)))

        # ---- Stage B: the top class and its eligible slots (registered) ---------------
        # (The top class is registered first, one-hot: B sees it a clock late, which only
        # delays a change of class by a clock.)
        top_r = Signal(N_CLASSES)
        m.d.sync += top_r.eq(0)
        for c in range(N_CLASSES):
            with m.If(a_any[c]):
                m.d.sync += top_r.eq(1 << c)
        b_valid = Signal()
        b_ce = Signal(n)            # eligible slots of the top class
        b_col = Signal(n)           # all slots of the top class
        in_top = Signal(n)
        m.d.comb += in_top.eq(Cat((tc_oh[i] & top_r).any() for i in range(n)))
        m.d.sync += [b_valid.eq(a_any.any()), b_col.eq(in_top), b_ce.eq(live_elig & in_top)]

        # ---- Stage C: the pick, in two halves (even / odd slots) -----------------------
        # C1 (one clock ahead) registers each half's candidates from the registered state:
        # the next slot in round-robin order among the top class's eligible, unmasked
        # slots still in the round (``c_q``), and among all of them (``c_a``, for a new
        # round). C2 decides from registers only: a half may grant when it did not grant
        # last clock (its candidates do not know that grant yet), so the loop from a
        # decision back to the state its half picks from is two clocks long.
        NH = 2
        halves = [list(range(h, n, NH)) for h in range(NH)]

        def half(v, h):
            return Cat(v[i] for i in halves[h])

        ptr = [Signal(len(halves[h]), name=f"ptr{h}") for h in range(NH)]  # thermometer
        c_q = [Signal(len(halves[h]), name=f"c_q{h}") for h in range(NH)]
        c_a = [Signal(len(halves[h]), name=f"c_a{h}") for h in range(NH)]
        cq_any, ca_any = Signal(NH), Signal(NH)
        q_m, a_m = Signal(n), Signal(n)
        q_p, a_p = Signal(n), Signal(n)
        m.d.comb += [q_m.eq(b_ce & inq & ~mask), a_m.eq(b_ce & ~mask),
                     q_p.eq(b_ce & inq & ~mask_np), a_p.eq(b_ce & ~mask_np)]
        for h in range(NH):
            qm_h, am_h = half(q_m, h), half(a_m, h)
            qh, ah = half(q_p, h), half(a_p, h)
            # Round-robin as one carry chain over (above the pointer, all): the first set
            # bit of the doubled vector, folded.
            m.d.sync += [c_q[h].eq(_rr_first(qh, qm_h)), c_a[h].eq(_rr_first(ah, am_h)),
                         cq_any[h].eq(qm_h.any()), ca_any[h].eq(am_h.any())]
        # Whether the class still has eligible slots in the round (masked or not). A grant
        # with its last quota leaves the round a clock after it (from the grant lane's
        # stage 1): until then ``g1_exh`` discounts it. This clock's grant is one of the
        # registered candidates: the OR is formed for each of them (and for none) from
        # registers and registered as it is; the decision selects one after the
        # register (``useq_d``, ``last_h``), so no 64-bit OR is behind the decision.
        g1_exh = Signal(n)          # registered at the pick: sel & exh
        any_q = Signal()            # (selected from the registered ORs, below)
        q_left = Signal(n)
        m.d.comb += q_left.eq(b_ce & inq & ~g1_exh)

        def spread(v, h):
            out = Signal(n, name=f"spread{h}_{v.name}")
            m.d.comb += [out[i].eq(v[j]) for j, i in enumerate(halves[h])]
            return out
        q_left_if = {}              # (useq, half) -> any in the round after that grant
        for h in range(NH):
            for u, c in ((1, c_q[h]), (0, c_a[h])):
                q_left_if[u, h] = (q_left & ~(spread(c, h) & exh)).any()
        q_left_none = q_left.any()
        o_if = {k: Signal(name=f"o_if{k[0]}{k[1]}") for k in q_left_if}
        o_none = Signal()
        m.d.sync += [o_if[k].eq(v) for k, v in q_left_if.items()]
        m.d.sync += o_none.eq(q_left_none)
        nr_d = Signal()             # a new round started last clock: all of the class is in it
        useq, useq_d = Signal(), Signal()
        last_h = Signal(NH)         # the half that granted last clock
        m.d.comb += any_q.eq(Mux(useq_d,
                                 Mux(last_h[0], o_if[1, 0], Mux(last_h[1], o_if[1, 1], o_none)),
                                 Mux(last_h[0], o_if[0, 0], Mux(last_h[1], o_if[0, 1], o_none))))
        m.d.comb += useq.eq(any_q & ~nr_d)
        pref = Signal()             # the half preferred when both may grant
        # What each half would do for either choice (in-round or all) is formed from
        # registers; the choice (``useq``) selects late.
        has, has_q, has_a = Signal(NH), Signal(NH), Signal(NH)
        m.d.comb += [has_q.eq(cq_any & ~last_h), has_a.eq(ca_any & ~last_h),
                     has.eq(Mux(useq, has_q, has_a))]
        cand_any = Signal()
        m.d.comb += cand_any.eq(has.any())
        sel = Signal(n)
        go, go_q, go_a = Signal(NH), Signal(NH), Signal(NH)

        # Room: grants are counted into ``outst`` one clock late; ok_a/ok_b are computed
        # a clock ahead for "a grant last clock" / "none" (releases are ignored then:
        # the safe side).
        fire_d = self.gv[0]         # a grant was decided last clock
        sub = Signal(range(2 * (max(K * G, DEBT_MAX) + 1)))  # credit released this clock
        ok_a, ok_b = Signal(), Signal()
        outst = self.outst
        m.d.comb += self.outst_now.eq(outst + Mux(fire_d, G, 0))
        room_next = Signal(16)
        m.d.comb += room_next.eq(Mux(self.egress_room > BUF, BUF, self.egress_room))
        # room - outst once (a carry chain), then constant compares; last clock's grant
        # selects among them late.
        head = Signal(signed(17))
        m.d.comb += head.eq(room_next - outst)
        fits = {k: Signal(name=f"fits{k}") for k in (1, 2, 3)}   # outst + k*G <= room
        m.d.comb += [fits[k].eq(head >= k * G) for k in fits]
        m.d.sync += [ok_a.eq(Mux(fire_d, fits[3], fits[2])),
                     ok_b.eq(Mux(fire_d, fits[2], fits[1]))]
        room_ok = Signal()
        m.d.comb += room_ok.eq(Mux(fire_d, ok_a, ok_b))
        # Released credit is counted a clock after its write-back (the safe side), from
        # registered deltas: one adder and a clamp per clock.
        rel_w = len(sub) + 1
        d_fire, d_none = Signal(signed(rel_w + 1)), Signal(signed(rel_w + 1))
        m.d.sync += [d_fire.eq(G - sub), d_none.eq(-sub)]
        outst_nx = Signal(signed(len(self.outst_now) + 2))
        m.d.comb += outst_nx.eq(outst + Mux(fire_d, d_fire, d_none))
        m.d.sync += outst.eq(Mux(outst_nx < 0, 0, outst_nx))
        m.d.comb += self.outstanding.eq(self.outst_now)

        # Output FIFO reservations: one per grant decided, returned as grants leave.
        FIFO_DEPTH = 8
        out_fifo = m.submodules.out_fifo = fifo.SyncFIFOBuffered(
            width=len(self.m_grant.payload.as_value()), depth=FIFO_DEPTH)
        fcred = Signal(range(FIFO_DEPTH + 1), init=FIFO_DEPTH)
        fifo_ok = Signal()
        rd = Signal()
        m.d.comb += rd.eq(self.m_grant.valid & self.m_grant.ready)
        fcred_next = Signal(range(FIFO_DEPTH + 2))
        m.d.comb += fcred_next.eq(fcred - fire_d + rd)
        m.d.sync += [fcred.eq(fcred_next), fifo_ok.eq(fcred_next >= 2)]
        # The decision's enable from registers only: class, room (for "a grant last
        # clock" / "none") and FIFO, AND-ed a clock ahead.
        en_a, en_b = Signal(), Signal()
        m.d.sync += [en_a.eq(a_any.any() & Mux(fire_d, fits[3], fits[2]) & (fcred_next >= 2)),
                     en_b.eq(a_any.any() & Mux(fire_d, fits[2], fits[1]) & (fcred_next >= 2))]
        dec_ok = Signal()
        m.d.comb += dec_ok.eq(Mux(fire_d, en_a, en_b))

        eng_go = Signal()           # the lookup engine's operation enters its lane
        g_fire = self.g_fire
        # A half grants when it may and, if both may, when it is preferred.
        for g_, hv in ((go_q, has_q), (go_a, has_a)):
            m.d.comb += [g_[0].eq(dec_ok & hv[0] & (~hv[1] | ~pref)),
                         g_[1].eq(dec_ok & hv[1] & (~hv[0] | pref))]
        m.d.comb += [go.eq(Mux(useq, go_q, go_a)), g_fire.eq(go.any())]
        for h in range(NH):
            for j, i in enumerate(halves[h]):
                m.d.comb += sel[i].eq(Mux(useq, c_q[h][j] & go_q[h], c_a[h][j] & go_a[h]))
        m.d.comb += self.g_sel.eq(sel)
        new_round = Signal()
        m.d.comb += new_round.eq(~any_q & ~nr_d & go_a.any())    # (= g_fire & ~useq & ~nr_d)
        m.d.sync += [g1_exh.eq(sel & exh), nr_d.eq(new_round), last_h.eq(go), useq_d.eq(useq)]
        with m.If(g_fire):
            m.d.sync += pref.eq(go[0])
        m.d.sync += g_d.eq(sel)
        ptr_n = [Signal.like(ptr[h], name=f"ptr_n{h}") for h in range(NH)]
        for h in range(NH):
            gd_h = half(g_d, h)
            # Thermometer of the half's slots above its last grant (the pick is two
            # clocks behind: harmless, the granted slot is masked).
            m.d.comb += ptr_n[h].eq(Mux(gd_h.any(), ~(gd_h | (gd_h - 1)[:len(gd_h)]), ptr[h]))
            m.d.sync += ptr[h].eq(ptr_n[h])
        mask_n = Signal(n)
        m.d.comb += mask_n.eq(mask_pre | sel)
        # (``mask_np`` takes the pointer as it is, a clock behind ``ptr_n``: harmless, the
        # slot of the grant that moves it is masked.)
        m.d.sync += [mask.eq(mask_n),
                     mask_np.eq(mask_n | ~Cat(ptr[i % NH][i // NH] for i in range(n)))]
        with m.If(b_valid & cand_any & ~room_ok):
            m.d.sync += self.stat_room_stall.eq(self.stat_room_stall + 1)
        with m.If(g_fire):
            m.d.sync += self.stat_grants.eq(self.stat_grants + 1)
        # Round bookkeeping at the pick: a new round puts every slot of the class in it
        # with its weight as quota (``fresh``: applied at its next grant); a grant with
        # the last quota takes its slot out of the round.
        for i in range(n):
            with m.If(new_round & b_col[i]):
                m.d.sync += inq[i].eq(1)
                m.d.comb += fresh_n[i].eq(1)
            with m.Elif(gv[0] & goh[0][i]):
                m.d.sync += inq[i].eq(~exh[i])
                m.d.comb += fresh_n[i].eq(0)

        # ---- Lookup engine: REQUESTs, arrivals and lease expiries, one at a time -----
        tick_period = max(1, self.lease_cycles // AGE_MAX)
        tick_cnt = Signal(range(tick_period))
        tick = Signal()
        m.d.comb += tick.eq(tick_cnt == tick_period - 1)
        m.d.sync += tick_cnt.eq(Mux(tick, 0, tick_cnt + 1))
        expired = Signal(n)
        m.d.comb += expired.eq(Cat((age[i] == AGE_MAX) for i in range(n)) & inflnz & valid)
        # The expiry candidate, among slots with no operation in a lane a few clocks ago,
        # in two registered steps (the first expired slot of each group of 16, then the
        # first group): it may be stale, which is safe because E waits until its slot has
        # no operation in a lane and the lane checks that the slot is still expired.
        expired_r = Signal(n)
        m.d.sync += expired_r.eq(expired)
        XG = 16
        xgroups = [range(g, min(g + XG, n)) for g in range(0, n, XG)]
        xg_oh, xg_any = Signal(n), Signal(len(xgroups))
        xcand = Signal(n)
        m.d.comb += xcand.eq(expired_r & ~r_busy)
        for k, g in enumerate(xgroups):
            v = xcand[g.start:g.stop]
            m.d.sync += [xg_oh[g.start:g.stop].eq(_onehot_first(v)), xg_any[k].eq(v.any())]
        exp_oh = Signal(n)
        exp_any = Signal()
        first_g = _onehot_first(xg_any)
        m.d.sync += [exp_oh.eq(Cat(Mux(first_g[k], xg_oh[g.start:g.stop], 0)
                                   for k, g in enumerate(xgroups))),
                     exp_any.eq(xg_any.any())]

        # Four stages, one operation each: accept (operands latched into A), A (CAM
        # compare, registered), B (target chosen), E (waits until its target has no
        # operation in either lane, checked a clock ahead, then enters the engine
        # lane). An operation takes at least 2 clocks in E: one operation per 2 clocks.
        turn = Signal(2)
        a_v, a_kind = Signal(), Signal(2)
        a_isexp = Signal()          # a_kind == OP_EXP
        a_req = Signal(request_layout())
        a_cred, a_last = Signal(16), Signal()
        a_exp = Signal(n)
        e_v, e_kind, e_has, e_hit_r = Signal(), Signal(2), Signal(), Signal()
        e_req = Signal(request_layout())
        e_arr_cred, e_arr_last = Signal(16), Signal()
        e_tgt = Signal(n)
        e_hit = Signal()
        m.d.comb += e_hit.eq(e_hit_r)
        e_armed, e_ok = Signal(), Signal()
        # (An expiry checks in its lane that its slot is still expired.)
        m.d.comb += eng_go.eq(e_v & e_has & e_armed & e_ok)
        e_done = Signal()
        m.d.comb += e_done.eq(e_v & (eng_go | ~e_has))
        b_v, b_kind = Signal(), Signal(2)
        b_req = Signal(request_layout())
        b_cred, b_last = Signal(16), Signal()
        alloc_ok = Signal()         # B holds a REQUEST with backlog (may take a free slot)
        b_cam = Signal(n)           # per slot: the key's CAM hit (or the expiry's slot)
        b_kind_now = Signal(2)      # B's kind in every clock of B (first included)
        a_key = Signal(32)          # (src_node, dgsq) of a REQUEST or arrival
        a_key_n = Signal(32)                    # ~a_key
        # The key equals that of the operation accepted just before (when both have keys:
        # an expiry leaves ``a_key`` as it was, and is never forwarded to or from).
        a_same, d_same, b_same, b_same_now = Signal(), Signal(), Signal(), Signal()
        b_move = Signal()
        # B takes two clocks (its CAM hit is registered in the first), overlapping E's two.
        # So a target reaches the pick's mask (via B's candidates) at least two clocks
        # before its operation can enter the engine lane: the pick decides from
        # candidates a clock old (stage C1), and the engine's check a clock ahead
        # (``e_ok``) then sees any grant made from them.
        b_rdy = Signal()
        m.d.comb += b_move.eq(b_v & b_rdy & (~e_v | e_done))
        m.d.sync += b_rdy.eq(b_v & ~b_move)
        a_move = Signal()
        m.d.comb += a_move.eq(a_v & (~b_v | b_move))
        # e_ok: E's target has no operation in a lane next clock (stage 1 of either lane
        # or ``r_next``), with the stage-1 valids applied after the AND-OR trees (they
        # fan out widely).
        e_in_g1, e_in_e1, e_in_r = Signal(), Signal(), Signal()
        m.d.comb += [e_in_g1.eq((e_tgt & goh[0]).any() & gv[0]),
                     e_in_e1.eq((e_tgt & eoh[0]).any() & ev[0]),
                     e_in_r.eq((e_tgt & r_next).any())]
        m.d.sync += [e_armed.eq(e_v & ~e_done), e_ok.eq(~(e_in_g1 | e_in_e1 | e_in_r))]

        # Arrivals wait in an accumulator: reports of the same queue's container are
        # added up while the engine is busy (their effect is the same as one report of
        # the sum), so one report per packet costs no more engine time than one per
        # container.
        # A report is registered first (``in_a``), with whether its queue is that of the
        # report before it (``in_same``, compared as it is registered): reports pass in
        # order, so that is the queue the accumulator holds, and merging needs no key
        # compare.
        in_v, in_same = Signal(), Signal()
        in_a = Signal(arrival_layout())
        last_key = Signal(32)
        in_go = Signal()
        acc_v = Signal()
        acc = Signal(arrival_layout())
        acc_take = Signal()
        new = self.s_arr.payload
        m.d.comb += self.s_arr.ready.eq(~in_v | in_go)
        with m.If(self.s_arr.valid & self.s_arr.ready):
            m.d.sync += [in_v.eq(1), in_a.eq(new), last_key.eq(Cat(new.src_node, new.dgsq)),
                         in_same.eq(Cat(new.src_node, new.dgsq) == last_key)]
        with m.Elif(in_go):
            m.d.sync += in_v.eq(0)
        merge = Signal()
        # (No merge when a count has its top bit set: the sum fits 16 bits.)
        m.d.comb += merge.eq(acc_v & ~acc.last & in_same & ~acc.credits[15] & ~in_a.credits[15])
        # (A report for another queue waits until the accumulator was taken, and none is
        # merged while A is free to take it: so the engine's choice, which is late,
        # enables no accumulator register but ``acc_v``.)
        m.d.comb += in_go.eq(in_v & (~acc_v | (merge & a_v)))
        with m.If(in_go):
            with m.If(merge):
                m.d.sync += [acc.credits.eq(acc.credits + in_a.credits), acc.last.eq(in_a.last)]
            with m.Else():
                m.d.sync += [acc.eq(in_a), acc_v.eq(1)]
        with m.Elif(acc_take):
            m.d.sync += acc_v.eq(0)

        # Accept: round-robin among REQUESTs, arrivals and expiries (one expiry in the
        # engine at a time, never for a slot with an operation in a lane).
        # Registered: a clock stale, which is safe because A accepts only when empty
        # (an expiry it took is seen here before A can accept again); an expiry whose
        # candidate vanished meanwhile finds no slot and ends in E, uncounted.
        # After an expiry left E, the candidate may still name its slot for a few clocks
        # (it is stale): no expiry is accepted until it is fresh again.
        x_hold = Signal(range(4))
        with m.If(e_done & (e_kind == OP_EXP)):
            m.d.sync += x_hold.eq(3)
        with m.Elif(x_hold != 0):
            m.d.sync += x_hold.eq(x_hold - 1)
        exp_ok = Signal()
        m.d.sync += exp_ok.eq(exp_any & (x_hold == 0)
                              & ~(a_v & (a_kind == OP_EXP)) & ~(b_v & (b_kind_now == OP_EXP))
                              & ~(e_v & (e_kind == OP_EXP)))
        # A takes an operation only when empty (the engine takes one per 2 clocks anyway):
        # the accept decision then depends on no pipeline movement (short paths).
        can_accept = Signal()
        m.d.comb += can_accept.eq(~a_v)
        want = Cat(self.s_req.valid, acc_v, exp_ok)
        choice = Signal(2)
        m.d.comb += choice.eq(3)
        for first in range(3):
            with m.If(turn == first):
                for k in reversed([(first + j) % 3 for j in range(3)]):
                    with m.If(want[k]):
                        m.d.comb += choice.eq(k)
        with m.If(a_move):
            m.d.sync += a_v.eq(0)
        with m.If(can_accept & (choice != 3)):
            m.d.sync += [a_v.eq(1), a_kind.eq(choice), a_isexp.eq(choice == OP_EXP),
                         turn.eq(Mux(choice == 2, 0, choice + 1))]
            with m.Switch(choice):
                with m.Case(OP_REQ):
                    m.d.comb += self.s_req.ready.eq(1)
                    m.d.sync += [a_req.eq(self.s_req.payload),
                                 a_same.eq(Cat(self.s_req.payload.src_node,
                                               self.s_req.payload.dgsq) == a_key),
                                 a_key.eq(Cat(self.s_req.payload.src_node, self.s_req.payload.dgsq)),
                                 a_key_n.eq(~Cat(self.s_req.payload.src_node, self.s_req.payload.dgsq))]
                with m.Case(OP_ARR):
                    m.d.comb += acc_take.eq(1)
                    m.d.sync += [a_cred.eq(acc.credits), a_last.eq(acc.last),
                                 a_same.eq(Cat(acc.src_node, acc.dgsq) == a_key),
                                 a_key.eq(Cat(acc.src_node, acc.dgsq)),
                                 a_key_n.eq(~Cat(acc.src_node, acc.dgsq))]
                with m.Case(OP_EXP):
                    m.d.sync += a_exp.eq(exp_oh)

        # A: compare the key with every live slot (registered).
        # (two 16-bit halves, ANDed in B: a 32-bit compare per slot is too deep for
        # one clock behind the key's fanout to 64 slots)
        # (Slots of the upper half compare with an inverted copy of the key: flip-flops of
        # their own, half the fanout each.)
        cam_lo, cam_hi = Signal(n), Signal(n)
        nh = n // 2
        def key_of(i):
            return a_key if i < nh else ~a_key_n
        m.d.comb += [cam_lo.eq(Cat(ksrc[i] == key_of(i)[:16] for i in range(n))),
                     cam_hi.eq(Cat(kdgsq[i] == key_of(i)[16:] for i in range(n)) & valid)]
        # A's operands and CAM compare are registered every clock (no enable): in B's
        # first clock (``b_first``) they describe the operation that moved in, and B
        # keeps them from then on. So B's wide registers load on a registered enable,
        # not on the move decision (which fans out late).
        d_kind = Signal(2)
        d_req = Signal(request_layout())
        d_cred, d_last = Signal(16), Signal()
        d_lo, d_hi = Signal(n), Signal(n)    # per slot: src_node equal; dgsq equal and live
        m.d.sync += [d_kind.eq(a_kind), d_req.eq(a_req), d_cred.eq(a_cred), d_last.eq(a_last),
                     d_same.eq(a_same),
                     d_lo.eq(Mux(a_isexp, a_exp, cam_lo)),
                     d_hi.eq(Mux(a_isexp, ~0, cam_hi))]
        b_first = Signal()
        m.d.sync += b_first.eq(a_move)
        with m.If(a_move):
            m.d.sync += b_v.eq(1)
        with m.Elif(b_move):
            m.d.sync += b_v.eq(0)
        b_cam_r = Signal(n)
        with m.If(b_first):
            m.d.sync += [b_kind.eq(d_kind), b_req.eq(d_req), b_cred.eq(d_cred), b_last.eq(d_last),
                         b_same.eq(d_same),
                         b_cam_r.eq(d_lo & d_hi),
                         alloc_ok.eq((d_kind == OP_REQ) & (d_req.backlog != 0))]
        m.d.comb += [b_cam.eq(Mux(b_first, d_lo & d_hi, b_cam_r)),
                     b_same_now.eq(Mux(b_first, d_same, b_same)),
                     b_kind_now.eq(Mux(b_first, d_kind, b_kind))]

        # B: choose the target. A REQUEST writes its slot's key (and live bit) from its
        # first clock in E on; an operation behind it compared before that: the key
        # written last clock (``al``) is forwarded, and remembered while B waits. A new
        # key takes the lowest free slot that is not E's.
        al_v = Signal()
        al_tgt = Signal(n)
        # Whether that key is B's: when it was written, E held the operation just ahead of
        # B's (B did not move while E was in its first clock; if A moved into B, B was
        # empty), so it is whether B's key is that of the operation accepted just before
        # it (``same``, compared at the accept).
        m.d.sync += [al_v.eq(e_v & e_has & ~e_armed & (e_kind == OP_REQ)), al_tgt.eq(e_tgt)]
        fwd_la = Signal()
        m.d.comb += fwd_la.eq(al_v & b_same_now & (b_kind_now != OP_EXP))
        b_fwd_v = Signal()
        b_fwd_tgt = Signal(n)
        with m.If(a_move):
            m.d.sync += b_fwd_v.eq(0)
        with m.Elif(fwd_la & ~b_move):
            m.d.sync += b_fwd_v.eq(1)
        with m.If(fwd_la):          # (only read while b_fwd_v: no move conditions here)
            m.d.sync += b_fwd_tgt.eq(al_tgt)
        b_hit0 = Signal()
        b_match0 = Signal(n)
        b_cam_any = Signal()
        with m.If(b_first):         # (read from B's second clock on)
            m.d.sync += b_cam_any.eq((d_lo & d_hi).any())
        m.d.comb += [b_hit0.eq(b_fwd_v | b_cam_any),
                     b_match0.eq(Mux(b_fwd_v, b_fwd_tgt, b_cam))]
        hit = Signal()
        m.d.comb += hit.eq(fwd_la | b_hit0)
        # The lowest free slot, registered: a clock old, which is safe because only E
        # takes slots and B cannot move in the clock after E was filled (E takes at
        # least two clocks), by when E's target is excluded here.
        free_mask = Signal(n)
        m.d.comb += free_mask.eq(~valid & ~Mux(e_v, e_tgt, 0))
        free, free_any = Signal(n), Signal()
        m.d.sync += [free.eq(_onehot_first(free_mask)), free_any.eq(free_mask.any())]
        tgt = Signal(n)
        m.d.comb += tgt.eq(Mux(fwd_la, al_tgt, Mux(b_hit0, b_match0, Mux(alloc_ok, free, 0))))
        # B's possible targets (a superset, from registers) are masked while it may move.
        b_cands = Signal(n)
        m.d.comb += b_cands.eq(Mux(b_v, b_cam | free | Mux(b_fwd_v, b_fwd_tgt, 0)
                                   | Mux(al_v, al_tgt, 0), 0))
        m.d.comb += mask_pre.eq(_or_all(stages(gv, goh, range(PG)) + stages(ev, eoh, range(PE))
                                        + [Mux(e_v, e_tgt, 0), b_cands], n))
        with m.If(b_move):
            m.d.sync += [e_v.eq(1), e_kind.eq(b_kind), e_req.eq(b_req),
                         e_arr_cred.eq(b_cred), e_arr_last.eq(b_last),
                         e_tgt.eq(tgt), e_has.eq(hit | (alloc_ok & free_any)),
                         e_hit_r.eq(hit)]
        with m.Elif(e_done):
            m.d.sync += e_v.eq(0)

        # E: counters of operations that end here.
        with m.If(e_v & ~e_has):
            # Nothing to do: an unknown arrival, a REQUEST without a slot, or a
            # REQUEST with no backlog from a queue we do not track.
            with m.If(e_kind == OP_ARR):
                m.d.sync += self.stat_arr_unknown.eq(self.stat_arr_unknown + 1)
            with m.If((e_kind == OP_REQ) & (e_req.backlog != 0)):
                m.d.sync += self.stat_req_no_slot.eq(self.stat_req_no_slot + 1)
        with m.If(e_done & (e_kind == OP_REQ)):
            m.d.sync += self.stat_requests.eq(self.stat_requests + 1)

        # A REQUEST's slot is live (and its key in the CAM) from its first clock in E on
        # (written every clock in E: a write-back of the slot in that clock may clear it).
        e_key_wr = Signal()
        m.d.comb += e_key_wr.eq(e_v & e_has & (e_kind == OP_REQ))
        for i in range(n):
            with m.If(e_key_wr & e_tgt[i]):
                m.d.sync += [valid[i].eq(1), ksrc[i].eq(e_req.src_node), kdgsq[i].eq(e_req.dgsq)]

        # ---- Grant lane: read-modify-write of the granted slot ------------------------
        # g1 address; g2 words read (bank chosen by lvt, registered); g3 credit flags,
        # next quota, the GRANT leaves; g4 credit split; g5 new word; g6 write-back.
        m.d.sync += [gv[0].eq(g_fire), goh[0].eq(sel)]
        for k in range(1, PG):
            m.d.sync += [gv[k].eq(gv[k - 1]), goh[k].eq(goh[k - 1])]
        gidx = [None] + [Signal(SB, name=f"g{k}_idx") for k in range(1, PG + 1)]
        # The slot index is registered with the decision (encoded from the candidates,
        # not from the decision), so the block-RAM read address comes from a register.
        idx_sel = [Mux(useq, _encode(c_q[h], SB - 1), _encode(c_a[h], SB - 1))
                   for h in range(NH)]
        m.d.sync += gidx[1].eq(Mux(go[1], Cat(C(1, 1), idx_sel[1]), Cat(C(0, 1), idx_sel[0])))
        for k in range(2, PG + 1):
            m.d.sync += gidx[k].eq(gidx[k - 1])
        g_ra_g, g_rd_g = ram_g.read(0)
        g_ra_e, g_rd_e = ram_e.read(0)
        m.d.comb += [g_ra_g.eq(gidx[1]), g_ra_e.eq(gidx[1])]
        g_exh2, g_fresh2, g_lvt2 = Signal(), Signal(), Signal()
        m.d.sync += [g_exh2.eq(_and_or(goh[0], exh)), g_fresh2.eq(_and_or(goh[0], fresh)),
                     g_lvt2.eq(_and_or(goh[0], lvt))]
        gr3 = Signal(slot_l)
        g_exh3, g_fresh3 = Signal(), Signal()
        m.d.sync += [gr3.eq(Mux(g_lvt2, g_rd_e, g_rd_g)), g_exh3.eq(g_exh2),
                     g_fresh3.eq(g_fresh2)]

        # g3. A grant with the last quota refills the slot for its next round.
        wt_g = Signal(8)
        m.d.comb += wt_g.eq(weight_of(gr3.tenant))
        g_nonneg4, g_ltmg4 = Signal(), Signal()
        g_plus4 = Signal(signed(cw))
        gr4 = Signal(slot_l)
        # gr4 carries the word with its new cleft. Quota: g3 weight and what is left,
        # g4 the quota this grant starts from, g5 the quota after it.
        wt4 = Signal(8)
        g_exh4, g_fresh4 = Signal(), Signal()
        m.d.sync += [g_nonneg4.eq(gr3.cleft >= 0), g_ltmg4.eq(gr3.cleft < -G),
                     gr4.eq(gr3), gr4.cleft.eq(gr3.cleft + G),
                     wt4.eq(wt_g), g_exh4.eq(g_exh3), g_fresh4.eq(g_fresh3)]
        wt5 = Signal(8)
        g_exh5 = Signal()
        m.d.sync += [wt5.eq(wt4), g_exh5.eq(g_exh4)]
        g_w1 = [None] * 7
        g_w1[4] = Signal(name="g4_w1")
        m.d.sync += g_w1[4].eq(weight_is_1(gr3.tenant))
        for k in (5, 6):
            g_w1[k] = Signal(name=f"g{k}_w1")
            m.d.sync += g_w1[k].eq(g_w1[k - 1])
        m.d.comb += g_plus4.eq(gr4.cleft)
        # The GRANT (fields as read; its seq is one past the last GRANT's).
        gout = Signal(grant_layout(SB))
        g_seq3 = Signal(SEQ_BITS)
        m.d.comb += g_seq3.eq(gr3.gseq + 1)
        m.d.comb += [gout.slot.eq(gidx[3]), gout.src_node.eq(gr3.src_node),
                     gout.dgsq.eq(gr3.dgsq), gout.tc.eq(gr3.tc), gout.tenant.eq(gr3.tenant),
                     gout.seq.eq(g_seq3), gout.credit.eq(G)]
        m.d.comb += [out_fifo.w_data.eq(gout), out_fifo.w_en.eq(gv[2]),
                     self.m_grant.payload.eq(out_fifo.r_data),
                     self.m_grant.valid.eq(out_fifo.r_rdy),
                     out_fifo.r_en.eq(self.m_grant.ready)]
        m.d.comb += [self.chk_grant.eq(gv[2]), self.chk_live.eq(_and_or(goh[2], valid)),
                     self.chk_demand.eq(gr3.demand), self.chk_inflight.eq(gr3.inflight)]

        # g4. Credit that repays overrun debt serves no backlog; a grant whose credit
        # only repays debt brings no container.
        g_eff5 = Signal(range(G + 1))
        g_repay5 = Signal(range(G + 1))
        g_brings5 = Signal()
        gr5 = Signal(slot_l)
        m.d.sync += [
            g_eff5.eq(Mux(g_nonneg4, G, Mux(g_ltmg4, 0, g_plus4))),
            g_repay5.eq(Mux(g_nonneg4, 0, Mux(g_ltmg4, G, G - g_plus4))),
            g_brings5.eq(~g_ltmg4 & (g_plus4 != 0)),
            gr5.eq(gr4), gr5.quota.eq(Mux(g_fresh4, wt4, gr4.quota)),   # the quota it starts from
        ]

        # g5. The new word.
        gw6 = Signal(slot_l)
        g_rel6 = Signal(range(G + 1))
        g_idle6 = Signal()          # a grant from idle: the lease starts
        g_elig6, g_infl6 = Signal(), Signal()
        m.d.sync += [
            gw6.eq(gr5),
            gw6.demand.eq(Mux(gr5.demand > g_eff5, gr5.demand - g_eff5, 0)),
            gw6.inflight.eq(gr5.inflight + g_brings5),
            # (the new word's flags, formed with it)
            g_elig6.eq((gr5.demand > g_eff5) & (gr5.inflight + g_brings5 < K)),
            g_infl6.eq((gr5.inflight + g_brings5) != 0),
            gw6.rc.eq(Mux(~g_brings5 & (gr5.rc != 3), gr5.rc + 1, gr5.rc)),
            gw6.gseq.eq(gr5.gseq + 1),
            gw6.quota.eq(Mux(g_exh5, wt5, gr5.quota - 1)),
            g_rel6.eq(g_repay5), g_idle6.eq(gr5.inflight == 0),
        ]

        # g6. Write-back.
        g_wb = Signal()
        m.d.comb += g_wb.eq(gv[PG - 1])
        m.d.comb += [ram_g.w_en.eq(g_wb), ram_g.w_addr.eq(gidx[PG]), ram_g.w_data.eq(gw6)]

        # ---- Engine lane: REQUEST / arrival / expiry on its slot ------------------------
        # e1 address; e2 words read; e3..e6 arithmetic; e7 new word; e8 write-back.
        ekind = [None] + [Signal(2, name=f"e{k}_kind") for k in range(1, PE + 1)]
        ehit = [None] + [Signal(name=f"e{k}_hit") for k in range(1, PE + 1)]
        eidx = [None] + [Signal(SB, name=f"e{k}_idx") for k in range(1, PE + 1)]
        m.d.sync += [ev[0].eq(eng_go), eoh[0].eq(e_tgt), ekind[1].eq(e_kind), ehit[1].eq(e_hit)]
        m.d.sync += eidx[1].eq(_encode(e_tgt, SB))     # with eoh[0] (= e_tgt, registered)
        for k in range(1, PE):
            m.d.sync += [ev[k].eq(ev[k - 1]), eoh[k].eq(eoh[k - 1])]
        for k in range(2, PE + 1):
            m.d.sync += [ekind[k].eq(ekind[k - 1]), ehit[k].eq(ehit[k - 1]),
                         eidx[k].eq(eidx[k - 1])]
        # An expiry takes effect only if its slot is still expired, seen at stage 2 (from
        # a register a clock old): the slot is the lane's alone from its entry on, and
        # the last write-back of another operation on it was at the latest in the clock
        # of entry, so this view is exact. Progress meanwhile: the expiry is a no-op.
        xlive = [None] * (PE + 1)
        for k in range(3, PE + 1):
            xlive[k] = Signal(name=f"e{k}_xlive")
        m.d.sync += xlive[3].eq(_and_or(eoh[1], expired_r))
        for k in range(4, PE + 1):
            m.d.sync += xlive[k].eq(xlive[k - 1])
        # The operands travel with the operation (the engine accepts the next one
        # meanwhile).
        sreq = [None] + [Signal(request_layout(), name=f"e{k}_req") for k in range(1, PE)]
        slast = [None] + [Signal(name=f"e{k}_last") for k in range(1, PE)]
        m.d.sync += [sreq[1].eq(e_req), slast[1].eq(e_arr_last)]
        for k in range(2, PE):
            m.d.sync += [sreq[k].eq(sreq[k - 1]), slast[k].eq(slast[k - 1])]
        arr_cred1 = Signal(16)
        m.d.sync += arr_cred1.eq(e_arr_cred)

        e_ra_g, e_rd_g = ram_g.read(1)
        e_ra_e, e_rd_e = ram_e.read(1)
        m.d.comb += [e_ra_g.eq(eidx[1]), e_ra_e.eq(eidx[1])]
        e_lvt2 = Signal()
        arr_c2 = Signal(10)
        m.d.sync += [e_lvt2.eq(_and_or(eoh[0], lvt)),
                     arr_c2.eq(Mux(arr_cred1 > DEBT_MAX, DEBT_MAX, arr_cred1))]
        er3 = Signal(slot_l)
        arr_c3 = Signal(10)
        m.d.sync += [er3.eq(Mux(e_lvt2, e_rd_e, e_rd_g)), arr_c3.eq(arr_c2)]

        # e3. REQUEST: grants it had not seen; arrival: credit after it; a new slot's quota.
        wt_e = Signal(8)
        m.d.comb += wt_e.eq(weight_of(sreq[3].tenant))
        e_quota4 = Signal(8)
        unacked4 = Signal(SEQ_BITS)
        cl1_4 = Signal(signed(cw + 1))
        pcl4, ncl4 = Signal(cw), Signal(cw)
        er4 = Signal(slot_l)
        m.d.sync += [e_quota4.eq(wt_e), unacked4.eq(er3.gseq - sreq[3].seq),
                     cl1_4.eq(er3.cleft - arr_c3), pcl4.eq(_pos(er3.cleft)),
                     ncl4.eq(_pos(-er3.cleft)), er4.eq(er3)]

        # e4. REQUEST: demand = backlog minus the containers granted that the source had
        # not yet seen when it sent it: at most those in flight or completed since the
        # last REQUEST (a grant the source never got is neither: a lost GRANT). Arrival:
        # at a container's last packet that container is done; containers stay expected
        # only for grants an overrun has not already used up.
        seen4 = Signal(range(K + 4))
        m.d.comb += seen4.eq(er4.inflight + er4.rc)
        unack_c = Signal(range(K + 4))
        m.d.comb += unack_c.eq(Mux(unacked4 > seen4, seen4, unacked4))
        le0 = Signal()
        m.d.comb += le0.eq(cl1_4 <= 0)
        a_infl = Signal(range(K + 1))
        m.d.comb += a_infl.eq(er4.inflight)
        with m.If(slast[4]):
            m.d.comb += a_infl.eq(Mux((er4.inflight == 0) | le0, 0, er4.inflight - 1))
        resync5 = Signal()
        covered5 = Signal(range((K + 3) * G + 1))
        cl1c5 = Signal(signed(cw))
        a_infl5 = Signal(range(K + 1))
        e_quota5 = Signal(8)
        pcl5, ncl5 = Signal(cw), Signal(cw)
        er5 = Signal(slot_l)
        # Settled grants this REQUEST did not acknowledge stay counted (a later REQUEST
        # may have been sent before the source saw them too): at most unacked - in flight.
        u_small5 = Signal(range(8))
        m.d.sync += u_small5.eq(Mux(unacked4 > 7, 7, unacked4))
        m.d.sync += [resync5.eq(unacked4 > seen4), covered5.eq(unack_c * G),
                     cl1c5.eq(Mux(cl1_4 < -DEBT_MAX, -DEBT_MAX, cl1_4)), a_infl5.eq(a_infl),
                     e_quota5.eq(e_quota4), pcl5.eq(pcl4), ncl5.eq(ncl4), er5.eq(er4)]

        # e5.
        keep5 = Signal(range(K * G + 1))
        m.d.comb += keep5.eq(a_infl5 * G)
        dem_r6 = Signal(16)
        dem_nz6, bl_nz6, er_dem_nz6 = Signal(), Signal(), Signal()
        pc1_6, nc1_6 = Signal(cw), Signal(cw)
        gt6 = Signal()
        rc_keep6 = Signal(2)
        u_left5 = Signal(signed(4))
        m.d.comb += u_left5.eq(u_small5 - er5.inflight)
        m.d.sync += rc_keep6.eq(Mux(resync5 | (u_left5 <= 0), 0,
                                    Mux(u_left5 < er5.rc, u_left5, er5.rc)))
        c6 = dict(quota=Signal(8), resync=Signal(), cl1c=Signal(signed(cw)),
                  a_infl=Signal(range(K + 1)), pcl=Signal(cw), ncl=Signal(cw))
        er6 = Signal(slot_l)
        m.d.sync += [
            dem_r6.eq(Mux(sreq[5].backlog > covered5, sreq[5].backlog - covered5, 0)),
            dem_nz6.eq(sreq[5].backlog > covered5), bl_nz6.eq(sreq[5].backlog != 0),
            er_dem_nz6.eq(er5.demand != 0),
            pc1_6.eq(_pos(cl1c5)), nc1_6.eq(_pos(-cl1c5)), gt6.eq(cl1c5 > keep5),
            c6["quota"].eq(e_quota5), c6["resync"].eq(resync5), c6["cl1c"].eq(cl1c5),
            c6["a_infl"].eq(a_infl5), c6["pcl"].eq(pcl5), c6["ncl"].eq(ncl5), er6.eq(er5),
        ]

        # e6. Credit beyond the containers still expected (the queue ran dry) is
        # released; an overrun that left more debt took backlog no grant covered.
        keep6 = Signal(range(K * G + 1))
        m.d.comb += keep6.eq(c6["a_infl"] * G)
        cut = Signal()
        m.d.comb += cut.eq(slast[6] & gt6)
        cl2_7 = Signal(signed(cw))
        pcl2_7 = Signal(cw)
        debt_inc7 = Signal(signed(cw + 1))
        c7 = {k: Signal.like(v, name=f"e7_{k}") for k, v in c6.items()}
        dem_r7 = Signal(16)
        dem_nz7, bl_nz7, er_dem_nz7 = Signal(), Signal(), Signal()
        rc_keep7 = Signal(2)
        m.d.sync += rc_keep7.eq(rc_keep6)
        er7 = Signal(slot_l)
        m.d.sync += [cl2_7.eq(Mux(cut, keep6, c6["cl1c"])), pcl2_7.eq(Mux(cut, keep6, pc1_6)),
                     debt_inc7.eq(nc1_6 - c6["ncl"]), dem_r7.eq(dem_r6), er7.eq(er6),
                     dem_nz7.eq(dem_nz6), bl_nz7.eq(bl_nz6), er_dem_nz7.eq(er_dem_nz6)]
        m.d.sync += [c7[k].eq(v) for k, v in c6.items()]

        # e7. The new word.
        e_new = Signal(slot_l)
        e_rel = Signal(cw)
        m.d.comb += e_new.eq(er7)
        dem_a = Signal(16)
        m.d.comb += dem_a.eq(Mux(debt_inc7 > 0,
                                 Mux(er7.demand > debt_inc7, er7.demand - debt_inc7, 0),
                                 er7.demand))
        with m.Switch(ekind[7]):
            with m.Case(OP_REQ):
                m.d.comb += [e_new.tc.eq(sreq[7].tc), e_new.tenant.eq(sreq[7].tenant),
                             e_new.src_node.eq(sreq[7].src_node), e_new.dgsq.eq(sreq[7].dgsq),
                             e_new.rc.eq(Mux(ehit[7], rc_keep7, 0))]
                with m.If(~ehit[7]):
                    m.d.comb += [e_new.demand.eq(sreq[7].backlog), e_new.inflight.eq(0),
                                 e_new.cleft.eq(0), e_new.gseq.eq(sreq[7].seq),
                                 e_new.quota.eq(c7["quota"])]
                with m.Else():
                    m.d.comb += e_new.demand.eq(dem_r7)
                    with m.If(c7["resync"]):
                        # A REQUEST acknowledging fewer grants than can be in flight:
                        # GRANTs were lost or the queue is new; resynchronise and
                        # forget the debt (containers may come that it would have paid).
                        m.d.comb += [e_new.gseq.eq(sreq[7].seq), e_new.cleft.eq(c7["pcl"])]
            with m.Case(OP_ARR):
                m.d.comb += [e_new.cleft.eq(cl2_7), e_new.inflight.eq(c7["a_infl"]),
                             e_new.demand.eq(dem_a), e_rel.eq(c7["pcl"] - pcl2_7)]
                with m.If(slast[7] & (er7.rc != 3)):
                    m.d.comb += e_new.rc.eq(er7.rc + 1)
            with m.Case(OP_EXP):
                with m.If(xlive[7]):
                    m.d.comb += [e_new.cleft.eq(0), e_new.inflight.eq(0), e_rel.eq(c7["pcl"])]
        # Whether the new word has demand, per case, from flags formed a stage ahead.
        e_dem_n = Signal()
        with m.Switch(ekind[7]):
            with m.Case(OP_REQ):
                m.d.comb += e_dem_n.eq(Mux(ehit[7], dem_nz7, bl_nz7))
            with m.Case(OP_ARR):
                m.d.comb += e_dem_n.eq(Mux(debt_inc7 > 0, er7.demand > debt_inc7, er_dem_nz7))
            with m.Default():
                m.d.comb += e_dem_n.eq(er_dem_nz7)
        ew8 = Signal(slot_l)
        e_rel8 = Signal(cw)
        e_dem8, e_infl8, e_lt8 = Signal(), Signal(), Signal()
        m.d.sync += [ew8.eq(e_new), e_rel8.eq(e_rel), e_dem8.eq(e_dem_n),
                     e_infl8.eq(e_new.inflight != 0), e_lt8.eq(e_new.inflight < K)]
        with m.If(ev[PE - 1] & (ekind[PE] == OP_EXP) & xlive[8]):
            m.d.sync += self.stat_lease_expired.eq(self.stat_lease_expired + 1)

        # e8. Write-back.
        e_wb = Signal()
        m.d.comb += e_wb.eq(ev[PE - 1])
        m.d.comb += [ram_e.w_en.eq(e_wb), ram_e.w_addr.eq(eidx[PE]), ram_e.w_data.eq(ew8)]

        # ---- Both lanes' write-backs: credit released, per-slot flags ------------------
        m.d.comb += sub.eq(Mux(g_wb, g_rel6, 0) + Mux(e_wb, e_rel8, 0))
        e_live = Signal()
        e_dem = Signal()
        m.d.comb += [e_dem.eq(e_dem8), e_live.eq(e_dem8 | e_infl8)]
        e_restart = Signal()
        m.d.comb += e_restart.eq((ekind[PE] != OP_REQ) | ~ehit[PE])
        e_was_live = Signal()
        m.d.comb += e_was_live.eq(_and_or(eoh[PE - 1], valid))
        g_last = goh[PG - 1]
        e_last = eoh[PE - 1]
        for i in range(n):
            with m.If(g_wb & g_last[i]):
                m.d.sync += [elig[i].eq(g_elig6),
                             inflnz[i].eq(g_infl6), lvt[i].eq(0)]
                m.d.comb += [qlast_n[i].eq(gw6.quota == 1), w1_n[i].eq(g_w1[6])]
            with m.If(e_wb & e_last[i]):
                m.d.sync += [valid[i].eq(e_live), elig[i].eq(e_dem & e_lt8),
                             inflnz[i].eq(e_infl8), lvt[i].eq(1)]
                with m.If(ekind[PE] == OP_REQ):
                    m.d.sync += tc_oh[i].eq(1 << ew8.tc)
                    with m.If(~ehit[PE]):
                        m.d.sync += inq[i].eq(1)
                        m.d.comb += [fresh_n[i].eq(0), qlast_n[i].eq(ew8.quota == 1),
                                     w1_n[i].eq(ew8.quota == 1)]
            # Lease age: restarted by progress, advanced by the lease clock while
            # containers are in flight.
            with m.If((g_wb & g_last[i] & g_idle6) | (e_wb & e_last[i] & e_restart)):
                m.d.sync += age[i].eq(0)
            with m.Elif(tick & inflnz[i] & (age[i] != AGE_MAX)):
                m.d.sync += age[i].eq(age[i] + 1)

        m.d.sync += [fresh.eq(fresh_n), w1.eq(w1_n), qlast.eq(qlast_n),
                     exh.eq((fresh_n & w1_n) | (~fresh_n & qlast_n))]

        # Live slots: a population count, registered in two steps.
        groups = [valid[g:g + 8] for g in range(0, n, 8)]
        part = [Signal(range(len(v) + 1), name=f"used_part{k}") for k, v in enumerate(groups)]
        for p_, v in zip(part, groups):
            m.d.sync += p_.eq(sum(v[j] for j in range(len(v))))
        used = Signal(SB + 1)
        m.d.sync += used.eq(sum(part))
        m.d.comb += self.slots_used.eq(used)
        return m


def _or_all(vectors, width):
    acc = Const(0, width)
    for v in vectors:
        acc = acc | v
    return acc


EXPORTS = [
    BlockSpec(
        name="grant_arbiter",
        module="gse_grant_arbiter",
        factory=GrantArbiter,
        params={"n_req": 64, "buffer_credits": 1024, "grant_credits": 64, "max_inflight": 2,
                "n_tenants": 16, "lease_cycles": 8192},
        description="GSE DGSQ grant arbiter of one egress port: strict priority across "
                    "traffic classes, weighted round-robin per tenant, credit-bounded grants",
        keep_modules=lambda **p: {"ram_g": "gse_grant_slot_ram_g",
                                  "ram_e": "gse_grant_slot_ram_e"},
        aliases=("dgsq",),
    ),
]
