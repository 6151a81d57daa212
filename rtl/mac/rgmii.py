"""RGMII <-> GMII: the four-bit double-data-rate pins as one byte per clock.

RGMII (1 Gb/s) carries a byte per 125 MHz clock: the low nibble on the rising edge and
the high nibble on the falling edge; ``ctl`` carries ``dv`` (``en`` on transmit) on the
rising edge and ``dv XOR er`` on the falling edge.

:class:`RGMIIInput` (``rx`` domain, clocked by the PHY's RXC) turns the pins into GMII
signals ``rx_dv``, ``rx_er``, ``rxd``, valid two ``rx`` clocks after the falling edge
of their byte (the DDR input register, then one register more).
:class:`RGMIIOutput` (``tx`` domain) takes GMII
``tx_en``, ``tx_er``, ``txd`` at a rising edge of ``tx_clk`` and drives them on the pins
from that edge on; it also forwards the transmit clock on ``rgmii_txc`` from the domain
``txc_domain``: ``"tx"`` (edge-aligned with the data: the PHY adds the 2 ns TX delay)
or a domain clocked 90 degrees after ``tx`` (the FPGA delays the clock itself).

With ``pins=None`` the DDR registers are behavioural models and the pins are members
(``rgmii_rxd``, ``rgmii_rx_ctl`` in; ``rgmii_txd``, ``rgmii_tx_ctl``, ``rgmii_txc``
out); given an ``eth_rgmii`` resource requested with ``dir="-"`` they are
``io.DDRBuffer`` on its ``rx_data``/``rx_ctl`` or ``tx_data``/``tx_ctl``/``tx_clk``.
See :mod:`opengse.rtl.mac.ddr_io`.
"""

from amaranth.hdl import Cat, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .ddr_io import ddr_input, ddr_output

__all__ = ["RGMIIInput", "RGMIIOutput"]


class RGMIIInput(wiring.Component):
    """RGMII receive pins -> GMII byte stream in the ``rx`` domain (no back-pressure)."""

    def __init__(self, pins=None, domain="rx"):
        self._pins = pins
        self._domain = domain
        members = {"rx_dv": Out(1), "rx_er": Out(1), "rxd": Out(8)}
        if pins is None:
            members.update({"rgmii_rxd": In(4), "rgmii_rx_ctl": In(1)})
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        pins = self._pins
        rxd, rxd_pin = ddr_input(4 if pins is None else pins.rx_data, self._domain)
        m.submodules.rxd_ddr = rxd
        ctl, ctl_pin = ddr_input(1 if pins is None else pins.rx_ctl, self._domain)
        m.submodules.ctl_ddr = ctl
        if pins is None:
            m.d.comb += [rxd_pin.eq(self.rgmii_rxd), ctl_pin.eq(self.rgmii_rx_ctl)]
        # one register more after the DDR input: the route from the pins' I/O register
        # to wherever the framer is placed gets a clock of its own (on the Colorlight
        # 25F it was 3.3 ns of rx1's 8.06 ns worst path)
        m.d[self._domain] += [
            self.rxd.eq(Cat(rxd.i[0], rxd.i[1])),
            self.rx_dv.eq(ctl.i[0]),
            self.rx_er.eq(ctl.i[0] ^ ctl.i[1]),
        ]
        return m


class RGMIIOutput(wiring.Component):
    """GMII byte stream in the ``tx`` domain -> RGMII transmit pins and clock."""

    def __init__(self, pins=None, domain="tx", txc_domain="tx"):
        self._pins = pins
        self._domain = domain
        self._txc_domain = txc_domain
        members = {"tx_en": In(1), "tx_er": In(1), "txd": In(8)}
        if pins is None:
            members.update({"rgmii_txd": Out(4), "rgmii_tx_ctl": Out(1), "rgmii_txc": Out(1)})
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        pins = self._pins
        txd, txd_pin = ddr_output(4 if pins is None else pins.tx_data, self._domain)
        m.submodules.txd_ddr = txd
        ctl, ctl_pin = ddr_output(1 if pins is None else pins.tx_ctl, self._domain)
        m.submodules.ctl_ddr = ctl
        txc, txc_pin = ddr_output(1 if pins is None else pins.tx_clk, self._txc_domain)
        m.submodules.txc_ddr = txc
        if pins is None:
            m.d.comb += [
                self.rgmii_txd.eq(txd_pin),
                self.rgmii_tx_ctl.eq(ctl_pin),
                self.rgmii_txc.eq(txc_pin),
            ]
        m.d.comb += [
            txd.o[0].eq(self.txd[:4]),
            txd.o[1].eq(self.txd[4:]),
            ctl.o[0].eq(self.tx_en),
            ctl.o[1].eq(self.tx_en ^ self.tx_er),
            txc.o[0].eq(1),
            txc.o[1].eq(0),
        ]
        return m
