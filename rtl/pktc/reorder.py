"""PKTC reorder buffer of the destination leaf: containers back in order, per source.

The sprayer of a source leaf sends each container whole on one uplink, and the
uplinks have different delays, so containers of one source arrive out of order
(frames of different containers may interleave; the frames *of* one container
arrive in order). This block stores them per source node in a window of W
containers and releases them strictly in ``seq`` order, whole.

Interface
---------
* ``s_axis`` (in, AXI-Stream, ``data_width``): GSE-tagged DATA frames from the
  fabric ports (after the parser). Always ready: the block never back-pressures
  the fabric; what it cannot keep it drops and counts. ``tkeep`` must be
  contiguous from byte 0 (the usual packet convention); ``tuser`` bit 0 on the
  last beat marks a bad frame.
* ``m_axis`` (out, AXI-Stream): the stored frames, container by container, each
  source's containers in ``seq`` order. Back-pressure (``tready``) is honoured.
* ``stat_*`` (out, 32-bit, wrapping): ``frames_in``, ``containers_out``,
  ``lost`` (containers skipped after the timeout: missing or partial),
  ``drop_dup`` (frames of a container already stored or already released),
  ``drop_window`` (frames of a container more than W ahead), ``drop_orphan``
  (frames of a container whose FIRST frame never arrived), ``drop_bad``
  (containers discarded whole: a frame with ``tuser`` set, or larger than a slot),
  ``drop_runt`` (frames shorter than the 32-byte tagged header),
  ``drop_other`` (not a v1 DATA frame, or ``src_node`` >= ``sources``).

Parameters
----------
``data_width`` (64), ``sources`` N (source nodes 0..N-1), ``window`` W (power of
two), ``slot_bytes`` (power of two: the storage of one container; a container
larger than this is discarded whole and counted in ``drop_bad``), ``timeout``
(cycles a missing head container is waited for once a later container of the
same source, or part of the head, is stored).

Storage: one block RAM (``ram``, exported as module ``gse_reorder_ram``) of
N*W*slot_bytes/(data_width/8) words of ``data_width + 1 + log2(data_width/8)``
bits (data, last, byte count of the last beat): a fixed region per
(source, window slot). Per slot a few flip-flops: used, done (LAST stored), bad,
fill level.

Timing
------
* Ingress: 1 beat per clock, always ready. A frame's fate is decided one clock
  after the beat holding header byte 31 arrives (beat 3 at 64 bits); its beats
  wait in a small FIFO until then and are written (through one register) about 8
  clocks after they entered. A frame's end is booked 2 clocks after its last beat
  (always after its decision), and the container's "done" takes effect 3 clocks
  later, so reading never overtakes writing.
* Egress: 1 beat per clock inside a container, 3 idle clocks between containers
  (release, then selection of the next deliverable source head); read latency 2
  clocks (block RAM, then a register for its output multiplexer) into an 8-entry
  output FIFO.
* A missing container is skipped ``timeout`` .. ``timeout`` + 4 clocks after the
  first later container (or part of it) of the same source was stored.
"""
from amaranth.hdl import Cat, Const, Elaboratable, Module, Mux, Signal, unsigned
from amaranth.lib import wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..catalog import BlockSpec
from ..header.gse_header import (ETH_HEADER_BYTES, GSE_VERSION, GSEFlags, GSEType,
                         TAGGED_HEADER_BYTES, unpack_header)
from ..lib.stream import AXIStreamSignature, check_data_width

__all__ = ["ReorderBuffer", "EXPORTS"]

STATS = ("frames_in", "containers_out", "lost", "drop_dup", "drop_window", "drop_orphan",
         "drop_bad", "drop_runt", "drop_other")


def _log2(x, what):
    if x < 1 or x & (x - 1):
        raise ValueError(f"{what} must be a power of two, not {x!r}")
    return x.bit_length() - 1


class _Port:
    def __init__(self, name, abits, dbits):
        self.en = Signal(name=f"{name}_en")
        self.addr = Signal(abits, name=f"{name}_addr")
        self.data = Signal(dbits, name=f"{name}_data")


