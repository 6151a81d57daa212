"""TrafficGenerator: synthesizable source of RoCEv2-like test frames for one host port.

It sends, at up to one beat per clock, frames of this format (fabric spec section 4;
multi-byte fields big-endian). The gateware defines it; the reference model in the
benches re-implements it independently and is checked against this block.

=========  =======================================================================
bytes      field
=========  =======================================================================
0-5        DA ``02:00:00:00:00:<dst>``
6-11       SA ``02:00:00:00:00:<src>``
12-13      EtherType 0x0800
14-33      IPv4: version 4, IHL 5, TOS ``tc << 5``, total length, id 0, DF, TTL 64,
           protocol 17, header checksum, ``10.0.0.<src>`` -> ``10.0.0.<dst>``
34-41      UDP: source port (per flow, from the seed), destination port 4791,
           length, checksum 0 (none)
42-43      source host id
44-45      flow id
46-49      per-flow sequence number
50-53      send timestamp (clocks since reset)
54-55      ``tc << 13 | tenant``
56-57      destination host id
58-59      check: XOR of the 16-bit words of bytes 42..57 and of the frame length,
           XOR 0xA55A
60-        filler: byte ``i`` is ``(i + seq) mod 256``
=========  =======================================================================
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..catalog import BlockSpec
from ..lib.pipelined_multiplier import PipelinedMultiplier
from ..lib.sram import SRAM
from ..lib.stream import AXIStreamSignature, check_data_width

__all__ = ["TrafficGenerator", "dst_write_layout", "EXPORTS"]

HEADER_BYTES = 60
MIN_FRAME, MAX_FRAME = 60, 9000
ROCE_PORT = 4791
CHECK_KEY = 0xA55A
SEED_ZERO = 0x6D2B79F5
RATE_ONE = 1 << 16  # `rate` of full line rate
BUCKET = 2 * RATE_ONE  # the token bucket's depth (credit of two clocks at full rate)


def dst_write_layout(max_flows):
    """Payload of the destination-table write stream: ``index`` (a flow) -> ``dst``."""
    return data.StructLayout({"index": range(max_flows), "dst": 8})


def be_bytes(value, n):
    """The ``n`` bytes of ``value`` (zero-extended), most significant first (network
    order)."""
    value = Value.cast(value)
    value = Cat(value, Const(0, 8 * n - len(value))) if len(value) < 8 * n else value
    return [value[8 * (n - 1 - i) : 8 * (n - i)] for i in range(n)]


class TrafficGenerator(wiring.Component):
    """Traffic generator of one host port (spec section 4 frames).

    Parameters
    ----------
    data_width : int
        Bits of ``tdata``: 8, 16, 32 or 64 (the smallest frame must last more clocks
        than the 5-clock preparation of the next one).
    max_flows : int
        Entries of the destination table (flows), 2..256.

    Interface
    ---------
    ``m_axis`` : ``Out(AXIStreamSignature(data_width))``
        Frames (Ethernet II, no FCS), ``tuser`` always 0. ``tvalid``, ``tdata`` and
        ``tlast`` are registers (``tdata`` the bottom of a shift register of the header
        beats, loaded at the frame's start), ``tkeep`` one mux of registers. Obeys
        ``tready``; with ``tready`` high and ``rate`` full, one beat per clock and no
        bubble between frames.
    ``s_dst`` : ``In(stream.Signature(dst_write_layout(max_flows)))``
        Destination table writes: flow ``index`` goes to host ``dst`` and its sequence
        number restarts at 0. Ready while ``enable`` is 0 (after the reset sweep of
        ``max_flows`` clocks). Write the table before enabling.
    Configuration (static while ``enable`` is 1 and for 4 clocks before it rises: the
    frame sizes reach the preparation through 3 registers; sampled when a frame is
    prepared):
        ``enable`` (1): frames start only while 1 (a frame started finishes).
        ``host`` (8): this host's id (MAC ``02:00:00:00:00:host``, IPv4 ``10.0.0.host``).
        ``frame_min``, ``frame_max`` (14): frame size in bytes without FCS, uniform in
        ``frame_min..frame_max``; both clamped to 60..9000, ``max < min`` = ``min``.
        ``rate`` (17): offered rate in 1/65536 of line rate (65536 = every clock); a
        token bucket of two clocks' credit: a frame starts only when the credit is not
        negative, each beat costs 65536, each clock earns ``rate`` (registered: a change
        counts from the second clock after it; static during a run, like the rest).
        ``flows`` (9): flows in use, table entries ``0..flows-1`` (more than
        ``max_flows``: ``max_flows``; 0: nothing is sent).
        ``random`` (1): 0 = flows in turn, one frame each; 1 = each frame's flow drawn
        uniformly by the random number generator.
        ``tenant`` (12), ``tc`` (3): written into the payload (and ``tc`` into the IPv4
        TOS as ``tc << 5``).
        ``seed`` (32): the random number generator's start (xorshift32; 0 is replaced by
        a fixed non-zero value), taken while ``enable`` is 0 and no frame has been
        prepared since reset; it also draws each flow's UDP source port.
    ``pause`` : ``In(1)``
        While 1, no new frame starts (a frame already started finishes).
    ``stat_frames`` (32), ``stat_bytes`` (48): frames sent and their bytes (original
        frame bytes: DA..end of payload). ``stat_paused`` (32): clocks in which a frame
        was ready to start and held only by ``pause``.

    Timing
    ------
    After reset the table is cleared in ``max_flows`` clocks. A frame is prepared in 5
    clocks (flow and size drawn, the flow's seq read and incremented, UDP port and IPv4
    checksum computed) while the previous one is sent, and starts in the clock after
    the previous one's last beat. The timestamp it carries is the clock count since
    reset of the clock its first beat is first shown on ``m_axis``.
    """

    def __init__(self, data_width=64, max_flows=64):
        check_data_width(data_width)
        if data_width > 64:
            raise ValueError("TrafficGenerator supports data_width 8..64")
        if not 2 <= max_flows <= 256:
            raise ValueError("TrafficGenerator max_flows must be 2..256")
        self.data_width, self.max_flows = data_width, max_flows
        super().__init__(
            {
                "m_axis": Out(AXIStreamSignature(data_width)),
                "s_dst": In(stream.Signature(dst_write_layout(max_flows))),
                "enable": In(1),
                "host": In(8),
                "frame_min": In(14),
                "frame_max": In(14),
                "rate": In(17),
                "flows": In(9),
                "random": In(1),
                "tenant": In(12),
                "tc": In(3),
                "seed": In(32),
                "pause": In(1),
                "stat_frames": Out(32),
                "stat_bytes": Out(48),
                "stat_paused": Out(32),
            }
        )

    def elaborate(self, platform):
        m = Module()
        lanes = self.data_width // 8
        lane_bits = (lanes - 1).bit_length()
        nf = self.max_flows

        # ---- clock count, table clear after reset --------------------------------------
        now1 = Signal(32, init=1)  # clocks since reset, plus one (a frame's timestamp)
        m.d.sync += now1.eq(now1 + 1)
        m.submodules.table = table = SRAM(8 + 32, nf)  # {seq, dst} per flow
        init_done = Signal()
        init_addr = Signal(range(nf))

        # ---- configuration, clamped ----------------------------------------------------
        lo, hi = Signal(14), Signal(14)
        m.d.sync += lo.eq(  # registered, as span: configuration is static during a run
            Mux(
                self.frame_min < MIN_FRAME,
                MIN_FRAME,
                Mux(self.frame_min > MAX_FRAME, MAX_FRAME, self.frame_min),
            )
        )
        hi_c = Mux(
            self.frame_max < MIN_FRAME, MIN_FRAME, Mux(self.frame_max > MAX_FRAME, MAX_FRAME, self.frame_max)
        )
        m.d.comb += hi.eq(Mux(hi_c < lo, lo, hi_c))
        span = Signal(14)
        m.d.sync += span.eq(hi - lo + 1)  # registered: cuts the clamp out of the size path
        flows = Signal(9)
        m.d.comb += flows.eq(Mux(self.flows > nf, nf, self.flows))
        tenant_word = Cat(self.tenant, Const(0, 1), self.tc)

        # ---- preparation pipeline: A (draw) -> B (read seq) -> C (mix) -> next ---------
        rng = Signal(32)
        fresh = Signal(init=1)  # no frame prepared since reset: rng follows the seed
        rr = Signal(8)
        pa, pb, pc, pd = Signal(), Signal(), Signal(), Signal()
        next_valid = Signal()
        trigger = init_done & self.enable & (flows != 0) & ~next_valid & ~pa & ~pb & ~pc & ~pd
        r_next = Signal(32)
        x1 = (rng ^ (rng << 13))[:32]
        x2 = x1 ^ (x1 >> 17)
        m.d.comb += r_next.eq((x2 ^ (x2 << 5))[:32])
        with m.If(fresh & ~self.enable):
            m.d.sync += rng.eq(Mux(self.seed == 0, SEED_ZERO, self.seed))
        with m.Elif(trigger):
            m.d.sync += [rng.eq(r_next), fresh.eq(0)]

        # The two draws' products, two clocks behind rng (PipelinedMultiplier: operand
        # and result registers, inside the DSP on ECP5): rng changes only at a trigger
        # (or follows the seed, static 4 clocks before enable), and the next trigger is
        # at least 5 clocks later, so at a trigger they are the products of the current
        # rng. This keeps the multipliers out of the adder and the mux behind them
        # (106.5 MHz on the Colorlight), and the DSP's own delay between registers
        # (a flip-flop -> DSP -> flip-flop path was 8.35 ns there).
        m.submodules.flow_mul = flow_mul = PipelinedMultiplier(16, len(flows), shift=16, width=8)
        m.submodules.size_mul = size_mul = PipelinedMultiplier(16, len(span), shift=16, width=14)
        m.d.comb += [
            flow_mul.a.eq(rng[16:32]),
            flow_mul.b.eq(flows),
            size_mul.a.eq(rng[:16]),
            size_mul.b.eq(span),
        ]
        flow_draw, size_draw = flow_mul.p, size_mul.p
        f_a, size_a = Signal(8), Signal(14)  # stage A: the flow and size drawn
        with m.If(trigger):
            pick = Mux(self.random, flow_draw, rr)
            m.d.sync += [f_a.eq(pick), size_a.eq(lo + size_draw), rr.eq(Mux(rr + 1 >= flows, 0, rr + 1))]
        m.d.sync += [pa.eq(trigger), pb.eq(pa), pc.eq(pb), pd.eq(pc)]
        m.d.comb += table.r0_addr.eq(f_a)  # read in A's clock + 1 (stage B has the data)

        # stage B (clock after A): the flow's {seq, dst} is on the SRAM's read port;
        # seq + 1 is written back; the port mix runs on.
        rd_dst, rd_seq = table.r0_data[:8], table.r0_data[8:40]
        mix_b, size_b = Signal(32), Signal(14)
        k = Cat(f_a, self.host)
        xa = (self.seed ^ Cat(k, k))[:32]  # seed ^ (k << 16) ^ k
        xb = (xa + (xa << 10))[:32]
        with m.If(pa):
            m.d.sync += [mix_b.eq(xb ^ (xb >> 6)), size_b.eq(size_a)]
        y1 = (mix_b + (mix_b << 3))[:32]
        y2 = y1 ^ (y1 >> 11)
        y3 = (y2 + (y2 << 15))[:32]
        # the IPv4 sum's terms that do not depend on the frame, registered, so that stage
        # C adds one term to them (the chain of three adders was the Colorlight
        # self-test core clock's worst path): the constant words (0x4500, 0x4000,
        # 0x4011, 0x0a00 twice) - 14 (the total length is size - 14) + TOS + source
        sum_k = Signal(18)
        m.d.sync += sum_k.eq(0xD911 - 14 + Cat(Const(0, 5), self.tc) + self.host)
        f_c, dst_c, seq_c, size_c = Signal(8), Signal(8), Signal(32), Signal(14)
        sport_c, sum_c, last_c, keep_c = Signal(16), Signal(18), Signal(14), Signal(lanes)
        with m.If(pb):
            m.d.sync += [
                f_c.eq(f_a),
                dst_c.eq(rd_dst),
                seq_c.eq(rd_seq),
                size_c.eq(size_b),
                sport_c.eq(Cat(y3[16:30], Const(0b11, 2))),
                # IPv4 header sum without the destination (sizes are 60 or more)
                sum_c.eq(sum_k + size_b),
                last_c.eq((size_b - 1) >> lane_bits),
            ]
            for n in range(lanes):
                m.d.sync += keep_c[n].eq(((size_b - 1)[:lane_bits] >= n) if n else 1)

        # table writes: the reset sweep, then seq + 1 in stage B, then the s_dst stream
        m.d.comb += self.s_dst.ready.eq(init_done & ~self.enable & ~pa & ~pb & ~pc)
        with m.If(~init_done):
            m.d.comb += [table.w_en.eq(1), table.w_addr.eq(init_addr), table.w_data.eq(0)]
            m.d.sync += init_addr.eq(init_addr + 1)
            with m.If(init_addr == nf - 1):
                m.d.sync += init_done.eq(1)
        with m.Elif(pb):
            m.d.comb += [table.w_en.eq(1), table.w_addr.eq(f_a), table.w_data.eq(Cat(rd_dst, rd_seq + 1))]
        with m.Elif(self.s_dst.valid & self.s_dst.ready):
            m.d.comb += [
                table.w_en.eq(1),
                table.w_addr.eq(self.s_dst.payload.index),
                table.w_data.eq(Cat(self.s_dst.payload.dst, Const(0, 32))),
            ]

        # stage C: the IPv4 checksum completed; the next frame is ready
        nxt = {
            name: Signal(width, name=f"next_{name}")
            for name, width in [
                ("flow", 8),
                ("dst", 8),
                ("seq", 32),
                ("size", 14),
                ("sport", 16),
                ("csum", 16),
                ("last", 14),
                ("last_m1", 14),  # last - 1: the frame's last beat follows beat last - 1
                ("keep", lanes),
                ("ip_len", 16),
                ("udp_len", 16),
                ("check", 16),  # the check word without the timestamp's two words
            ]
        }
        total = sum_c + dst_c
        folded = Signal(17)  # the ones' complement sum, folded once (stage D folds again)
        m.d.sync += folded.eq(total[:16] + total[16:])
        start = Signal()
        with m.If(pc):
            m.d.sync += [
                nxt["flow"].eq(f_c),
                nxt["dst"].eq(dst_c),
                nxt["seq"].eq(seq_c),
                nxt["size"].eq(size_c),
                nxt["sport"].eq(sport_c),
                nxt["last"].eq(last_c),
                nxt["last_m1"].eq(last_c - 1),
                nxt["keep"].eq(keep_c),
                nxt["ip_len"].eq(size_c - 14),
                nxt["udp_len"].eq(size_c - 34),
                nxt["check"].eq(
                    Const(CHECK_KEY, 16)
                    ^ size_c
                    ^ self.host
                    ^ f_c
                    ^ tenant_word
                    ^ dst_c
                    ^ seq_c[16:]
                    ^ seq_c[:16]
                ),
            ]
        with m.If(pd):
            m.d.sync += [next_valid.eq(1), nxt["csum"].eq(~(folded[:16] + folded[16])[:16])]
        with m.Elif(start):
            m.d.sync += next_valid.eq(0)

        self._emit(m, now1, start, next_valid & init_done, nxt, tenant_word)
        return m

    def _emit(self, m, now1, start, next_valid, nxt, tenant_word):
        """The frame on ``m_axis``: header words, filler, rate, pause and counters."""
        o = self.m_axis
        lanes = self.data_width // 8
        # the current frame's size, last beat and last beat's tkeep (the rest of it is
        # in the shift register below)
        cur = {name: Signal.like(nxt[name], name=f"cur_{name}") for name in ("size", "last_m1", "keep")}
        active = Signal()
        beat = Signal(14)
        is_last = Signal()  # the beat on m_axis is the frame's last
        fire = o.valid & o.ready
        can_start = ~active | (fire & is_last)
        # as low as a whole frame's beats of debt (RATE_ONE - rate each), as high as
        # BUCKET: 28 bits at 64 bits wide (a shorter carry chain than a fixed 36)
        tokens = Signal(signed(((MAX_FRAME // lanes + 2) * RATE_ONE).bit_length() + 1))
        tokens_ok = ~tokens[-1]
        ready_to_go = can_start & next_valid & self.enable & tokens_ok
        m.d.comb += start.eq(ready_to_go & ~self.pause)
        with m.If(ready_to_go & self.pause):
            m.d.sync += self.stat_paused.eq(self.stat_paused + 1)
        # tokens' = min(tokens + rate - (fire ? RATE_ONE : 0), BUCKET), still every clock,
        # but no carry chain feeds another: rate is registered with its derived constants
        # (static during a run), the two sums read the tokens register directly, the
        # clamp (earned > BUCKET) comes from two flag registers (below), and ``fire``
        # only selects among their results. BUCKET is two
        # clocks' credit: a frame starts on a credit of up to one ``rate`` and its start
        # clock (no beat yet) earns another, so a bucket of one clock would throw credit
        # away between frames (0.9 % of rate 0.7 with 60..200-byte frames, measured).
        # reset-less: they follow ``rate`` through reset, so the first clock after it
        # already earns ``rate``, as the unregistered form did.
        # The two clamp flags (earned > BUCKET after an idle clock / after a beat) are
        # registers themselves, computed one clock ahead: the next clock's tokens are
        # BUCKET, tokens + cost or tokens + rate, so its flags are BUCKET's (constants of
        # rate) or compares of today's tokens against four thresholds of rate
        # (``tokens + cost > over[0]``  <=>  ``tokens > over[0] - cost``, ...). So the
        # update of ``tokens`` takes its clamp from flip-flops, and each 36-bit compare
        # feeds only a flag (the compare in series with the clamp select into the
        # ``tokens`` register held the core clock to 104.7 MHz at d851172).
        rate_r = Signal(len(self.rate), reset_less=True)
        cost = Signal(signed(19), reset_less=True)  # rate - RATE_ONE
        th = [Signal(signed(21), name=f"tokens_th{n}", reset_less=True) for n in range(4)]
        full = [Signal(name=f"tokens_full{n}", reset_less=True) for n in range(2)]
        over = (BUCKET - self.rate, BUCKET + RATE_ONE - self.rate)
        m.d.sync += [
            rate_r.eq(self.rate),
            cost.eq(self.rate - RATE_ONE),
            th[0].eq(over[0] - (self.rate - RATE_ONE)),  # after a beat, the idle flag
            th[1].eq(over[1] - (self.rate - RATE_ONE)),  # after a beat, the beat flag
            th[2].eq(over[0] - self.rate),  # after an idle clock, the idle flag
            th[3].eq(over[1] - self.rate),  # after an idle clock, the beat flag
            full[0].eq(self.rate > 0),  # BUCKET > over[0]
            full[1].eq(self.rate > RATE_ONE),  # BUCKET > over[1]
        ]
        idle_clamp, beat_clamp = Signal(), Signal()  # tokens > over[0], tokens > over[1]
        clamp = Mux(fire, beat_clamp, idle_clamp)
        with m.If(clamp):
            m.d.sync += [tokens.eq(BUCKET), idle_clamp.eq(full[0]), beat_clamp.eq(full[1])]
        with m.Elif(fire):
            m.d.sync += [
                tokens.eq(tokens + cost),
                idle_clamp.eq(tokens > th[0]),
                beat_clamp.eq(tokens > th[1]),
            ]
        with m.Else():
            m.d.sync += [
                tokens.eq(tokens + rate_r),
                idle_clamp.eq(tokens > th[2]),
                beat_clamp.eq(tokens > th[3]),
            ]

        with m.If(start):
            m.d.sync += [cur[n].eq(nxt[n]) for n in cur]
            m.d.sync += [active.eq(1), beat.eq(0), is_last.eq(nxt["last"] == 0)]
        with m.Elif(fire & is_last):
            m.d.sync += active.eq(0)
        with m.Elif(fire):
            # beat + 1 == last, as an equality of registers (the adder in front of
            # the compare was the Colorlight self-test core clock's worst path, seed 1)
            m.d.sync += [beat.eq(beat + 1), is_last.eq(beat == cur["last_m1"])]
        with m.If(fire & is_last):
            m.d.sync += [
                self.stat_frames.eq(self.stat_frames + 1),
                self.stat_bytes.eq(self.stat_bytes + cur["size"]),
            ]

        # tdata is the bottom word of a shift register holding the frame's header beats:
        # loaded whole when the frame starts, from the prepared frame's registers (the
        # lengths and the check word were computed during the preparation; only the
        # timestamp, known at the start, is XORed into the check word on the way), and
        # shifted down one word per beat taken, the filler's next word entering at the
        # top. So every tdata bit is a flip-flop whose input is a two-way choice, not a
        # select over the header words by the beat number (that select, ending at a
        # register loaded one beat ahead, held the Colorlight self-test's core clock to
        # 111.7 MHz at f41743d: 6.85 ns of routing through seven LUT levels).
        header_beats = -(-HEADER_BYTES // lanes)
        seq = nxt["seq"]
        check = nxt["check"] ^ now1[16:] ^ now1[:16]
        hdr = self._header(nxt["dst"], nxt, now1, tenant_word, nxt["ip_len"], nxt["udp_len"], check)
        hdr += [(seq[:8] + i)[:8] for i in range(HEADER_BYTES, header_beats * lanes)]  # 64-bit: filler
        # The bottom word is a register of its own: as a slice of one wide register it
        # became, in the export, an alias of m_axis_tdata that nothing reads (-Wall).
        words = Cat(*hdr)
        data = Signal(self.data_width)  # the beat on m_axis
        upper = Signal((header_beats - 1) * self.data_width)  # the beats after it
        fill = Signal(8)  # filler byte 0 of the next word to enter at the top
        with m.If(start):
            m.d.sync += [Cat(data, upper).eq(words), fill.eq(seq[:8] + header_beats * lanes)]
        with m.Elif(fire & ~is_last):
            top = Cat(*[(fill + n)[:8] for n in range(lanes)])
            m.d.sync += [Cat(data, upper).eq(Cat(upper, top)), fill.eq(fill + lanes)]
        m.d.comb += [
            o.valid.eq(active),
            o.payload.data.eq(data),
            o.payload.keep.eq(Mux(is_last, cur["keep"], (1 << lanes) - 1)),
            o.payload.last.eq(is_last),
            o.payload.user.eq(0),
        ]

    def _header(self, dst, cur, ts, tenant_word, ip_len, udp_len, check):
        """The 60 header bytes (traffic_model's byte map) of the frame in ``cur`` going
        to ``dst``, with its IPv4 and UDP lengths and its check word."""
        host, seq = self.host, cur["seq"]
        mac = [Const(2, 8)] + [Const(0, 8)] * 4
        c8 = lambda v: Const(v, 8)  # noqa: E731
        hdr = (
            mac
            + [dst]
            + mac
            + [host]
            + [c8(0x08), c8(0x00)]
            + [c8(0x45), Cat(Const(0, 5), self.tc)]
            + be_bytes(ip_len, 2)
            + [c8(0), c8(0), c8(0x40), c8(0), c8(64), c8(17)]
            + be_bytes(cur["csum"], 2)
            + [c8(10), c8(0), c8(0), host, c8(10), c8(0), c8(0), dst]
            + be_bytes(cur["sport"], 2)
            + be_bytes(Const(ROCE_PORT, 16), 2)
            + be_bytes(udp_len, 2)
            + [c8(0), c8(0)]
            + [c8(0), host]
            + be_bytes(Cat(cur["flow"], Const(0, 8)), 2)
            + be_bytes(seq, 4)
            + be_bytes(ts, 4)
            + be_bytes(tenant_word, 2)
            + [c8(0), dst]
            + be_bytes(check, 2)
        )
        assert len(hdr) == HEADER_BYTES and all(len(Value.cast(b)) == 8 for b in hdr)
        return hdr


EXPORTS = [
    BlockSpec(
        name="traffic_gen",
        module="gse_traffic_gen",
        factory=TrafficGenerator,
        params={"data_width": 64, "max_flows": 64},
        description="traffic generator of one host port: IPv4/UDP (RoCEv2 port) frames with "
        "per-flow seq, timestamp, tenant and check; destination table, size range, offered "
        "rate, pause; counters",
    )
]
