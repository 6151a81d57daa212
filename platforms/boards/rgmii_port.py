"""One RGMII port of a board: the project's :class:`~opengse.rtl.mac.mac.RGMIIMac` on an
``eth_rgmii`` resource, with its own receive clock domain and the PHY's side pins.

:class:`RGMIIPort` (``port`` n) requests ``eth_rgmii`` n and builds:

* the ``rx<n>`` domain, clocked by the resource's ``rx_clk`` pin (the PHY's RXC,
  125 MHz at 1 Gb/s; the top constrains it with :func:`rx_clock_preferences`), reset
  until ``sync`` leaves reset (a
  :class:`~amaranth.lib.cdc.ResetSynchronizer` into ``rx<n>``; RXC may not run yet);
* the MAC, its ``rx`` domain renamed ``rx<n>``; ``tx``/``tx90``/``sync`` are the
  board's (:mod:`.clocking`);
* the PHY reset: ``phy_reset`` (in, ``sync``) drives the resource's active-low ``rst``
  pin; ``mdc`` is held low and ``mdio`` is left undriven (the PHY runs on its strapped
  defaults: auto-negotiation, 1 Gb/s with a 1 Gb/s partner). ``share_phy_pins=False``
  skips them (a second port whose PHY shares the first port's reset and MDIO pins,
  as on the Colorlight 5A-75B).

Members: ``mac`` (the :class:`RGMIIMac`: its ``s_axis``, ``m_axis`` and ``stat_*`` are
the port's), ``phy_reset`` (in). The MAC's ``data_width``, FIFO sizes and ``txc_shift``
are the caller's. The pin names of the resource are adapted (the ECPIX-5 calls the
control pins ``rx_ctrl``/``tx_ctrl``, the MAC reads ``rx_ctl``/``tx_ctl``).
"""

from types import SimpleNamespace

from amaranth.hdl import ClockDomain, ClockSignal, DomainRenamer, Module, ResetSignal
from amaranth.lib import io, wiring
from amaranth.lib.cdc import ResetSynchronizer
from amaranth.lib.wiring import In

from opengse.rtl.mac.mac import RGMIIMac

__all__ = ["RGMIIPort", "RGMII_HZ", "rx_clock_preferences"]

RGMII_HZ = 125e6


def rx_clock_preferences(ports):
    """LPF lines constraining the ``rx_clk`` pins of ``eth_rgmii`` ``ports`` to 125 MHz
    (on the port: nextpnr does not find the buffer's net by its Amaranth name)."""
    return "\n".join(f'FREQUENCY PORT "eth_rgmii_{p}__rx_clk__io" {RGMII_HZ:.0f} HZ;' for p in ports)


def _mac_pins(res):
    """The resource's subsignals under the names :class:`RGMIIMac` reads."""

    def sub(*names):
        for name in names:
            if hasattr(res, name):
                return getattr(res, name)
        raise ValueError(f"eth_rgmii resource has none of {names}")

    return SimpleNamespace(
        rx_clk=sub("rx_clk"),
        rx_ctl=sub("rx_ctl", "rx_ctrl"),
        rx_data=sub("rx_data"),
        tx_clk=sub("tx_clk"),
        tx_ctl=sub("tx_ctl", "tx_ctrl"),
        tx_data=sub("tx_data"),
        rst=getattr(res, "rst", None),
        mdc=getattr(res, "mdc", None),
        mdio=getattr(res, "mdio", None),
    )


class RGMIIPort(wiring.Component):
    """The MAC of board port ``port`` (see the module docstring)."""

    def __init__(self, port, data_width, rx_fifo_bytes=2048, tx_fifo_bytes=2048, txc_shift=0, phy_pins=True):
        self.port, self.data_width, self.txc_shift, self.phy_pins = port, data_width, txc_shift, phy_pins
        self._fifo = (rx_fifo_bytes, tx_fifo_bytes)
        self.domain = f"rx{port}"
        self.mac = None
        super().__init__({"phy_reset": In(1)})

    def create_mac(self, platform):
        """Request the resource and build the MAC (before :meth:`elaborate`, so that the
        caller can connect its streams)."""
        self._pins = _mac_pins(platform.request("eth_rgmii", self.port, dir="-"))
        self.mac = RGMIIMac(
            data_width=self.data_width,
            rx_fifo_bytes=self._fifo[0],
            tx_fifo_bytes=self._fifo[1],
            txc_shift=self.txc_shift,
            pins=self._pins,
        )
        return self.mac

    def elaborate(self, platform):
        m = Module()
        if self.mac is None:
            self.create_mac(platform)
        pins, rx = self._pins, self.domain
        m.domains += ClockDomain(rx)
        m.submodules.rx_clk_buf = rx_clk = io.Buffer("i", pins.rx_clk)
        m.d.comb += ClockSignal(rx).eq(rx_clk.i)
        m.submodules.rx_reset = ResetSynchronizer(ResetSignal("sync"), domain=rx)
        m.submodules.mac = DomainRenamer({"rx": rx})(self.mac)
        if self.phy_pins:
            m.submodules.phy_rst = phy_rst = io.Buffer("o", pins.rst)
            m.d.comb += phy_rst.o.eq(self.phy_reset)
            m.submodules.phy_mdc = phy_mdc = io.Buffer("o", pins.mdc)
            m.d.comb += phy_mdc.o.eq(0)
            m.submodules.phy_mdio = phy_mdio = io.Buffer("io", pins.mdio)
            m.d.comb += [phy_mdio.o.eq(0), phy_mdio.oe.eq(0)]
        return m
