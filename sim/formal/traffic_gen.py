"""Traffic generator: the programmed rate is never exceeded over any window, and every
frame has the programmed size.

:class:`GenRate` around rtl/tb/traffic_gen.py (64-bit, 2 flows) holds the
configuration (``rate``, ``frame_min`` = ``frame_max`` = L with 60 <= L <= 72, ``flows``,
``random``, ``host``, ``tenant``, ``tc``, ``seed``) from the first clock and ``enable``
low for the first 4, as the block asks (configuration static while enabled and 4 clocks
before); ``enable``, ``pause``, ``m_axis_tready`` and the table
writes are free. A free input ``mark`` opens a window at any clock the solver likes;
from then the wrapper counts clocks ``w`` and beats sent ``b`` and asserts every clock:

* ``65536 * b <= w * rate + BUCKET + 65536 * F``: the rate in 1/65536 of line rate,
  the bucket of two clocks' credit (``BUCKET`` = 2 x 65536) and one frame of F = 9
  beats, the most a frame started on a non-negative credit can run it below zero (the
  token-bucket rule of the docstring). Without the frame's slack the bound is refuted
  (tests/formal): a frame does go out whole on a short credit;
* every frame leaves L bytes long, ``tkeep`` contiguous, ``tuser`` 0;
* ``m_axis`` keeps the valid/ready rule.

BMC: the frame builder, the preparation pipeline and the token register are not visible
at the ports. Depth 22: the reset sweep (2 clocks), 4 clocks with ``enable`` low, a
preparation (5) and a whole frame (``--all``).
"""

from amaranth.hdl import Assert, Assume, Cover, Elaboratable, Module, ResetSignal, Signal

from .registry import Property, inputs_of, register, register_reach
from .stream_blocks import assert_stream_rules
from .streams import FrameTracker

__all__ = ["GenRate", "PARAMS", "FRAME_BEATS"]

PARAMS = dict(data_width=64, max_flows=2)
FRAME_BEATS = 9  # 72 bytes at 8 a beat
RATE_ONE = 1 << 16
BUCKET = 2 * RATE_ONE


class GenRate(Elaboratable):
    def __init__(self, cover=False, slack_beats=FRAME_BEATS):
        from opengse.rtl.tb.traffic_gen import TrafficGenerator

        self.dut = TrafficGenerator(**PARAMS)
        self.cover, self.slack = cover, slack_beats
        self.mark = Signal()  # free: the window starts at the first clock it is 1

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        o = dut.m_axis
        m.d.comb += Assume(~ResetSignal())
        started = Signal(name="started")
        m.d.sync += started.eq(1)
        for sig in (
            dut.rate,
            dut.frame_min,
            dut.frame_max,
            dut.flows,
            dut.random,
            dut.host,
            dut.tenant,
            dut.tc,
            dut.seed,
        ):
            prev = Signal.like(sig, name=f"{sig.name}_prev")
            m.d.sync += prev.eq(sig)
            with m.If(started):
                m.d.comb += Assume(sig == prev)
        # the block's rule: configuration static for 4 clocks before enable rises (the
        # sizes pass 3 registers: lo/hi, span, the registered draw)
        settle = Signal(range(5), name="settle")
        with m.If(settle != 4):
            m.d.sync += settle.eq(settle + 1)
            m.d.comb += Assume(~dut.enable)
        m.d.comb += [
            Assume(dut.frame_min == dut.frame_max),
            Assume((dut.frame_min >= 60) & (dut.frame_min <= 8 * FRAME_BEATS)),
            Assume(dut.rate <= RATE_ONE),
        ]
        fire = o.valid & o.ready
        armed = Signal(name="armed")
        w = Signal(8, name="window_clocks")
        b = Signal(8, name="window_beats")
        with m.If(self.mark & ~armed):
            m.d.sync += [armed.eq(1), w.eq(1), b.eq(fire)]
        with m.Elif(armed):
            m.d.sync += [w.eq(w + 1), b.eq(b + fire)]
        with m.If(armed):
            m.d.comb += Assert(
                b * RATE_ONE <= w * dut.rate + BUCKET + self.slack * RATE_ONE,
                "more beats in a window than rate, bucket and one frame allow",
            )
        trk = FrameTracker(m, o, max_beats=15, len_bits=8, name="tx")
        keep = o.payload.keep
        contiguous = keep == 1
        for k in range(2, len(keep) + 1):
            contiguous |= keep == (1 << k) - 1
        with m.If(o.valid):
            m.d.comb += Assert(o.payload.user == 0, "tuser set")
            with m.If(o.payload.last):
                m.d.comb += Assert(contiguous, "tkeep not contiguous on the last beat")
            with m.Else():
                m.d.comb += Assert(keep.all(), "tkeep not full inside a frame")
        with m.If(trk.end):
            m.d.comb += Assert(trk.length == dut.frame_min, "a frame not of the programmed size")
        assert_stream_rules(m, o, "m_axis")
        if self.cover:
            m.d.comb += Cover(armed & (b == 8) & (dut.rate < RATE_ONE // 2))
        return m


def _build(cover=False):
    top = GenRate(cover=cover)
    return top, inputs_of(top.dut) + [top.mark]


RATE = register(
    Property(
        name="traffic_gen_rate_bound",
        block="traffic_gen",
        asserts="over any window of w clocks, 65536 x beats <= w x rate + bucket (2 clocks' credit) + one "
        "frame (9 beats); every frame exactly the programmed size, tkeep contiguous, tuser 0; m_axis keeps "
        "the valid/ready rule (64-bit, 2 flows)",
        assumptions="rst low after reset; configuration held from the first clock, enable low for the "
        "first 4 (rate <= 65536, frame_min = frame_max in 60..72, flows, random, ids, seed); enable, "
        "pause, m_axis_tready, table writes and the window's start free",
        mode="bmc",
        depth=22,
        build=_build,
        options={"engine": "smtbmc yices"},
        fast=False,
        bounded_why="k-induction does not close: the frame builder, the preparation pipeline and the token "
        "register are not visible at the ports; depth 22 is the reset sweep, 4 clocks with enable low, a "
        "preparation and a whole frame at below half the line rate (the cover check)",
    )
)
register_reach(RATE, "a window holding 8 beats at a rate below half the line rate")
