"""Colorlight 5A-75B R7.0: ECP5 LFE5U-25F-6 (BG256), two Broadcom B50612D gigabit PHYs.

amaranth-boards' ``Colorlight_5A75B_R70Platform``: a 25 MHz oscillator (``clk25``), one
LED (``led`` 0, pin P11, shared with the J19 UART TX), one button (``button`` 0, the
J19 KEY input; not used as a reset), ``eth_rgmii`` 0 and 1. The two PHYs share one
reset pin and one MDIO bus: Amaranth refuses a second request of the same pins, so
:class:`Colorlight5A75BPlatform` (the board's platform here) describes ``eth_rgmii`` 1
without ``rst``, ``mdc`` and ``mdio``, and port 0 drives them for both PHYs.

The board's only UART (``uart`` 0, header J19) is on the LED's pin (TX, P11) and the
button's (RX, M13, pulled up here so that it idles high without a cable). The leaf top
uses it for management and so has no status LED; the self-test keeps the LED.

``txc_shift=0``: the MAC drives TXC edge-aligned with the data and relies on the PHY's
internal TX clock delay, and on receive the PHY's RX delay centres RXC in the data
(the B50612D's RGMII delay strapping as the board ships; not verified on hardware by
this project: with a PHY that does not delay TXC, build with ``txc_shift=1``).
Programming: the board has no USB; a JTAG cable (FT232H or similar) on its JTAG pads.
"""

from amaranth.build import Attrs, Resource
from amaranth_boards.colorlight_5a75b_r7_0 import Colorlight_5A75B_R70Platform

from .board import Board

__all__ = ["BOARD", "Colorlight5A75BPlatform"]

SHARED_PHY_PINS = ("rst", "mdc", "mdio")


def _without_shared_pins(res):
    if res.name == "eth_rgmii" and res.number == 1:
        ios = [io for io in res.ios if io.name not in SHARED_PHY_PINS]
        return Resource(res.name, res.number, *ios, Attrs(**res.attrs))
    if res.name == "uart" and res.number == 0:  # rx idles high with no cable on J19
        return Resource(res.name, res.number, *res.ios, Attrs(**res.attrs, PULLMODE="UP"))
    return res


class Colorlight5A75BPlatform(Colorlight_5A75B_R70Platform):
    """``Colorlight_5A75B_R70Platform`` with ``eth_rgmii`` 1 minus the pins it shares
    with ``eth_rgmii`` 0."""

    resources = [_without_shared_pins(r) for r in Colorlight_5A75B_R70Platform.resources]


BOARD = Board(
    name="colorlight-5a75b",
    platform_cls=Colorlight5A75BPlatform,
    description="Colorlight 5A-75B R7.0 (LFE5U-25F, 2 x RGMII): 2-port leaf, self-test",
    clk="clk25",
    f_osc=25e6,
    rgmii_ports=(0, 1),
    led=("led", 0, None),
    shared_phy_pins=True,
    uart=("uart", 0),
    uart_replaces_led=True,
    txc_shift=0,
    program="openFPGALoader -c ft232 {bit}",
)
