"""GrantArbiter: the DGSQ grant scheduler of one egress port (brief section 4), the top
that joins its parts."""

from amaranth import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out, flipped

from ...header.gse_header import CONTAINER_BYTES, CREDIT_UNIT_BYTES
from .arrivals import ArrivalAccumulator
from .cam import KeyCAM
from .credit import CreditGate
from .engine import Engine
from .engine_lane import EngineLane
from .grant_lane import GrantLane
from .grant_output import GrantOutput
from .lease import LeaseTimers
from .occupancy import LaneOccupancy
from .pick import Pick
from .records import (
    DEBT_MAX,
    ENGINE_STAGES,
    GRANT_STAGES,
    arrival_layout,
    cfg_layout,
    grant_layout,
    request_layout,
    slot_layout,
)
from .slot_flags import SlotFlags
from .slot_store import SlotStore
from .weights import WeightTable

__all__ = ["GrantArbiter"]


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

    * ``s_req`` (:func:`~opengse.rtl.interfaces.request_record_layout`): decoded REQUESTs.
    * ``s_arr`` (:func:`~opengse.rtl.interfaces.arrival_layout`): arrivals of granted
      data, per packet.
    * ``s_cfg`` (:func:`~.records.cfg_layout`): weight writes, always ready.
    * ``m_grant`` (:func:`~opengse.rtl.interfaces.grant_record_layout`): one GRANT per
      decision; ``seq`` counts the grants of that slot (gaps show the source a lost
      GRANT).
    * ``egress_room``: free space of the egress buffer in credit units.
    * ``outstanding``, ``slots_used`` and ``stat_*`` counters (see docs/dgsq.md).

    Parts (one file each in this package; docs/dgsq.md has the details): the per-slot
    flip-flops the pick needs for all slots at once (``flags``: live, eligible, class,
    in-round, fresh, last-quota; ``cam``: the keys; ``lease``: the ages); the rest of a
    slot's state is one word in the ``slot_store`` (two block-RAM banks, kept modules
    ``gse_grant_slot_ram_g`` / ``_e``, with a live-value table). The ``pick``
    (stages A, B, C1, C2) decides a grant per clock under the ``credit`` gate; the
    **grant lane** (``GRANT_STAGES`` = 6 clocks) read-modify-writes the granted slot,
    writing bank G, and sends the GRANT into the ``grant_output`` FIFO (8 entries, 3
    clocks after the decision); the ``engine`` (REQUESTs, arrival reports merged by the
    ``arrivals`` accumulator, lease expiries: accept -> CAM compare -> target -> enter,
    one operation per 2 clocks) feeds the **engine lane** (``ENGINE_STAGES`` = 8
    clocks), writing bank E. ``occupancy`` ORs the lanes' stages into the pick's mask
    and the engine's wait: a slot with an operation in a lane is masked from the pick
    and waited for by the engine, so no slot ever has two operations in flight
    (formally checked). So: one decision per clock while each half of the top class has
    at least 4 eligible slots; a single requester is granted at most every 8 clocks.
    """

    def __init__(
        self,
        n_req=64,
        buffer_credits=1024,
        grant_credits=CONTAINER_BYTES // CREDIT_UNIT_BYTES,
        max_inflight=2,
        n_tenants=16,
        lease_cycles=8192,
    ):
        if n_req < 2:
            raise ValueError("n_req must be at least 2")
        if n_tenants < 1 or n_tenants & (n_tenants - 1):
            raise ValueError("n_tenants must be a power of two")
        if not 1 <= grant_credits <= buffer_credits < 2**16:
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
        super().__init__(
            {
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
            }
        )
        n, K, G = n_req, max_inflight, grant_credits
        self.cw = cw = max(K * G, DEBT_MAX).bit_length() + 2
        self.slot_l = slot_l = slot_layout(max(1, K.bit_length()), cw)
        # The parts (built here so that their signals can be named below).
        self.weights = WeightTable(n_tenants)
        self.flags = SlotFlags(n, G, cw)
        self.cam = KeyCAM(n)
        self.lease = LeaseTimers(n, lease_cycles, G, cw)
        self.slot_store = SlotStore(n, slot_l)
        self.occupancy = LaneOccupancy(n, GRANT_STAGES, ENGINE_STAGES)
        self.pick = Pick(n)
        self.credit = CreditGate(buffer_credits, G, K, cw, n)
        self.grant_lane = GrantLane(n, G, K, cw, slot_l)
        self.grant_output = GrantOutput(self.slot_bits)
        self.arrivals = ArrivalAccumulator()
        self.engine = Engine(n)
        self.engine_lane = EngineLane(n, G, K, cw, slot_l)
        # Visible to the formal checks (the arbiter property of gse formal).
        self.valid = self.flags.valid
        self.outst = self.credit.outst  # counted (one clock behind)
        self.outst_now = self.credit.outst_now  # incl. last clock's grant
        self.g_fire = self.pick.fire  # a grant decided this clock
        self.g_sel = self.pick.sel  # its slot (one-hot)
        gl = self.grant_lane
        self.chk_grant = gl.chk_grant  # stage 3 reads a grant's slot word
        self.chk_live = gl.chk_live  # ... its slot is live
        self.chk_demand = gl.chk_demand  # ... its demand before the grant
        self.chk_inflight = gl.chk_inflight
        self.gv = gl.stages.v  # grant lane: stage k+1 holds a grant
        self.goh = [gl.stages.oh[k] for k in range(GRANT_STAGES)]
        self.ev = self.engine_lane.stages.v  # engine lane
        self.eoh = [self.engine_lane.stages.oh[k] for k in range(ENGINE_STAGES)]
        #: (valid, slot one-hot) of every stage of both lanes
        self.pipe = [(self.gv[k], self.goh[k]) for k in range(GRANT_STAGES)] + [
            (self.ev[k], self.eoh[k]) for k in range(ENGINE_STAGES)
        ]

    def elaborate(self, platform):
        m = Module()
        parts = (
            "weights",
            "flags",
            "cam",
            "lease",
            "slot_store",
            "occupancy",
            "pick",
            "credit",
            "grant_lane",
            "grant_output",
            "arrivals",
            "engine",
            "engine_lane",
        )
        for name in parts:
            m.submodules[name] = getattr(self, name)
        weights, flags, cam, lease = self.weights, self.flags, self.cam, self.lease
        store, occ, pick, credit = self.slot_store, self.occupancy, self.pick, self.credit
        glane, gout, arr, eng, elane = (
            self.grant_lane,
            self.grant_output,
            self.arrivals,
            self.engine,
            self.engine_lane,
        )

        # Streams: the block's ports and the records passed between parts.
        wiring.connect(m, flipped(self.s_cfg), weights.s_cfg)
        wiring.connect(m, flipped(self.s_req), eng.s_req)
        wiring.connect(m, flipped(self.s_arr), arr.s_arr)
        wiring.connect(m, arr.m_arr, eng.s_arr)
        wiring.connect(m, glane.m_grant, gout.s_grant)
        wiring.connect(m, gout.m_grant, flipped(self.m_grant))
        # The slot store's ports, the lanes' stages and write-backs, the engine's op.
        wiring.connect(m, glane.rd, store.g_rd)
        wiring.connect(m, glane.wr, store.g_wr)
        wiring.connect(m, elane.rd, store.e_rd)
        wiring.connect(m, elane.wr, store.e_wr)
        wiring.connect(m, glane.stages, occ.g, eng.g)
        wiring.connect(m, elane.stages, occ.e, eng.e)
        wiring.connect(m, glane.wb, flags.g_wb, lease.g_wb, credit.g_wb)
        wiring.connect(m, elane.wb, flags.e_wb, lease.e_wb, credit.e_wb)
        wiring.connect(m, eng.op, elane.op)

        m.d.comb += [
            # Weight lookups of the lanes.
            weights.g_tenant.eq(glane.tenant),
            glane.weight.eq(weights.g_weight),
            glane.weight_is_1.eq(weights.g_weight_is_1),
            weights.e_tenant.eq(elane.tenant),
            elane.weight.eq(weights.e_weight),
            # The pick: flags, mask, credit gate.
            pick.valid.eq(flags.valid),
            pick.elig.eq(flags.elig),
            pick.inq.eq(flags.inq),
            pick.exh.eq(flags.exh),
            pick.tc_oh.eq(flags.tc_oh),
            pick.mask_pre.eq(occ.mask_pre),
            pick.dec_ok.eq(credit.dec_ok),
            pick.room_ok.eq(credit.room_ok),
            credit.egress_room.eq(self.egress_room),
            credit.fired.eq(glane.stages.v[0]),
            credit.class_any.eq(pick.class_any),
            credit.fifo_room.eq(gout.fifo_room),
            gout.reserve.eq(glane.stages.v[0]),
            # The grant lane.
            glane.fire.eq(pick.fire),
            glane.sel.eq(pick.sel),
            glane.idx.eq(pick.idx),
            glane.exh.eq(flags.exh),
            glane.fresh.eq(flags.fresh),
            glane.valid.eq(flags.valid),
            # The pick's round bookkeeping and the engine's claims, into the flags.
            flags.new_round.eq(pick.new_round),
            flags.round_slots.eq(pick.round_slots),
            flags.picked.eq(glane.stages.v[0]),
            flags.picked_oh.eq(glane.stages.oh[0]),
            flags.claim_en.eq(eng.claim_en),
            flags.claim_oh.eq(eng.e_tgt),
            # The engine, its CAM and the lease timers.
            cam.wr_en.eq(eng.claim_en),
            cam.wr_oh.eq(eng.e_tgt),
            cam.wr_src.eq(eng.op.req.src_node),
            cam.wr_dgsq.eq(eng.op.req.dgsq),
            cam.key.eq(eng.key),
            cam.key_n.eq(eng.key_n),
            cam.valid.eq(flags.valid),
            eng.cam_lo.eq(cam.lo),
            eng.cam_hi.eq(cam.hi),
            eng.valid.eq(flags.valid),
            eng.exp_oh.eq(lease.exp_oh),
            eng.exp_any.eq(lease.exp_any),
            eng.busy_next.eq(occ.busy_next),
            arr.engine_busy.eq(eng.a_busy),
            occ.e_v.eq(eng.e_v),
            occ.e_tgt.eq(eng.e_tgt),
            occ.b_cands.eq(eng.b_cands),
            lease.valid.eq(flags.valid),
            lease.inflnz.eq(flags.inflnz),
            lease.busy.eq(occ.busy),
            elane.expired_r.eq(lease.expired_r),
            # Outputs.
            self.outstanding.eq(credit.outst_now),
            self.slots_used.eq(flags.slots_used),
            self.stat_grants.eq(pick.stat_grants),
            self.stat_room_stall.eq(pick.stat_room_stall),
            self.stat_requests.eq(eng.stat_requests),
            self.stat_req_no_slot.eq(eng.stat_req_no_slot),
            self.stat_arr_unknown.eq(eng.stat_arr_unknown),
            self.stat_lease_expired.eq(elane.stat_lease_expired),
        ]
        return m
