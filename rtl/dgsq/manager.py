"""DGSQManager: the source side of DGSQ request/grant (brief section 4)."""
from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from ..catalog import BlockSpec
from ..header.control_frames import ControlHeaderLayout
from ..lib.sram import VOQRam
from ..header.gse_header import CONTAINER_BYTES, CREDIT_UNIT_BYTES, GSEType, gse_header_layout

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
        "backlog": 24,            # credit bytes queued in the VOQ (each packet rounded up
                                  # to whole credit units), not yet released
        "balance": signed(24),    # credit bytes: granted minus sent (negative: overrun debt)
        # GRANT credit that came while a release was out (its own container follows that
        # release's report), and balance + pg kept alongside (one carry chain each).
        "pg": 24,
        "bal_pg": signed(24),
        "view": 16,               # the arbiter's idea of our demand, credit units
        "ack": 16,                # seq of the last GRANT received
        "have_ack": 1,
        "rel_pending": 1,         # a release is out at the VOQ buffer
        "req_wait": 1,            # a REQUEST due waits for that release's report
        "nz": 1,                  # backlog != 0 (kept so no zero test sits on the read data)
        "ts_act": 16,             # coarse times of the last activity, REQUEST, GRANT
        "ts_req": 16,
        "ts_grant": 16,
        # The key again (the CAM copy is in flip-flops): REQUEST fields and the GRANT
        # check come from the memory word instead of a 64:1 multiplexer.
        "dst_node": 16,
        "port": 8,
        "tc": 3,
        "tenant": 12,
    })


def _onehot_first(x):
    return x & (-x).as_unsigned()[:len(x)]


def _encode(onehot, bits):
    return Cat(Cat(onehot[i] for i in range(len(onehot)) if (i >> b) & 1).any()
               for b in range(bits))


def _chunks_equal(a, b, width=2):
    """Equality of ``a`` and ``b`` per ``width``-bit chunk (one LUT4 each): the vector is
    registered and ANDed one stage later."""
    return Cat(a[i:i + width] == b[i:i + width] for i in range(0, len(a), width))


