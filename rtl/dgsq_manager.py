"""DGSQManager: the source side of DGSQ request/grant (brief section 4)."""
from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .catalog import BlockSpec
from .control_frames import ControlHeaderLayout
from .gse_header import CONTAINER_BYTES, CREDIT_UNIT_BYTES, GSEType, gse_header_layout

__all__ = ["DGSQManager", "pkt_in_layout", "pkt_out_layout", "release_layout", "GrantInLayout"]

#: The GRANT fields the manager uses (connect them by name from the decoder's output).
GrantInLayout = gse_header_layout(omit=("ver", "flags", "tc", "tenant", "dst_node", "ttl",
                                        "next_type"))


def pkt_in_layout():
    """A packet entering the VOQ buffer: its queue key and its length in bytes."""
    return data.StructLayout({"dst_node": 16, "port": 8, "tc": 3, "tenant": 12, "bytes": 16})


def pkt_out_layout(qid_bits):
    """The same packet with the dynamic queue (``qid`` = DGSQ id) it was put in."""
    return data.StructLayout({"qid": qid_bits, "bytes": 16})


def release_layout(qid_bits):
    """A release request (to the VOQ buffer) or report (from it): queue and bytes."""
    return data.StructLayout({"queue": qid_bits, "bytes": 24})


def _context_layout():
    return data.StructLayout({
        "backlog": 24,            # bytes queued in the VOQ, not yet released
        "balance": signed(24),    # credit bytes: granted minus sent (negative: overrun debt)
        "view": 16,               # the arbiter's idea of our demand, credit units
        "ack": 16,                # seq of the last GRANT received
        "have_ack": 1,
        "rel_pending": 1,         # a release is out at the VOQ buffer
        "ts_act": 16,             # coarse times of the last activity, REQUEST, GRANT
        "ts_req": 16,
        "ts_grant": 16,
    })


def _onehot_first(x):
    return x & (-x).as_unsigned()[:len(x)]


def _encode(onehot, bits):
    return Cat(Cat(onehot[i] for i in range(len(onehot)) if (i >> b) & 1).any()
               for b in range(bits))


