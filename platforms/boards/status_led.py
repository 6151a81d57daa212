"""The self-test's verdict on one LED.

:class:`StatusLED` (``sync`` domain, 125 MHz) shows, in this order of precedence:

=============================  ==============================================
LED                            meaning
=============================  ==============================================
steady on                      an error was counted (latched until reset)
off                            running, but no good frame for ``stall_cycles``
fast blink (3.7 Hz)            running: good frames arrive, no error
slow blink (0.9 Hz)            waiting for the links (before ``start``)
=============================  ==============================================

Inputs: ``start`` (level: traffic enabled), ``error`` (level: any error count is not
zero; latched here), ``progress`` (level: a good-frame count; any change of it is
progress, acted on two clocks later). Output: ``led`` (1 = lit). The blink rates are
bits 24 and 26 of a free running counter at 125 MHz; ``stall_cycles`` defaults to 2**25 (0.27 s).
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["StatusLED"]


class StatusLED(wiring.Component):
    """LED verdict from ``start``, ``error`` and ``progress`` (``progress_width`` bits)."""

    def __init__(self, progress_width=32, stall_cycles=1 << 25, fast_bit=24, slow_bit=26):
        self.stall_cycles, self.fast_bit, self.slow_bit = stall_cycles, fast_bit, slow_bit
        super().__init__(
            {
                "start": In(1),
                "error": In(1),
                "progress": In(progress_width),
                "led": Out(1),
                "failed": Out(1),
                "stalled": Out(1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        blink = Signal(max(self.fast_bit, self.slow_bit) + 1)
        m.d.sync += blink.eq(blink + 1)
        last = Signal.like(self.progress)
        idle = Signal(range(self.stall_cycles + 1))
        moved = Signal()  # registered: a 32-bit compare into idle's reset was 8.8 ns
        m.d.sync += [last.eq(self.progress), moved.eq(self.progress != last)]
        with m.If(~self.start | moved):
            m.d.sync += idle.eq(0)
        with m.Elif(idle != self.stall_cycles):
            m.d.sync += idle.eq(idle + 1)
        m.d.comb += self.stalled.eq(idle == self.stall_cycles)
        with m.If(self.start & self.error):
            m.d.sync += self.failed.eq(1)
        with m.If(self.failed):
            m.d.comb += self.led.eq(1)
        with m.Elif(~self.start):
            m.d.comb += self.led.eq(blink[self.slow_bit])
        with m.Elif(self.stalled):
            m.d.comb += self.led.eq(0)
        with m.Else():
            m.d.comb += self.led.eq(blink[self.fast_bit])
        return m
