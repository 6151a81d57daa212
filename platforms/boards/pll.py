"""ECP5 PLL (``EHXPLLL``): one input clock, a primary output, an optional phase-shifted
copy and an optional slower output.

:class:`ECP5PLL` solves the integer dividers for ``f_out = f_in * CLKFB_DIV / CLKI_DIV``
with the primary output ``CLKOP`` as the feedback path (``f_out = f_vco / CLKOP_DIV``),
keeping the VCO in 400..800 MHz (the smallest ``CLKOP_DIV`` that gets there) and the
phase detector at 10 MHz or more (ECP5 data sheet limits): 25 -> 125 MHz is
``CLKI_DIV`` 1, ``CLKFB_DIV`` 5, ``CLKOP_DIV`` 4 (VCO 500 MHz); 100 -> 125 MHz is
4/5/4. A second output ``CLKOS`` at the same frequency can lag ``CLKOP`` by ``phase``
degrees, in steps of 1/8 VCO period (the fine phase). A third output ``CLKOS2`` at
``f_aux`` divides the same VCO (``CLKOS2_DIV``), so ``f_aux`` must divide a VCO
frequency that ``f_out`` also divides: 125 and 62.5 MHz share the 500 MHz VCO
(dividers 4 and 8).

Interface: ``clk_in`` (in), ``clk_out`` (out, ``CLKOP``), ``clk_shifted`` (out, ``CLKOS``;
only with ``phase`` not ``None``), ``clk_aux`` (out, ``CLKOS2``; only with ``f_aux``
not ``None``), ``locked`` (out, asynchronous: resynchronise before
use). Timing: the outputs settle a few hundred microseconds after configuration; until
``locked`` is 1 they are not to be trusted.
"""

from amaranth.hdl import Instance, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["ECP5PLL", "solve_pll"]

VCO_MIN, VCO_MAX = 400e6, 800e6
PFD_MIN = 10e6


def _divides(f_vco, f):
    div = round(f_vco / f)
    return 1 <= div <= 128 and abs(f_vco / div - f) <= 1


def solve_pll(f_in, f_out, f_aux=None):
    """``(clki_div, clkfb_div, clkop_div, f_vco)`` giving exactly ``f_out`` from ``f_in``
    (feedback from ``CLKOP``), on a VCO that an integer divider also takes to ``f_aux``
    (if given); the highest phase-detector frequency wins. ``ValueError`` if no integer
    solution exists."""
    best = None
    for clki in range(1, 129):
        pfd = f_in / clki
        if pfd < PFD_MIN:
            break
        for fb in range(1, 81):
            if abs(pfd * fb - f_out) > 1:
                continue
            for op in range(1, 129):
                vco = f_out * op
                if VCO_MIN <= vco <= VCO_MAX and (f_aux is None or _divides(vco, f_aux)):
                    cand = (clki, fb, op, vco)
                    if best is None or pfd > f_in / best[0]:
                        best = cand
                    break
    if best is None:
        also = "" if f_aux is None else f" and {f_aux / 1e6:g} MHz"
        raise ValueError(f"no EHXPLLL setting gives {f_out / 1e6:g} MHz{also} from {f_in / 1e6:g} MHz")
    return best


class ECP5PLL(wiring.Component):
    """EHXPLLL with ``CLKOP`` = ``f_out``; if ``phase`` (degrees) is given, ``CLKOS`` =
    ``f_out`` lagging by ``phase``; if ``f_aux`` is given, ``CLKOS2`` = ``f_aux``."""

    def __init__(self, f_in, f_out, phase=None, f_aux=None):
        self.f_in, self.f_out, self.phase, self.f_aux = f_in, f_out, phase, f_aux
        self.clki_div, self.clkfb_div, self.clkop_div, self.f_vco = solve_pll(f_in, f_out, f_aux)
        members = {"clk_in": In(1), "clk_out": Out(1), "locked": Out(1)}
        if phase is not None:
            members["clk_shifted"] = Out(1)
        if f_aux is not None:
            members["clk_aux"] = Out(1)
        super().__init__(members)

    def _phase_params(self):
        div = self.clkop_div
        op_cphase = (div - 1) // 2
        params = {"CLKOP_CPHASE": op_cphase, "CLKOP_FPHASE": 0}
        if self.phase is not None:
            eighths = round((self.phase % 360) / 360 * div * 8)
            params.update(
                {
                    "CLKOS_ENABLE": "ENABLED",
                    "CLKOS_DIV": div,
                    "CLKOS_CPHASE": op_cphase + eighths // 8,
                    "CLKOS_FPHASE": eighths % 8,
                }
            )
        if self.f_aux is not None:
            div = round(self.f_vco / self.f_aux)
            aux = {"ENABLE": "ENABLED", "DIV": div, "CPHASE": (div - 1) // 2, "FPHASE": 0}
            params.update({f"CLKOS2_{k}": v for k, v in aux.items()})
        return params

    def elaborate(self, platform):
        m = Module()
        params = {
            "PLLRST_ENA": "DISABLED",
            "INTFB_WAKE": "DISABLED",
            "STDBY_ENABLE": "DISABLED",
            "DPHASE_SOURCE": "DISABLED",
            "OUTDIVIDER_MUXA": "DIVA",
            "OUTDIVIDER_MUXB": "DIVB",
            "OUTDIVIDER_MUXC": "DIVC",
            "OUTDIVIDER_MUXD": "DIVD",
            "CLKI_DIV": self.clki_div,
            "CLKOP_ENABLE": "ENABLED",
            "CLKOP_DIV": self.clkop_div,
            "FEEDBK_PATH": "CLKOP",
            "CLKFB_DIV": self.clkfb_div,
            **self._phase_params(),
        }
        ports = {
            "i_RST": 0,
            "i_STDBY": 0,
            "i_CLKI": self.clk_in,
            "o_CLKOP": self.clk_out,
            "i_CLKFB": self.clk_out,
            "i_PHASESEL0": 0,
            "i_PHASESEL1": 0,
            "i_PHASEDIR": 1,
            "i_PHASESTEP": 1,
            "i_PHASELOADREG": 1,
            "i_PLLWAKESYNC": 0,
            "i_ENCLKOP": 0,
            "o_LOCK": self.locked,
        }
        if self.phase is not None:
            ports["o_CLKOS"] = self.clk_shifted
        if self.f_aux is not None:
            ports["o_CLKOS2"] = self.clk_aux
        attrs = {
            "a_FREQUENCY_PIN_CLKI": f"{self.f_in / 1e6:g}",
            "a_FREQUENCY_PIN_CLKOP": f"{self.f_out / 1e6:g}",
            "a_ICP_CURRENT": "12",
            "a_LPF_RESISTOR": "8",
        }
        if self.phase is not None:
            attrs["a_FREQUENCY_PIN_CLKOS"] = f"{self.f_out / 1e6:g}"
        if self.f_aux is not None:
            attrs["a_FREQUENCY_PIN_CLKOS2"] = f"{self.f_aux / 1e6:g}"
        m.submodules.pll = Instance("EHXPLLL", **{f"p_{k}": v for k, v in params.items()}, **ports, **attrs)
        return m
