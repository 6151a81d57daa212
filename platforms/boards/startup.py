"""Start-up sequencing of a board top: PHY reset, then a wait for the links.

:class:`StartupSequencer` (``sync`` domain) counts clocks from reset:

* ``phy_reset`` (out) is 1 for the first ``phy_reset_cycles`` clocks (the PHYs are held
  in reset while the PLL settles; 2**20 clocks = 8.4 ms at 125 MHz, more than the
  10 us the Broadcom and Realtek gigabit PHYs ask for), then 0;
* ``start`` (out) becomes 1 ``start_cycles`` clocks after reset (default 2**29 =
  4.3 s at 125 MHz: the PHYs' auto-negotiation, typically 2-3 s at 1 Gb/s) and stays 1.
  A top enables its traffic only then, so that no frame is lost to a link that is not
  up yet (a loss that the self-test would count as an error).

Both counts are parameters so that a simulation can shorten them.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

__all__ = ["StartupSequencer"]


class StartupSequencer(wiring.Component):
    """``phy_reset`` for ``phy_reset_cycles`` clocks after reset; ``start`` after
    ``start_cycles``."""

    def __init__(self, phy_reset_cycles=1 << 20, start_cycles=1 << 29):
        if not 0 < phy_reset_cycles < start_cycles:
            raise ValueError("StartupSequencer needs 0 < phy_reset_cycles < start_cycles")
        self.phy_reset_cycles, self.start_cycles = phy_reset_cycles, start_cycles
        super().__init__({"phy_reset": Out(1, init=1), "start": Out(1)})

    def elaborate(self, platform):
        m = Module()
        count = Signal(range(self.start_cycles + 1))
        with m.If(count != self.start_cycles):
            m.d.sync += count.eq(count + 1)
        m.d.sync += [
            self.phy_reset.eq(count < self.phy_reset_cycles - 1),
            self.start.eq(count == self.start_cycles),
        ]
        return m
