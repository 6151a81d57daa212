"""The grant arbiter's engine: REQUESTs, arrivals and lease expiries, one at a time."""

from types import SimpleNamespace

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .bits import onehot_first
from .occupancy import LaneStages
from .records import ENGINE_STAGES, GRANT_STAGES, OP_ARR, OP_EXP, OP_REQ, arrival_layout, request_layout

__all__ = ["Engine", "EngineOpSignature"]


class EngineOpSignature(wiring.Signature):
    """An operation entering the engine lane, engine side: ``go`` (it enters this
    clock), its slot ``tgt`` (one-hot), ``kind`` (``OP_REQ``/``OP_ARR``/``OP_EXP``),
    ``hit`` (the slot held its key already), and its operands: the REQUEST ``req``,
    or the arrival's ``credits`` and ``last``. The operands are valid with ``go``."""

    def __init__(self, n):
        super().__init__(
            {
                "go": Out(1),
                "tgt": Out(n),
                "kind": Out(2),
                "hit": Out(1),
                "req": Out(request_layout()),
                "credits": Out(16),
                "last": Out(1),
            }
        )


class Engine(wiring.Component):
    """Accept -> A (CAM compare) -> B (target) -> E (enter the engine lane).

    Inputs: ``s_req`` (REQUESTs), ``s_arr`` (merged arrivals, from the
    :class:`~.arrivals.ArrivalAccumulator`), the expiry candidate (``exp_oh``,
    ``exp_any``, :class:`~.lease.LeaseTimers`), ``valid`` (live slots), the CAM's
    compare of ``key``/``key_n`` (``cam_lo``, ``cam_hi``, :class:`~.cam.KeyCAM`), stage 1
    of both lanes (``g``, ``e``) and ``busy_next`` (:class:`~.occupancy.LaneOccupancy`).

    Outputs: ``op`` (:class:`EngineOpSignature`, to the engine lane); ``e_v``, ``e_tgt``
    and ``b_cands`` (the targets to mask from the pick); ``claim_en`` (E holds a REQUEST
    with a slot: its key and live bit are written, every clock in E); ``a_busy`` (A
    holds an operation); counters ``stat_requests``, ``stat_req_no_slot``,
    ``stat_arr_unknown``.

    Timing: accept takes an operation only when A is empty (round-robin among REQUEST,
    arrival, expiry); A compares the key with every slot (registered); B takes two
    clocks (its CAM hit is registered in the first) and chooses the target: the hit,
    a REQUEST ahead's slot for the same key (forwarded), or the lowest free slot for a
    new key with backlog; E waits until its target has no operation in a lane (checked
    a clock ahead) and enters the engine lane. One operation per 2 clocks at most.
    """

    def __init__(self, n):
        self.n = n
        super().__init__(
            {
                "s_req": In(stream.Signature(request_layout())),
                "s_arr": In(stream.Signature(arrival_layout())),
                "exp_oh": In(n),
                "exp_any": In(1),
                "valid": In(n),
                "key": Out(32),
                "key_n": Out(32),
                "cam_lo": In(n),
                "cam_hi": In(n),
                "g": In(LaneStages(n, GRANT_STAGES)),
                "e": In(LaneStages(n, ENGINE_STAGES)),
                "busy_next": In(n),
                "op": Out(EngineOpSignature(n)),
                "e_v": Out(1),
                "e_tgt": Out(n),
                "b_cands": Out(n),
                "claim_en": Out(1),
                "a_busy": Out(1),
                "stat_requests": Out(32),
                "stat_req_no_slot": Out(32),
                "stat_arr_unknown": Out(32),
            }
        )

    def elaborate(self, platform):
        m = Module()
        s = self._pipeline(m)
        self._accept(m, s)
        self._stage_a(m, s)
        self._stage_b(m, s)
        self._counters(m, s)
        return m

    def _pipeline(self, m):
        """The stages' registers and their movement (``a_move``, ``b_move``, ``e_done``),
        E's entry into the engine lane (``go``) and its check a clock ahead (``e_ok``)."""
        n = self.n
        # Four stages, one operation each: accept (operands latched into A), A (CAM
        # compare, registered), B (target chosen), E (waits until its target has no
        # operation in either lane, checked a clock ahead, then enters the engine
        # lane). An operation takes at least 2 clocks in E: one operation per 2 clocks.
        turn = Signal(2)
        a_v, a_kind = self.a_busy, Signal(2)
        a_isexp = Signal()  # a_kind == OP_EXP
        a_req = Signal(request_layout())
        a_cred, a_last = Signal(16), Signal()
        a_exp = Signal(n)
        e_v, e_kind, e_has, e_hit_r = self.e_v, Signal(2), Signal(), Signal()
        e_req = self.op.req
        e_tgt = self.e_tgt
        e_armed, e_ok = Signal(), Signal()
        eng_go = self.op.go
        # (An expiry checks in its lane that its slot is still expired.)
        m.d.comb += eng_go.eq(e_v & e_has & e_armed & e_ok)
        m.d.comb += [self.op.tgt.eq(e_tgt), self.op.kind.eq(e_kind), self.op.hit.eq(e_hit_r)]
        e_done = Signal()
        m.d.comb += e_done.eq(e_v & (eng_go | ~e_has))
        b_v, b_kind = Signal(), Signal(2)
        b_req = Signal(request_layout())
        b_cred, b_last = Signal(16), Signal()
        alloc_ok = Signal()  # B holds a REQUEST with backlog (may take a free slot)
        b_cam = Signal(n)  # per slot: the key's CAM hit (or the expiry's slot)
        b_kind_now = Signal(2)  # B's kind in every clock of B (first included)
        a_key, a_key_n = self.key, self.key_n  # (src_node, dgsq) of a REQUEST or arrival; ~
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
        # or ``busy_next``), with the stage-1 valids applied after the AND-OR trees (they
        # fan out widely).
        e_in_g1, e_in_e1, e_in_r = Signal(), Signal(), Signal()
        m.d.comb += [
            e_in_g1.eq((e_tgt & self.g.oh[0]).any() & self.g.v[0]),
            e_in_e1.eq((e_tgt & self.e.oh[0]).any() & self.e.v[0]),
            e_in_r.eq((e_tgt & self.busy_next).any()),
        ]
        m.d.sync += [e_armed.eq(e_v & ~e_done), e_ok.eq(~(e_in_g1 | e_in_e1 | e_in_r))]
        return SimpleNamespace(
            turn=turn,
            a_v=a_v,
            a_kind=a_kind,
            a_isexp=a_isexp,
            a_req=a_req,
            a_cred=a_cred,
            a_last=a_last,
            a_exp=a_exp,
            a_key=a_key,
            a_key_n=a_key_n,
            a_same=a_same,
            a_move=a_move,
            d_same=d_same,
            b_v=b_v,
            b_kind=b_kind,
            b_req=b_req,
            b_cred=b_cred,
            b_last=b_last,
            alloc_ok=alloc_ok,
            b_cam=b_cam,
            b_kind_now=b_kind_now,
            b_same=b_same,
            b_same_now=b_same_now,
            b_move=b_move,
            e_v=e_v,
            e_kind=e_kind,
            e_has=e_has,
            e_hit_r=e_hit_r,
            e_req=e_req,
            e_tgt=e_tgt,
            e_armed=e_armed,
            e_done=e_done,
        )

    def _accept(self, m, s):
        """Accept: round-robin among REQUESTs, arrivals and expiries, into A when A is
        empty."""
        turn, a_v, a_kind, a_isexp, a_req = s.turn, s.a_v, s.a_kind, s.a_isexp, s.a_req
        a_cred, a_last, a_exp, a_key, a_key_n = s.a_cred, s.a_last, s.a_exp, s.a_key, s.a_key_n
        a_same, a_move, b_v, b_kind_now = s.a_same, s.a_move, s.b_v, s.b_kind_now
        e_v, e_kind, e_done = s.e_v, s.e_kind, s.e_done
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
        m.d.sync += exp_ok.eq(
            self.exp_any
            & (x_hold == 0)
            & ~(a_v & (a_kind == OP_EXP))
            & ~(b_v & (b_kind_now == OP_EXP))
            & ~(e_v & (e_kind == OP_EXP))
        )
        # A takes an operation only when empty (the engine takes one per 2 clocks anyway):
        # the accept decision then depends on no pipeline movement (short paths).
        acc = self.s_arr.payload
        req = self.s_req.payload
        want = Cat(self.s_req.valid, self.s_arr.valid, exp_ok)
        choice = Signal(2)
        m.d.comb += choice.eq(3)
        for first in range(3):
            with m.If(turn == first):
                for k in reversed([(first + j) % 3 for j in range(3)]):
                    with m.If(want[k]):
                        m.d.comb += choice.eq(k)
        with m.If(a_move):
            m.d.sync += a_v.eq(0)
        with m.If(~a_v & (choice != 3)):
            m.d.sync += [
                a_v.eq(1),
                a_kind.eq(choice),
                a_isexp.eq(choice == OP_EXP),
                turn.eq(Mux(choice == 2, 0, choice + 1)),
            ]
            with m.Switch(choice):
                with m.Case(OP_REQ):
                    m.d.comb += self.s_req.ready.eq(1)
                    m.d.sync += [
                        a_req.eq(req),
                        a_same.eq(Cat(req.src_node, req.dgsq) == a_key),
                        a_key.eq(Cat(req.src_node, req.dgsq)),
                        a_key_n.eq(~Cat(req.src_node, req.dgsq)),
                    ]
                with m.Case(OP_ARR):
                    m.d.comb += self.s_arr.ready.eq(1)
                    m.d.sync += [
                        a_cred.eq(acc.credits),
                        a_last.eq(acc.last),
                        a_same.eq(Cat(acc.src_node, acc.dgsq) == a_key),
                        a_key.eq(Cat(acc.src_node, acc.dgsq)),
                        a_key_n.eq(~Cat(acc.src_node, acc.dgsq)),
                    ]
                with m.Case(OP_EXP):
                    m.d.sync += a_exp.eq(self.exp_oh)

    def _stage_a(self, m, s):
        """A: the CAM compare and A's operands, registered every clock; B's registers
        loaded from them in B's first clock."""
        n = self.n
        a_kind, a_isexp, a_req, a_cred, a_last = s.a_kind, s.a_isexp, s.a_req, s.a_cred, s.a_last
        a_exp, a_same, a_move, d_same, b_v = s.a_exp, s.a_same, s.a_move, s.d_same, s.b_v
        b_kind, b_req, b_cred, b_last, b_same = s.b_kind, s.b_req, s.b_cred, s.b_last, s.b_same
        alloc_ok, b_cam, b_same_now = s.alloc_ok, s.b_cam, s.b_same_now
        b_kind_now, b_move = s.b_kind_now, s.b_move
        # A: the key is compared with every live slot (the CAM, registered here). A's
        # operands and CAM compare are registered every clock (no enable): in B's
        # first clock (``b_first``) they describe the operation that moved in, and B
        # keeps them from then on. So B's wide registers load on a registered enable,
        # not on the move decision (which fans out late).
        d_kind = Signal(2)
        d_req = Signal(request_layout())
        d_cred, d_last = Signal(16), Signal()
        d_lo, d_hi = Signal(n), Signal(n)  # per slot: src_node equal; dgsq equal and live
        m.d.sync += [
            d_kind.eq(a_kind),
            d_req.eq(a_req),
            d_cred.eq(a_cred),
            d_last.eq(a_last),
            d_same.eq(a_same),
            d_lo.eq(Mux(a_isexp, a_exp, self.cam_lo)),
            d_hi.eq(Mux(a_isexp, ~0, self.cam_hi)),
        ]
        b_first = Signal()
        m.d.sync += b_first.eq(a_move)
        with m.If(a_move):
            m.d.sync += b_v.eq(1)
        with m.Elif(b_move):
            m.d.sync += b_v.eq(0)
        b_cam_r = Signal(n)
        with m.If(b_first):
            m.d.sync += [
                b_kind.eq(d_kind),
                b_req.eq(d_req),
                b_cred.eq(d_cred),
                b_last.eq(d_last),
                b_same.eq(d_same),
                b_cam_r.eq(d_lo & d_hi),
                alloc_ok.eq((d_kind == OP_REQ) & (d_req.backlog != 0)),
            ]
        m.d.comb += [
            b_cam.eq(Mux(b_first, d_lo & d_hi, b_cam_r)),
            b_same_now.eq(Mux(b_first, d_same, b_same)),
            b_kind_now.eq(Mux(b_first, d_kind, b_kind)),
        ]
        s.d_lo, s.d_hi, s.b_first = d_lo, d_hi, b_first

    def _stage_b(self, m, s):
        """B: the target (the CAM hit, a forwarded key's slot, or the lowest free slot),
        B's candidates for the pick's mask, and the move into E."""
        n = self.n
        valid = self.valid
        a_move, b_v, b_kind, b_req, b_cred = s.a_move, s.b_v, s.b_kind, s.b_req, s.b_cred
        b_last, alloc_ok, b_cam, b_kind_now = s.b_last, s.alloc_ok, s.b_cam, s.b_kind_now
        b_same_now, b_move, b_first, d_lo, d_hi = s.b_same_now, s.b_move, s.b_first, s.d_lo, s.d_hi
        e_v, e_kind, e_has, e_hit_r, e_req = s.e_v, s.e_kind, s.e_has, s.e_hit_r, s.e_req
        e_tgt, e_armed, e_done = s.e_tgt, s.e_armed, s.e_done
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
        with m.If(fwd_la):  # (only read while b_fwd_v: no move conditions here)
            m.d.sync += b_fwd_tgt.eq(al_tgt)
        b_hit0 = Signal()
        b_match0 = Signal(n)
        b_cam_any = Signal()
        with m.If(b_first):  # (read from B's second clock on)
            m.d.sync += b_cam_any.eq((d_lo & d_hi).any())
        m.d.comb += [b_hit0.eq(b_fwd_v | b_cam_any), b_match0.eq(Mux(b_fwd_v, b_fwd_tgt, b_cam))]
        hit = Signal()
        m.d.comb += hit.eq(fwd_la | b_hit0)
        # The lowest free slot, registered: a clock old, which is safe because only E
        # takes slots and B cannot move in the clock after E was filled (E takes at
        # least two clocks), by when E's target is excluded here.
        free_mask = Signal(n)
        m.d.comb += free_mask.eq(~valid & ~Mux(e_v, e_tgt, 0))
        free, free_any = Signal(n), Signal()
        m.d.sync += [free.eq(onehot_first(free_mask)), free_any.eq(free_mask.any())]
        tgt = Signal(n)
        m.d.comb += tgt.eq(Mux(fwd_la, al_tgt, Mux(b_hit0, b_match0, Mux(alloc_ok, free, 0))))
        # B's possible targets (a superset, from registers) are masked while it may move.
        m.d.comb += self.b_cands.eq(
            Mux(b_v, b_cam | free | Mux(b_fwd_v, b_fwd_tgt, 0) | Mux(al_v, al_tgt, 0), 0)
        )
        with m.If(b_move):
            m.d.sync += [
                e_v.eq(1),
                e_kind.eq(b_kind),
                e_req.eq(b_req),
                self.op.credits.eq(b_cred),
                self.op.last.eq(b_last),
                e_tgt.eq(tgt),
                e_has.eq(hit | (alloc_ok & free_any)),
                e_hit_r.eq(hit),
            ]
        with m.Elif(e_done):
            m.d.sync += e_v.eq(0)

    def _counters(self, m, s):
        """E: the counters of operations that end here, and the claim of a new slot."""
        e_v, e_has, e_kind, e_req, e_done = s.e_v, s.e_has, s.e_kind, s.e_req, s.e_done
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
        # A REQUEST's slot is live (and its key in the CAM) from its first clock in E on.
        m.d.comb += self.claim_en.eq(e_v & e_has & (e_kind == OP_REQ))
