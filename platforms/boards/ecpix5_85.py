"""LambdaConcept ECPIX-5 85F: ECP5 LFE5UM5G-85F-8 (BG554), one Realtek RTL8211E
gigabit PHY, FT2232 USB JTAG/UART.

amaranth-boards' ``ECPIX585Platform``: a 100 MHz oscillator (``clk100``), a reset button
(``rst`` 0), four RGB LEDs (``rgb_led`` 0..3: LED 0 green is the status LED, LED 1 red
lights on error), one ``eth_rgmii`` port (its control pins are called ``rx_ctrl`` and
``tx_ctrl``; :mod:`.rgmii_port` adapts them), ``uart`` 0 (the FT2232's second channel:
the leaf's management UART on the same USB cable as JTAG).

``txc_shift=0``: the RTL8211E's RGMII TX and RX clock delays as strapped on the board
(not verified on hardware by this project; with a PHY that does not delay TXC, build
with ``txc_shift=1``).
"""

from amaranth_boards.ecpix5 import ECPIX585Platform

from .board import Board

__all__ = ["BOARD"]

BOARD = Board(
    name="ecpix5-85",
    platform_cls=ECPIX585Platform,
    description="LambdaConcept ECPIX-5 85F (LFE5UM5G-85F, 1 x RGMII): larger leaf, self-test",
    clk="clk100",
    f_osc=100e6,
    rgmii_ports=(0,),
    led=("rgb_led", 0, "g"),
    error_led=("rgb_led", 1, "r"),
    rst="rst",
    uart=("uart", 0),
    txc_shift=0,
    program="openFPGALoader -b ecpix5 {bit}",
)