class DGSQManager(wiring.Component):
    """Dynamic queue contexts of a source leaf and their REQUEST/GRANT handling.

    A context is keyed by (``dst_node``, ``port``, ``tc``, ``tenant``); its index is the
    DGSQ id (and the VOQ queue id). Contexts come from a pool of ``n_ctx``: a full CAM
    finds a packet's context, the lowest free one is allocated for a new key; with the
    pool exhausted ``s_pkt`` is held (lossless back-pressure) and the packet counted
    once in ``stat_pool_full``. A context is freed after ``idle_cycles`` with no
    backlog and no release out.

    REQUESTs (``m_req``, header fields for
    :class:`~opengse.rtl.control_frames.ControlFrameEncoder`, ``len`` = backlog in credit
    units, ``seq`` = seq of the last GRANT received: the acknowledgement the arbiter
    uses to avoid counting a container twice) go out when a queue becomes non-empty,
    when its backlog exceeds what the arbiter knows by a container, and every
    ``refresh_cycles`` while backlog remains and neither GRANT nor REQUEST happened.

    A GRANT (``s_grant``, decoded header fields; its ``dgsq`` is the context) adds its
    credit to the context's signed balance; a positive balance with backlog becomes a
    release request ``m_rel`` (queue, credit bytes) to the VOQ buffer, whose report
    ``s_rel_done`` (bytes actually sent) is debited from backlog and balance. Credit
    left over when the queue ran dry is discarded (never hoarded), an overrun is repaid
    from the next grant.

    Parameters: ``n_ctx`` (pool size), ``refresh_cycles``, ``idle_cycles``,
    ``container_bytes``, ``ttl`` (of REQUESTs), ``tick_shift`` (coarse time = clock
    count >> tick_shift).

    Timing: one event engine handles release reports, GRANTs, packets, REQUESTs and a
    timer sweep, one at a time in 3 clocks each (a packet per 3 clocks, more when
    outputs stall); context state is one memory of ``n_ctx`` words.
    """

    def __init__(self, n_ctx=64, refresh_cycles=8192, idle_cycles=16384,
                 container_bytes=CONTAINER_BYTES, ttl=64, tick_shift=6):
        if n_ctx < 2:
            raise ValueError("n_ctx must be at least 2")
        self.n_ctx = n_ctx
        self.tick_shift = tick_shift
        self.refresh_ticks = max(1, refresh_cycles >> tick_shift)
        self.idle_ticks = max(1, idle_cycles >> tick_shift)
        if self.refresh_ticks >= 2 ** 15 or self.idle_ticks >= 2 ** 15:
            raise ValueError("refresh/idle time too long for the 16-bit coarse clock")
        self.container_units = container_bytes // CREDIT_UNIT_BYTES
        self.ttl = ttl
        self.qid_bits = max(1, (n_ctx - 1).bit_length())
        super().__init__({
            "s_pkt": In(stream.Signature(pkt_in_layout())),
            "m_pkt": Out(stream.Signature(pkt_out_layout(self.qid_bits))),
            "m_req": Out(stream.Signature(ControlHeaderLayout)),
            "s_grant": In(stream.Signature(GrantInLayout)),
            "m_rel": Out(stream.Signature(release_layout(self.qid_bits))),
            "s_rel_done": In(stream.Signature(release_layout(self.qid_bits))),
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
            "stat_releases": Out(32),
        })
        self.valid = Signal(n_ctx)

    def elaborate(self, platform):
        m = Module()
        n = self.n_ctx
        QB = self.qid_bits
        CU = self.container_units

        # CAM keys (flip-flops: compared in parallel).
        valid = self.valid
        k_dst = [Signal(16, name=f"k_dst{i}") for i in range(n)]
        k_port = [Signal(8, name=f"k_port{i}") for i in range(n)]
        k_tc = [Signal(3, name=f"k_tc{i}") for i in range(n)]
        k_ten = [Signal(12, name=f"k_ten{i}") for i in range(n)]
        pending = Signal(n)       # a REQUEST is due

        ctx_l = _context_layout()
        m.submodules.ctx_mem = mem = Memory(shape=ctx_l, depth=n, init=[])
        rd = mem.read_port()
        wr = mem.write_port()

        tick_cnt = Signal(self.tick_shift + 1)
        now = Signal(16)
        m.d.sync += tick_cnt.eq(tick_cnt + 1)
        with m.If(tick_cnt[:self.tick_shift].all() if self.tick_shift else 1):
            m.d.sync += now.eq(now + 1)

        # Registered candidate pick for REQUEST emission (round-robin) and sweep pointer.
        rr_mask = Signal(n)
        pend_hi = pending & rr_mask
        pick_oh = Signal(n)
        m.d.sync += pick_oh.eq(Mux(pend_hi.any(), _onehot_first(pend_hi), _onehot_first(pending)))
        sweep = Signal(QB)

        # Packet lookup (registered from the stalled s_pkt payload).
        pk = self.s_pkt.payload
        match = Signal(n)
        free_oh = Signal(n)
        m.d.sync += [
            match.eq(Cat((k_dst[i] == pk.dst_node) & (k_port[i] == pk.port) & (k_tc[i] == pk.tc)
                         & (k_ten[i] == pk.tenant) for i in range(n)) & valid),
            free_oh.eq(_onehot_first(~valid)),
        ]
        match_v = Signal(n)
        m.d.comb += match_v.eq(match & valid)
        blocked = Signal()        # this packet was already counted as pool-full
        turn = Signal()           # alternate packets and REQUEST/sweep work
        # Under continuous packets the timer sweep still gets one event per 16 clocks
        # (a full pass over 64 contexts per ~1024 clocks, far below the refresh time).
        sweep_cnt = Signal(4)
        sweep_due = Signal()
        m.d.sync += sweep_cnt.eq(sweep_cnt + 1)
        with m.If(sweep_cnt == 15):
            m.d.sync += sweep_due.eq(1)
        ctl_due = Signal()
        m.d.comb += ctl_due.eq((pick_oh & pending).any() | sweep_due)

        EV_REL, EV_GRANT, EV_PKT, EV_REQ, EV_SWEEP = range(5)
        ev = Signal(3)
        q = Signal(QB)
        fresh = Signal()          # packet allocates a new context
        grant = Signal(data.StructLayout({"seq": 16, "len": 16}))   # what a GRANT needs
        rel = Signal(data.StructLayout({"bytes": 24}))
        pkt_bytes = Signal(16)

        m.d.comb += rd.addr.eq(q)

        cur = Signal(ctx_l)       # context as read (or fresh)
        m.d.comb += cur.eq(Mux(fresh, 0, rd.data))
        nxt = Signal(ctx_l)
        m.d.comb += [nxt.eq(cur), wr.addr.eq(q), wr.data.eq(nxt)]

        def units(b):
            u = (b + (CREDIT_UNIT_BYTES - 1)) >> 6
            return Mux(u > 0xFFFF, 0xFFFF, u)

        def elapsed(ts):
            return (now - ts)[:16]

        with m.FSM():
            with m.State("IDLE"):
                m.d.sync += fresh.eq(0)
                with m.If(self.s_rel_done.valid):
                    m.d.comb += self.s_rel_done.ready.eq(1)
                    m.d.sync += [ev.eq(EV_REL), rel.bytes.eq(self.s_rel_done.payload.bytes),
                                 q.eq(self.s_rel_done.payload.queue)]
                    m.next = "READ"
                with m.Elif(self.s_grant.valid):
                    m.d.comb += self.s_grant.ready.eq(1)
                    g = self.s_grant.payload
                    gq = g.dgsq[:QB]
                    ok = (g.type == GSEType.GRANT.value) & (g.dgsq < n) & valid.bit_select(gq, 1) \
                        & (Array(k_dst)[gq] == g.src_node) & (Array(k_port)[gq] == g.port)
                    with m.If(ok):
                        m.d.sync += [ev.eq(EV_GRANT), grant.seq.eq(g.seq), grant.len.eq(g.len), q.eq(gq)]
                        m.next = "READ"
                    with m.Else():
                        m.d.sync += self.stat_grant_unknown.eq(self.stat_grant_unknown + 1)
                with m.Elif(self.s_pkt.valid & (~turn | ~ctl_due)):
                    # The lookup is one clock old; a context freed since then no longer
                    # matches (masked by valid), and allocations happen only here.
                    with m.If(match_v.any()):
                        m.d.comb += self.s_pkt.ready.eq(1)
                        m.d.sync += [ev.eq(EV_PKT), q.eq(_encode(match_v, QB)), pkt_bytes.eq(pk.bytes),
                                     blocked.eq(0), turn.eq(1)]
                        m.next = "READ"
                    with m.Elif(free_oh.any()):
                        m.d.comb += self.s_pkt.ready.eq(1)
                        fq = _encode(free_oh, QB)
                        m.d.sync += [ev.eq(EV_PKT), q.eq(fq), fresh.eq(1), pkt_bytes.eq(pk.bytes),
                                     blocked.eq(0), turn.eq(1)]
                        m.d.sync += valid.bit_select(fq, 1).eq(1)
                        for i in range(n):
                            with m.If(free_oh[i]):
                                m.d.sync += [k_dst[i].eq(pk.dst_node), k_port[i].eq(pk.port),
                                             k_tc[i].eq(pk.tc), k_ten[i].eq(pk.tenant)]
                        m.d.sync += self.stat_alloc.eq(self.stat_alloc + 1)
                        m.next = "READ"
                    with m.Else():
                        with m.If(~blocked):
                            m.d.sync += [blocked.eq(1),
                                         self.stat_pool_full.eq(self.stat_pool_full + 1)]
                        m.d.sync += turn.eq(0)
                        with m.If((pick_oh & pending).any()):
                            m.d.sync += [ev.eq(EV_REQ), q.eq(_encode(pick_oh, QB))]
                            m.next = "READ"
                        with m.Else():
                            m.d.sync += [ev.eq(EV_SWEEP), q.eq(sweep), sweep_due.eq(0),
                                         sweep.eq(Mux(sweep == n - 1, 0, sweep + 1))]
                            m.next = "READ"
                with m.Elif((pick_oh & pending).any()):
                    m.d.sync += [ev.eq(EV_REQ), q.eq(_encode(pick_oh, QB)), turn.eq(0)]
                    m.next = "READ"
                with m.Else():
                    m.d.sync += [ev.eq(EV_SWEEP), q.eq(sweep), sweep_due.eq(0),
                                 sweep.eq(Mux(sweep == n - 1, 0, sweep + 1)), turn.eq(0)]
                    m.next = "READ"
            with m.State("READ"):
                # The memory read port presents context q next clock.
                m.next = "EXEC"
            with m.State("EXEC"):
                done = Signal()
                write = Signal()
                qbit = Signal(n)
                m.d.comb += qbit.eq(1 << q)
                with m.Switch(ev):
                    with m.Case(EV_PKT):
                        nb = Signal(25)
                        m.d.comb += nb.eq(cur.backlog + pkt_bytes)
                        newb = Mux(nb > 0xFFFFFF, 0xFFFFFF, nb)
                        m.d.comb += [
                            nxt.backlog.eq(newb),
                            nxt.ts_act.eq(now),
                            self.m_pkt.valid.eq(1),
                            self.m_pkt.payload.qid.eq(q),
                            self.m_pkt.payload.bytes.eq(pkt_bytes),
                        ]
                        with m.If(fresh):
                            m.d.comb += [nxt.ts_req.eq(now), nxt.ts_grant.eq(now)]
                        m.d.comb += [done.eq(self.m_pkt.ready), write.eq(self.m_pkt.ready)]
                        grow = (cur.backlog == 0) | (units(newb) >= cur.view + CU)
                        with m.If(self.m_pkt.ready & grow):
                            m.d.sync += pending.eq(pending | qbit)
                    with m.Case(EV_GRANT):
                        credit = Signal(signed(26))
                        m.d.comb += credit.eq(cur.balance + (grant.len << 6))
                        m.d.comb += [
                            nxt.ack.eq(grant.seq), nxt.have_ack.eq(1), nxt.ts_grant.eq(now),
                            nxt.view.eq(Mux(cur.view > grant.len, cur.view - grant.len, 0)),
                            nxt.balance.eq(credit),
                        ]
                        with m.If(cur.have_ack & (grant.seq != (cur.ack + 1)[:16])):
                            m.d.sync += self.stat_grant_gap.eq(self.stat_grant_gap + 1)
                        need_rel = (credit > 0) & (cur.backlog != 0) & ~cur.rel_pending
                        with m.If(need_rel):
                            m.d.comb += [
                                self.m_rel.valid.eq(1),
                                self.m_rel.payload.queue.eq(q),
                                self.m_rel.payload.bytes.eq(credit),
                                nxt.rel_pending.eq(1),
                                done.eq(self.m_rel.ready), write.eq(self.m_rel.ready),
                            ]
                            with m.If(self.m_rel.ready):
                                m.d.sync += self.stat_releases.eq(self.stat_releases + 1)
                        with m.Else():
                            m.d.comb += [done.eq(1), write.eq(1)]
                            with m.If((credit > 0) & (cur.backlog == 0)):
                                m.d.comb += nxt.balance.eq(0)
                                m.d.sync += self.stat_grant_unused.eq(self.stat_grant_unused + 1)
                        with m.If(done):
                            m.d.sync += self.stat_grants.eq(self.stat_grants + 1)
                    with m.Case(EV_REL):
                        nb = Mux(cur.backlog > rel.bytes, cur.backlog - rel.bytes, 0)
                        bal = Signal(signed(26))
                        m.d.comb += bal.eq(cur.balance - rel.bytes)
                        m.d.comb += [nxt.backlog.eq(nb), nxt.balance.eq(bal),
                                     nxt.rel_pending.eq(0), nxt.ts_act.eq(now)]
                        with m.If((bal > 0) & (nb != 0)):
                            m.d.comb += [
                                self.m_rel.valid.eq(1),
                                self.m_rel.payload.queue.eq(q),
                                self.m_rel.payload.bytes.eq(bal),
                                nxt.rel_pending.eq(1),
                                done.eq(self.m_rel.ready), write.eq(self.m_rel.ready),
                            ]
                            with m.If(self.m_rel.ready):
                                m.d.sync += self.stat_releases.eq(self.stat_releases + 1)
                        with m.Else():
                            m.d.comb += [done.eq(1), write.eq(1)]
                            with m.If(bal > 0):
                                m.d.comb += nxt.balance.eq(0)
                    with m.Case(EV_REQ):
                        with m.If(cur.rel_pending | ~valid.bit_select(q, 1)):
                            # Ask again after the release report (a fresh backlog figure).
                            m.d.comb += done.eq(1)
                            with m.If(~valid.bit_select(q, 1)):
                                m.d.sync += pending.eq(pending & ~qbit)
                        with m.Else():
                            u = units(cur.backlog)
                            r = self.m_req.payload
                            m.d.comb += [
                                self.m_req.valid.eq(1),
                                r.type.eq(GSEType.REQUEST.value),
                                r.flags.eq(0),
                                r.tc.eq(Array(k_tc)[q]),
                                r.tenant.eq(Array(k_ten)[q]),
                                r.src_node.eq(self.node_id),
                                r.dst_node.eq(Array(k_dst)[q]),
                                r.port.eq(Array(k_port)[q]),
                                r.ttl.eq(self.ttl),
                                r.seq.eq(cur.ack),
                                r.len.eq(u),
                                r.dgsq.eq(q),
                                nxt.view.eq(u), nxt.ts_req.eq(now),
                                done.eq(self.m_req.ready), write.eq(self.m_req.ready),
                            ]
                            with m.If(self.m_req.ready):
                                m.d.sync += [pending.eq(pending & ~qbit),
                                             self.stat_requests.eq(self.stat_requests + 1),
                                             rr_mask.eq(~(qbit | (qbit - 1))[:n])]
                    with m.Case(EV_SWEEP):
                        m.d.comb += done.eq(1)
                        live = valid.bit_select(q, 1)
                        with m.If(live & (cur.backlog != 0) & ~cur.rel_pending
                                  & (elapsed(cur.ts_req) >= self.refresh_ticks)
                                  & (elapsed(cur.ts_grant) >= self.refresh_ticks)
                                  & ~(pending & qbit).any()):
                            m.d.sync += [pending.eq(pending | qbit),
                                         self.stat_refresh.eq(self.stat_refresh + 1)]
                        with m.If(live & (cur.backlog == 0) & ~cur.rel_pending
                                  & (elapsed(cur.ts_act) >= self.idle_ticks)):
                            m.d.sync += [valid.bit_select(q, 1).eq(0),
                                         pending.eq(pending & ~qbit),
                                         self.stat_freed.eq(self.stat_freed + 1)]
                        with m.If(live):
                            # Keep the coarse times from aging past the 16-bit wrap.
                            m.d.comb += write.eq(1)
                            with m.If(elapsed(cur.ts_req) >= 2 ** 15):
                                m.d.comb += nxt.ts_req.eq(now - 2 ** 15)
                            with m.If(elapsed(cur.ts_grant) >= 2 ** 15):
                                m.d.comb += nxt.ts_grant.eq(now - 2 ** 15)
                            with m.If(elapsed(cur.ts_act) >= 2 ** 15):
                                m.d.comb += nxt.ts_act.eq(now - 2 ** 15)
                m.d.comb += wr.en.eq(write)
                with m.If(done):
                    m.next = "IDLE"

        used = Signal(QB + 1)
        m.d.sync += used.eq(sum(valid[i] for i in range(n)))
        m.d.comb += self.ctx_used.eq(used)
        return m


EXPORTS = [
    BlockSpec(
        name="dgsq_manager",
        module="gse_dgsq_manager",
        factory=DGSQManager,
        params={"n_ctx": 64, "refresh_cycles": 8192, "idle_cycles": 16384,
                "container_bytes": CONTAINER_BYTES, "ttl": 64, "tick_shift": 6},
        description="GSE DGSQ source-side manager: dynamic queue contexts, REQUEST "
                    "generation with refresh, GRANT handling and VOQ release requests",
        keep_modules=None,
    ),
]
