"""TrafficChecker: synthesizable sink that checks the frames of TrafficGenerators.

It receives what arrives at one host port and counts, per the frame format in the
docstring of :mod:`~opengse.rtl.tb.traffic_gen`: frames and bytes, loss, reordering and
duplicates within each flow (a sequence number per flow), corruption (the payload's check and
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
    A frame's counters change 3-6 clocks after its last beat. After reset the SRAMs are
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

        now = Signal(32)
        m.d.sync += now.eq(now + 1)

        # Every beat is registered on arrival, with the clock it arrived at: the checks
        # below start from flip-flops (the filler compare behind the port was the
        # Colorlight self-test core clock's worst path); latencies are unchanged.
        fire = Signal(name="rx_fire")
        beat_in = Signal.like(s.payload, name="rx_beat")
        now_in = Signal(32, name="rx_now")
        m.d.sync += [fire.eq(s.valid), beat_in.eq(s.payload), now_in.eq(now)]

        # ---- capture of the header bytes, filler check, length ------------------------
        beat = Signal(14)
        pos = Signal(14)
        hdr = [Signal(8, name=f"hdr{i}") for i in range(HEADER_BYTES)]
        t_first = Signal(32)
        # past[n]: byte lane n of this beat lies beyond the header (pos + n >=
        # HEADER_BYTES), from a small beat count that saturates at the header's end:
        # a compare of a few bits with constants. The 14-bit compare on pos in front
        # of the filler check was the Colorlight self-test core clock's worst path.
        hdr_beats = -(-HEADER_BYTES // lanes)
        hb = Signal(range(hdr_beats + 1))
        past = [hb >= max(0, -(-(HEADER_BYTES - n) // lanes)) for n in range(lanes)]
        with m.If(fire):
            with m.If(beat_in.last):
                m.d.sync += [beat.eq(0), pos.eq(0), hb.eq(0)]
            with m.Else():
                m.d.sync += [beat.eq(beat + 1), pos.eq(pos + lanes)]
                with m.If(hb != hdr_beats):
                    m.d.sync += hb.eq(hb + 1)
            with m.If(beat == 0):
                m.d.sync += t_first.eq(now_in)
        for b in range(hdr_beats):
            with m.If(fire & (beat == b)):
                for n in range(lanes):
                    i = b * lanes + n
                    if i < HEADER_BYTES:
                        m.d.sync += hdr[i].eq(beat_in.data[8 * n : 8 * n + 8])
        seq8 = hdr[49]
        mism = Signal(lanes)
        for n in range(lanes):
            byte = beat_in.data[8 * n : 8 * n + 8]
            want = (pos[:8] + n + seq8)[:8]
            live = (beat_in.keep[n] | ~beat_in.last) & past[n]
            m.d.comb += mism[n].eq(live & (byte != want))
        # mismatches registered per beat, accumulated a clock later (first_r: that beat
        # started a frame); at V, acc holds the frame's beats but the last, mism_r the last
        mism_r, first_r, acc = Signal(lanes), Signal(), Signal()
        m.d.sync += [mism_r.eq(Mux(fire, mism, 0)), first_r.eq(fire & (beat == 0))]
        frame_bad = Mux(first_r, 0, acc) | (mism_r != 0)
        m.d.sync += acc.eq(frame_bad)

        keep_count = Signal(range(lanes + 1))
        m.d.comb += keep_count.eq(sum(beat_in.keep[n] for n in range(lanes)))
        # ---- stage V (clock after the last beat): the frame's verdict ------------------
        v_valid, v_bad, v_len = Signal(), Signal(), Signal(14)
        m.d.sync += v_valid.eq(fire & beat_in.last)
        with m.If(fire & beat_in.last):
            m.d.sync += [v_bad.eq(beat_in.user[0]), v_len.eq(pos + keep_count)]
        self._verdict(m, now, v_valid, v_bad, v_len, ~frame_bad, hdr, t_first)
        return m

    def _verdict(self, m, now, v_valid, v_bad, v_len, v_fill, hdr, t_first):
        """Stages V, V2 and S1-S3: frame verdict, flow sequence, counters, histogram."""
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
        # stage V: the verdict's parts, registered (the next frame may overwrite the
        # Ethernet/IP bytes from the next clock on; bytes 42-59 last longer)
        r = {
            "valid": Signal(name="v2_valid"),
            "bad": Signal(name="v2_bad"),
            "foreign": Signal(name="v2_foreign"),
            "corrupt": Signal(name="v2_corrupt"),
            "idx": Signal(sb + fb, name="v2_idx"),
            "seq": Signal(32, name="v2_seq"),
            "len": Signal(14, name="v2_len"),
            "lat": Signal(32, name="v2_lat"),
            "tenant": Signal(_log2(self.tenants), name="v2_tenant"),
        }
        m.d.sync += [
            r["valid"].eq(v_valid),
            r["bad"].eq(v_bad),
            r["foreign"].eq(foreign),
            r["corrupt"].eq(corrupt),
            r["idx"].eq(Cat(flow[:fb], src[:sb])),
            r["seq"].eq(seq),
            r["len"].eq(v_len),
            r["lat"].eq(t_first - ts),
            r["tenant"].eq(tenant_word[: _log2(self.tenants)]),
        ]

        # stage V2: count the outcome; per-flow state {next, window} read here, decided
        # over S1-S2, written in S3
        m.submodules.flow_state = fs = SRAM(64, nf)
        m.submodules.histogram = hist = SRAM(32, self.bins, n_read=2)
        m.d.comb += [fs.r0_addr.eq(r["idx"]), hist.r1_addr.eq(self.hist_addr)]
        m.d.comb += self.hist_data.eq(hist.r1_data)
        s1 = {n: Signal.like(r[n], name=f"s1_{n}") for n in ("idx", "seq", "len", "lat", "tenant")}
        s1["check"] = Signal(name="s1_check")
        m.d.sync += [s1[n].eq(r[n]) for n in s1 if n != "check"]
        m.d.sync += s1["check"].eq(r["valid"] & ~r["bad"] & ~r["foreign"] & ~r["corrupt"])
        with m.If(r["valid"]):
            m.d.sync += [
                self.stat_frames.eq(self.stat_frames + 1),
                self.stat_bytes.eq(self.stat_bytes + r["len"]),
            ]
            with m.If(r["bad"]):
                m.d.sync += self.stat_bad.eq(self.stat_bad + 1)
            with m.Elif(r["foreign"]):
                m.d.sync += self.stat_foreign.eq(self.stat_foreign + 1)
            with m.Elif(r["corrupt"]):
                m.d.sync += self.stat_corrupt.eq(self.stat_corrupt + 1)
        self._sequence(m, fs, hist, s1, init_done, init_addr)

    def _sequence(self, m, fs, hist, s1, init_done, init_addr):
        """Stages S1-S3 of a checked frame: its flow's sequence decides, the flow state
        and the histogram are updated, the counters count. Frames that are checked are
        60 bytes or more, so at least 8 clocks apart at 64 bits: a flow's (or a bin's)
        write in S3 (V + 4) lands before the next frame's read (V + 9 at the earliest)."""
        # S1: the flow state is on the read port; seq - next; the histogram bin is read
        nb = len(self.hist_addr)
        s2 = {n: Signal.like(v, name=f"s2_{n}") for n, v in s1.items()}
        s2_next, s2_window = Signal(32, name="s2_next"), Signal(32, name="s2_window")
        s2_d, s2_bin = Signal(32, name="s2_d"), Signal(nb, name="s2_bin")
        shifted = s1["lat"] >> self.bin_shift
        bin_ = Mux(shifted >= self.bins - 1, self.bins - 1, shifted[:nb])
        m.d.comb += hist.r0_addr.eq(bin_)
        m.d.sync += [s2[n].eq(v) for n, v in s1.items()]
        m.d.sync += [
            s2_next.eq(fs.r0_data[32:]),
            s2_window.eq(fs.r0_data[:32]),
            s2_d.eq(s1["seq"] - fs.r0_data[32:]),
            s2_bin.eq(bin_),
        ]

        # S2: the verdict and the new flow state
        behind = s2_d[31]
        j = Signal(32)
        m.d.comb += j.eq(~s2_d)  # = next - 1 - seq
        in_window = behind & (j[5:] == 0)  # j < 32, without a carry chain
        seen = in_window & s2_window.bit_select(j[:5], 1)
        far_ahead = (s2_d[5:] != 0) | (s2_d[:5] == WINDOW - 1)  # d >= 31: nothing kept
        new_window = Signal(32)
        with m.If(~behind):
            m.d.comb += new_window.eq(Mux(far_ahead, 1, ((s2_window << 1)[:32] << s2_d[:5])[:32] | 1))
        with m.Else():
            m.d.comb += new_window.eq(s2_window | (Const(1, 32) << j[:5])[:32])
        s3 = {n: Signal.like(v, name=f"s3_{n}") for n, v in s2.items() if n != "check"}
        good, late, dup = Signal(name="s3_good"), Signal(name="s3_late"), Signal(name="s3_dup")
        s3_behind, s3_state = Signal(name="s3_behind"), Signal(64, name="s3_state")
        s3_d, s3_bin, s3_count = (
            Signal(32, name="s3_d"),
            Signal(nb, name="s3_bin"),
            Signal(32, name="s3_count"),
        )
        m.d.sync += [s3[n].eq(s2[n]) for n in s3]
        m.d.sync += [
            good.eq(s2["check"] & ~(behind & ~in_window) & ~seen),
            late.eq(s2["check"] & behind & ~in_window),
            dup.eq(s2["check"] & seen),
            s3_behind.eq(behind),
            s3_state.eq(Cat(new_window, Mux(behind, s2_next, s2["seq"] + 1))),
            s3_d.eq(s2_d),
            s3_bin.eq(s2_bin),
            s3_count.eq(hist.r0_data),
        ]

        # S3: write back, count
        with m.If(~init_done):
            m.d.comb += [
                fs.w_en.eq(1),
                fs.w_addr.eq(init_addr),
                fs.w_data.eq(Cat(Const(-1, 32), Const(0, 32))),
            ]
            m.d.comb += [hist.w_en.eq(1), hist.w_addr.eq(init_addr), hist.w_data.eq(0)]
        with m.Else():
            m.d.comb += [fs.w_en.eq(good), fs.w_addr.eq(s3["idx"]), fs.w_data.eq(s3_state)]
            m.d.comb += [hist.w_en.eq(good), hist.w_addr.eq(s3_bin), hist.w_data.eq(s3_count + 1)]
        with m.If(late):
            m.d.sync += self.stat_late.eq(self.stat_late + 1)
        with m.If(dup):
            m.d.sync += self.stat_duplicate.eq(self.stat_duplicate + 1)
        lat, size = s3["lat"], s3["len"]
        with m.If(good):
            m.d.sync += [
                self.stat_good_frames.eq(self.stat_good_frames + 1),
                self.stat_good_bytes.eq(self.stat_good_bytes + size),
                self.stat_lat_sum.eq(self.stat_lat_sum + lat),
                self.stat_lat_max.eq(Mux(lat > self.stat_lat_max, lat, self.stat_lat_max)),
            ]
            with m.If(s3_behind):
                m.d.sync += [
                    self.stat_reordered.eq(self.stat_reordered + 1),
                    self.stat_lost.eq(self.stat_lost - 1),
                ]
            with m.Else():
                m.d.sync += self.stat_lost.eq(self.stat_lost + s3_d)
            for t in range(self.tenants):
                with m.If(s3["tenant"] == t):
                    m.d.sync += self.stat_tenant_bytes[t].eq(self.stat_tenant_bytes[t] + size)


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
