"""A domain's reset on the ECP5's global set/reset network (GSR): no routing at all.

:class:`GlobalReset` drives ``ResetSignal(domain)`` for a domain declared with
``async_reset=True``. ``arst`` (in, asynchronous: the PLL's lock, a button) asserts the
reset at once; it is released ``stages`` clocks of ``domain`` after ``arst`` falls (a
chain of flip-flops cleared by ``arst``, as :class:`amaranth.lib.cdc.ResetSynchronizer`).
The chain's output ``rst_n`` (active low) drives the device's synchronous global
set/reset block (``SGSR``, clocked by ``domain``), and the domain's reset is
``~rst_n``. Yosys' ``ecp5_gsr`` pass then takes every flip-flop whose asynchronous reset
is exactly that inversion off its ``LSR`` pin and leaves it to the GSR network, which
resets each flip-flop to its reset value (``REGSET``, the signal's ``init``) over
dedicated wiring: the reset uses no general routing and no LUT.

Why: a leaf's core domain resets about 30 000 flip-flops. Routed as an ordinary net
from one register it crossed the chip (7.87 ns on the ECPIX-5 leaf, before any logic);
with a synchronous reset Yosys also folded it, with each register's own clears, into
LUTs in front of the flip-flops' ``LSR`` (five in a row on the grant arbiter's pick),
and that path set the core's Fmax (83.65 MHz routed). Carried on a global clock network
instead (a ``DCCA``) it took a global's tap into every slice's ``LSR`` and router2 no
longer converged (200-550 overused wires from iteration 20 on).

What the GSR changes, on the board only: with an ``SGSR`` present every flip-flop of the
design whose ``GSR`` is ``AUTO`` (all of Yosys' inferred ones) takes the global reset,
including reset-less ones and those of other domains, which are held at their ``init``
while ``rst_n`` is low (the PLL unlocked) -- they are all reset then anyway. The chain's
own flip-flops (``FD1S3DX``, ``GSR`` disabled) are not, or the GSR would hold its own
source. nextpnr does not time the GSR network: its release reaches the flip-flops after
the ``SGSR`` block's clock edge through dedicated wiring, not a timed path.
"""

from amaranth.hdl import ClockSignal, Const, Instance, Module, ResetSignal, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In

__all__ = ["GlobalReset"]


class GlobalReset(wiring.Component):
    """``ResetSignal(domain)`` from ``arst`` (in), released ``stages`` clocks late, through
    the device's ``SGSR``. The domain must be declared with ``async_reset=True``."""

    def __init__(self, domain="sync", stages=2):
        if stages < 2:
            raise ValueError("GlobalReset needs at least 2 stages (the release is resynchronised)")
        self.domain, self.stages = domain, stages
        super().__init__({"arst": In(1)})

    def elaborate(self, platform):
        m = Module()
        clk = ClockSignal(self.domain)
        # Active low: each stage is cleared by arst at once and passes a 1 along after.
        chain = [Signal(name=f"rst_n{i}") for i in range(self.stages)]
        for i, q in enumerate(chain):
            m.submodules[f"stage{i}"] = Instance(
                "FD1S3DX",
                p_GSR="DISABLED",
                i_CD=self.arst,
                i_D=Const(1) if i == 0 else chain[i - 1],
                i_CK=clk,
                o_Q=q,
            )
        rst_n = chain[-1]
        m.submodules.gsr = Instance("SGSR", i_GSR=rst_n, i_CLK=clk)
        # The inversion ecp5_gsr looks for: a NOT of the GSR's input on each LSR.
        m.d.comb += ResetSignal(self.domain).eq(~rst_n)
        return m
