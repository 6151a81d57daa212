"""PauseFIFO: the receive queue of a lossless (PFC-like) link: always ready, asks for pause.

A fabric link (``FabricLink``) never waits: every beat it delivers must be taken. The
receiving port therefore starts with this store: it takes a beat every clock, forwards
frames cut-through as its consumer takes them, and tells the sender to stop (``pause``,
carried back over the link) before it can fill. :class:`PauseGate` in
:mod:`opengse.rtl.lib.pause_gate` is the sending side of the same rule.
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..catalog import BlockSpec
from .skid_buffer import SkidBuffer
from .sram import SRAM
from .stream import AXIStreamSignature, axis_beat_layout, check_data_width

__all__ = ["PauseFIFO", "pause_thresholds", "MAX_FRAME_BYTES", "EXPORTS"]


def _pow2_at_least(n):
    depth = 2
    while depth < n:
        depth *= 2
    return depth


#: The longest frame a fabric port carries: a 9000-byte jumbo frame plus the GSE tag.
MAX_FRAME_BYTES = 9000 + 18


def pause_thresholds(
    delay=100, max_frame_bytes=MAX_FRAME_BYTES, data_width=64, store_bytes=None, slack_beats=16
):
    """``(depth_bytes, xoff_bytes, xon_bytes)`` for a link of ``delay`` clocks each way.

    Headroom (store above XOFF) covers what still arrives after ``pause`` rises: the
    pause travels ``delay`` clocks to the sender, the sender finishes the frame it
    started (``max_frame_bytes``, rounded up to beats), and ``delay`` clocks of beats
    are on the wire behind it; plus ``slack_beats`` clocks of registers on both sides.
    Below XOFF the store keeps at least ``2 x (2 x delay + slack_beats)`` beats, and XON
    is half of XOFF: when the sender hears XON (a delay after it was sent) and its beats
    arrive (another delay), the store still has beats to send, so a paused link does
    not run dry. ``store_bytes`` (default: the smallest power of two of beats that
    holds both) fixes the size instead; XOFF is then the store minus the headroom."""
    bpb = check_data_width(data_width) // 8
    round_trip = 2 * delay + slack_beats
    headroom = (round_trip + -(-max_frame_bytes // bpb)) * bpb
    if store_bytes is None:
        store_bytes = _pow2_at_least(headroom // bpb + 2 * round_trip) * bpb
    xoff = store_bytes - headroom
    if xoff < 2 * bpb:
        raise ValueError(f"a store of {store_bytes} B leaves no room below XOFF (headroom {headroom} B)")
    return store_bytes, xoff, xoff // 2


#: The defaults: 64-bit, link delay 100, 9018 B frames: 16384 B, XOFF 5632 B, XON 2816 B.
DEFAULT_DEPTH, DEFAULT_XOFF, DEFAULT_XON = pause_thresholds()


class PauseFIFO(wiring.Component):
    """Always-ready cut-through packet store that raises ``pause`` above XOFF.

    Parameters
    ----------
    data_width : int
        Width of ``tdata`` (a power of two, 8..512); B = ``data_width // 8`` bytes a beat.
    depth_bytes : int
        Size of the store; it holds ``depth`` = ``depth_bytes / B`` beats rounded up to
        a power of two, in one :class:`~opengse.rtl.lib.sram.SRAM` of
        ``data_width + B + 2`` bits (beat, ``tkeep``, ``tlast``, ``tuser``).
    xoff_bytes, xon_bytes : int
        Pause thresholds, ``xon_bytes <= xoff_bytes < depth``. Occupancy is counted in
        beats of the store (a beat occupies one word whatever its ``tkeep``) and
        compared with ``ceil(x / B)`` beats. :func:`pause_thresholds` sizes all three
        from a link delay.

    Interface
    ---------
    ``s_axis`` : ``In(AXIStreamSignature(data_width))``
        From the link. ``tready`` is always 1: a beat offered is a beat taken.
    ``m_axis`` : ``Out(AXIStreamSignature(data_width))``
        Frames in arrival order, cut-through (a frame's beats leave as soon as they are
        stored; the consumer may see ``tvalid`` fall inside a frame when the link idles).
        ``tvalid``, the beat and ``tready`` toward the store are registers (an internal
        :class:`~opengse.rtl.lib.skid_buffer.SkidBuffer`). A frame that arrives with
        ``tuser`` set on its last beat leaves so (the cut-through contract: the next
        buffer drops it).
    ``pause`` : ``Out(1)``, a register
        Set in the clock after the occupancy is above XOFF, cleared in the clock after
        it is below XON, held in between.
    ``level`` : ``Out(range(depth + 1))``
        Beats in the store (not counting the two of the output slice).
    ``stat_drop_overflow`` : ``Out(32)``
        Frames the store had no room for (a sizing bug: headroom too small). A frame
        whose first beat finds fewer than 2 free beats (1 for a one-beat frame) is
        dropped whole: nothing of it is stored. A frame that runs out of room
        later has its beat in the last free word written as its last beat with
        ``tuser`` = 1, and the rest discarded: it leaves as a bad frame, which the
        next buffer drops whole (its start may already be on its way out). Either way
        the store keeps running and nothing of the frame is forwarded as good.
    ``stat_pause_cycles`` : ``Out(32)``
        Clocks with ``pause`` = 1.
    ``stat_peak_level`` : ``Out(range(depth + 1))``
        The highest ``level`` since reset (two clocks behind ``level``).

    Timing
    ------
    A beat taken in clock t is on ``m_axis`` from clock t + 3 (SRAM write, read, slice)
    when the store was empty. With ``m_axis.tready`` high the store moves one beat per
    clock, no bubble between frames. Counters wrap.
    """

    def __init__(
        self, data_width=64, depth_bytes=DEFAULT_DEPTH, xoff_bytes=DEFAULT_XOFF, xon_bytes=DEFAULT_XON
    ):
        self.data_width = check_data_width(data_width)
        bpb = data_width // 8
        self.depth = _pow2_at_least(-(-depth_bytes // bpb))
        self.xoff = -(-xoff_bytes // bpb)
        self.xon = -(-xon_bytes // bpb)
        if not 0 < self.xon <= self.xoff < self.depth:
            raise ValueError(
                f"need 0 < xon_bytes <= xoff_bytes < depth ({self.depth * bpb} B), "
                f"not xon {xon_bytes}, xoff {xoff_bytes}"
            )
        super().__init__(
            {
                "s_axis": In(AXIStreamSignature(data_width)),
                "m_axis": Out(AXIStreamSignature(data_width)),
                "pause": Out(1),
                "level": Out(range(self.depth + 1)),
                "stat_drop_overflow": Out(32),
                "stat_pause_cycles": Out(32),
                "stat_peak_level": Out(range(self.depth + 1)),
            }
        )

    def elaborate(self, platform):
        m = Module()
        w, kw = self.data_width, self.data_width // 8
        aw = (self.depth - 1).bit_length()
        m.submodules.store = mem = SRAM(w + kw + 2, self.depth)
        m.submodules.out = out = SkidBuffer(axis_beat_layout(w))
        wiring.connect(m, out.m, wiring.flipped(self.m_axis))
        s = self.s_axis

        wr = Signal(aw + 1)  # next word to write
        rd = Signal(aw + 1)  # next word to leave
        level = Signal(range(self.depth + 1))
        m.d.comb += [level.eq((wr - rd)[: aw + 1]), self.level.eq(level), s.ready.eq(1)]

        # -- write side: always take; room decides what is written
        in_frame = Signal()  # beats of the current frame were written
        discard = Signal()  # throwing away the rest of a frame that had no room
        room = Signal(range(self.depth + 1))
        m.d.comb += room.eq(self.depth - level)
        beat = s.payload
        stored = Signal.like(beat)  # what is written: the beat, or it closing a cut frame
        m.d.comb += stored.eq(beat)
        write = Signal()
        with m.If(s.valid):
            with m.If(discard):
                m.d.sync += discard.eq(~beat.last)
            with m.Elif(room >= Mux(beat.last, 1, 2)):  # a non-last beat leaves a word free
                m.d.comb += write.eq(1)
                m.d.sync += in_frame.eq(~beat.last)
            with m.Elif(in_frame):  # room is 1, the beat is not last: cut the frame here
                m.d.comb += [write.eq(1), stored.last.eq(1), stored.user.eq(1)]
                m.d.sync += [in_frame.eq(0), discard.eq(1)]
                m.d.sync += self.stat_drop_overflow.eq(self.stat_drop_overflow + 1)
            with m.Else():  # no room for the frame's first beat: drop it whole
                m.d.sync += discard.eq(~beat.last)
                m.d.sync += self.stat_drop_overflow.eq(self.stat_drop_overflow + 1)
        m.d.comb += [
            mem.w_en.eq(write),
            mem.w_addr.eq(wr[:aw]),
            mem.w_data.eq(Cat(stored.data, stored.keep, stored.last, stored.user)),
        ]
        with m.If(write):
            m.d.sync += wr.eq(wr + 1)

        # -- read side: the SRAM's read register feeds the output slice. A word written
        # in clock t can be read from t + 1 and is on the read register in t + 2, so
        # `avail` (in clock t) = rd != wr of clock t - 1, kept as a register with both
        # outcomes of this clock's move computed ahead; rd + 1 is a register too: the
        # read address is one 2:1 mux after the slice's registered ready.
        o = out.s
        rd1 = Signal(aw + 1, init=1)  # rd + 1
        avail = Signal()  # a word is on the SRAM's read register
        advance = Signal()
        m.d.comb += [
            o.valid.eq(avail),
            advance.eq(avail & o.ready),
            mem.r0_addr.eq(Mux(advance, rd1, rd)[:aw]),
            o.payload.data.eq(mem.r0_data[:w]),
            o.payload.keep.eq(mem.r0_data[w : w + kw]),
            o.payload.last.eq(mem.r0_data[w + kw]),
            o.payload.user.eq(mem.r0_data[w + kw + 1]),
        ]
        m.d.sync += avail.eq(Mux(advance, rd1 != wr, rd != wr))
        with m.If(advance):
            m.d.sync += [rd.eq(rd1), rd1.eq(rd1 + 1)]

        # -- pause with hysteresis, counters
        with m.If(level > self.xoff):
            m.d.sync += self.pause.eq(1)
        with m.Elif(level < self.xon):
            m.d.sync += self.pause.eq(0)
        with m.If(self.pause):
            m.d.sync += self.stat_pause_cycles.eq(self.stat_pause_cycles + 1)
        # the peak from a registered level: the subtract and the compare are a clock apart
        level_r = Signal.like(level)
        m.d.sync += level_r.eq(level)
        with m.If(level_r > self.stat_peak_level):
            m.d.sync += self.stat_peak_level.eq(level_r)
        return m


EXPORTS = [
    BlockSpec(
        name="pause_fifo",
        module="gse_pause_fifo",
        factory=PauseFIFO,
        params={
            "data_width": 64,
            "depth_bytes": DEFAULT_DEPTH,
            "xoff_bytes": DEFAULT_XOFF,
            "xon_bytes": DEFAULT_XON,
        },
        description="always-ready cut-through AXI4-Stream store of a lossless link's "
        "receiver: pause (registered) above XOFF until below XON; a frame with no room "
        "is dropped (or cut and flagged bad) and counted; bad frames pass flagged",
    )
]