class SlotRAM(Elaboratable):
    """Simple dual-port block RAM (one write port, one registered read port).

    Its own hierarchy level, so that export keeps it a separate Verilog module
    (``gse_reorder_ram``) an ASIC flow can swap for an SRAM macro. Read-during-write
    of one address returns the old word (never happens here: a slot is read only
    once it is complete)."""

    def __init__(self, width, depth):
        self.width, self.depth = width, depth
        abits = max(1, (depth - 1).bit_length())
        self.w = _Port("w", abits, width)
        self.r = _Port("r", abits, width)

    # DP16KD shapes (depth, width): slicing the word into the widest slice whose
    # depth covers the RAM keeps the read multiplexer after the block RAMs at most
    # depth/16384 deep (2:1 for 32K words) instead of a 64:1 tree of 512 x 36 blocks.
    SHAPES = ((16384, 1), (8192, 2), (4096, 4), (2048, 9), (1024, 18), (512, 36))

    def elaborate(self, platform):
        m = Module()
        need = min(self.depth, 16384)
        slice_w = max(w for d, w in self.SHAPES if d >= need)
        for k, lo in enumerate(range(0, self.width, slice_w)):
            hi = min(lo + slice_w, self.width)
            mem = Memory(shape=unsigned(hi - lo), depth=self.depth, init=[])
            m.submodules[f"mem{k}"] = mem
            wp = mem.write_port()
            rp = mem.read_port()
            m.d.comb += [wp.en.eq(self.w.en), wp.addr.eq(self.w.addr), wp.data.eq(self.w.data[lo:hi]),
                         rp.en.eq(self.r.en), rp.addr.eq(self.r.addr), self.r.data[lo:hi].eq(rp.data)]
        return m


