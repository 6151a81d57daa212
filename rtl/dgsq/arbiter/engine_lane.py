"""The grant arbiter's engine lane: read-modify-write of a slot for the engine."""

from types import SimpleNamespace

from amaranth import Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .bits import and_or, encode, pos
from .engine import EngineOpSignature
from .occupancy import LaneStages
from .records import (
    DEBT_MAX,
    ENGINE_STAGES,
    OP_ARR,
    OP_EXP,
    OP_REQ,
    SEQ_BITS,
    VOID_BITS,
    engine_writeback,
    request_layout,
)
from .slot_store import SlotReadSignature, SlotWriteSignature

__all__ = ["EngineLane"]


class EngineLane(wiring.Component):
    """``ENGINE_STAGES`` = 8 clocks from an engine operation (``op``) to its write-back.

    e1 address; e2 the slot's word is read (``rd``), and an expiry checks that its
    slot is still expired (``expired_r``); e3..e6 arithmetic, a carry chain or two per
    stage: a REQUEST's void GRANTs (no longer in flight, their credit released) and
    demand (backlog minus the grants the source had not seen), an arrival's credit
    and containers, an expiry's write-off, a new slot's quota (the weight of its
    tenant, ``tenant`` -> ``weight``); e7 the new word; e8 write-back
    (``wr``, bank E; ``wb``: the slot's new flags and the credit released).
    ``stat_lease_expired`` counts the expiries that took effect.

    ``stages`` shows which slot each stage holds (for the masks).
    """

    def __init__(self, n, grant_credits, max_inflight, cleft_bits, word_layout):
        self.n, self.grant_credits, self.max_inflight = n, grant_credits, max_inflight
        self.cw, self.word_layout = cleft_bits, word_layout
        self.slot_bits = max(1, (n - 1).bit_length())
        super().__init__(
            {
                "op": In(EngineOpSignature(n)),
                "expired_r": In(n),
                "stages": Out(LaneStages(n, ENGINE_STAGES)),
                "rd": Out(SlotReadSignature(n, word_layout)),
                "wr": Out(SlotWriteSignature(n, word_layout)),
                "tenant": Out(12),
                "weight": In(8),
                "wb": Out(engine_writeback(n, cleft_bits)),
                "stat_lease_expired": Out(32),
            }
        )

    def elaborate(self, platform):
        m = Module()
        p = self._pipeline(m)
        s5 = self._read_and_demand(m, p)
        s7 = self._credit(m, p, s5)
        w8 = self._new_word(m, p, s7)
        self._write_back(m, p, w8)
        return m

    def _pipeline(self, m):
        """The operation's kind, hit, slot and operands, carried stage by stage; the
        expiry's still-expired check (``xlive``)."""
        SB, PE = self.slot_bits, ENGINE_STAGES
        ev, eoh, op = self.stages.v, self.stages.oh, self.op
        # e1 address; e2 words read; e3..e6 arithmetic; e7 new word; e8 write-back.
        ekind = [None] + [Signal(2, name=f"e{k}_kind") for k in range(1, PE + 1)]
        ehit = [None] + [Signal(name=f"e{k}_hit") for k in range(1, PE + 1)]
        eidx = [None] + [Signal(SB, name=f"e{k}_idx") for k in range(1, PE + 1)]
        m.d.sync += [ev[0].eq(op.go), eoh[0].eq(op.tgt), ekind[1].eq(op.kind), ehit[1].eq(op.hit)]
        m.d.sync += eidx[1].eq(encode(op.tgt, SB))  # with eoh[0] (= op.tgt, registered)
        for k in range(1, PE):
            m.d.sync += [ev[k].eq(ev[k - 1]), eoh[k].eq(eoh[k - 1])]
        for k in range(2, PE + 1):
            m.d.sync += [ekind[k].eq(ekind[k - 1]), ehit[k].eq(ehit[k - 1]), eidx[k].eq(eidx[k - 1])]
        # An expiry takes effect only if its slot is still expired, seen at stage 2 (from
        # a register a clock old): the slot is the lane's alone from its entry on, and
        # the last write-back of another operation on it was at the latest in the clock
        # of entry, so this view is exact. Progress meanwhile: the expiry is a no-op.
        xlive = [None] * (PE + 1)
        for k in range(3, PE + 1):
            xlive[k] = Signal(name=f"e{k}_xlive")
        m.d.sync += xlive[3].eq(and_or(eoh[1], self.expired_r))
        for k in range(4, PE + 1):
            m.d.sync += xlive[k].eq(xlive[k - 1])
        # The operands travel with the operation (the engine accepts the next one
        # meanwhile).
        sreq = [None] + [Signal(request_layout(), name=f"e{k}_req") for k in range(1, PE)]
        slast = [None] + [Signal(name=f"e{k}_last") for k in range(1, PE)]
        m.d.sync += [sreq[1].eq(op.req), slast[1].eq(op.last)]
        for k in range(2, PE):
            m.d.sync += [sreq[k].eq(sreq[k - 1]), slast[k].eq(slast[k - 1])]
        arr_cred1 = Signal(16)
        m.d.sync += arr_cred1.eq(op.credits)
        return SimpleNamespace(
            kind=ekind, hit=ehit, idx=eidx, xlive=xlive, req=sreq, last=slast, arr_cred1=arr_cred1
        )

    def _read_and_demand(self, m, p):
        """e2..e4: the slot's word read; a REQUEST's void GRANTs and the grants it had not
        seen (bounded by those in flight), an arrival's credit and containers, a new
        slot's quota. Returns the stage-5 registers."""
        G, K, cw, slot_l = self.grant_credits, self.max_inflight, self.cw, self.word_layout
        eoh, sreq, slast = self.stages.oh, p.req, p.last
        m.d.comb += [self.rd.addr.eq(p.idx[1]), self.rd.oh.eq(eoh[0])]
        arr_c2 = Signal(10)  # an arrival's credit units (0 for the other kinds)
        m.d.sync += arr_c2.eq(Mux(p.kind[1] != OP_ARR, 0, Mux(p.arr_cred1 > DEBT_MAX, DEBT_MAX, p.arr_cred1)))
        er3 = Signal(slot_l)
        arr_c3 = Signal(10)
        m.d.sync += [er3.eq(self.rd.data), arr_c3.eq(arr_c2)]

        # e3. REQUEST: grants it had not seen; arrival: credit after it; a new slot's quota.
        m.d.comb += self.tenant.eq(sreq[3].tenant)
        e_quota4 = Signal(8)
        unacked4 = Signal(SEQ_BITS)
        # REQUEST: void GRANTs reported since the slot's count; those newer than the
        # slot's count (a REQUEST overtaken by a later one reports none) leave flight.
        # Decided here, so that e4 has only the unseen grants' compare to do.
        dv3 = Signal(VOID_BITS)
        m.d.comb += dv3.eq(sreq[3].voids - er3.voids)
        newer3 = (dv3 != 0) & ~dv3[-1]
        newer4 = Signal()
        infl_r = Signal(range(K + 1))  # the containers in flight after the void GRANTs
        cl1_4 = Signal(signed(cw + 1))
        pcl4, ncl4 = Signal(cw), Signal(cw)
        er4 = Signal(slot_l)
        m.d.sync += [
            e_quota4.eq(self.weight),
            unacked4.eq(er3.gseq - sreq[3].seq),
            newer4.eq(newer3),
            infl_r.eq(Mux(newer3, Mux(dv3 >= er3.inflight, 0, er3.inflight - dv3), er3.inflight)),
            cl1_4.eq(er3.cleft - arr_c3),
            pcl4.eq(pos(er3.cleft)),
            ncl4.eq(pos(-er3.cleft)),
            er4.eq(er3),
        ]

        # e4. REQUEST: the void GRANTs it reports (a count newer than the slot's: a
        # REQUEST overtaken by a later one reports none) are no longer in flight; demand
        # = backlog minus the containers granted that the source had not yet seen when
        # it sent it: all of them are still in flight (a grant the source never got
        # stays there: a lost GRANT, which the REQUEST shows as more unseen grants than
        # in flight: resynchronise). Arrival: at a container's last packet that
        # container is done.
        unack_c = Signal(range(K + 1))
        m.d.comb += unack_c.eq(Mux(unacked4 > infl_r, infl_r, unacked4))
        a_infl = Signal(range(K + 1))
        m.d.comb += a_infl.eq(er4.inflight)
        with m.If(p.kind[4] == OP_REQ):
            m.d.comb += a_infl.eq(infl_r)
        with m.Elif(slast[4]):
            m.d.comb += a_infl.eq(Mux(er4.inflight == 0, 0, er4.inflight - 1))
        resync5, newer5 = Signal(), Signal()
        covered5 = Signal(range(K * G + 1))
        cl1c5 = Signal(signed(cw))
        a_infl5 = Signal(range(K + 1))
        e_quota5 = Signal(8)
        pcl5, ncl5 = Signal(cw), Signal(cw)
        er5 = Signal(slot_l)
        m.d.sync += [
            resync5.eq(unacked4 > infl_r),
            newer5.eq(newer4),
            covered5.eq(unack_c * G),
            cl1c5.eq(Mux(cl1_4 < -DEBT_MAX, -DEBT_MAX, cl1_4)),
            a_infl5.eq(a_infl),
            e_quota5.eq(e_quota4),
            pcl5.eq(pcl4),
            ncl5.eq(ncl4),
            er5.eq(er4),
        ]
        return SimpleNamespace(
            resync=resync5,
            covered=covered5,
            cl1c=cl1c5,
            a_infl=a_infl5,
            quota=e_quota5,
            pcl=pcl5,
            ncl=ncl5,
            er=er5,
            newer=newer5,
        )

    def _credit(self, m, p, s5):
        """e5, e6: the REQUEST's demand; the credit after the containers still expected
        (an arrival's last packet, or a REQUEST's void GRANTs: the rest is released) and
        the debt an overrun added. Returns the stage-7 registers."""
        G, K, cw, slot_l = self.grant_credits, self.max_inflight, self.cw, self.word_layout
        sreq, slast = p.req, p.last
        resync5, covered5, cl1c5, a_infl5 = s5.resync, s5.covered, s5.cl1c, s5.a_infl
        e_quota5, pcl5, ncl5, er5 = s5.quota, s5.pcl, s5.ncl, s5.er
        # e5.
        keep5 = Signal(range(K * G + 1))
        m.d.comb += keep5.eq(a_infl5 * G)
        dem_r6 = Signal(16)
        dem_nz6, bl_nz6, er_dem_nz6 = Signal(), Signal(), Signal()
        pc1_6, nc1_6 = Signal(cw), Signal(cw)
        gt6 = Signal()
        c6 = dict(
            newer=Signal(),
            quota=Signal(8),
            resync=Signal(),
            cl1c=Signal(signed(cw)),
            a_infl=Signal(range(K + 1)),
            pcl=Signal(cw),
            ncl=Signal(cw),
        )
        er6 = Signal(slot_l)
        m.d.sync += [
            dem_r6.eq(Mux(sreq[5].backlog > covered5, sreq[5].backlog - covered5, 0)),
            dem_nz6.eq(sreq[5].backlog > covered5),
            bl_nz6.eq(sreq[5].backlog != 0),
            er_dem_nz6.eq(er5.demand != 0),
            pc1_6.eq(pos(cl1c5)),
            nc1_6.eq(pos(-cl1c5)),
            gt6.eq(cl1c5 > keep5),
            c6["quota"].eq(e_quota5),
            c6["newer"].eq(s5.newer),
            c6["resync"].eq(resync5),
            c6["cl1c"].eq(cl1c5),
            c6["a_infl"].eq(a_infl5),
            c6["pcl"].eq(pcl5),
            c6["ncl"].eq(ncl5),
            er6.eq(er5),
        ]

        # e6. Credit beyond the containers still expected (the queue ran dry, void
        # GRANTs) is released; an overrun that left more debt took backlog no grant
        # covered.
        keep6 = Signal(range(K * G + 1))
        m.d.comb += keep6.eq(c6["a_infl"] * G)
        cut = Signal()
        m.d.comb += cut.eq(Mux(p.kind[6] == OP_REQ, gt6, slast[6] & gt6))
        cl2_7 = Signal(signed(cw))
        pcl2_7 = Signal(cw)
        debt_inc7 = Signal(signed(cw + 1))
        # the demand after the debt, demand - debt_inc, a stage ahead (one carry chain
        # more here, none but the sign and a clamp in e7)
        debt_inc6 = Signal(signed(cw + 1))
        m.d.comb += debt_inc6.eq(nc1_6 - c6["ncl"])
        dem_d7 = Signal(signed(max(17, cw + 2) + 1))
        c7 = {k: Signal.like(v, name=f"e7_{k}") for k, v in c6.items()}
        dem_r7 = Signal(16)
        dem_nz7, bl_nz7, er_dem_nz7 = Signal(), Signal(), Signal()
        er7 = Signal(slot_l)
        m.d.sync += [
            cl2_7.eq(Mux(cut, keep6, c6["cl1c"])),
            pcl2_7.eq(Mux(cut, keep6, pc1_6)),
            debt_inc7.eq(debt_inc6),
            dem_d7.eq(er6.demand - debt_inc6),
            dem_r7.eq(dem_r6),
            er7.eq(er6),
            dem_nz7.eq(dem_nz6),
            bl_nz7.eq(bl_nz6),
            er_dem_nz7.eq(er_dem_nz6),
        ]
        m.d.sync += [c7[k].eq(v) for k, v in c6.items()]
        return SimpleNamespace(
            cl2=cl2_7,
            pcl2=pcl2_7,
            debt_inc=debt_inc7,
            dem_d=dem_d7,
            c=c7,
            dem_r=dem_r7,
            dem_nz=dem_nz7,
            bl_nz=bl_nz7,
            er_dem_nz=er_dem_nz7,
            er=er7,
        )

    def _new_word(self, m, p, s7):
        """e7: the slot's new word per kind of operation, whether it has demand (from
        flags formed a stage ahead), and the credit released; registered for e8."""
        K, cw, slot_l, PE = self.max_inflight, self.cw, self.word_layout, ENGINE_STAGES
        ev, ekind, ehit, sreq, xlive = self.stages.v, p.kind, p.hit, p.req, p.xlive
        er7, c7, debt_inc7, dem_r7 = s7.er, s7.c, s7.debt_inc, s7.dem_r
        cl2_7, pcl2_7, dem_nz7, bl_nz7, er_dem_nz7 = s7.cl2, s7.pcl2, s7.dem_nz, s7.bl_nz, s7.er_dem_nz
        # e7. The new word.
        e_new = Signal(slot_l)
        e_rel = Signal(cw)
        m.d.comb += e_new.eq(er7)
        dem_a = Signal(16)
        dem_pos = s7.dem_d > 0  # = er7.demand > debt_inc7
        m.d.comb += dem_a.eq(Mux(debt_inc7 > 0, Mux(dem_pos, s7.dem_d, 0), er7.demand))
        with m.Switch(ekind[7]):
            with m.Case(OP_REQ):
                m.d.comb += [
                    e_new.tc.eq(sreq[7].tc),
                    e_new.tenant.eq(sreq[7].tenant),
                    e_new.src_node.eq(sreq[7].src_node),
                    e_new.dgsq.eq(sreq[7].dgsq),
                ]
                with m.If(~ehit[7]):
                    m.d.comb += [
                        e_new.demand.eq(sreq[7].backlog),
                        e_new.inflight.eq(0),
                        e_new.cleft.eq(0),
                        e_new.gseq.eq(sreq[7].seq),
                        e_new.quota.eq(c7["quota"]),
                        e_new.voids.eq(sreq[7].voids),
                    ]
                with m.Else():
                    m.d.comb += [
                        e_new.demand.eq(dem_r7),
                        e_new.inflight.eq(c7["a_infl"]),
                        e_new.cleft.eq(cl2_7),
                        e_rel.eq(c7["pcl"] - pcl2_7),
                    ]
                    with m.If(c7["newer"]):
                        m.d.comb += e_new.voids.eq(sreq[7].voids)
                    with m.If(c7["resync"]):
                        # A REQUEST acknowledging fewer grants than are in flight:
                        # GRANTs were lost or the queue is new; resynchronise and
                        # forget the debt (containers may come that it would have paid).
                        m.d.comb += [
                            e_new.gseq.eq(sreq[7].seq),
                            e_new.cleft.eq(pcl2_7),
                            e_new.voids.eq(sreq[7].voids),
                        ]
            with m.Case(OP_ARR):
                m.d.comb += [
                    e_new.cleft.eq(cl2_7),
                    e_new.inflight.eq(c7["a_infl"]),
                    e_new.demand.eq(dem_a),
                    e_rel.eq(c7["pcl"] - pcl2_7),
                ]
            with m.Case(OP_EXP):
                with m.If(xlive[7]):
                    m.d.comb += [e_new.cleft.eq(0), e_new.inflight.eq(0), e_rel.eq(c7["pcl"])]
        # Whether the new word has demand, per case, from flags formed a stage ahead.
        e_dem_n = Signal()
        with m.Switch(ekind[7]):
            with m.Case(OP_REQ):
                m.d.comb += e_dem_n.eq(Mux(ehit[7], dem_nz7, bl_nz7))
            with m.Case(OP_ARR):
                m.d.comb += e_dem_n.eq(Mux(debt_inc7 > 0, dem_pos, er_dem_nz7))
            with m.Default():
                m.d.comb += e_dem_n.eq(er_dem_nz7)
        ew8 = Signal(slot_l)
        e_rel8 = Signal(cw)
        e_dem8, e_infl8, e_lt8, e_void8 = Signal(), Signal(), Signal(), Signal()
        m.d.sync += [
            e_void8.eq(c7["newer"]),
            ew8.eq(e_new),
            e_rel8.eq(e_rel),
            e_dem8.eq(e_dem_n),
            e_infl8.eq(e_new.inflight != 0),
            e_lt8.eq(e_new.inflight < K),
        ]
        with m.If(ev[PE - 1] & (ekind[PE] == OP_EXP) & xlive[8]):
            m.d.sync += self.stat_lease_expired.eq(self.stat_lease_expired + 1)
        return SimpleNamespace(word=ew8, rel=e_rel8, dem=e_dem8, infl=e_infl8, lt=e_lt8, void=e_void8)

    def _write_back(self, m, p, w8):
        """e8: the new word into bank E, and the write-back record (new flags, credit
        released)."""
        PE = ENGINE_STAGES
        ev, eoh, ekind, ehit = self.stages.v, self.stages.oh, p.kind, p.hit
        ew8, e_rel8, e_dem8, e_infl8, e_lt8 = w8.word, w8.rel, w8.dem, w8.infl, w8.lt
        # e8. Write-back.
        e_wb = ev[PE - 1]
        m.d.comb += [
            self.wr.en.eq(e_wb),
            self.wr.addr.eq(p.idx[PE]),
            self.wr.oh.eq(eoh[PE - 1]),
            self.wr.data.eq(ew8),
        ]
        wb = self.wb
        m.d.comb += [
            wb.en.eq(e_wb),
            wb.oh.eq(eoh[PE - 1]),
            wb.live.eq(e_dem8 | e_infl8),
            wb.elig.eq(e_dem8 & e_lt8),
            wb.infl.eq(e_infl8),
            wb.req.eq(ekind[PE] == OP_REQ),
            wb.hit.eq(ehit[PE]),
            wb.tc.eq(ew8.tc),
            wb.q1.eq(ew8.quota == 1),
            # progress: an arrival, an expiry, a new slot, or void GRANTs reported
            wb.restart.eq((ekind[PE] != OP_REQ) | ~ehit[PE] | w8.void),
            wb.release.eq(e_rel8),
        ]
