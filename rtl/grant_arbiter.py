"""GrantArbiter: the DGSQ grant scheduler of one egress port (brief section 4)."""
from amaranth import *
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from .catalog import BlockSpec
from .gse_header import CONTAINER_BYTES, CREDIT_UNIT_BYTES

__all__ = ["GrantArbiter", "request_layout", "arrival_layout", "grant_layout", "cfg_layout",
           "N_CLASSES"]

N_CLASSES = 8          # traffic classes 0..7, 7 highest
SEQ_BITS = 16
DEBT_MAX = 511         # credit units an overrun may leave as debt (clamped)


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


def _onehot_first(x):
    # Lowest set bit of x as a one-hot vector (a carry chain on ECP5).
    return x & (-x).as_unsigned()[:len(x)]


class GrantArbiter(wiring.Component):
    """Grant arbiter of one egress port: one grant decision per clock.

    Requesters occupy ``n_req`` slots allocated on demand: a REQUEST from a new
    (``src_node``, ``dgsq``) takes the lowest free slot (a full CAM over the slot keys);
    a slot is freed when it has neither demand nor a container in flight. Each grant
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

    Timing: decisions are pipelined over three stages (eligibility, class select,
    round-robin pick); a grant's own effect reaches the pick two clocks later, so the
    slots granted in the previous two clocks are masked from the pick (never a double
    grant). Requests and arrivals go through one lookup engine: 3 clocks each.
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
        n = n_req
        G = grant_credits
        K = max_inflight
        # Per-slot state (flip-flops: the pick needs all slots in parallel).
        self.valid = Signal(n)
        self.nz = Signal(n)                       # demand != 0, kept with demand
        self.inflok = Signal(n)                   # inflight < max_inflight
        self.qnz = Signal(n)                      # quota != 0
        self.ksrc = [Signal(16, name=f"ksrc{i}") for i in range(n)]
        self.kdgsq = [Signal(16, name=f"kdgsq{i}") for i in range(n)]
        self.tc_oh = [Signal(N_CLASSES, name=f"tc_oh{i}") for i in range(n)]
        self.tenant = [Signal(12, name=f"tenant{i}") for i in range(n)]
        self.demand = [Signal(16, name=f"demand{i}") for i in range(n)]
        self.inflight = [Signal(range(K + 1), name=f"inflight{i}") for i in range(n)]
        # Credit granted minus credit arrived; negative: an overrun the source repays
        # from its next grant (that grant then brings no container, or a shorter one).
        self.cw = max(K * G, DEBT_MAX).bit_length() + 2
        self.cleft = [Signal(signed(self.cw), name=f"cleft{i}") for i in range(n)]
        self.repay = [Signal(range(G + 1), name=f"repay{i}") for i in range(n)]
        self.gseq = [Signal(SEQ_BITS, name=f"gseq{i}") for i in range(n)]
        self.quota = [Signal(8, name=f"quota{i}") for i in range(n)]
        self.age = [Signal(3, name=f"age{i}") for i in range(n)]
        self.outst = Signal(range(buffer_credits + 1))
        # Decision of this clock (for formal checks).
        self.g_fire = Signal()
        self.g_sel = Signal(n)

    def elaborate(self, platform):
        m = Module()
        n, G, K = self.n_req, self.grant_credits, self.max_inflight
        BUF = self.buffer_credits
        AGE_MAX = 4

        weights = Array(Signal(8, init=1, name=f"weight{t}") for t in range(self.n_tenants))
        m.d.comb += self.s_cfg.ready.eq(1)
        with m.If(self.s_cfg.valid):
            m.d.sync += weights[self.s_cfg.payload.tenant].eq(
                Mux(self.s_cfg.payload.weight == 0, 1, self.s_cfg.payload.weight))

        def weight_of(i):
            return weights[self.tenant[i][:self.tid_bits]] if self.n_tenants > 1 else weights[0]

        # ---- Stage A: per-class eligibility vectors (registered) -------------------
        elig = Signal(n)
        m.d.comb += elig.eq(self.valid & self.nz & self.inflok)
        a_cm = [Signal(n, name=f"a_cm{c}") for c in range(N_CLASSES)]
        a_cq = [Signal(n, name=f"a_cq{c}") for c in range(N_CLASSES)]
        a_any = Signal(N_CLASSES)
        a_anyq = Signal(N_CLASSES)
        for c in range(N_CLASSES):
            col = Cat(self.tc_oh[i][c] for i in range(n))
            m.d.sync += [
                a_cm[c].eq(elig & col),
                a_cq[c].eq(elig & col & self.qnz),
                a_any[c].eq((elig & col).any()),
                a_anyq[c].eq((elig & col & self.qnz).any()),
            ]

        # ---- Stage B: top class, its candidate vector (registered) -----------------
        b_m = Signal(n)
        b_top = Signal(range(N_CLASSES))
        b_reset = Signal()          # no candidate in the top class has quota: new round
        b_valid = Signal()
        top_c = Signal(range(N_CLASSES))
        for c in range(N_CLASSES):
            with m.If(a_any[c]):
                m.d.comb += top_c.eq(c)
        m.d.sync += [
            b_top.eq(top_c),
            b_valid.eq(a_any.any()),
            b_reset.eq(~a_anyq.bit_select(top_c, 1)),
            b_m.eq(Mux(a_anyq.bit_select(top_c, 1),
                       Array(a_cq)[top_c], Array(a_cm)[top_c])),
        ]

        # ---- Stage C: round-robin pick, with pending-grant bookkeeping --------------
        prev1 = Signal(n)           # slot granted one clock ago
        prev2 = Signal(n)           # two clocks ago
        op_mask = Signal(n)         # slot the lookup engine is updating
        ptr = Signal(n)             # slots above the last-but-one grant (thermometer)
        reset_hold = Signal(2)      # ignore stale round resets for two clocks
        cand = Signal(n)
        m.d.comb += cand.eq(b_m & ~prev1 & ~prev2 & ~op_mask)
        hi = Signal(n)
        m.d.comb += hi.eq(cand & ptr)
        oh_hi = Signal(n)
        oh_all = Signal(n)
        m.d.comb += [oh_hi.eq(_onehot_first(hi)), oh_all.eq(_onehot_first(cand))]
        sel = Signal(n)
        m.d.comb += sel.eq(Mux(hi.any(), oh_hi, oh_all))

        room = Signal(16)
        m.d.sync += room.eq(Mux(self.egress_room > BUF, BUF, self.egress_room))
        room_ok = Signal()
        m.d.comb += room_ok.eq(self.outst + G <= room)

        out_fifo = m.submodules.out_fifo = fifo.SyncFIFOBuffered(
            width=len(self.m_grant.payload.as_value()), depth=4)
        o_valid = Signal()          # a grant in the output stage
        fifo_ok = Signal()
        # Room for the grant in the output stage and this one: never a write when full.
        m.d.comb += fifo_ok.eq(out_fifo.level + o_valid < out_fifo.depth)

        g_fire = self.g_fire
        m.d.comb += [g_fire.eq(b_valid & cand.any() & room_ok & fifo_ok),
                     self.g_sel.eq(Mux(g_fire, sel, 0))]
        do_reset = Signal()
        m.d.comb += do_reset.eq(g_fire & b_reset & (reset_hold == 0))
        m.d.sync += [prev1.eq(self.g_sel), prev2.eq(prev1)]
        m.d.sync += reset_hold.eq(Mux(do_reset, 2, Mux(reset_hold != 0, reset_hold - 1, 0)))
        g_d = Signal(n)
        m.d.sync += g_d.eq(self.g_sel)
        with m.If(g_d.any()):
            # Thermometer of the slots above the grant (the pick is one clock behind).
            m.d.sync += ptr.eq(~(g_d | (g_d - 1)[:n]))

        with m.If(b_valid & cand.any() & ~room_ok):
            m.d.sync += self.stat_room_stall.eq(self.stat_room_stall + 1)
        with m.If(g_fire):
            m.d.sync += self.stat_grants.eq(self.stat_grants + 1)

        # ---- Output stage: read the granted slot's fields into the FIFO ------------
        o_slot = Signal(self.slot_bits)
        m.d.sync += o_valid.eq(g_fire)
        m.d.sync += o_slot.eq(_encode(sel, self.slot_bits))
        g = Signal(grant_layout(self.slot_bits))
        m.d.comb += [
            g.slot.eq(o_slot),
            g.src_node.eq(Array(self.ksrc)[o_slot]),
            g.dgsq.eq(Array(self.kdgsq)[o_slot]),
            g.tenant.eq(Array(self.tenant)[o_slot]),
            g.seq.eq(Array(self.gseq)[o_slot]),
            g.credit.eq(G),
        ]
        tc_o = Array(self.tc_oh)[o_slot]
        for c in range(N_CLASSES):
            with m.If(tc_o[c]):
                m.d.comb += g.tc.eq(c)
        m.d.comb += [
            out_fifo.w_data.eq(g),
            out_fifo.w_en.eq(o_valid),
            self.m_grant.payload.eq(out_fifo.r_data),
            self.m_grant.valid.eq(out_fifo.r_rdy),
            out_fifo.r_en.eq(self.m_grant.ready),
        ]

        # ---- Lease clock -------------------------------------------------------------
        tick_period = max(1, self.lease_cycles // AGE_MAX)
        tick_cnt = Signal(range(tick_period))
        tick = Signal()
        m.d.comb += tick.eq(tick_cnt == tick_period - 1)
        m.d.sync += tick_cnt.eq(Mux(tick, 0, tick_cnt + 1))

        # ---- Lookup engine: REQUESTs, arrivals and lease expiries, one at a time -----
        # ACCEPT: compare the offered key with every slot (registered match vector);
        # READ: choose the target slot and read its fields; APPLY: write it back.
        # The target is masked from the pick from READ until APPLY's effect has
        # reached stage C (two clocks after APPLY).
        ST_ACCEPT, ST_READ, ST_APPLY = 0, 1, 2
        eng = Signal(2)
        expired = Signal(n)
        m.d.comb += expired.eq(Cat((self.age[i] == AGE_MAX) & (self.inflight[i] != 0)
                                   for i in range(n)) & self.valid)
        exp_oh = Signal(n)
        m.d.sync += exp_oh.eq(_onehot_first(expired))

        op_kind = Signal(2)         # 0 request, 1 arrival, 2 expiry
        turn = Signal(2)            # whose turn it is among the three
        op_req = Signal(request_layout())
        op_arr_credits = Signal(16)   # (src_node, dgsq) are matched when latched
        op_arr_last = Signal()
        match = Signal(n)
        free_oh = Signal(n)
        tgt = Signal(n)
        hit = Signal()
        last_tgt = Signal(n)
        post = Signal(2)
        r_infl = Signal(range(K + 1))
        r_cleft = Signal(signed(self.cw))
        r_gseq = Signal(SEQ_BITS)
        r_demand = Signal(16)

        def keycmp(src, dg):
            return Cat((self.ksrc[i] == src) & (self.kdgsq[i] == dg) for i in range(n)) & self.valid

        m.d.sync += post.eq(Mux(post != 0, post - 1, 0))
        m.d.comb += op_mask.eq(Mux(post != 0, last_tgt, 0))
        apply = Signal()
        m.d.comb += apply.eq(eng == ST_APPLY)
        with m.Switch(eng):
            with m.Case(ST_ACCEPT):
                m.d.sync += free_oh.eq(_onehot_first(~self.valid))
                # Round-robin among arrivals, REQUESTs and expiries: none starves.
                want = Cat(self.s_req.valid, self.s_arr.valid, (exp_oh & expired).any())
                choice = Signal(2)
                m.d.comb += choice.eq(3)
                for first in range(3):
                    with m.If(turn == first):
                        for k in reversed([(first + j) % 3 for j in range(3)]):
                            with m.If(want[k]):
                                m.d.comb += choice.eq(k)
                with m.If(choice != 3):
                    m.d.sync += [eng.eq(ST_READ), op_kind.eq(choice),
                                 turn.eq(Mux(choice == 2, 0, choice + 1))]
                with m.Switch(choice):
                    with m.Case(1):
                        m.d.comb += self.s_arr.ready.eq(1)
                        m.d.sync += [op_arr_credits.eq(self.s_arr.payload.credits),
                                     op_arr_last.eq(self.s_arr.payload.last),
                                     match.eq(keycmp(self.s_arr.payload.src_node,
                                                     self.s_arr.payload.dgsq))]
                    with m.Case(0):
                        m.d.comb += self.s_req.ready.eq(1)
                        m.d.sync += [op_req.eq(self.s_req.payload),
                                     match.eq(keycmp(self.s_req.payload.src_node,
                                                     self.s_req.payload.dgsq))]
                    with m.Case(2):
                        m.d.sync += match.eq(exp_oh & expired)
            with m.Case(ST_READ):
                m.d.comb += op_mask.eq(Mux(post != 0, last_tgt, 0) | match
                                       | Mux(op_kind == 0, free_oh, 0))
                m.d.sync += [
                    tgt.eq(Mux(match.any(), match,
                               Mux((op_kind == 0) & (op_req.backlog != 0), free_oh, 0))),
                    hit.eq(match.any()),
                    r_infl.eq(_and_or(match, self.inflight)),
                    r_cleft.eq(_and_or(match, self.cleft)),
                    r_gseq.eq(_and_or(match, self.gseq)),
                    r_demand.eq(_and_or(match, self.demand)),
                    eng.eq(ST_APPLY),
                ]
            with m.Case(ST_APPLY):
                m.d.comb += op_mask.eq(tgt)
                m.d.sync += [last_tgt.eq(tgt), post.eq(2), eng.eq(ST_ACCEPT)]

        # REQUEST: demand = backlog minus the containers granted that the source had
        # not yet seen when it sent the REQUEST (its acknowledged seq), at most the
        # containers still in flight (a lost GRANT stops counting once its lease ends).
        unacked = Signal(SEQ_BITS)
        m.d.comb += unacked.eq(r_gseq - op_req.seq)
        unack_c = Signal(range(K + 1))
        m.d.comb += unack_c.eq(Mux(unacked > r_infl, r_infl, unacked))
        covered = unack_c * G       # an expression: its low bits are constant when G is 2**k
        req_demand = Signal(16)
        m.d.comb += req_demand.eq(Mux(op_req.backlog > covered, op_req.backlog - covered, 0))

        # Arrival: the credit drops by what arrived. At a container's last packet that
        # container is done; containers are still expected only for grants whose credit
        # an overrun has not already used up; credit beyond those (the queue ran dry)
        # is released.
        cw = self.cw
        arr_c = Signal(10)
        m.d.comb += arr_c.eq(Mux(op_arr_credits > DEBT_MAX, DEBT_MAX, op_arr_credits))
        cl1 = Signal(signed(cw + 1))
        m.d.comb += cl1.eq(r_cleft - arr_c)
        cl1c = Signal(signed(cw))
        m.d.comb += cl1c.eq(Mux(cl1 < -DEBT_MAX, -DEBT_MAX, cl1))
        a_infl = Signal(range(K + 1))
        m.d.comb += a_infl.eq(r_infl)
        with m.If(op_arr_last):
            m.d.comb += a_infl.eq(Mux((r_infl == 0) | (cl1c <= 0), 0, r_infl - 1))
        keep_after = Signal(range(K * G + 1))
        m.d.comb += keep_after.eq(a_infl * G)
        cl2 = Signal(signed(cw))
        m.d.comb += cl2.eq(Mux(op_arr_last & (cl1c > keep_after), keep_after, cl1c))

        def pos(x):
            return Mux(x > 0, x, 0)

        # An overrun took more of the source's backlog than the grants said: lower
        # the demand by the new debt, so no grant is issued for data already sent.
        debt_inc = Signal(signed(cw + 1))
        m.d.comb += debt_inc.eq(pos(-cl2) - pos(-r_cleft))
        arr_demand = Signal(16)
        m.d.comb += arr_demand.eq(Mux(debt_inc > 0, Mux(r_demand > debt_inc, r_demand - debt_inc, 0),
                                      r_demand))
        # A REQUEST acknowledging fewer grants than could be in flight: GRANTs were
        # lost or the source's queue is a new one; resynchronise and forget the debt
        # (the safe side: containers may come that the debt would have paid).
        resync = Signal()
        m.d.comb += resync.eq(unacked > r_infl)

        release = Signal(range(K * G + 1))
        with m.If(apply & hit):
            with m.Switch(op_kind):
                with m.Case(1):
                    m.d.comb += release.eq(pos(r_cleft) - pos(cl2))
                with m.Case(2):
                    m.d.comb += release.eq(pos(r_cleft))

        # A grant that repays debt: that part of its credit is no longer outstanding
        # (released one clock after the grant; outstanding is over-counted meanwhile).
        repay_rel = Signal(range(G + 1))
        m.d.comb += repay_rel.eq(_and_or(prev1, self.repay))

        # Outstanding credit = sum of the slots' credit in flight.
        add = Mux(g_fire, G, 0)
        sub = release + repay_rel
        m.d.sync += self.outst.eq(Mux(self.outst + add > sub, self.outst + add - sub, 0))
        m.d.comb += self.outstanding.eq(self.outst)

        with m.If(apply):
            with m.Switch(op_kind):
                with m.Case(0):
                    m.d.sync += self.stat_requests.eq(self.stat_requests + 1)
                    with m.If(~hit & (op_req.backlog != 0) & (tgt == 0)):
                        m.d.sync += self.stat_req_no_slot.eq(self.stat_req_no_slot + 1)
                with m.Case(1):
                    with m.If(~hit):
                        m.d.sync += self.stat_arr_unknown.eq(self.stat_arr_unknown + 1)
                with m.Case(2):
                    m.d.sync += self.stat_lease_expired.eq(self.stat_lease_expired + 1)

        # ---- Per-slot state updates --------------------------------------------------
        req_tc_oh = Signal(N_CLASSES)
        m.d.comb += req_tc_oh.eq(1 << op_req.tc)
        req_weight = Signal(8)
        m.d.comb += req_weight.eq(weights[op_req.tenant[:self.tid_bits]] if self.n_tenants > 1
                                  else weights[0])
        reset_col = Signal(n)
        m.d.comb += reset_col.eq(Cat(self.tc_oh[i].bit_select(b_top, 1) for i in range(n)))
        for i in range(n):
            w_i = weight_of(i)
            with m.If(apply & tgt[i]):
                with m.Switch(op_kind):
                    with m.Case(0):
                        m.d.sync += [
                            self.valid[i].eq((req_demand != 0) | (r_infl != 0)),
                            self.demand[i].eq(req_demand),
                            self.nz[i].eq(req_demand != 0),
                            self.ksrc[i].eq(op_req.src_node),
                            self.kdgsq[i].eq(op_req.dgsq),
                            self.tc_oh[i].eq(req_tc_oh),
                            self.tenant[i].eq(op_req.tenant),
                        ]
                        with m.If(~hit):
                            m.d.sync += [self.gseq[i].eq(op_req.seq), self.inflight[i].eq(0),
                                         self.inflok[i].eq(1), self.cleft[i].eq(0)]
                        with m.Elif(resync):
                            m.d.sync += [self.gseq[i].eq(op_req.seq), self.cleft[i].eq(pos(r_cleft))]
                    with m.Case(1):
                        m.d.sync += [
                            self.cleft[i].eq(cl2),
                            self.inflight[i].eq(a_infl),
                            self.inflok[i].eq(a_infl < K),
                            self.demand[i].eq(arr_demand),
                            self.nz[i].eq(arr_demand != 0),
                            self.valid[i].eq((arr_demand != 0) | (a_infl != 0)),
                        ]
                    with m.Case(2):
                        m.d.sync += [
                            self.cleft[i].eq(0),
                            self.inflight[i].eq(0),
                            self.inflok[i].eq(1),
                            self.valid[i].eq(r_demand != 0),
                        ]
            with m.Elif(self.g_sel[i]):
                brings = self.cleft[i] > -G      # this grant's container will come
                # Credit that repays overrun debt takes no backlog.
                repay_now = Mux(self.cleft[i] >= 0, 0, Mux(self.cleft[i] < -G, G, -self.cleft[i]))
                eff = Signal(range(G + 1), name=f"eff{i}")
                m.d.comb += eff.eq(G - repay_now)
                m.d.sync += [
                    self.demand[i].eq(Mux(self.demand[i] > eff, self.demand[i] - eff, 0)),
                    self.nz[i].eq(self.demand[i] > eff),
                    self.inflight[i].eq(Mux(brings, self.inflight[i] + 1, self.inflight[i])),
                    self.inflok[i].eq(Mux(brings, self.inflight[i] + 1 < K, self.inflok[i])),
                    self.cleft[i].eq(self.cleft[i] + G),
                    self.repay[i].eq(Mux(self.cleft[i] >= 0, 0,
                                         Mux(self.cleft[i] < -G, G, -self.cleft[i]))),
                    self.gseq[i].eq(self.gseq[i] + 1),
                ]
            # Quota: a fresh slot gets its weight; a grant spends one; a new round
            # refills the whole class.
            with m.If(apply & tgt[i] & (op_kind == 0) & ~hit):
                m.d.sync += [self.quota[i].eq(req_weight), self.qnz[i].eq(1)]
            with m.Elif(do_reset & reset_col[i]):
                q = Mux(self.g_sel[i], w_i - 1, w_i)
                m.d.sync += [self.quota[i].eq(q), self.qnz[i].eq(q != 0)]
            with m.Elif(self.g_sel[i] & self.qnz[i]):
                m.d.sync += [self.quota[i].eq(self.quota[i] - 1), self.qnz[i].eq(self.quota[i] != 1)]
            # Lease age: restarted by progress, advanced by the lease clock while
            # containers are in flight.
            with m.If(apply & tgt[i] & ((op_kind != 0) | ~hit)):
                m.d.sync += self.age[i].eq(0)
            with m.Elif(self.g_sel[i] & (self.inflight[i] == 0)):
                m.d.sync += self.age[i].eq(0)
            with m.Elif(tick & (self.inflight[i] != 0) & (self.age[i] != AGE_MAX)):
                m.d.sync += self.age[i].eq(self.age[i] + 1)

        used = Signal(self.slot_bits + 1)
        m.d.sync += used.eq(sum(self.valid[i] for i in range(n)))
        m.d.comb += self.slots_used.eq(used)
        return m


def _and_or(onehot, values):
    """The value selected by a one-hot vector (zero when none): an AND-OR mux."""
    width = max(len(v) for v in values)
    acc = Const(0, width)
    for i, v in enumerate(values):
        acc = acc | Mux(onehot[i], v, 0)
    return acc


def _encode(onehot, bits):
    return Cat(Cat(onehot[i] for i in range(len(onehot)) if (i >> b) & 1).any()
               for b in range(bits))


EXPORTS = [
    BlockSpec(
        name="grant_arbiter",
        module="gse_grant_arbiter",
        factory=GrantArbiter,
        params={"n_req": 64, "buffer_credits": 1024, "grant_credits": 64, "max_inflight": 2,
                "n_tenants": 16, "lease_cycles": 8192},
        description="GSE DGSQ grant arbiter of one egress port: strict priority across "
                    "traffic classes, weighted round-robin per tenant, credit-bounded grants",
        bench=lambda **kw: __import__("opengse.sim.bench_dgsq", fromlist=["bench"]).bench(**kw),
        aliases=("dgsq",),
    ),
]