class ReorderBuffer(wiring.Component):
    def __init__(self, data_width=64, sources=4, window=8, slot_bytes=8192, timeout=4096):
        check_data_width(data_width)
        self.data_width = data_width
        self.bpb = data_width // 8                      # bytes per beat
        if not 1 <= sources <= 256:
            raise ValueError("sources must be 1..256")
        self.sources = sources
        self.window = window
        self.win_bits = _log2(window, "window")
        if window > 1 << 14:
            raise ValueError("window must be below 2**14 (half the seq space)")
        self.slot_beats = slot_bytes // self.bpb
        self.slot_bits = _log2(self.slot_beats, "slot_bytes / bytes per beat")
        if slot_bytes < TAGGED_HEADER_BYTES * 2:
            raise ValueError("slot_bytes too small")
        if timeout < 1:
            raise ValueError("timeout must be >= 1")
        self.timeout = timeout
        self.cnt_bits = max(1, _log2(self.bpb, "bytes per beat"))
        super().__init__({
            "s_axis": In(AXIStreamSignature(data_width)),
            "m_axis": Out(AXIStreamSignature(data_width)),
            **{f"stat_{n}": Out(32) for n in STATS},
        })

    def elaborate(self, platform):
        m = Module()
        N, W, B = self.sources, self.window, self.bpb
        src_bits = max(1, (N - 1).bit_length())
        nslots = N * W
        word_bits = self.data_width + 1 + self.cnt_bits
        hdr_beat = (TAGGED_HEADER_BYTES - 1) // B       # beat holding header byte 31
        lag = hdr_beat + 1                              # pipeline depth (beats)

        m.submodules.ram = ram = SlotRAM(word_bits, nslots * self.slot_beats)
        wp, rp = ram.w, ram.r

        # ---- slot state (flip-flops): index = src * W + (seq mod W)
        used = Signal(nslots)
        done = Signal(nslots)
        bad = Signal(nslots)
        fill = [Signal(self.slot_bits + 1, name=f"fill{i}") for i in range(nslots)]
        exp = [Signal(16, name=f"exp{s}") for s in range(N)]   # next seq to release

        stats = {n: getattr(self, f"stat_{n}") for n in STATS}
        incr = {n: Signal(name=f"inc_{n}") for n in STATS}
        # (counted a clock after the event: the counter enables come from registers,
        # not from the ingress decision)
        incr_d = {n: Signal(name=f"inc_{n}_d") for n in STATS}
        for n in STATS:
            m.d.sync += incr_d[n].eq(incr[n])
            if n != "lost":
                with m.If(incr_d[n]):
                    m.d.sync += stats[n].eq(stats[n] + 1)
        # stat_lost adds 1 per container skipped, or at a resync the containers skipped
        # over (``lost_bulk``, registered with the resync): one adder, from registers.
        lost_bulk = Signal(16)
        m.d.sync += lost_bulk.eq(0)
        m.d.sync += self.stat_lost.eq(self.stat_lost + Mux(incr_d["lost"], 1, lost_bulk))

        # ---- ingress: header capture at entry, decision, delayed write -------------
        s = self.s_axis
        beat_in = Signal()
        ein = Signal(range(hdr_beat + 2))               # entry beat index (saturating)
        # (of the flags byte only FIRST and LAST matter)
        hdr_bits = [2 if k == ETH_HEADER_BYTES + 1 else 8 for k in range(TAGGED_HEADER_BYTES)]
        hdr = [Signal(hdr_bits[k], name=f"hb{k}") for k in range(TAGGED_HEADER_BYTES)]
        # The header bytes as seen at the decision beat: registered ones, plus the
        # current input beat for the bytes it carries.
        cur = []
        for k in range(TAGGED_HEADER_BYTES):
            if k // B == hdr_beat:
                cur.append(s.payload.data[8 * (k % B):8 * (k % B) + 8])
            else:
                cur.append(Cat(hdr[k], Const(0, 8 - hdr_bits[k])) if hdr_bits[k] < 8 else hdr[k])
        with m.If(beat_in):
            for k in range(TAGGED_HEADER_BYTES):
                if k // B < hdr_beat:
                    with m.If(ein == k // B):
                        m.d.sync += hdr[k].eq(s.payload.data[8 * (k % B):8 * (k % B) + hdr_bits[k]])
            with m.If(s.payload.last):
                m.d.sync += ein.eq(0)
            with m.Elif(ein <= hdr_beat):
                m.d.sync += ein.eq(ein + 1)
        f = unpack_header(cur[ETH_HEADER_BYTES:])
        # The frame's fate is decided one clock after its header completes, from
        # registered header fields (a clock of its own for the window arithmetic).
        raw_runt = Signal()     # the frame ends before header byte 31
        m.d.comb += raw_runt.eq(beat_in & s.payload.last &
                                ((ein < hdr_beat) |
                                 ((ein == hdr_beat) & ~s.payload.keep[(TAGGED_HEADER_BYTES - 1) % B])))
        raw_decide = beat_in & (ein == hdr_beat) & ~raw_runt
        f_src, f_seq, f_flags = Signal(16), Signal(16), Signal(2)     # flags: FIRST, LAST
        f_qm1 = Signal(16 - self.win_bits)              # (seq >> log2 W) - 1 (see in_win)
        is_data = Signal()
        decide, runt = Signal(), Signal()
        with m.If(raw_decide):
            m.d.sync += [f_src.eq(f["src_node"]), f_seq.eq(f["seq"]), f_flags.eq(f["flags"][:2]),
                         f_qm1.eq(f["seq"][self.win_bits:] - 1),
                         is_data.eq((f["ver"] == GSE_VERSION) & (f["type"] == GSEType.DATA.value))]
        m.d.sync += [decide.eq(raw_decide), runt.eq(raw_runt)]
        # ... and so is the frame's end (after the decision when both fall together)
        end_ev = Signal()
        end_user = Signal()
        # (two clocks after the last beat: always after the decision, so the end
        # bookkeeping only sees registered decisions)
        end_ev1, end_user1 = Signal(), Signal()
        m.d.sync += [end_ev1.eq(beat_in & s.payload.last & ~raw_runt), end_user1.eq(s.payload.user[0]),
                     end_ev.eq(end_ev1), end_user.eq(end_user1)]
        src_ok = f_src < N
        f_first = f_flags[0]                            # GSEFlags.FIRST
        assert GSEFlags.FIRST.value == 1 and GSEFlags.LAST.value == 2
        sidx = f_src[:src_bits]
        exp_s = Signal(16)
        m.d.comb += exp_s.eq(Cat(*exp).word_select(sidx, 16) if N > 1 else exp[0])
        dist = Signal(16)
        m.d.comb += dist.eq(f_seq - exp_s)
        slot_c = Signal(range(nslots))
        m.d.comb += slot_c.eq(Cat(f_seq[:self.win_bits], sidx) if N > 1 else f_seq[:self.win_bits])
        slot_used = used.bit_select(slot_c, 1)
        slot_done = done.bit_select(slot_c, 1)
        fill_c = Signal(self.slot_bits + 1)
        fill_wr = Signal(nslots)                        # fill level written this clock
        fill_val = Signal(self.slot_bits + 1)
        fill_rd = Cat(*fill).word_select(slot_c, self.slot_bits + 1)
        if hdr_beat == 0:
            # The header is in the first beat: a frame's decision can fall in the clock
            # its container's previous frame's fill level is written: forwarded.
            m.d.comb += fill_c.eq(Mux(fill_wr.bit_select(slot_c, 1), fill_val, fill_rd))
        else:
            m.d.comb += fill_c.eq(fill_rd)

        # Decision for the frame whose header completes on this beat. Whether it is taken
        # is formed from shallow flags: "in the window" (seq - next < W) without the
        # subtraction, per source in parallel: with seq = q*W + r and next = qn*W + rn,
        # q == qn if r >= rn, else q - 1 == qn.
        in_win_s = Signal(N)
        for s_ in range(N):
            qn, rn = exp[s_][self.win_bits:], exp[s_][:self.win_bits]
            m.d.comb += in_win_s[s_].eq(Mux(f_seq[:self.win_bits] >= rn,
                                            f_seq[self.win_bits:] == qn, f_qm1 == qn))
        in_win = in_win_s.bit_select(sidx, 1) if N > 1 else in_win_s[0]
        c_accept = Signal()
        m.d.comb += c_accept.eq(is_data & src_ok & in_win &
                                Mux(slot_used, ~f_first & ~slot_done, f_first))
        # Why it is dropped (for the counters and the "ahead" evidence only): formed a
        # clock later from registered flags, as the decision saw them.
        r_decide, r_other, r_win, r_behind, r_used, r_done, r_first = (Signal() for _ in range(7))
        r_sidx, r_seq = Signal(src_bits), Signal(16)
        m.d.sync += [r_decide.eq(decide), r_other.eq(~is_data | ~src_ok), r_win.eq(in_win),
                     r_behind.eq(dist[15]), r_used.eq(slot_used), r_done.eq(slot_done),
                     r_first.eq(f_first), r_sidx.eq(sidx), r_seq.eq(f_seq)]
        c_reason = Signal(4)     # 0 accept, else the drop counter (see below)
        R_OTHER, R_LATE, R_WINDOW, R_ORPHAN, R_DUP = 1, 2, 3, 4, 5
        with m.If(r_other):
            m.d.comb += c_reason.eq(R_OTHER)
        with m.Elif(~r_win):                            # seq - next >= W
            # behind the window (already released or skipped) or too far ahead
            m.d.comb += c_reason.eq(Mux(r_behind, R_DUP, R_WINDOW))
        with m.Elif(r_used):
            m.d.comb += c_reason.eq(Mux(r_first | r_done, R_DUP, 0))
        with m.Elif(~r_first):
            m.d.comb += c_reason.eq(R_ORPHAN)

        # Registered decision of the frame entering (for its end-of-frame bookkeeping).
        # A source ahead of its window: evidence of loss even with nothing stored.
        # (Set from the registered drop reason, a clock after the decision: the
        # evidence only starts a timer and a resync, so that is harmless.)
        ahead = Signal(N)
        ahead_seq = [Signal(16, name=f"ahead_seq{s_}") for s_ in range(N)]
        set_ahead = Signal()
        for s_ in range(N):
            with m.If(set_ahead & (r_sidx == s_)):
                m.d.sync += [ahead[s_].eq(1), ahead_seq[s_].eq(r_seq)]
        d_accept = Signal()
        d_slot = Signal(range(nslots))
        d_ofs = Signal(self.slot_bits + 1)
        with m.If(decide):
            m.d.sync += [d_accept.eq(c_accept), d_slot.eq(slot_c), d_ofs.eq(Mux(slot_used, fill_c, 0))]
        with m.If(r_decide):
            with m.Switch(c_reason):
                with m.Case(R_OTHER):
                    m.d.comb += incr["drop_other"].eq(1)
                with m.Case(R_WINDOW):
                    m.d.comb += incr["drop_window"].eq(1)
                    with m.If(r_first):
                        m.d.comb += set_ahead.eq(1)
                with m.Case(R_ORPHAN):
                    m.d.comb += incr["drop_orphan"].eq(1)
                with m.Case(R_DUP):
                    m.d.comb += incr["drop_dup"].eq(1)
        with m.If(runt):
            m.d.comb += incr["drop_runt"].eq(1)
        with m.If(beat_in & s.payload.last):
            m.d.comb += incr["frames_in"].eq(1)

        # Entry-side view of the current frame's decision (this beat may be the decision).
        e_accept, e_slot, e_ofs = d_accept, d_slot, d_ofs
        d_last_flag = Signal()
        with m.If(decide):
            m.d.sync += d_last_flag.eq(f_flags[1])
        e_flags_last = d_last_flag
        nbeats = Signal(self.slot_bits + 2)             # beats of the frame so far (saturating)
        end_nbeats1 = Signal(self.slot_bits + 3)        # beats of the frame that just ended
        end_nbeats = Signal(self.slot_bits + 3)
        m.d.sync += end_nbeats.eq(end_nbeats1)
        with m.If(beat_in):
            with m.If(s.payload.last):
                m.d.sync += [nbeats.eq(0), end_nbeats1.eq(nbeats + 1)]
            with m.Elif(~nbeats[-1]):
                m.d.sync += nbeats.eq(nbeats + 1)

        # Slot bookkeeping: claim on the FIRST frame's decision, fill/done/bad at its end.
        slot_set_used = Signal(nslots)
        slot_set_done = Signal(nslots)
        slot_set_bad = Signal(nslots)
        slot_free = Signal(nslots)
        with m.If(decide & c_accept & ~slot_used):
            m.d.comb += slot_set_used.eq(1 << slot_c)
        end_ok = Signal()
        end_done, end_bad = Signal(), Signal()
        e_still = Signal()      # the slot was not skipped by a timeout meanwhile
        # (between a frame's decision and its end no other frame is decided, so a slot
        # still used is still this container's: only a timeout skip can free it)
        m.d.comb += e_still.eq(used.bit_select(e_slot, 1))
        new_fill = Signal(self.slot_bits + 3)
        m.d.comb += new_fill.eq(e_ofs + end_nbeats)
        with m.If(end_ev & e_accept):
            m.d.comb += end_ok.eq(e_still)
        overflow = new_fill > self.slot_beats
        # The next frame's decision reads the fill level hdr_beat + 2 clocks after this
        # frame's last beat at the earliest. With the header in beat 2 or later (64-bit
        # data and narrower) the level is written a clock later, from registers. (If
        # the slot is skipped meanwhile, the level left in the free slot is never
        # read: a claim starts from 0 and the egress reads only slots used and done.)
        fill_wr_now = Mux(end_ok, 1 << e_slot, 0)
        fill_val_now = Mux(overflow, self.slot_beats, new_fill)
        if hdr_beat >= 2:
            m.d.sync += [fill_wr.eq(fill_wr_now), fill_val.eq(fill_val_now)]
        else:
            m.d.comb += [fill_wr.eq(fill_wr_now), fill_val.eq(fill_val_now)]
        for i in range(nslots):
            with m.If(fill_wr[i]):
                m.d.sync += fill[i].eq(fill_val)
        with m.If(end_ok):
            m.d.comb += [end_done.eq(e_flags_last), end_bad.eq(end_user | overflow)]
        # "done" (and "bad") take effect END_DELAY clocks after the last beat entered:
        # by then its beats are in the RAM (the writes lag the input by up to 7
        # clocks, and reading starts 3 clocks after "done" at the earliest). A slot
        # skipped meanwhile is not marked.
        END_DELAY = 3
        pipe = [(end_ok, end_done, end_bad, e_slot)]
        for k in range(END_DELAY):
            v, d_, b_, sl = (Signal(name=f"endp{k}_v"), Signal(name=f"endp{k}_done"),
                             Signal(name=f"endp{k}_bad"), Signal(range(nslots), name=f"endp{k}_slot"))
            pv_, pd_, pb_, ps_ = pipe[-1]
            m.d.sync += [v.eq(pv_), d_.eq(pd_), b_.eq(pb_), sl.eq(ps_)]
            pipe.append((v, d_, b_, sl))
        fv, fd, fb, fs = pipe[-1]
        with m.If(fv & used.bit_select(fs, 1)):
            with m.If(fd):
                m.d.comb += slot_set_done.eq(1 << fs)
            with m.If(fb):
                m.d.comb += slot_set_bad.eq(1 << fs)

        # Writer: beats wait in a small FIFO until their frame's decision is known (at
        # the beat holding header byte 31, or at the last beat of a runt); decisions
        # queue in order in a second FIFO, written a clock after the decision. At most
        # lag + 2 beats wait, so the beat FIFO (depth 2 * lag + 2) never fills:
        # s_axis_tready stays high.
        m.submodules.bfifo = bfifo = SyncFIFO(width=word_bits, depth=max(4, 2 * lag + 2))
        dec_bits = 1 + len(slot_c) + self.slot_bits + 1
        m.submodules.dfifo = dfifo = SyncFIFO(width=dec_bits, depth=4)
        cnt_in = (sum(s.payload.keep[k] for k in range(B)) - 1)
        m.d.comb += [s.ready.eq(bfifo.w_rdy), beat_in.eq(s.valid & bfifo.w_rdy), bfifo.w_en.eq(beat_in),
                     bfifo.w_data.eq(Cat(s.payload.data, s.payload.last, cnt_in[:self.cnt_bits]))]
        # (written a clock after the decision, from registers: the beats wait a clock
        # longer, lag + 2 at most, still within the beat FIFO)
        m.d.sync += [dfifo.w_en.eq(decide | runt),
                     dfifo.w_data.eq(Cat(decide & c_accept, slot_c, Mux(slot_used, fill_c, 0)))]
        w_accept = dfifo.r_data[0]
        w_slot = dfifo.r_data[1:1 + len(slot_c)]
        w_ofs = dfifo.r_data[1 + len(slot_c):]
        w_last = bfifo.r_data[self.data_width]
        w_en = Signal()
        xidx = Signal(self.slot_bits + 2)               # beat index within the frame
        xofs = Signal(self.slot_bits + 3)
        m.d.comb += xofs.eq(w_ofs + xidx)
        with m.If(bfifo.r_rdy & dfifo.r_rdy):
            m.d.comb += bfifo.r_en.eq(1)
            with m.If(w_last):
                m.d.comb += dfifo.r_en.eq(1)
                m.d.sync += xidx.eq(0)
            with m.Elif(~xidx[-1]):
                m.d.sync += xidx.eq(xidx + 1)
            # (a slot skipped by the timeout meanwhile is not written)
            with m.If(w_accept & (xofs < self.slot_beats) & used.bit_select(w_slot, 1)):
                m.d.comb += w_en.eq(1)
        # one register before the block RAMs (their address and data nets fan out wide)
        m.d.sync += [wp.en.eq(w_en), wp.addr.eq(Cat(xofs[:self.slot_bits], w_slot)),
                     wp.data.eq(bfifo.r_data)]

        # ---- per-source head state and timers ---------------------------------------
        # Skipping an empty head whose successor is empty too keeps the timer expired:
        # the stored container that started it is the evidence for both (it has been
        # waiting for `timeout` clocks already), so a run of k lost containers costs
        # one timeout, not k.
        keep_tmr = Signal()
        head_slot = [Signal(range(nslots), name=f"head_slot{s_}") for s_ in range(N)]
        head_ready = Signal(N)      # registered: head stored whole (LAST seen)
        head_bad = Signal(N)
        expired = Signal(N)
        for s_ in range(N):
            m.d.comb += head_slot[s_].eq(s_ * W + exp[s_][:self.win_bits])
            src_used = used[s_ * W:(s_ + 1) * W]
            h_used = used.bit_select(head_slot[s_], 1)
            h_done = done.bit_select(head_slot[s_], 1)
            m.d.sync += [head_ready[s_].eq(h_used & h_done), head_bad[s_].eq(bad.bit_select(head_slot[s_], 1))]
            tmr = Signal(range(self.timeout + 1), name=f"tmr{s_}")
            # (the registered head_ready: one clock late at most, off the exp->slot paths)
            with m.If((src_used.any() | ahead[s_]) & ~head_ready[s_] &
                      (~slot_free[s_ * W:(s_ + 1) * W].any() | keep_tmr)):
                with m.If(tmr != self.timeout):
                    m.d.sync += tmr.eq(tmr + 1)
            with m.Else():
                m.d.sync += tmr.eq(0)
            m.d.sync += expired[s_].eq(tmr == self.timeout)

        # ---- egress -------------------------------------------------------------------
        # read: address at t, RAM word at t + 1, registered at t + 2 (the block RAM
        # output multiplexer gets a clock of its own), into the output FIFO
        FIFO_DEPTH = 8
        m.submodules.ofifo = ofifo = SyncFIFO(width=word_bits, depth=FIFO_DEPTH)
        rd_v1, rd_v2 = Signal(), Signal()
        rd_word = Signal(word_bits)
        # The read port reads every clock from registers only (no enable, no logic
        # in front of the wide address fan-out); `issue` says the word is wanted.
        issue = Signal()
        rd_slot = Signal(range(nslots))
        rd_ptr = Signal(self.slot_bits + 1)
        m.d.comb += [rp.en.eq(1), rp.addr.eq(Cat(rd_ptr[:self.slot_bits], rd_slot))]
        m.d.sync += [rd_v1.eq(issue), rd_v2.eq(rd_v1), rd_word.eq(rp.data)]
        rd_inflight = rd_v1 + rd_v2
        m.d.comb += [ofifo.w_en.eq(rd_v2), ofifo.w_data.eq(rd_word)]
        o = self.m_axis
        r_last = ofifo.r_data[self.data_width]
        r_cnt = ofifo.r_data[self.data_width + 1:]
        keep_last = Cat(Const(1, 1), *[r_cnt >= k for k in range(1, B)])
        m.d.comb += [
            o.valid.eq(ofifo.r_rdy),
            o.payload.data.eq(ofifo.r_data[:self.data_width]),
            o.payload.last.eq(r_last),
            o.payload.keep.eq(Mux(r_last, keep_last, (1 << B) - 1)),
            o.payload.user.eq(0),
            ofifo.r_en.eq(o.ready),
        ]
        # registered and one word conservative: at most one more word was issued
        # since it was computed
        room = Signal()
        m.d.sync += room.eq((ofifo.level + rd_inflight) < FIFO_DEPTH - 1)

        cur_src = Signal(src_bits)
        rr = Signal(src_bits)                           # round-robin: last served source
        cur_slot = Signal(range(nslots))                # its head slot (registered at the pick)
        cand = head_ready | expired
        # round-robin pick: first candidate after rr
        pick = Signal(src_bits)
        pick_ok = Signal()
        # priority by distance from rr + 1
        with m.Switch(rr):
            for r in range(N):
                with m.Case(r):
                    for k in reversed(range(N)):
                        idx = (r + 1 + k) % N
                        with m.If(cand[idx]):
                            m.d.comb += [pick.eq(idx), pick_ok.eq(1)]

        cur_ahead = ahead.bit_select(cur_src, 1)
        cur_ahead_seq = Cat(*ahead_seq).word_select(cur_src, 16) if N > 1 else ahead_seq[0]
        cur_exp = Cat(*exp).word_select(cur_src, 16) if N > 1 else exp[0]
        cur_any_used = Signal()
        with m.Switch(cur_src):
            for s_ in range(N):
                with m.Case(s_):
                    m.d.comb += cur_any_used.eq(used[s_ * W:(s_ + 1) * W].any())
        # an egress action on a source clears its "ahead" evidence (new frames renew it)
        for s_ in range(N):
            with m.If(slot_free[s_ * W:(s_ + 1) * W].any() & ~(set_ahead & (r_sidx == s_))):
                m.d.sync += ahead[s_].eq(0)

        rd_left = Signal(self.slot_bits + 1)            # words still to read
        rd_z, rd_one = Signal(), Signal()               # rd_left == 0, == 1 (registered)

        def release(slot=cur_slot):
            # free the head slot of cur_src and advance its expected seq
            m.d.comb += slot_free.eq(1 << slot)
            for s_ in range(N):
                with m.If(cur_src == s_):
                    m.d.sync += exp[s_].eq(exp[s_] + 1)

        with m.FSM():
            with m.State("IDLE"):
                with m.If(pick_ok):
                    m.d.sync += [cur_src.eq(pick), rr.eq(pick),
                                 cur_slot.eq(Cat(*head_slot).word_select(pick, len(head_slot[0]))
                                             if N > 1 else head_slot[0])]
                    m.next = "ACT"
            with m.State("ACT"):
                with m.If(head_ready.bit_select(cur_src, 1)):
                    with m.If(head_bad.bit_select(cur_src, 1)):
                        m.d.comb += incr["drop_bad"].eq(1)
                        release()
                        m.next = "WAIT"
                    with m.Else():
                        left = Cat(*fill).word_select(cur_slot, self.slot_bits + 1)
                        m.d.sync += [rd_ptr.eq(0), rd_slot.eq(cur_slot), rd_left.eq(left),
                                     rd_z.eq(left == 0), rd_one.eq(left == 1)]
                        m.next = "READ"
                with m.Elif(cur_ahead & ~cur_any_used):
                    # nothing stored, the source is far ahead: resynchronise to it and
                    # count every container skipped over as lost
                    m.d.sync += lost_bulk.eq(cur_ahead_seq - cur_exp)
                    m.d.comb += slot_free.eq(1 << cur_slot)
                    for s_ in range(N):
                        with m.If(cur_src == s_):
                            m.d.sync += exp[s_].eq(ahead_seq[s_])
                    m.next = "WAIT"
                with m.Else():
                    m.d.comb += incr["lost"].eq(1)
                    release()
                    nxt_slot = Cat((cur_exp + 1)[:self.win_bits], cur_src) if N > 1 else \
                        (cur_exp + 1)[:self.win_bits]
                    m.d.comb += keep_tmr.eq(~used.bit_select(cur_slot, 1) &
                                            ~used.bit_select(nxt_slot, 1))
                    m.next = "WAIT"
            with m.State("READ"):
                with m.If(rd_z):
                    m.d.comb += incr["containers_out"].eq(1)
                    release(rd_slot)
                    m.next = "WAIT"
                with m.Elif(room):
                    m.d.comb += issue.eq(1)
                    m.d.sync += [rd_ptr.eq(rd_ptr + 1), rd_left.eq(rd_left - 1),
                                 rd_z.eq(rd_one), rd_one.eq(rd_left == 2)]
                    with m.If(rd_one):                   # last word issued: done with the slot
                        m.d.comb += incr["containers_out"].eq(1)
                        release(rd_slot)
                        m.next = "WAIT"
            with m.State("WAIT"):
                # let the registered head vectors see the release
                m.next = "IDLE"

        # Slot state update: frees from egress win over ingress claims (a skipped
        # slot is not reclaimed by a frame decided in the same clock).
        m.d.sync += [
            used.eq((used | slot_set_used) & ~slot_free),
            done.eq((done | slot_set_done) & ~slot_free),
            bad.eq((bad | slot_set_bad) & ~slot_free),
        ]
        for i in range(nslots):
            with m.If(slot_free[i]):
                m.d.sync += fill[i].eq(0)
        return m


def _keep_modules(**_params):
    return {"ram": "gse_reorder_ram"}


EXPORTS = [
    BlockSpec(
        name="reorder", module="gse_reorder_buffer", factory=ReorderBuffer,
        params={"data_width": 64, "sources": 4, "window": 8, "slot_bytes": 8192,
                "timeout": 4096},
        description="PKTC reorder buffer: containers per source node released in seq order, "
                    "whole; missing ones skipped after a timeout and counted",
        keep_modules=_keep_modules,
    ),
]
