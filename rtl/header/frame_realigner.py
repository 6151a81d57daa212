"""Replace a frame's first bytes with a new head and shift the rest, at line rate.

Tagging and untagging are the same byte move: the output frame is a head of
``head_out`` bytes followed by the input frame from byte ``head_in`` on, so every
byte after the head moves by the constant ``shift = head_out - head_in``. The move is
planned at elaboration time (:func:`plan`): a short table of steps for the first
beats of a frame, after which every step is the same, so each output byte lane is
a small fixed multiplexer over (head byte, byte of the current input beat, byte of
the previous input beat). No barrel shifter.
"""

from dataclasses import dataclass

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..lib.skid_buffer import SkidBuffer
from ..lib.stream import AXIStreamSignature, axis_beat_layout

__all__ = ["FrameRealigner", "plan"]


@dataclass(frozen=True)
class Step:
    skip: bool  # consume the current input beat, produce nothing
    lanes: tuple  # per output lane: ("h", head byte) | ("c", lane) | ("p", lane)
    consume: bool  # the current input beat moves to "previous" after this step
    cur_deferred: int  # mask: lanes of the current beat that later steps output
    tail: tuple  # lanes of the beat after this step, should the frame end here


def plan(bytes_per_beat, head_in, head_out, min_frame):
    """The step table for frames of at least ``min_frame`` bytes.

    The last step repeats for the rest of the frame. When the frame ends on a step
    whose consumed beat still has bytes for a later output beat, those bytes form
    exactly one more output beat, laid out as ``tail`` (its "p" lanes are the last
    input beat's); the planner checks that one beat always suffices."""
    W, shift = bytes_per_beat, head_out - head_in

    def lanes_of(j):
        out = []
        for p in range(W):
            q = j * W + p
            out.append(("h", q) if q < head_out else ("x",) + divmod(q - shift, W))
        return out

    def x_beats(j):
        return [l[1] for l in lanes_of(j) if l[0] == "x"]

    first_x = 0
    while not x_beats(first_x):
        first_x += 1
    first_x_beat = max(x_beats(first_x))

    raw = []  # (skip, cur index, lanes with absolute beats, consume)
    i = j = 0
    while len(raw) < 4 * (head_in + head_out) // W + 16:
        beats = x_beats(j)
        # Head-only output beats wait while input must be skipped anyway, so that a
        # frame starts with skips, which overlap the previous frame's last beat.
        lazy = not beats and (first_x_beat - i) > (first_x - j)
        if (beats and max(beats) > i) or lazy:
            raw.append((True, i, None, True))
            i += 1
            continue
        nxt = j + 1
        while not x_beats(nxt):
            nxt += 1
        consume = max(x_beats(nxt)) > i
        raw.append((False, i, lanes_of(j), consume))
        j += 1
        i += consume

    def later(k, beat):
        mask, head, rest = 0, False, []
        for skip, _i, lanes, _c in raw[k + 1 :]:
            if skip:
                continue
            refs = [l for l in lanes if l[0] == "x" and l[1] == beat]
            for lane in refs:
                mask |= 1 << lane[2]
            head |= any(l[0] == "h" for l in lanes)
            rest.append((lanes, bool(refs)))
        return mask, head, rest

    min_last_beat = (min_frame - 1) // W
    steps = []
    for k, (skip, i, lanes, consume) in enumerate(raw[:-8]):
        rel = ()
        if not skip:
            rel = []
            for lane in lanes:
                if lane[0] == "h":
                    rel.append(lane)
                else:
                    assert lane[1] in (i, i - 1), "a beat may only use this and the previous input beat"
                    rel.append(("c" if lane[1] == i else "p", lane[2]))
            rel = tuple(rel)
        cur_def, _head, rest = later(k, i)
        tail = ()
        if consume and i >= min_last_beat:
            # Should beat i be the frame's last: what is left fits the next output beat.
            nxt_lanes, _ = rest[0]
            tail = tuple(l if l[0] == "h" else (("p", l[2]) if l[1] == i else ("c", l[2])) for l in nxt_lanes)
            for lanes2, refs in rest[1:]:
                assert not refs and not any(l[0] == "h" for l in lanes2), (
                    "a frame's end must fit one output beat after its last input beat"
                )
        steps.append(Step(skip, rel, consume, cur_def, tail))
    last = len(steps) - 1
    while last > 0 and steps[last - 1] == steps[last]:
        last -= 1
    steps = steps[: last + 1]
    assert not steps[-1].skip and steps[-1].consume and steps[-1].tail, "plan did not settle"
    return steps


