"""FabricLink: a wire of fixed propagation delay that can be failed.

One link of the fabric (host <-> leaf, leaf <-> spine), one direction of data plus the
receiver's ``pause`` going back. It never back-pressures and its output is never
back-pressured: it models the wire, not a buffer.
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..catalog import BlockSpec
from ..lib.sram import SRAM
from ..lib.stream import AXIStreamSignature, check_data_width

__all__ = ["FabricLink", "EXPORTS"]

#: Delays up to this many clocks are a chain of registers; longer ones a ring in SRAM.
REGISTER_DELAY_MAX = 4
#: Largest delay accepted (a ring of this many entries).
DELAY_MAX = 1 << 16


class FabricLink(wiring.Component):
    """Delay line of ``delay`` clocks for an AXI4-Stream, failable, carrying pause back.

    Parameters
    ----------
    data_width : int
        Bits of ``tdata`` (a power of two, 8..512).
    user_width : int
        Bits of ``tuser``.
    delay : int
        Propagation delay in clocks, 1..65536. Up to 4 it is a chain of registers, above
        a ring of ``delay`` words in one :class:`~opengse.rtl.lib.sram.SRAM` (each word a
        beat, its ``tvalid`` and the pause bit).

    Interface
    ---------
    ``s_axis`` : ``In(AXIStreamSignature)``
        From the sender. ``tready`` is always 1: every beat offered is taken.
    ``m_axis`` : ``Out(AXIStreamSignature)``
        To the receiver, which must always be ready: a beat shown is gone the next
        clock, as on a wire. ``tready`` does not hold the beat; a beat shown while it is
        0 is counted in ``stat_refused`` (a receiver breaking the contract; tie it to 1
        or connect an always-ready input).
    ``fail`` : ``In(1)``
        The link is down while 1: every beat that reaches the far end in such a clock is
        lost. A frame of which beats were delivered before the failure is closed at once
        (in the first failed clock) by an extra beat with ``tlast`` = 1 and ``tuser``
        bit 0 = 1 (its data: the lost beat's, ``tkeep`` at least byte 0), so the
        receiver drops it whole as a bad frame. When the link comes back in the middle of
        a frame, the rest of that frame is lost too: only frames whose first beat is
        delivered are delivered.
    ``pause_in`` : ``In(1)``
        The receiver's pause request; ``pause_out`` : ``Out(1)`` is it ``delay`` clocks
        later, for the sender (0 during the first ``delay`` clocks after reset), and 0
        while ``fail`` is 1: pause travels in PFC frames on the same cable, so a failed
        link carries none and its sender resumes (its frames are then lost).
    ``stat_beats``, ``stat_frames`` : ``Out(32)``
        Beats (busy clocks of the wire: utilisation) and last beats that reached the far
        end, delivered or lost.
    ``stat_beats_lost``, ``stat_frames_lost`` : ``Out(32)``
        Of those, the beats not delivered, and the frames of which at least one beat was
        lost (cut frames, closed as bad, included). Delivered good frames are
        ``stat_frames - stat_frames_lost``.
    ``stat_refused`` : ``Out(32)``
        Beats shown on ``m_axis`` while ``tready`` was 0 (should stay 0). Counters wrap
        at 2**32.

    Timing
    ------
    A beat on ``s_axis`` in clock ``t`` is on ``m_axis`` in clock ``t + delay`` (unless
    lost); ``pause_in`` in clock ``t`` is ``pause_out`` in clock ``t + delay``. The
    output is a register (the SRAM's read register for long delays). Full rate: one beat
    per clock in, one out, no bubble added or removed.
    """

    def __init__(self, data_width=64, user_width=1, delay=100):
        check_data_width(data_width)
        if not isinstance(delay, int) or not 1 <= delay <= DELAY_MAX:
            raise ValueError(f"FabricLink delay must be 1..{DELAY_MAX} clocks, not {delay!r}")
        if user_width < 1:
            raise ValueError("FabricLink needs user_width >= 1")
        self.data_width, self.user_width, self.delay = data_width, user_width, delay
        sig = AXIStreamSignature(data_width, user_width)
        super().__init__(
            {
                "s_axis": In(sig),
                "m_axis": Out(sig),
                "fail": In(1),
                "pause_in": In(1),
                "pause_out": Out(1),
                "stat_beats": Out(32),
                "stat_frames": Out(32),
                "stat_beats_lost": Out(32),
                "stat_frames_lost": Out(32),
                "stat_refused": Out(32),
            }
        )

    def elaborate(self, platform):
        m = Module()
        s, o = self.s_axis, self.m_axis
        m.d.comb += s.ready.eq(1)

        # The wire: one word per clock (beat, tvalid, pause), read out `delay` clocks later.
        word_in = Cat(s.payload, s.valid, self.pause_in)
        width = len(word_in)
        word_out = Signal(width)
        if self.delay <= REGISTER_DELAY_MAX:
            stages = [Signal(width, name=f"stage{i}") for i in range(self.delay)]
            m.d.sync += stages[0].eq(word_in)
            for a, b in zip(stages, stages[1:]):
                m.d.sync += b.eq(a)
            m.d.comb += word_out.eq(stages[-1])
        else:
            m.submodules.ring = ring = SRAM(width, self.delay)
            wp = Signal(range(self.delay))
            rp = Signal(range(self.delay))
            # The SRAM is not reset: its words count only once each was written after
            # reset, `delay` clocks.
            primed = Signal()
            age = Signal(range(self.delay + 1))
            wrap = self.delay - 1
            m.d.sync += wp.eq(Mux(wp == wrap, 0, wp + 1))
            m.d.comb += [
                rp.eq(Mux(wp == wrap, 0, wp + 1)),
                ring.w_en.eq(1),
                ring.w_addr.eq(wp),
                ring.w_data.eq(word_in),
                ring.r0_addr.eq(rp),
            ]
            with m.If(age == self.delay - 1):
                m.d.sync += primed.eq(1)
            with m.Else():
                m.d.sync += age.eq(age + 1)
            m.d.comb += word_out.eq(Mux(primed, ring.r0_data, 0))

        n_beat = len(s.payload.as_value())
        raw = Signal.like(s.payload)
        raw_valid, raw_pause = Signal(), Signal()
        m.d.comb += Cat(raw, raw_valid, raw_pause).eq(word_out)
        m.d.comb += self.pause_out.eq(raw_pause & ~self.fail)
        assert n_beat + 2 == width

        # Far end: deliver or lose. `mid`: the raw stream is inside a frame; `passing`:
        # the current raw frame is being delivered (its first beat was, nothing since
        # lost); `touched`: the current raw frame is already counted as lost.
        mid, passing, touched = Signal(), Signal(), Signal()
        first = ~mid
        eff_pass = first | passing
        eff_touched = ~first & touched
        pass_now = eff_pass & ~self.fail
        lost = raw_valid & ~pass_now
        close = self.fail & passing  # cut: close what the receiver got so far
        with m.If(raw_valid):
            m.d.sync += [mid.eq(~raw.last), passing.eq(pass_now & ~raw.last), touched.eq(eff_touched | lost)]
        with m.Elif(close):
            m.d.sync += [passing.eq(0), touched.eq(1)]

        m.d.comb += [o.valid.eq((raw_valid & pass_now) | close), o.payload.eq(raw)]
        with m.If(close):
            m.d.comb += [o.payload.last.eq(1), o.payload.user[0].eq(1), o.payload.keep[0].eq(1)]

        beats, frames = self.stat_beats, self.stat_frames
        beats_lost, frames_lost = self.stat_beats_lost, self.stat_frames_lost
        with m.If(raw_valid):
            m.d.sync += beats.eq(beats + 1)
        with m.If(raw_valid & raw.last):
            m.d.sync += frames.eq(frames + 1)
        with m.If(lost):
            m.d.sync += beats_lost.eq(beats_lost + 1)
        with m.If(o.valid & ~o.ready):
            m.d.sync += self.stat_refused.eq(self.stat_refused + 1)
        # A frame is counted lost once: at its first lost beat, or at the cut.
        with m.If((lost & ~eff_touched) | (close & ~raw_valid)):
            m.d.sync += frames_lost.eq(frames_lost + 1)
        return m


EXPORTS = [
    BlockSpec(
        name="fabric_link",
        module="gse_fabric_link",
        factory=FabricLink,
        params={"data_width": 64, "user_width": 1, "delay": 100},
        description="fabric link: AXI4-Stream delay line of `delay` clocks (never "
        "back-pressures, output always accepted), failable (beats lost, a cut frame closed "
        "with tuser), carrying the receiver's pause back with the same delay",
    )
]
