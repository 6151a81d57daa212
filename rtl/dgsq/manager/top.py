"""DGSQManager: the source side of DGSQ request/grant (brief section 4), as a top of parts.

The parts, each a component of its own file in this package: :class:`ContextCAM`
(context_cam.py: key CAM, pool, allocator), :class:`EventEngine` (event_engine.py: stage
sequencer and ACCEPT), :class:`ContextCalc` (context_calc.py: CALC), :class:`ContextWrite`
(context_write.py: WRITE, the outputs), :class:`RequestScheduler` (request_scheduler.py:
REQUEST FIFO, pending bits, timer sweep, coarse clock), :class:`ManagerCounters`
(counters.py) and the context memory (:class:`~opengse.rtl.lib.sram.VOQRam`, kept as
``gse_dgsq_ctx_ram``).
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ... import interfaces
from ...catalog import BlockSpec
from ...header.gse_header import CONTAINER_BYTES, CREDIT_UNIT_BYTES
from ...lib.sram import VOQRam
from .context_cam import ContextCAM
from .context_calc import ContextCalc
from .context_write import ContextWrite
from .counters import COUNTERS, ManagerCounters
from .event_engine import EventEngine
from .layouts import CREDIT_BITS, context_layout
from .request_scheduler import RequestScheduler

__all__ = ["DGSQManager", "EXPORTS"]


class DGSQManager(wiring.Component):
    """Dynamic queue contexts of a source leaf and their REQUEST/GRANT handling.

    A context is keyed by (``dst_node``, ``port``, ``tc``, ``tenant``); its index is the
    DGSQ id (and the VOQ queue id). Contexts come from a pool of ``n_ctx``: a full CAM
    finds a packet's context, the lowest free one is allocated for a new key; with the
    pool exhausted ``s_pkt`` is held (lossless back-pressure) and the packet counted
    once in ``stat_pool_full``. A context is freed after ``idle_cycles`` with no
    backlog and no release out.

    Interface (the records of :mod:`opengse.rtl.interfaces`): ``s_pkt``
    (``packet_descriptor``: key, ``bytes``) in; ``m_pkt`` (``queued_packet``:
    ``queue`` = the context, ``tenant`` = the low log2(``n_tenants``) bits of the
    packet's tenant id, ``bytes``) out, for the VOQ buffer's enqueue; ``m_req``
    (``control_header``) out; ``s_grant`` (``grant_in``) in; ``m_rel``
    (``container_release``: ``queue``, ``credit`` bytes, the context's ``dst_node``) out;
    ``s_rel_done`` (``release_report``: ``queue``, ``bytes`` = credit used; its ``pkts``
    is ignored) in; ``node_id`` (this leaf) in; ``ctx_used`` and the ``stat_*``
    counters (:data:`~.counters.COUNTERS`) out.

    REQUESTs (``m_req``, header fields for
    :class:`~opengse.rtl.header.control_frames.ControlFrameEncoder`, ``len`` = backlog in credit
    units, ``seq`` = seq of the last GRANT received: the acknowledgement the arbiter
    uses to avoid counting a container twice) go out when a queue becomes non-empty,
    when its backlog exceeds what the arbiter knows by a container, and every
    ``refresh_cycles`` while backlog remains and neither GRANT nor REQUEST happened.
    Contexts with a REQUEST due wait in a FIFO of context ids (served in order); one
    whose release is out waits for the release report instead (its backlog figure is
    then exact) and re-enters the FIFO with it.

    Credit is counted in whole credit units (64 B) per packet, as the egress reports
    arrivals: a packet adds its length rounded up to a multiple of 64 to the backlog
    (so REQUEST ``len`` = backlog / 64 exactly), and the VOQ buffer (``credit_unit`` =
    64) reports each release as the credit it used, the sum of the rounded lengths.

    A GRANT (``s_grant``, decoded header fields; its ``dgsq`` is the context) adds its
    credit to the context's signed balance; a positive balance with backlog becomes a
    release request ``m_rel`` (queue, credit bytes, destination) to the VOQ buffer
    (through the container framing), whose report
    ``s_rel_done`` (credit used) is debited from backlog and balance. One GRANT
    forms one container: a GRANT that comes while a release is out keeps its credit
    apart until the report, and credit a container left unused is dropped then (the
    arbiter releases it at the container's last packet); each report starts at most
    one container's credit, so GRANTs held meanwhile go out one container each, one
    per report. Credit left over when the
    queue ran dry is discarded (never hoarded), an overrun is repaid from the next
    grant.

    Parameters: ``n_ctx`` (pool size), ``refresh_cycles``, ``idle_cycles``,
    ``container_bytes``, ``ttl`` (of REQUESTs), ``tick_shift`` (coarse time = clock
    count >> tick_shift), ``n_tenants`` (the VOQ buffer's tenant classes: a power of two
    >= 2), ``request_low_water`` (bytes; None: a REQUEST whenever the backlog exceeds
    the arbiter's view by a container. Set: such a REQUEST only while the view is below
    the low water, and one more when a GRANT takes the view below it with the backlog a
    container above; at saturation that is one REQUEST per (backlog - low water) of
    grants instead of one per container. The view leaves out what was granted, so the
    low water must only exceed the credit the arbiter can grant in a REQUEST's flight:
    the leaf uses 3 containers).

    Timing: one event engine handles release reports, GRANTs, packets, REQUESTs and a
    timer sweep, one at a time in 3 clocks each: ACCEPT (pick the event from
    registered candidates; its context id addresses the memory), CALC (memory read
    data -> adders and comparators only, all registered), WRITE (decisions from
    registered results: outputs valid, context write-back); the effects on the flag
    vectors, the REQUEST FIFO and the counters are registered and applied in the
    next clock. So at most one packet per 3 clocks (one per 6 while REQUEST/sweep
    work alternates with packets; a packet after one that took a new context waits
    a clock more; longer while an output stalls); ``m_pkt``/``m_req``/``m_rel`` are
    valid in WRITE, 2 clocks after the input was accepted. The CAM compare is
    registered, the packet's candidate context (hit, or the lowest free) registered
    once more. The context memory holds 187-bit words (the key included); CAM keys,
    ``valid`` and pending-REQUEST bits are flip-flops; the REQUEST FIFO is ``n_ctx``
    ids deep.
    """

    def __init__(
        self,
        n_ctx=64,
        refresh_cycles=8192,
        idle_cycles=16384,
        container_bytes=CONTAINER_BYTES,
        ttl=64,
        tick_shift=6,
        n_tenants=16,
        request_low_water=None,
    ):
        if n_ctx < 2:
            raise ValueError("n_ctx must be at least 2")
        if n_tenants < 2 or n_tenants & (n_tenants - 1):
            raise ValueError("n_tenants must be a power of two, at least 2")
        self.tenant_bits = (n_tenants - 1).bit_length()
        if container_bytes < CREDIT_UNIT_BYTES:
            raise ValueError("container_bytes must be at least one credit unit")
        self.n_ctx = n_ctx
        self.tick_shift = tick_shift
        self.refresh_ticks = max(1, refresh_cycles >> tick_shift)
        self.idle_ticks = max(1, idle_cycles >> tick_shift)
        if self.refresh_ticks >= 2**15 or self.idle_ticks >= 2**15:
            raise ValueError("refresh/idle time too long for the 16-bit coarse clock")
        self.container_units = container_bytes // CREDIT_UNIT_BYTES
        if request_low_water is not None and not 0 < request_low_water < (1 << 16) * CREDIT_UNIT_BYTES:
            raise ValueError("request_low_water must be None or 1 .. 4 MiB (bytes)")
        self.request_low_water = request_low_water
        self._low_units = None if request_low_water is None else -(-request_low_water // CREDIT_UNIT_BYTES)
        self.ttl = ttl
        self.qid_bits = max(1, (n_ctx - 1).bit_length())
        super().__init__(
            {
                "s_pkt": In(interfaces.packet_descriptor()),
                "m_pkt": Out(interfaces.queued_packet(self.qid_bits, self.tenant_bits)),
                "m_req": Out(interfaces.control_header()),
                "s_grant": In(interfaces.grant_in()),
                "m_rel": Out(interfaces.container_release(self.qid_bits, CREDIT_BITS)),
                "s_rel_done": In(interfaces.release_report(self.qid_bits, CREDIT_BITS)),
                "node_id": In(16),
                "ctx_used": Out(self.qid_bits + 1),
                "stat_pool_full": Out(32),
                "stat_alloc": Out(32),
                "stat_freed": Out(32),
                "stat_requests": Out(32),
                "stat_refresh": Out(32),
                "stat_grants": Out(32),
                "stat_grant_unknown": Out(32),
                "stat_grant_gap": Out(32),
                "stat_grant_unused": Out(32),
                "stat_grant_void": Out(32),
                "stat_releases": Out(32),
            }
        )

    def elaborate(self, platform):
        m = Module()
        n = self.n_ctx
        # Its own module (kept as gse_dgsq_ctx_ram: an ASIC flow swaps it for an SRAM).
        m.submodules.ctx_ram = mem = VOQRam(context_layout().size, n)
        rd_addr, rd_data = mem.read(0)
        m.submodules.cam = cam = ContextCAM(n)
        m.submodules.sched = sched = RequestScheduler(n, self.tick_shift)
        m.submodules.engine = eng = EventEngine(n)
        m.submodules.calc = calc = ContextCalc(n, self.container_units)
        m.submodules.write = wr = ContextWrite(
            n,
            self.refresh_ticks,
            self.idle_ticks,
            self.ttl,
            self.tenant_bits,
            low_water=self._low_units,
            container_units=self.container_units,
        )
        m.submodules.counters = cnt = ManagerCounters()

        # Inputs: the engine takes them; the CAM looks up the packet on offer.
        wiring.connect(m, wiring.flipped(self.s_rel_done), eng.s_rel_done)
        wiring.connect(m, wiring.flipped(self.s_grant), eng.s_grant)
        wiring.connect(m, wiring.flipped(self.s_pkt), eng.s_pkt)
        pk = self.s_pkt.payload
        m.d.comb += [
            cam.key.dst_node.eq(pk.dst_node),
            cam.key.port.eq(pk.port),
            cam.key.tc.eq(pk.tc),
            cam.key.tenant.eq(pk.tenant),
            cam.offered.eq(self.s_pkt.valid & ~self.s_pkt.ready),
            eng.pk_hit.eq(cam.hit),
            eng.pk_new.eq(cam.new),
            eng.pk_q.eq(cam.q),
            eng.pk_current.eq(cam.current),
            eng.pk_go.eq(cam.go),
            cam.accept.eq(eng.st_idle),
            cam.alloc.eq(eng.st_calc & eng.fresh),
            cam.alloc_key.eq(eng.op.pkt_key),
            cam.free.eq(wr.fx_free),
            cam.free_oh.eq(calc.res.qoh),
            self.ctx_used.eq(cam.used),
        ]
        # Control events: the REQUEST FIFO and the sweep.
        m.d.comb += [
            eng.ctl_due.eq(sched.ctl_due),
            eng.ctl_sweep.eq(sched.ctl_sweep),
            eng.ctl_q.eq(sched.ctl_q),
            sched.ctl_take.eq(eng.ctl_take),
            sched.set_pend.eq(wr.fx_set_pend),
            sched.clr_pend.eq(wr.fx_clr_pend),
            sched.q.eq(eng.q),
            sched.qoh.eq(calc.res.qoh),
        ]
        # ACCEPT addresses the memory, CALC reads it, WRITE writes it back.
        m.d.comb += [
            rd_addr.eq(eng.q_next),
            calc.en.eq(eng.st_calc),
            calc.cur.eq(rd_data),
            calc.op.eq(eng.op),
            calc.now.eq(sched.now),
            calc.valid.eq(cam.valid),
            calc.pending.eq(sched.pending),
            calc.q_sel.eq(eng.q_sel),
            calc.q_dec.eq(eng.q_dec),
            calc.fresh.eq(eng.fresh),
            wr.en.eq(eng.st_write),
            wr.kind.eq(eng.kind),
            wr.q.eq(eng.q),
            wr.fresh.eq(eng.fresh),
            wr.op.eq(eng.op),
            wr.pkt_bytes.eq(eng.pkt_bytes),
            wr.c.eq(calc.c),
            wr.res.eq(calc.res),
            wr.now.eq(sched.now),
            wr.node_id.eq(self.node_id),
            eng.done.eq(wr.done),
            mem.w_addr.eq(eng.q),
            mem.w_data.eq(wr.w_data),
            mem.w_en.eq(wr.w_en),
        ]
        wiring.connect(m, wr.m_pkt, wiring.flipped(self.m_pkt))
        wiring.connect(m, wr.m_req, wiring.flipped(self.m_req))
        wiring.connect(m, wr.m_rel, wiring.flipped(self.m_rel))

        # Counters.
        strobes = {
            "pool_full": eng.inc_pool_full,
            "alloc": eng.inc_alloc,
            "freed": wr.fx_free,
            "requests": wr.inc_requests,
            "refresh": wr.fx_refresh,
            "grants": wr.fx_grant,
            "grant_unknown": wr.fx_unknown,
            "grant_gap": wr.fx_gap,
            "grant_unused": wr.fx_unused,
            "grant_void": wr.fx_voids,
            "releases": wr.inc_releases,
        }
        for name in COUNTERS:
            m.d.comb += [
                getattr(cnt, f"inc_{name}").eq(strobes[name]),
                getattr(self, f"stat_{name}").eq(getattr(cnt, f"stat_{name}")),
            ]
        return m


EXPORTS = [
    BlockSpec(
        name="dgsq_manager",
        module="gse_dgsq_manager",
        factory=DGSQManager,
        params={
            "n_ctx": 64,
            "refresh_cycles": 8192,
            "idle_cycles": 16384,
            "container_bytes": CONTAINER_BYTES,
            "ttl": 64,
            "tick_shift": 6,
            "n_tenants": 16,
        },
        description="GSE DGSQ source-side manager: dynamic queue contexts, REQUEST "
        "generation with refresh, GRANT handling and VOQ release requests",
        keep_modules=lambda **p: {"ctx_ram": "gse_dgsq_ctx_ram"},
    )
]