class FrameRealigner(wiring.Component):
    """Output = ``head`` (``head_out`` bytes) + input frame bytes from ``head_in`` on.

    Parameters: ``data_width`` (bits), ``head_in``, ``head_out`` (bytes), ``min_frame``
    (bytes; shorter frames must not reach this block: the caller drops them),
    ``head_const`` (``{bit: value}``: bits of the head that are constants).

    Interface:

    * ``s_axis``: input frames. ``ready`` is a function of registers only (the input
      slice has room, and a frame's first beat also needs the head register free), so
      that the sender's decisions never wait on this block's output side.
    * ``s_head``: the new head, byte ``k`` at ``s_head[8k:8k+8]``; ``s_bypass``: pass this
      frame unchanged. Both are sampled with the frame's first beat.
    * ``m_axis``: output frames, registered. ``user`` of the input's last beat goes
      out on the output's last beat.

    Timing: two cycles of latency (an input register slice, then the output register).
    When the output frame is longer than the input (tagging), one output beat per clock;
    when it is shorter (untagging), one input beat per clock for frames of at least two
    beats (a frame's head register frees the clock after its first beat is read). The
    beat that a frame's end may leave over is held in a second register and goes out
    while the next frame's first beats are read, so there is no bubble between
    back-to-back frames.
    """

    def __init__(self, data_width, head_in, head_out, *, min_frame=None, head_const=None):
        self.data_width = data_width
        self.bytes_per_beat = data_width // 8
        self.head_in = head_in
        self.head_out = head_out
        self.min_frame = head_in + 1 if min_frame is None else min_frame
        self.steps = plan(self.bytes_per_beat, head_in, head_out, self.min_frame)
        self.head_const = dict(head_const or {})
        super().__init__(
            {
                "s_axis": In(AXIStreamSignature(data_width)),
                "s_head": In(8 * head_out),
                "s_bypass": In(1),
                "m_axis": Out(AXIStreamSignature(data_width)),
            }
        )

    def _input_slice(self, m, head_bits):
        """Input slice: beats wait in a skid buffer, a frame's head in a register beside
        it, so that ``s_axis.ready`` is registers only (the sender's ``ready`` chain ends
        here). A first beat enters only when the head register is free."""
        m.submodules.in_slice = sl = SkidBuffer(axis_beat_layout(self.data_width))
        in_first = Signal(init=1)  # the next input beat starts a frame
        head_q = Signal(head_bits)
        bypass_q = Signal()
        head_q_valid = Signal()
        head_ok = ~in_first | ~head_q_valid
        m.d.comb += [
            sl.s.valid.eq(self.s_axis.valid & head_ok),
            sl.s.payload.eq(self.s_axis.payload),
            self.s_axis.ready.eq(sl.s.ready & head_ok),
        ]
        in_push = self.s_axis.valid & self.s_axis.ready
        with m.If(in_push):
            m.d.sync += in_first.eq(self.s_axis.payload.last)
        return sl, in_first, head_q, bypass_q, head_q_valid, in_push

    def elaborate(self, platform):
        m = Module()
        W, steps = self.bytes_per_beat, self.steps
        K = len(steps) - 1
        assert K >= 1
        var_bits = [b for b in range(8 * self.head_out) if b not in self.head_const]

        sl, in_first, head_q, bypass_q, head_q_valid, in_push = self._input_slice(m, len(var_bits))
        cur = sl.m.payload
        cur_valid = sl.m.valid

        step = Signal(range(K + 1))
        bypass_r = Signal()
        head_r = Signal(len(var_bits))
        # Only the lanes of the previous beat that some step outputs are kept.
        prev_lanes = sorted({l[1] for s in steps for l in s.lanes if l[0] == "p"})
        prev_data = Signal(8 * W)
        prev_keep = Signal(W)
        prev_data_r = Signal(8 * len(prev_lanes))
        prev_keep_r = Signal(len(prev_lanes))
        for n, lane in enumerate(prev_lanes):
            m.d.comb += [
                prev_data.word_select(lane, 8).eq(prev_data_r.word_select(n, 8)),
                prev_keep[lane].eq(prev_keep_r[n]),
            ]

        at = [Signal(name=f"at_step{k}") for k in range(K + 1)]
        for k in range(K + 1):
            m.d.comb += at[k].eq(step == k)

        def any_step(pred):
            ks = [k for k, s in enumerate(steps) if pred(s)]
            if not ks:
                return C(0)
            if len(ks) == len(steps):
                return C(1)
            return Cat(*[at[k] for k in ks]).any()

        head_bits = []
        vb = iter(range(len(var_bits)))
        for b in range(8 * self.head_out):
            if b in self.head_const:
                head_bits.append(C(self.head_const[b], 1))
            else:
                n = next(vb)
                head_bits.append(Mux(at[0], head_q[n], head_r[n]))
        head = Cat(*head_bits)
        bypass = Mux(at[0], bypass_q, bypass_r)
        is_skip = any_step(lambda s: s.skip)
        uses_cur = any_step(lambda s: any(l[0] == "c" for l in s.lanes))
        consumes = any_step(lambda s: s.consume)
        cd = C(0, W)
        for k, s in enumerate(steps):
            if s.cur_deferred:
                cd = cd | Mux(at[k], C(s.cur_deferred, W), C(0, W))
        cur_def = Signal(W)
        m.d.comb += cur_def.eq(cd)

        def lane_mux(field, sources):
            """One-hot OR over ``{source: select}``; sources "h", "c", "p", "cur"."""
            data, keep = C(0, 8), C(0, 1)
            for src, sel in sources.items():
                if src[0] == "h":
                    d, k_ = head.word_select(src[1], 8), C(1, 1)
                elif src[0] == "c":
                    d, k_ = cur.data.word_select(src[1], 8), cur.keep[src[1]]
                else:
                    d, k_ = prev_data.word_select(src[1], 8), prev_keep[src[1]]
                data = data | (d & sel.replicate(8))
                keep = keep | (k_ & sel)
            return data, keep

        # The step's output beat.
        # (Lists, not named signals: lanes a configuration never fills vanish cleanly.)
        out_data, out_keep = [], []
        # The beat left over should the frame end on this step: its "p" lanes are the
        # current input beat, its "c" lanes empty.
        tail_lanes = sorted({p for s in steps if s.tail for p in range(W) if s.tail[p][0] != "c"})
        tail_data, tail_keep = [], []
        for p in range(W):
            sources = {("c", p): bypass}
            for k, s in enumerate(steps):
                if not s.skip:
                    sel = ~bypass & at[k]
                    sources[s.lanes[p]] = sources[s.lanes[p]] | sel if s.lanes[p] in sources else sel
            d, kk = lane_mux("out", sources)
            out_data.append(d)
            out_keep.append(kk)
            tsources = {}
            for k, s in enumerate(steps):
                if s.tail and s.tail[p][0] != "c":
                    src = s.tail[p] if s.tail[p][0] == "h" else ("c", s.tail[p][1])
                    tsources[src] = tsources[src] | at[k] if src in tsources else at[k]
            if p in tail_lanes:
                d, kk = lane_mux("tail", tsources)
                tail_data.append(d)
                tail_keep.append(kk)

        pend_valid = Signal()
        pend = Signal.like(self.m_axis.payload)
        # Only lanes some step's left-over beat can fill are held.
        pend_data_r = Signal(8 * len(tail_lanes))
        pend_keep_r = Signal(len(tail_lanes))
        pend_user_r = Signal()
        for n, lane in enumerate(tail_lanes):
            m.d.comb += [
                pend.data.word_select(lane, 8).eq(pend_data_r.word_select(n, 8)),
                pend.keep[lane].eq(pend_keep_r[n]),
            ]
        m.d.comb += [pend.last.eq(1), pend.user.eq(pend_user_r)]
        out_free = ~self.m_axis.valid | self.m_axis.ready
        can_out = out_free & ~pend_valid  # the held-over beat goes first

        produce = Signal()
        consume = Signal()
        last_now = Signal()
        make_pend = Signal()
        advance = Signal()
        ends = cur.last & consumes & ~bypass
        has_tail = (cur.keep & cur_def) != 0
        with m.If(bypass):
            m.d.comb += [produce.eq(cur_valid & can_out), consume.eq(produce), last_now.eq(cur.last)]
        with m.Else():
            need_in = at[0] | uses_cur | consumes
            # A frame end that leaves a beat over needs the hold register free. Only a
            # skip step can come to that while it is full (a producing step waits for it
            # anyway), and then it waits on any last beat, not only one that leaves a
            # beat over: `keep` stays off this path (only one-beat frames of wide paths
            # have such a step).
            tail_skip = any_step(lambda s: s.skip and bool(s.tail))
            can = (cur_valid | ~need_in) & Mux(is_skip, ~(tail_skip & pend_valid & cur.last), can_out)
            m.d.comb += [
                advance.eq(can),
                produce.eq(can & ~is_skip),
                consume.eq(can & consumes),
                last_now.eq(ends & ~has_tail),
                make_pend.eq(can & ends & has_tail),
            ]
        m.d.comb += sl.m.ready.eq(consume)

        with m.If(produce):
            m.d.sync += [
                self.m_axis.valid.eq(1),
                self.m_axis.payload.data.eq(Cat(*out_data)),
                self.m_axis.payload.keep.eq(Cat(*out_keep)),
                self.m_axis.payload.last.eq(last_now),
                self.m_axis.payload.user.eq(last_now & cur.user),
            ]
        with m.Elif(pend_valid & out_free):
            m.d.sync += [self.m_axis.valid.eq(1), self.m_axis.payload.eq(pend)]
        with m.Elif(self.m_axis.ready):
            m.d.sync += self.m_axis.valid.eq(0)

        with m.If(make_pend):
            m.d.sync += [
                pend_valid.eq(1),
                pend_data_r.eq(Cat(*tail_data)),
                pend_keep_r.eq(Cat(*tail_keep)),
                pend_user_r.eq(cur.user),
            ]
        with m.Elif(~produce & out_free):
            m.d.sync += pend_valid.eq(0)

        # Frame bookkeeping: the head moves from the input side's register to the
        # frame's own when the frame starts (which frees the first for the next frame).
        take_head = at[0] & (advance | consume)
        with m.If(take_head):
            m.d.sync += [head_r.eq(head_q), bypass_r.eq(bypass_q), head_q_valid.eq(0)]
        with m.If(in_push & in_first):
            m.d.sync += [
                head_q.eq(Cat(*[self.s_head[b] for b in var_bits])),
                bypass_q.eq(self.s_bypass),
                head_q_valid.eq(1),
            ]
        with m.If(bypass):
            with m.If(consume):
                m.d.sync += step.eq(Mux(cur.last, 0, 1))
        with m.Elif(advance):
            with m.If(consume & cur.last):
                m.d.sync += step.eq(0)
            with m.Else():
                m.d.sync += step.eq(Mux(step == K, K, step + 1))
            with m.If(consume):
                m.d.sync += [
                    prev_data_r.eq(Cat(*[cur.data.word_select(l, 8) for l in prev_lanes])),
                    prev_keep_r.eq(Cat(*[cur.keep[l] for l in prev_lanes])),
                ]
        return m
