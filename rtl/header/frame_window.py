"""Look-ahead window over the first bytes of each frame, for cut-through checks.

A header block must decide what to do with a frame (pass, drop) from its first bytes
before any of it leaves. :class:`FrameWindow` captures those bytes as the frame comes
in, asks its owner for a verdict on them one cycle later (from registers, so the
owner's checks have a whole clock), and holds the frame's beats in a short FIFO until
the verdict is there; then it lets the frame through or drops it whole.
"""

from amaranth import *
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..lib.register_fifo import register_fifo
from ..lib.stream import AXIStreamSignature, axis_beat_layout

__all__ = ["FrameWindow"]


class FrameWindow(wiring.Component):
    """Capture a frame's first ``lookahead`` bytes, judge them, pass or drop the frame.

    Parameters: ``data_width`` (bits), ``lookahead`` (bytes the verdict needs),
    ``present_at`` (byte indices whose presence the owner needs), ``info_width`` (bits
    of owner data kept with each verdict, e.g. the parsed header), ``ignore_bits``
    (bits of ``cap_bytes`` the owner never reads, e.g. reserved bits: not stored).

    Interface:

    * ``s_axis`` / ``m_axis``: packet streams; ``m_axis`` carries only passed frames.
      ``s_axis.ready`` is a register (the FIFO is not full).
    * ``cap_bits``: the first ``lookahead`` bytes of the frame being captured, less the
      ``ignore_bits``; :meth:`cap_bytes` gives them as bytes (byte ``k`` at bits
      ``8k..8k+7``, ignored bits 0). ``cap_present[i]``: byte ``present_at[i]`` belongs
      to the frame. Both are registers.
    * ``judge_drop``, ``judge_info`` (in): the owner's verdict, a function of
      ``cap_bytes`` and ``cap_present``; sampled one cycle after the frame's capture
      completes (after byte ``lookahead - 1`` or the frame's end arrived).
    * ``head_valid``: the first beat of a judged frame is at the head;
      ``head_drop``, ``head_info``: its verdict (registers).
    * ``verdict_ok`` (in): the owner can act on the head frame now. The frame is
      ``taken`` when ``head_valid & verdict_ok`` and either it is dropped or its first
      beat leaves on ``m_axis`` this cycle; the owner performs its side effects
      (consume a side channel, push a header, count) in that cycle. A dropped frame
      is discarded at one beat per clock.
    * ``m_first``: the beat at ``m_axis`` is its frame's first (a register).
    * ``frame_len``: on the last beat at ``m_axis``, the frame's length in bytes.
    * ``last_error`` (in): ORed into ``m_axis.payload.user`` on the last beat;
      ``mac_error``: the head beat's own ``user`` bit, before that.

    Timing: a frame's first beat leaves ``ceil(lookahead / W) + 1`` cycles after it
    arrived (W = bytes per beat); then one beat per clock, and back-to-back frames pass
    without bubbles.
    """

    def __init__(self, data_width, lookahead, present_at=None, info_width=1, ignore_bits=()):
        self.data_width = data_width
        self.bytes_per_beat = data_width // 8
        self.lookahead = lookahead
        self.window_beats = -(-lookahead // self.bytes_per_beat)
        self.depth = self.window_beats + 2
        self.present_at = tuple(present_at if present_at is not None else range(lookahead))
        self.info_width = info_width
        self.ignore_bits = frozenset(ignore_bits)
        self._kept = [b for b in range(8 * lookahead) if b not in self.ignore_bits]
        super().__init__(
            {
                "s_axis": In(AXIStreamSignature(data_width)),
                "m_axis": Out(AXIStreamSignature(data_width)),
                "cap_bits": Out(8 * lookahead - len(self.ignore_bits)),
                "cap_present": Out(len(self.present_at)),
                "judge_drop": In(1),
                "judge_info": In(info_width),
                "head_valid": Out(1),
                "head_drop": Out(1),
                "head_info": Out(info_width),
                "verdict_ok": In(1),
                "taken": Out(1),
                "m_first": Out(1),
                "frame_len": Out(16),
                "last_error": In(1),
                "mac_error": Out(1),
            }
        )

    def cap_bytes(self):
        """The captured bytes as one value, byte ``k`` at bits ``8k..8k+7``."""
        index = {b: i for i, b in enumerate(self._kept)}
        return Cat(*[self.cap_bits[index[b]] if b in index else C(0, 1) for b in range(8 * self.lookahead)])

    def elaborate(self, platform):
        m = Module()
        W, D, G = self.bytes_per_beat, self.depth, self.window_beats
        beat = self.s_axis.payload

        # Capture on the way in.
        push = Signal()
        m.d.comb += push.eq(self.s_axis.valid & self.s_axis.ready)
        in_beat = Signal(range(G + 1))  # beat index within the incoming frame, saturating
        judge_now = Signal()  # capture completed last cycle
        with m.If(push):
            m.d.sync += in_beat.eq(Mux(beat.last, 0, Mux(in_beat == G, G, in_beat + 1)))
        m.d.sync += judge_now.eq(push & (in_beat < G) & (beat.last | (in_beat == G - 1)))
        for e in range(G):
            for lane in range(W):
                k = e * W + lane
                if k >= self.lookahead:
                    continue
                for bit in range(8):
                    if 8 * k + bit in self.ignore_bits:
                        continue
                    with m.If(push & (in_beat == e)):
                        m.d.sync += self.cap_bits[self._kept.index(8 * k + bit)].eq(beat.data[8 * lane + bit])
        for i, k in enumerate(self.present_at):
            e, lane = divmod(k, W)
            with m.If(push & (in_beat == e)):
                m.d.sync += self.cap_present[i].eq(beat.keep[lane])
            if e > 0:
                with m.Elif(push & (in_beat < e) & beat.last):
                    m.d.sync += self.cap_present[i].eq(0)

        # Beats wait here for their frame's verdict.
        pop = Signal()
        in_first = Signal(init=1)
        with m.If(push):
            m.d.sync += in_first.eq(beat.last)
        entry_layout = axis_beat_layout(self.data_width, user_width=2)  # user[1] = first
        w_entry = Signal(entry_layout)
        m.d.comb += [
            w_entry.data.eq(beat.data),
            w_entry.keep.eq(beat.keep),
            w_entry.last.eq(beat.last),
            w_entry.user.eq(Cat(beat.user[0], in_first)),
        ]
        entries, valids = register_fifo(m, "beat", D, entry_layout, push, w_entry, pop)

        # Verdicts, one per frame whose first beat is still in the beat FIFO.
        v_pop = Signal()
        v_layout = data.StructLayout({"drop": 1, "info": self.info_width})
        v_in = Signal(v_layout)
        m.d.comb += [v_in.drop.eq(self.judge_drop), v_in.info.eq(self.judge_info)]
        # Frames of at least 60 bytes never have more than a couple of verdicts waiting;
        # a burst of runts may briefly hold the input instead.
        VD = max(2, min(D, -(-D * W // 60) + 1))
        verdicts, v_valids = register_fifo(m, "verdict", VD, v_layout, judge_now, v_in, v_pop)
        v_room = ~v_valids[VD - 1] & ~(v_valids[VD - 2] & judge_now)
        m.d.comb += self.s_axis.ready.eq(~valids[D - 1] & v_room)

        head = entries[0]
        head_first = head.user[1]
        dropping = Signal()
        beats_out = Signal(16 - (W.bit_length() - 1))
        m.d.comb += [
            self.head_valid.eq(valids[0] & head_first & v_valids[0]),
            self.head_drop.eq(verdicts[0].drop),
            self.head_info.eq(verdicts[0].info),
        ]
        passing = valids[0] & ~head_first & ~dropping
        first_pass = self.head_valid & self.verdict_ok & ~self.head_drop
        m.d.comb += [
            self.m_axis.valid.eq(passing | first_pass),
            self.m_axis.payload.data.eq(head.data),
            self.m_axis.payload.keep.eq(head.keep),
            self.m_axis.payload.last.eq(head.last),
            self.m_axis.payload.user.eq(head.user[0] | (head.last & self.last_error)),
            self.mac_error.eq(head.user[0]),
            self.m_first.eq(head_first),
            self.taken.eq(self.head_valid & self.verdict_ok & (self.head_drop | self.m_axis.ready)),
            v_pop.eq(self.taken),
            # (the same as "a beat leaves, is dropped, or a dropped frame's head goes",
            # written as one choice on `head_first` for a shallow enable)
            pop.eq(
                valids[0]
                & Mux(
                    head_first,
                    v_valids[0] & self.verdict_ok & (self.head_drop | self.m_axis.ready),
                    dropping | self.m_axis.ready,
                )
            ),
        ]
        with m.If(pop):
            with m.If(head.last):
                m.d.sync += [dropping.eq(0), beats_out.eq(0)]
            with m.Else():
                m.d.sync += beats_out.eq(beats_out + 1)
                with m.If(self.taken & self.head_drop):
                    m.d.sync += dropping.eq(1)

        # Bytes in the head beat: `keep` is contiguous from lane 0 (AXI4-Stream packets).
        keep_count = Signal(16)
        count_mux = C(0, 16)
        for lane in range(W):
            count_mux = Mux(head.keep[lane], C(lane + 1, 16), count_mux)
        beats_bytes = Signal(16)
        m.d.comb += [keep_count.eq(count_mux), beats_bytes.eq(beats_out << (W.bit_length() - 1))]
        m.d.comb += self.frame_len.eq(beats_bytes + keep_count)
        return m