class DGSQManager(wiring.Component):
    """Dynamic queue contexts of a source leaf and their REQUEST/GRANT handling.

    A context is keyed by (``dst_node``, ``port``, ``tc``, ``tenant``); its index is the
    DGSQ id (and the VOQ queue id). Contexts come from a pool of ``n_ctx``: a full CAM
    finds a packet's context, the lowest free one is allocated for a new key; with the
    pool exhausted ``s_pkt`` is held (lossless back-pressure) and the packet counted
    once in ``stat_pool_full``. A context is freed after ``idle_cycles`` with no
    backlog and no release out.

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
    release request ``m_rel`` (queue, credit bytes) to the VOQ buffer, whose report
    ``s_rel_done`` (credit used) is debited from backlog and balance. One GRANT
    forms one container: a GRANT that comes while a release is out keeps its credit
    apart until the report, and credit a container left unused is dropped then (the
    arbiter releases it at the container's last packet). Credit left over when the
    queue ran dry is discarded (never hoarded), an overrun is repaid from the next
    grant.

    Parameters: ``n_ctx`` (pool size), ``refresh_cycles``, ``idle_cycles``,
    ``container_bytes``, ``ttl`` (of REQUESTs), ``tick_shift`` (coarse time = clock
    count >> tick_shift).

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

    def __init__(self, n_ctx=64, refresh_cycles=8192, idle_cycles=16384,
                 container_bytes=CONTAINER_BYTES, ttl=64, tick_shift=6):
        if n_ctx < 2:
            raise ValueError("n_ctx must be at least 2")
        if container_bytes < CREDIT_UNIT_BYTES:
            raise ValueError("container_bytes must be at least one credit unit")
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
        LCU = CREDIT_UNIT_BYTES.bit_length() - 1

        # CAM keys (flip-flops: compared in parallel).
        valid = self.valid
        k_dst = [Signal(16, name=f"k_dst{i}") for i in range(n)]
        k_port = [Signal(8, name=f"k_port{i}") for i in range(n)]
        k_tc = [Signal(3, name=f"k_tc{i}") for i in range(n)]
        k_ten = [Signal(12, name=f"k_ten{i}") for i in range(n)]
        pending = Signal(n)       # a REQUEST is due: id in req_fifo once, or req_wait set

        ctx_l = _context_layout()
        # Its own module (kept as gse_dgsq_ctx_ram: an ASIC flow swaps it for an SRAM).
        m.submodules.ctx_ram = mem = VOQRam(ctx_l.size, n)
        rd_addr, rd_data = mem.read(0)
        m.submodules.req_fifo = req_fifo = SyncFIFOBuffered(width=QB, depth=n)

        tick_cnt = Signal(self.tick_shift + 1)
        now = Signal(16)
        m.d.sync += tick_cnt.eq(tick_cnt + 1)
        with m.If(tick_cnt[:self.tick_shift].all() if self.tick_shift else 1):
            m.d.sync += now.eq(now + 1)

        # Engine stages (one-hot; IDLE = ACCEPT).
        st_idle = Signal(init=1)
        st_calc = Signal()
        st_write = Signal()
        is_rel, is_grant, is_pkt, is_req, is_sweep = (Signal(name=f"is_{k}") for k in
                                                      ("rel", "grant", "pkt", "req", "sweep"))
        q = Signal(QB)
        # Copies of q for its two wide consumers (the flag bit selects, the one-hot
        # decode), to spread the fanout; distinct reset values keep Yosys from merging them.
        q_sel = Signal(QB, init=1)
        q_dec = Signal(QB, init=(n - 1) & ((1 << QB) - 1))
        fresh = Signal()          # the packet allocated its context
        done = Signal()           # WRITE completes this clock

        # Packet lookup: the CAM compare of the (stalled) s_pkt payload is registered;
        # from it the packet's candidate (hit: its context; else the lowest free one)
        # is registered once more, ready to address the memory in ACCEPT. This is
        # exact because the next packet is presented the clock after its predecessor
        # was taken (ACCEPTs are >= 3 clocks apart). A new key enters the CAM (and
        # `valid`) in CALC and a context is freed in the clock after a WRITE: packets
        # wait until the candidate has seen that (cam_hold).
        pk = self.s_pkt.payload
        match = Signal(n)
        free_oh = Signal(n)
        m.d.sync += [
            match.eq(Cat((k_dst[i] == pk.dst_node) & (k_port[i] == pk.port) & (k_tc[i] == pk.tc)
                         & (k_ten[i] == pk.tenant) for i in range(n))),
            free_oh.eq(_onehot_first(~valid)),
        ]
        pk_hit = Signal()         # the packet has a context
        pk_new = Signal()         # it has none and one is free
        pk_q = Signal(QB)         # its context (hit) or the one it gets (new)
        pk_free_oh = Signal(n)    # the context it gets, one-hot
        alloc_oh = Signal(n)      # the context allocated by the last ACCEPT, one-hot
        hit = (match & valid).any()
        m.d.sync += [
            pk_hit.eq(hit),
            pk_new.eq(~hit & free_oh.any()),
            pk_q.eq(Mux(hit, _encode(match & valid, QB), _encode(free_oh, QB))),
            pk_free_oh.eq(free_oh),
        ]
        # The lookup result describes the payload of two clocks ago: a packet is taken only
        # after it was offered (valid, not taken, so its payload held) for two clocks,
        # also the first one after an idle clock.
        pk_seen = Signal(2)
        m.d.sync += pk_seen.eq(Cat(self.s_pkt.valid & ~self.s_pkt.ready, pk_seen[0]))
        cam_hold = Signal(2)      # packets wait: a key entered or a context was freed
        freeing = Signal()
        alloc_calc = Signal()
        m.d.sync += cam_hold.eq(Cat(freeing | alloc_calc, cam_hold[0]))

        blocked = Signal()        # this packet was already counted as pool-full
        turn = Signal()           # alternate packets and REQUEST/sweep work
        # Under continuous packets the timer sweep still gets one event per 32 clocks
        # (a pass over 64 contexts per ~2048 clocks, well below the refresh time).
        sweep = Signal(QB)
        sweep_cnt = Signal(5)
        sweep_due = Signal()
        m.d.sync += sweep_cnt.eq(sweep_cnt + 1)
        with m.If(sweep_cnt.all()):
            m.d.sync += sweep_due.eq(1)
        ctl_due = req_fifo.r_rdy | sweep_due

        # Event operands (registered at ACCEPT).
        pkt_bytes = Signal(16)
        # The packet's credit in whole credit units (its length rounded up): the VOQ
        # buffer reports releases in the same rounded bytes, and the egress reports
        # arrivals per packet in credit units, so backlog, balance and the arbiter agree.
        pkt_cu = Signal(16 - LCU + 1)
        pkt_key = Signal(data.StructLayout({"dst_node": 16, "port": 8, "tc": 3, "tenant": 12}))
        rel_bytes = Signal(24)
        g = Signal(data.StructLayout({"src_node": 16, "port": 8, "seq": 16, "len": 16}))

        # ---- ACCEPT: pick the event; its context id addresses the memory now -----------
        q_next = Signal(QB)
        m.d.comb += rd_addr.eq(q_next)
        g_pre = Signal()          # GRANT type and id range fine
        g_seq_m1 = Signal(16)
        g_neg = Signal(signed(24))   # -(granted credit bytes)
        bytes_nz = Signal()
        with m.If(st_idle):
            m.d.sync += [st_idle.eq(0), st_calc.eq(1), fresh.eq(0), alloc_oh.eq(pk_free_oh),
                         is_rel.eq(0), is_grant.eq(0), is_pkt.eq(0), is_req.eq(0),
                         is_sweep.eq(0), q.eq(q_next), q_sel.eq(q_next), q_dec.eq(q_next)]

            def ctl_event():
                with m.If(sweep_due | ~req_fifo.r_rdy):
                    m.d.comb += q_next.eq(sweep)
                    m.d.sync += [is_sweep.eq(1), sweep_due.eq(0),
                                 sweep.eq(Mux(sweep == n - 1, 0, sweep + 1))]
                with m.Else():
                    m.d.comb += [req_fifo.r_en.eq(1), q_next.eq(req_fifo.r_data)]
                    m.d.sync += is_req.eq(1)

            with m.If(self.s_rel_done.valid):
                m.d.comb += [self.s_rel_done.ready.eq(1), q_next.eq(self.s_rel_done.payload.queue)]
                m.d.sync += [is_rel.eq(1), rel_bytes.eq(self.s_rel_done.payload.bytes)]
            with m.Elif(self.s_grant.valid):
                # Checked against the context in CALC/WRITE (unknown: counted, no effect).
                gi = self.s_grant.payload
                m.d.comb += [self.s_grant.ready.eq(1), q_next.eq(gi.dgsq[:QB])]
                m.d.sync += [is_grant.eq(1), g.src_node.eq(gi.src_node), g.port.eq(gi.port),
                             g.seq.eq(gi.seq), g.len.eq(gi.len),
                             g_pre.eq((gi.type == GSEType.GRANT.value) & (gi.dgsq < n)),
                             g_seq_m1.eq(gi.seq - 1),
                             g_neg.eq(-(gi.len << 6))]
            with m.Elif(self.s_pkt.valid & pk_seen.all() & ~freeing & ~cam_hold.any()
                        & (~turn | ~ctl_due)):
                with m.If(pk_hit | pk_new):
                    m.d.comb += [self.s_pkt.ready.eq(1), q_next.eq(pk_q)]
                    m.d.sync += [is_pkt.eq(1), pkt_bytes.eq(pk.bytes), bytes_nz.eq(pk.bytes != 0),
                                 pkt_cu.eq(pk.bytes[LCU:] + pk.bytes[:LCU].any()),
                                 blocked.eq(0), turn.eq(1),
                                 pkt_key.dst_node.eq(pk.dst_node), pkt_key.port.eq(pk.port),
                                 pkt_key.tc.eq(pk.tc), pkt_key.tenant.eq(pk.tenant)]
                    with m.If(~pk_hit):
                        m.d.sync += [fresh.eq(1), self.stat_alloc.eq(self.stat_alloc + 1)]
                with m.Else():
                    with m.If(~blocked):
                        m.d.sync += [blocked.eq(1),
                                     self.stat_pool_full.eq(self.stat_pool_full + 1)]
                    m.d.sync += turn.eq(0)
                    ctl_event()
            with m.Else():
                m.d.sync += turn.eq(0)
                ctl_event()

        # ---- CALC: every adder/comparator on the read data, registered ----------------
        qoh = Signal(n)           # one-hot q, for the flag vectors after WRITE
        valid_q = Signal()
        pend_q = Signal()
        used = Signal(QB + 1)
        m.d.comb += alloc_calc.eq(st_calc & fresh)
        with m.If(st_calc):
            m.d.sync += [qoh.eq(Cat(q_dec == i for i in range(n))),
                         valid_q.eq(valid.bit_select(q_sel, 1) | fresh),
                         pend_q.eq(pending.bit_select(q_sel, 1))]
            with m.If(fresh):
                # The new key enters the CAM (the next packet is looked up with it).
                for i in range(n):
                    with m.If(alloc_oh[i]):
                        m.d.sync += [k_dst[i].eq(pkt_key.dst_node), k_port[i].eq(pkt_key.port),
                                     k_tc[i].eq(pkt_key.tc), k_ten[i].eq(pkt_key.tenant),
                                     valid[i].eq(1)]
                m.d.sync += used.eq(used + 1)
        cur = Signal(ctx_l)
        m.d.comb += cur.eq(rd_data)
        c = Signal(ctx_l)         # the context as read
        p_nb = Signal(25)         # PKT: backlog + the packet's bytes rounded up to units
        p_thr = Signal(17)        # PKT: view + container - 1 (credit units)
        r_diff = Signal(24)       # REL: backlog - bytes (valid if r_gt)
        r_gt = Signal()           # REL: backlog > bytes (backlog left)
        r_neg = Signal()          # REL: balance - bytes < 0
        r_pos = Signal()          # REL: balance - bytes > 0
        r_a = Signal(signed(26))  # REL: balance + pg - bytes
        r_a_pos = Signal()        # REL: balance + pg - bytes > 0
        pg_nz = Signal()          # pg != 0
        g_pg = Signal(24)         # GRANT: pg + credit
        g_balpg = Signal(signed(24))  # GRANT: balance + pg + credit
        r_next = Signal(signed(26))   # REL: the balance after the report
        r_next_pos = Signal()
        m.d.comb += [r_next.eq(Mux(r_neg, r_a, c.pg)),
                     r_next_pos.eq(Mux(r_neg, r_a_pos, pg_nz))]
        g_credit = Signal(signed(26))  # GRANT: balance + credit
        g_pos = Signal()          # GRANT: balance + credit > 0
        g_vdiff = Signal(17)      # GRANT: view - len (bit 16: borrow, clip to 0)
        g_keq = Signal(12)        # GRANT: key chunks equal (src_node, port)
        u_sum = Signal(19)        # REQ: (backlog + 63) >> 6, credit units before clipping
        e_req = Signal(16)        # SWEEP: coarse time since REQUEST, GRANT, activity
        e_grant = Signal(16)
        e_act = Signal(16)
        # Comparisons as subtractions whose sign is the answer: one carry chain each.
        r_pos_d = (rel_bytes - cur.balance)[-1]       # balance - bytes > 0
        g_pos_d = (g_neg - cur.balance)[-1]           # balance + credit > 0
        r_gt_d = (rel_bytes - cur.backlog)[-1]        # backlog > bytes (borrow)
        r_a_pos_d = (rel_bytes - cur.bal_pg)[-1]      # balance + pg - bytes > 0
        with m.If(st_calc):
            m.d.sync += [
                st_calc.eq(0), st_write.eq(1),
                c.eq(cur),
                p_nb.eq(cur.backlog + Cat(C(0, LCU), pkt_cu)),
                p_thr.eq(cur.view + (CU - 1)),
                r_diff.eq(cur.backlog - rel_bytes),
                r_gt.eq(r_gt_d),
                r_neg.eq((cur.balance - rel_bytes)[-1]),
                r_pos.eq(r_pos_d),
                r_a.eq(cur.bal_pg - rel_bytes),
                r_a_pos.eq(r_a_pos_d),
                pg_nz.eq(cur.pg != 0),
                g_pg.eq(cur.pg + (g.len << 6)),
                g_balpg.eq(cur.bal_pg + (g.len << 6)),
                g_credit.eq(cur.balance + (g.len << 6)),
                g_pos.eq(g_pos_d),
                g_vdiff.eq(cur.view - g.len),
                g_keq.eq(Cat(_chunks_equal(cur.dst_node, g.src_node),
                             _chunks_equal(cur.port, g.port))),
                u_sum.eq((cur.backlog + (CREDIT_UNIT_BYTES - 1))[6:]),
                e_req.eq(now - cur.ts_req),
                e_grant.eq(now - cur.ts_grant),
                e_act.eq(now - cur.ts_act),
            ]

        # ---- WRITE: decisions from registered results ---------------------------------
        nxt = Signal(ctx_l)
        m.d.comb += nxt.eq(c)
        write = Signal()
        # Effects on the flag vectors, the FIFO and the counters are decided in WRITE and
        # applied one clock later from registers (q and qoh still hold then: they change
        # at the end of the next ACCEPT and CALC; CALC, the first to look, comes after).
        fx_names = ("set_pend", "clr_pend", "push", "free", "refresh", "grant", "gap",
                    "unused", "unknown")
        fx = {k: Signal(name=f"fx_{k}") for k in fx_names}       # decided (comb)
        fx_r = {k: Signal(name=f"fx_{k}_r") for k in fx_names}   # registered, applied
        set_pend, clr_pend, push = fx["set_pend"], fx["clr_pend"], fx["push"]
        g_ok = Signal()
        m.d.comb += g_ok.eq(g_pre & valid_q & g_keq.all())
        emit = valid_q & ~c.rel_pending       # REQ: live context without a release out
        rel_out = Signal()        # m_rel carries a release request
        u = Signal(16)
        m.d.comb += u.eq(Mux(u_sum[16:].any(), 0xFFFF, u_sum[:16]))

        with m.If(st_write):
            # PKT
            with m.If(is_pkt):
                m.d.comb += [
                    nxt.backlog.eq(Mux(p_nb[24], 0xFFFFFF, p_nb[:24])),
                    nxt.nz.eq(c.nz | bytes_nz),
                    nxt.ts_act.eq(now),
                    self.m_pkt.valid.eq(1),
                    done.eq(self.m_pkt.ready), write.eq(1),
                ]
                # units(backlog) >= view + container  <=>  backlog > (view + CU - 1) * 64
                grow = ~c.nz | (~p_thr[16] & (p_thr[:16] != 0xFFFF) & (p_nb > Cat(C(0, 6), p_thr)))
                m.d.comb += set_pend.eq(grow | fresh)
                with m.If(fresh):
                    # A new key: what was read is a former context's; start from zero.
                    m.d.comb += [
                        nxt.eq(0),
                        nxt.backlog.eq(Cat(C(0, LCU), pkt_cu)), nxt.nz.eq(bytes_nz),
                        nxt.ts_act.eq(now), nxt.ts_req.eq(now), nxt.ts_grant.eq(now),
                        nxt.dst_node.eq(pkt_key.dst_node), nxt.port.eq(pkt_key.port),
                        nxt.tc.eq(pkt_key.tc), nxt.tenant.eq(pkt_key.tenant),
                    ]
            # GRANT
            with m.If(is_grant):
                # The write data does not wait for the key check (no write without it).
                rel_g = g_pos & c.nz & ~c.rel_pending      # release the credit
                unused = g_pos & ~c.nz & ~c.rel_pending     # queue ran dry: drop it
                m.d.comb += [
                    nxt.ack.eq(g.seq), nxt.have_ack.eq(1), nxt.ts_grant.eq(now),
                    nxt.view.eq(Mux(g_vdiff[16], 0, g_vdiff[:16])),
                    nxt.rel_pending.eq(c.rel_pending | rel_g),
                ]
                with m.If(c.rel_pending):
                    # One GRANT, one container: this credit waits for the release out.
                    m.d.comb += [nxt.pg.eq(g_pg), nxt.bal_pg.eq(g_balpg)]
                with m.Else():
                    m.d.comb += [nxt.balance.eq(Mux(unused, 0, g_credit)),
                                 nxt.bal_pg.eq(Mux(unused, 0, g_credit)), nxt.pg.eq(0)]
                with m.If(g_ok):
                    m.d.comb += [write.eq(1), rel_out.eq(rel_g), fx["unused"].eq(unused),
                                 fx["grant"].eq(1),
                                 fx["gap"].eq(c.have_ack & (g_seq_m1 != c.ack))]
                with m.Else():
                    m.d.comb += fx["unknown"].eq(1)
            # REL
            with m.If(is_rel):
                # The container is done: debt carries over, credit it left unused is
                # dropped (the arbiter releases it at the container's last packet); the
                # credit of GRANTs that came meanwhile starts the next container.
                m.d.comb += [
                    nxt.backlog.eq(Mux(r_gt, r_diff, 0)), nxt.nz.eq(r_gt),
                    nxt.balance.eq(r_next), nxt.bal_pg.eq(r_next), nxt.pg.eq(0),
                    nxt.rel_pending.eq(0), nxt.ts_act.eq(now),
                    write.eq(1),
                ]
                m.d.comb += nxt.rel_pending.eq(r_next_pos & r_gt)
                with m.If(r_next_pos & r_gt):
                    m.d.comb += rel_out.eq(1)
                with m.Else():
                    with m.If(r_next_pos):
                        m.d.comb += [nxt.balance.eq(0), nxt.bal_pg.eq(0)]
                    # No release out any more: a waiting REQUEST is due again.
                    m.d.comb += [nxt.req_wait.eq(0), push.eq(c.req_wait)]
            with m.If(rel_out):
                m.d.comb += [self.m_rel.valid.eq(1), done.eq(self.m_rel.ready)]
                with m.If(self.m_rel.ready):
                    m.d.sync += self.stat_releases.eq(self.stat_releases + 1)
            with m.Elif(is_grant | is_rel):
                m.d.comb += done.eq(1)
            # REQ
            with m.If(is_req):
                with m.If(emit):
                    r = self.m_req.payload
                    m.d.comb += [
                        self.m_req.valid.eq(1),
                        nxt.view.eq(u), nxt.ts_req.eq(now),
                        done.eq(self.m_req.ready), write.eq(1),
                        clr_pend.eq(1),
                    ]
                    with m.If(self.m_req.ready):
                        m.d.sync += self.stat_requests.eq(self.stat_requests + 1)
                with m.Elif(valid_q):
                    # A release is out: the REQUEST waits for its report (a fresh backlog
                    # figure); the report puts the id back in the FIFO (pending stays set).
                    m.d.comb += [done.eq(1), write.eq(1), nxt.req_wait.eq(1)]
                with m.Else():
                    m.d.comb += [done.eq(1), clr_pend.eq(1)]
            # SWEEP
            with m.If(is_sweep):
                m.d.comb += done.eq(1)
                with m.If(valid_q):
                    with m.If(c.nz & ~c.rel_pending & ~pend_q
                              & (e_req >= self.refresh_ticks) & (e_grant >= self.refresh_ticks)):
                        m.d.comb += [set_pend.eq(1), fx["refresh"].eq(1)]
                    with m.If(~c.nz & ~c.rel_pending & (e_act >= self.idle_ticks)):
                        # A REQUEST still due stays in the FIFO; it finds the context
                        # free (dropped) or reused (then due anyway: a new queue).
                        m.d.comb += fx["free"].eq(1)
                    # Keep the coarse times from aging past the 16-bit wrap.
                    m.d.comb += write.eq(1)
                    with m.If(e_req[15]):
                        m.d.comb += nxt.ts_req.eq(now - 2 ** 15)
                    with m.If(e_grant[15]):
                        m.d.comb += nxt.ts_grant.eq(now - 2 ** 15)
                    with m.If(e_act[15]):
                        m.d.comb += nxt.ts_act.eq(now - 2 ** 15)
            with m.If(done):
                m.d.sync += [st_write.eq(0), st_idle.eq(1)]
        for k in fx_names:
            cond = fx[k] & ~pend_q if k == "set_pend" else fx[k]
            m.d.sync += fx_r[k].eq(st_write & done & cond)

        # Applied one clock after WRITE (during the next ACCEPT).
        with m.If(fx_r["set_pend"]):
            m.d.sync += pending.eq(pending | qoh)
        with m.If(fx_r["clr_pend"]):
            m.d.sync += pending.eq(pending & ~qoh)
        with m.If(fx_r["free"]):
            m.d.sync += [valid.eq(valid & ~qoh), used.eq(used - 1)]
        m.d.comb += freeing.eq(fx_r["free"])
        for k, stat in (("free", self.stat_freed), ("refresh", self.stat_refresh),
                        ("grant", self.stat_grants), ("gap", self.stat_grant_gap),
                        ("unused", self.stat_grant_unused), ("unknown", self.stat_grant_unknown)):
            with m.If(fx_r[k]):
                m.d.sync += stat.eq(stat + 1)
        # The request FIFO: pushes one clock after WRITE, pops only in ACCEPT.
        m.d.comb += [req_fifo.w_en.eq(fx_r["push"] | fx_r["set_pend"]), req_fifo.w_data.eq(q)]

        r = self.m_req.payload
        m.d.comb += [
            self.m_pkt.payload.qid.eq(q),
            self.m_pkt.payload.bytes.eq(pkt_bytes),
            self.m_rel.payload.queue.eq(q),
            self.m_rel.payload.bytes.eq(Mux(is_grant, g_credit, r_next)),
            r.type.eq(GSEType.REQUEST.value),
            r.flags.eq(0),
            r.tc.eq(c.tc),
            r.tenant.eq(c.tenant),
            r.src_node.eq(self.node_id),
            r.dst_node.eq(c.dst_node),
            r.port.eq(c.port),
            r.ttl.eq(self.ttl),
            r.seq.eq(c.ack),
            r.len.eq(u),
            r.dgsq.eq(q),
        ]

        # Context memory: WRITE's write-back (the next ACCEPT reads it a clock later).
        m.d.comb += [mem.w_addr.eq(q), mem.w_data.eq(nxt), mem.w_en.eq(st_write & write & done)]
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
        keep_modules=lambda **p: {"ctx_ram": "gse_dgsq_ctx_ram"},
    ),
]
