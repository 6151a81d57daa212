"""Look-ahead window over the first bytes of each frame, for cut-through checks.

A header block must decide what to do with a frame (pass, drop) from its first
bytes before any of it leaves. :class:`FrameWindow` holds the first
``ceil(lookahead / W)`` beats of the frame at its head in registers, shows them to
its owner, and lets the frame through or drops it whole on the owner's verdict.
"""
from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .stream import AXIStreamSignature, axis_beat_layout

__all__ = ["FrameWindow"]


class FrameWindow(wiring.Component):
    """Beat FIFO of ``depth = ceil(lookahead / W) + 1`` registers with a verdict per frame.

    Parameters: ``data_width`` (bits), ``lookahead`` (bytes the verdict needs),
    ``present_at`` (byte indices whose presence the owner needs).

    Interface:

    * ``s_axis`` / ``m_axis``: packet streams. ``m_axis`` carries only passed frames.
      ``s_axis.ready`` depends on the fill level only (registered).
    * ``head_valid``: the first beat of a frame is at the head and the window holds its
      first ``lookahead`` bytes, or all of it if it is shorter.
    * ``head_bytes``: the window's bytes, frame byte ``k`` at ``head_bytes[8k:8k+8]``;
      ``head_present[i]``: byte ``present_at[i]`` belongs to this frame (``present_at``
      defaults to every byte of the look-ahead).
    * ``verdict_ok`` (in): the owner can act on this frame now; ``verdict_drop`` (in):
      drop it. The verdict is ``taken`` when ``head_valid & verdict_ok`` and either
      the frame is dropped or its first beat leaves on ``m_axis`` this cycle; the
      owner performs its side effects (consume a side channel, push a header, count)
      in that cycle. A dropped frame is discarded at one beat per clock.
    * ``frame_len``: on the last beat at ``m_axis``, the frame's length in bytes.
    * ``last_error`` (in): ORed into ``m_axis.payload.user`` on the last beat;
      ``mac_error``: the head beat's own ``user`` bit, before that.

    Timing: a frame's first beat leaves once its window is full (``ceil(lookahead/W)``
    beats later); after that one beat per clock, back-to-back frames without bubbles.
    """

    def __init__(self, data_width, lookahead, present_at=None):
        self.data_width = data_width
        self.bytes_per_beat = data_width // 8
        self.lookahead = lookahead
        self.window_beats = -(-lookahead // self.bytes_per_beat)
        self.depth = self.window_beats + 1
        self.present_at = tuple(present_at if present_at is not None else range(lookahead))
        super().__init__({
            "s_axis": In(AXIStreamSignature(data_width)),
            "m_axis": Out(AXIStreamSignature(data_width)),
            "head_valid": Out(1),
            "head_bytes": Out(8 * self.window_beats * self.bytes_per_beat),
            "head_present": Out(len(self.present_at)),
            "verdict_ok": In(1),
            "verdict_drop": In(1),
            "taken": Out(1),
            "frame_len": Out(16),
            "last_error": In(1),
            "mac_error": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        W, D, G = self.bytes_per_beat, self.depth, self.window_beats
        layout = axis_beat_layout(self.data_width)

        entries = [Signal(layout, name=f"entry{k}") for k in range(D)]
        firsts = [Signal(name=f"first{k}") for k in range(D)]
        count = Signal(range(D + 1))
        in_first = Signal(init=1)      # the next input beat starts a frame
        dropping = Signal()            # rest of the head frame is being dropped
        beats = Signal(16 - (W.bit_length() - 1))   # beats of the head frame already out

        # Window view of the frame at the head.
        present = [count > e for e in range(G)]
        ended_before = [Const(0)]
        for e in range(1, G):
            ended_before.append(ended_before[-1] | (present[e - 1] & entries[e - 1].last))
        in_frame = [present[e] & ~ended_before[e] for e in range(G)]
        complete = present[0]
        if G > 1:
            complete = (count >= G) | Cat(*[present[e] & entries[e].last
                                             for e in range(G)]).any()
        m.d.comb += self.head_bytes.eq(Cat(*[entries[e].data for e in range(G)]))
        for i, k in enumerate(self.present_at):
            e, lane = divmod(k, W)
            m.d.comb += self.head_present[i].eq(in_frame[e] & entries[e].keep[lane])
        head_first = present[0] & firsts[0]
        m.d.comb += self.head_valid.eq(head_first & complete)

        # Output and pop.
        pop = Signal()
        passing = present[0] & ~firsts[0] & ~dropping
        first_pass = self.head_valid & self.verdict_ok & ~self.verdict_drop
        m.d.comb += [
            self.m_axis.valid.eq(passing | first_pass),
            self.m_axis.payload.eq(entries[0]),
            self.m_axis.payload.user.eq(entries[0].user | (entries[0].last & self.last_error)),
            self.mac_error.eq(entries[0].user),
            self.taken.eq(self.head_valid & self.verdict_ok &
                          (self.verdict_drop | self.m_axis.ready)),
            pop.eq((self.m_axis.valid & self.m_axis.ready) |
                   (present[0] & ~firsts[0] & dropping) |
                   (self.taken & self.verdict_drop)),
        ]
        # Bytes in the head beat: `keep` is contiguous from lane 0 (AXI4-Stream packets).
        keep_count = Signal(16)
        count_mux = C(0, 16)
        for lane in range(W):
            count_mux = Mux(entries[0].keep[lane], C(lane + 1, 16), count_mux)
        beats_bytes = Signal(16)
        m.d.comb += [keep_count.eq(count_mux), beats_bytes.eq(beats << (W.bit_length() - 1))]
        m.d.comb += self.frame_len.eq(beats_bytes + keep_count)

        with m.If(pop):
            with m.If(entries[0].last):
                m.d.sync += [dropping.eq(0), beats.eq(0)]
            with m.Else():
                m.d.sync += beats.eq(beats + 1)
                with m.If(self.taken & self.verdict_drop):
                    m.d.sync += dropping.eq(1)

        # Shift-register FIFO: pops shift every entry down by one.
        push = Signal()
        m.d.comb += [self.s_axis.ready.eq(count < D), push.eq(self.s_axis.valid & self.s_axis.ready)]
        with m.If(push):
            m.d.sync += in_first.eq(self.s_axis.payload.last)
        slot = Signal(range(D + 1))
        m.d.comb += slot.eq(Mux(pop, count - 1, count))
        for k in range(D):
            with m.If(push & (slot == k)):
                m.d.sync += [entries[k].eq(self.s_axis.payload), firsts[k].eq(in_first)]
            if k + 1 < D:
                with m.Elif(pop):
                    m.d.sync += [entries[k].eq(entries[k + 1]), firsts[k].eq(firsts[k + 1])]
        m.d.sync += count.eq(count + push - pop)
        return m
