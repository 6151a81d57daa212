"""Board clocking: the core and RGMII transmit clocks from the board oscillator through
an ECP5 PLL.

:class:`BoardClocks` takes the board's oscillator (the platform's ``default_clk``
resource, ``f_osc`` Hz) into an :class:`~.pll.ECP5PLL` and creates these domains:

* ``sync``: the core clock, ``core_hz`` (default :data:`CORE_HZ`, 125 MHz: the
  ``CLKOP`` net itself; any other frequency is the PLL's ``CLKOS2``, from the same VCO);
  the MACs' core side, the traffic generators and checkers, the leaf.
* ``tx``: the RGMII transmit clock, 125 MHz, ``CLKOP`` (the MAC crosses ``sync`` ->
  ``tx`` through an AsyncFIFO, which is also correct on one clock).
* ``tx90`` (only with ``tx90=True``): ``CLKOS``, 125 MHz lagging ``CLKOP`` by 90 degrees
  (2 ns), for a MAC with ``txc_shift=1`` (the FPGA delays ``RGMII TXC``, not the PHY).

Why the oscillator and not a PHY's RX clock: RXC stops whenever the link is down or the
PHY is in reset, and the core (and the transmit side that brings the link up on the far
end) must run regardless. Each RGMII receive side has its own ``rx`` domain from its
RXC (:mod:`.rgmii_port`).

Resets: ``sync`` and ``tx`` are held in reset until the PLL reports lock, and then
released synchronously; ``rst_resource`` (a board button, optional) also resets them.
Both domains reset asynchronously (``async_reset=True``: asserted at once, released a
few clocks later): ``sync``'s reset reaches every flip-flop of the core on the ECP5's
global set/reset network (:class:`~.global_reset.GlobalReset`), ``tx``'s (a MAC's
transmit side, a few hundred flip-flops) through an
:class:`amaranth.lib.cdc.ResetSynchronizer`. The top adds the domains
to its module (:meth:`BoardClocks.domains`); this component drives their clocks and
resets. ``locked`` (out) is the PLL's lock, synchronised to ``sync``. The clock
constraints come from nextpnr, which derives each PLL output's frequency from the
oscillator pin's constraint (the amaranth-boards resource's ``Clock``).
"""

from amaranth.hdl import ClockDomain, ClockSignal, Module, Signal
from amaranth.lib import io, wiring
from amaranth.lib.cdc import FFSynchronizer, ResetSynchronizer
from amaranth.lib.wiring import Out

from .global_reset import GlobalReset
from .pll import ECP5PLL

__all__ = ["BoardClocks", "CORE_HZ"]

#: the default core clock, the RGMII transmit clock's
CORE_HZ = 125e6
TX_HZ = 125e6


class BoardClocks(wiring.Component):
    """Domains ``sync`` (``core_hz``), ``tx`` (and ``tx90``) at 125 MHz from the
    oscillator resource ``clk_resource`` (``f_osc`` Hz); ``rst_resource`` (or ``None``)
    resets them."""

    def __init__(self, clk_resource, f_osc, rst_resource=None, tx90=False, core_hz=CORE_HZ):
        self._clk, self._rst = clk_resource, rst_resource
        self.f_osc, self.tx90, self.core_hz = f_osc, tx90, core_hz
        aux = None if core_hz == TX_HZ else core_hz
        self.pll = ECP5PLL(f_osc, TX_HZ, phase=90 if tx90 else None, f_aux=aux)
        super().__init__({"locked": Out(1)})

    def domains(self):
        """The domains this drives, for the top to add to its own module (a domain is
        defined where it is used or above: Amaranth 0.6 requires it)."""
        out = [ClockDomain("sync", async_reset=True), ClockDomain("tx", async_reset=True)]
        if self.tx90:
            out.append(ClockDomain("tx90", reset_less=True))
        return out

    def elaborate(self, platform):
        m = Module()
        m.submodules.pll = pll = self.pll
        clk_io = platform.request(self._clk, 0, dir="-")
        m.submodules.clk_buf = clk_buf = io.Buffer("i", clk_io)
        m.d.comb += pll.clk_in.eq(clk_buf.i)
        reset = Signal()
        m.d.comb += reset.eq(~pll.locked)
        if self._rst is not None:
            rst_io = platform.request(self._rst, 0, dir="-")
            m.submodules.rst_buf = rst_buf = io.Buffer("i", rst_io)
            m.d.comb += reset.eq(~pll.locked | rst_buf.i)

        core = pll.clk_out if self.pll.f_aux is None else pll.clk_aux
        m.d.comb += [ClockSignal("sync").eq(core), ClockSignal("tx").eq(pll.clk_out)]
        m.submodules.sync_reset = sync_reset = GlobalReset("sync")
        m.d.comb += sync_reset.arst.eq(reset)
        m.submodules.tx_reset = ResetSynchronizer(reset, domain="tx")
        if self.tx90:
            m.d.comb += ClockSignal("tx90").eq(pll.clk_shifted)
        m.submodules.lock_sync = FFSynchronizer(pll.locked, self.locked, o_domain="sync")
        return m
