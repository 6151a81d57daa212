"""TrafficChecker: synthesizable sink that checks the frames of TrafficGenerators.

It receives what arrives at one host port and counts, per the frame format of
:mod:`opengse.sim.traffic_model`: frames and bytes, loss, reordering and duplicates
within each flow (a sequence number per flow), corruption (the payload's check and
filler), frames not meant for it, bytes per tenant, and latency (sum, maximum and a
histogram).
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..catalog import BlockSpec
from ..lib.sram import SRAM
from ..lib.stream import AXIStreamSignature, check_data_width

__all__ = ["TrafficChecker", "EXPORTS"]

HEADER_BYTES = 60
ROCE_PORT = 4791
CHECK_KEY = 0xA55A
WINDOW = 32  # seqs behind the newest that a flow remembers (reordered vs duplicate)

#: Counters, in the order they are listed (name, width, meaning).
COUNTERS = [
    ("frames", 32, "frames received (any)"),
    ("bytes", 48, "bytes received (any)"),
    ("good_frames", 32, "frames delivered intact and new (in order, after a gap, or reordered)"),
    ("good_bytes", 48, "their bytes (original frame bytes)"),
    ("lost", 32, "seqs skipped in a flow and not (yet) arrived: net loss"),
    ("reordered", 32, "frames older than their flow's newest, not seen before"),
    ("duplicate", 32, "frames of a seq already received"),
    ("late", 32, f"frames more than {WINDOW} seqs behind their flow's newest"),
    ("corrupt", 32, "frames whose check or filler is wrong"),
    ("bad", 32, "frames with tuser bit 0 on the last beat (flagged by the network)"),
    ("foreign", 32, "frames that are not generator frames for this host"),
    ("lat_sum", 48, "sum of the latencies of good frames, clocks"),
    ("lat_max", 32, "largest latency of a good frame, clocks"),
]


def _log2(n):
    return (n - 1).bit_length()


class TrafficChecker(wiring.Component):
    """Checker of one host port.

    Parameters
    ----------
    data_width : int
        Bits of ``tdata``: 8..64.
    sources : int
        Source hosts tracked (power of two, 2..256): ids ``0..sources-1``.
    flows : int
        Flows per source tracked (power of two, 2..256). Per-flow state (next expected
        seq and a 32-seq window) is one :class:`SRAM` of ``sources * flows`` words.
    tenants : int
        Per-tenant byte counters (power of two, 2..16); tenant ``t`` is counted in
        ``t mod tenants``.
    bins, bin_shift : int
        Latency histogram: ``bins`` bins (power of two, 2..4096) of ``2**bin_shift``
        clocks each; the last bin also takes every larger latency.

    Interface
    ---------
    ``s_axis`` : ``In(AXIStreamSignature(data_width))``
        Always ready (``tready`` = 1). ``tkeep`` is looked at on last beats only.
    ``host`` : ``In(8)``
        This host's id: a frame is for it when its DA is ``02:00:00:00:00:host`` and its
        payload's destination is ``host``.
    ``hist_addr`` : ``In(range(bins))``, ``hist_data`` : ``Out(32)``
        Histogram read-out: the count of bin ``hist_addr`` one clock later.
    ``stat_<name>`` : see :data:`COUNTERS`; ``stat_tenant_bytes`` : ``Out(48)`` x
        ``tenants``, good bytes per tenant.

    Frame outcomes (exactly one per frame): ``bad`` (tuser set; not looked at further);
    ``foreign`` (shorter than 60 bytes, not Ethernet II/IPv4 (IHL 5)/UDP to 4791, not
    for this host, source or flow beyond what is tracked, or arrived during the reset
    sweep; a corrupted Ethernet/IP/UDP header lands here too); ``corrupt`` (check or
    filler wrong); otherwise the flow's sequence decides: ``good`` (in order, after a
    gap that is counted in ``lost``, or reordered: filling a gap, ``lost`` goes down by
    one), ``duplicate`` or ``late``. Latency = the clock the frame's first beat arrived
    minus its timestamp, both counted from the same reset.

    Timing
    ------
    Any number of beats per clock up to one; frames of 60 bytes or more back to back.
    A frame's counters change 2-3 clocks after its last beat. After reset the SRAMs are
    cleared in ``max(sources * flows, bins)`` clocks.
    """

    def __init__(self, data_width=64, sources=16, flows=64, tenants=16, bins=128, bin_shift=5):
        check_data_width(data_width)
        if data_width > 64:
            raise ValueError("TrafficChecker supports data_width 8..64")
        for name, v, lo, hi in [
            ("sources", sources, 2, 256),
            ("flows", flows, 2, 256),
            ("tenants", tenants, 2, 16),
            ("bins", bins, 2, 4096),
        ]:
            if not lo <= v <= hi or v & (v - 1):
                raise ValueError(f"TrafficChecker {name} must be a power of two {lo}..{hi}")
        if not 0 <= bin_shift <= 24:
            raise ValueError("TrafficChecker bin_shift must be 0..24")
        self.data_width, self.sources, self.flows = data_width, sources, flows
        self.tenants, self.bins, self.bin_shift = tenants, bins, bin_shift
        members = {
            "s_axis": In(AXIStreamSignature(data_width)),
            "host": In(8),
            "hist_addr": In(range(bins)),
            "hist_data": Out(32),
        }
        for name, width, _ in COUNTERS:
            members[f"stat_{name}"] = Out(width)
        members["stat_tenant_bytes"] = Out(48).array(tenants)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        s = self.s_axis
        lanes = self.data_width // 8
        m.d.comb += s.ready.eq(1)
        fire = s.valid
        beat_in = s.payload

        now = Signal(32)
        m.d.sync += now.eq(now + 1)

        # ---- capture of the header bytes, filler check, length ------------------------
        beat = Signal(14)
        pos = Signal(14)
        hdr = [Signal(8, name=f"hdr{i}") for i in range(HEADER_BYTES)]
        t_first = Signal(32)
        fill_ok = Signal()
        with m.If(fire):
            with m.If(beat_in.last):
                m.d.sync += [beat.eq(0), pos.eq(0)]
            with m.Else():
                m.d.sync += [beat.eq(beat + 1), pos.eq(pos + lanes)]
            with m.If(beat == 0):
                m.d.sync += t_first.eq(now)
        for b in range(-(-HEADER_BYTES // lanes)):
            with m.If(fire & (beat == b)):
                for n in range(lanes):
                    i = b * lanes + n
                    if i < HEADER_BYTES:
                        m.d.sync += hdr[i].eq(beat_in.data[8 * n : 8 * n + 8])
        seq8 = hdr[49]
        mism = Signal(lanes)
        for n in range(lanes):
            byte = beat_in.data[8 * n : 8 * n + 8]
            index = pos + n
            want = (pos[:8] + n + seq8)[:8]
            live = (beat_in.keep[n] | ~beat_in.last) & (index >= HEADER_BYTES)
            m.d.comb += mism[n].eq(live & (byte != want))
        with m.If(fire):
            m.d.sync += fill_ok.eq(Mux(beat == 0, 1, fill_ok) & (mism == 0))

        keep_count = Signal(range(lanes + 1))
        m.d.comb += keep_count.eq(sum(beat_in.keep[n] for n in range(lanes)))
        # ---- stage V (clock after the last beat): the frame's verdict ------------------
        v_valid, v_bad, v_len, v_fill = Signal(), Signal(), Signal(14), Signal()
        m.d.sync += v_valid.eq(fire & beat_in.last)
        with m.If(fire & beat_in.last):
            m.d.sync += [v_bad.eq(beat_in.user[0]), v_len.eq(pos + keep_count)]
            m.d.sync += v_fill.eq(Mux(beat == 0, 1, fill_ok) & (mism == 0))
        self._verdict(m, now, v_valid, v_bad, v_len, v_fill, hdr, t_first)
        return m

    def _verdict(self, m, now, v_valid, v_bad, v_len, v_fill, hdr, t_first):
        """Stages V and S: frame verdict, flow sequence, counters, histogram."""
        w16 = lambda i: Cat(hdr[i + 1], hdr[i])  # noqa: E731 - big-endian 16-bit field
        w32 = lambda i: Cat(w16(i + 2), w16(i))  # noqa: E731
        src, flow, seq, ts = w16(42), w16(44), w32(46), w32(50)
        tenant_word, dst, check = w16(54), w16(56), w16(58)
        sb, fb = _log2(self.sources), _log2(self.flows)
        nf = self.sources * self.flows
        depth = max(nf, self.bins)

        init_done = Signal()
        init_addr = Signal(range(depth))
        with m.If(~init_done):
            m.d.sync += init_addr.eq(init_addr + 1)
            with m.If(init_addr == depth - 1):
                m.d.sync += init_done.eq(1)

        da_ok = (
            (hdr[0] == 2)
            & (hdr[1] == 0)
            & (hdr[2] == 0)
            & (hdr[3] == 0)
            & (hdr[4] == 0)
            & (hdr[5] == self.host)
        )
        proto_ok = (w16(12) == 0x0800) & (hdr[14] == 0x45) & (hdr[23] == 17) & (w16(36) == ROCE_PORT)
        mine = (dst == self.host) & (src < self.sources) & (flow < self.flows)
        foreign = (v_len < HEADER_BYTES) | ~da_ok | ~proto_ok | ~mine | ~init_done
        want_check = Const(CHECK_KEY, 16) ^ v_len ^ src ^ flow ^ seq[16:] ^ seq[:16]
        want_check = want_check ^ ts[16:] ^ ts[:16] ^ tenant_word ^ dst
        corrupt = (check != want_check) | ~v_fill
        latency = Signal(32)
        m.d.comb += latency.eq(t_first - ts)
        shifted = latency >> self.bin_shift
        bin_ = Mux(shifted >= self.bins - 1, self.bins - 1, shifted[: _log2(self.bins)])

        # per-flow state {window, next}: read in V, decided and written in S
        m.submodules.flow_state = fs = SRAM(64, nf)
        m.submodules.histogram = hist = SRAM(32, self.bins, n_read=2)
        idx = Cat(flow[:fb], src[:sb])
        m.d.comb += [fs.r0_addr.eq(idx), hist.r0_addr.eq(bin_), hist.r1_addr.eq(self.hist_addr)]
        m.d.comb += self.hist_data.eq(hist.r1_data)

        s_check, s_idx, s_seq, s_len, s_lat, s_bin, s_tenant = (
            Signal(),
            Signal(len(idx)),
            Signal(32),
            Signal(14),
            Signal(32),
            Signal(len(self.hist_addr)),
            Signal(_log2(self.tenants)),
        )
        m.d.sync += s_check.eq(v_valid & ~v_bad & ~foreign & ~corrupt)
        m.d.sync += [
            s_idx.eq(idx),
            s_seq.eq(seq),
            s_len.eq(v_len),
            s_lat.eq(latency),
            s_bin.eq(bin_),
            s_tenant.eq(tenant_word[: _log2(self.tenants)]),
        ]
        with m.If(v_valid):
            m.d.sync += [
                self.stat_frames.eq(self.stat_frames + 1),
                self.stat_bytes.eq(self.stat_bytes + v_len),
            ]
            with m.If(v_bad):
                m.d.sync += self.stat_bad.eq(self.stat_bad + 1)
            with m.Elif(foreign):
                m.d.sync += self.stat_foreign.eq(self.stat_foreign + 1)
            with m.Elif(corrupt):
                m.d.sync += self.stat_corrupt.eq(self.stat_corrupt + 1)

        # stage S: the flow's sequence decides
        nxt, window = fs.r0_data[32:], fs.r0_data[:32]
        d = Signal(32)
        m.d.comb += d.eq(s_seq - nxt)
        behind = d[31]
        j = Signal(32)
        m.d.comb += j.eq(~d)  # = next - 1 - seq
        in_window = behind & (j < WINDOW)
        seen = in_window & window.bit_select(j[:5], 1)
        ahead_shift = Mux(d >= WINDOW, WINDOW, d[:6] + 1)
        new_window = Signal(32)
        with m.If(~behind):
            m.d.comb += new_window.eq(Mux(d >= WINDOW - 1, 1, (window << ahead_shift)[:32] | 1))
        with m.Else():
            m.d.comb += new_window.eq(window | (Const(1, 32) << j[:5])[:32])
        good = s_check & ~(behind & ~in_window) & ~seen
        with m.If(~init_done):
            m.d.comb += [
                fs.w_en.eq(1),
                fs.w_addr.eq(init_addr),
                fs.w_data.eq(Cat(Const(-1, 32), Const(0, 32))),
            ]
            m.d.comb += [hist.w_en.eq(1), hist.w_addr.eq(init_addr), hist.w_data.eq(0)]
        with m.Else():
            m.d.comb += [
                fs.w_en.eq(good),
                fs.w_addr.eq(s_idx),
                fs.w_data.eq(Cat(new_window, Mux(behind, nxt, s_seq + 1))),
                hist.w_en.eq(good),
                hist.w_addr.eq(s_bin),
                hist.w_data.eq(hist.r0_data + 1),
            ]
        with m.If(s_check & behind & ~in_window):
            m.d.sync += self.stat_late.eq(self.stat_late + 1)
        with m.If(s_check & seen):
            m.d.sync += self.stat_duplicate.eq(self.stat_duplicate + 1)
        with m.If(good):
            m.d.sync += [
                self.stat_good_frames.eq(self.stat_good_frames + 1),
                self.stat_good_bytes.eq(self.stat_good_bytes + s_len),
                self.stat_lat_sum.eq(self.stat_lat_sum + s_lat),
                self.stat_lat_max.eq(Mux(s_lat > self.stat_lat_max, s_lat, self.stat_lat_max)),
            ]
            with m.If(behind):
                m.d.sync += [
                    self.stat_reordered.eq(self.stat_reordered + 1),
                    self.stat_lost.eq(self.stat_lost - 1),
                ]
            with m.Else():
                m.d.sync += self.stat_lost.eq(self.stat_lost + d)
            for t in range(self.tenants):
                with m.If(s_tenant == t):
                    m.d.sync += self.stat_tenant_bytes[t].eq(self.stat_tenant_bytes[t] + s_len)


EXPORTS = [
    BlockSpec(
        name="traffic_check",
        module="gse_traffic_check",
        factory=TrafficChecker,
        params={"data_width": 64, "sources": 16, "flows": 64, "tenants": 16, "bins": 128, "bin_shift": 5},
        description="traffic checker of one host port: frames, bytes, loss, reordering, "
        "duplicates, corruption, foreign frames per flow seq; bytes per tenant; latency "
        "sum, max and histogram",
    )
]
