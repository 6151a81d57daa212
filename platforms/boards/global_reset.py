"""A domain's reset on an ECP5 global network: asserted at once, released in step.

:class:`GlobalReset` drives ``ResetSignal(domain)`` for a domain declared with
``async_reset=True``. ``arst`` (in, asynchronous: the PLL's lock, a button) asserts the
reset at once; it is released ``stages`` clocks of ``domain`` after ``arst`` falls (a
chain of flip-flops reset by ``arst``, as :class:`amaranth.lib.cdc.ResetSynchronizer`),
and the chain's last flip-flop drives the domain's reset through a ``DCCA``, the ECP5's
global clock buffer, so that nextpnr routes it on a global network.

Why: a leaf's core domain resets about 30 000 flip-flops. Routed as an ordinary net
from one register it crossed the chip (7.87 ns on the ECPIX-5 leaf, before any logic);
with a synchronous reset Yosys also folds it, with each register's own clears, into
LUTs in front of the flip-flops' ``LSR`` (five in a row on the grant arbiter's pick),
and that path set the core's Fmax (83.65 MHz routed). With the domain's reset
asynchronous every flip-flop takes it on ``LSR`` directly (its own clears stay in its
data logic), and the global network gives it the same low delay everywhere. nextpnr
times ``LSR`` as a register input, so the release is a timed path from the chain's
last flip-flop.
"""

from amaranth.hdl import ClockDomain, ClockSignal, Const, Instance, Module, ResetSignal, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In

__all__ = ["GlobalReset"]


class GlobalReset(wiring.Component):
    """``ResetSignal(domain)`` from ``arst`` (in), released ``stages`` clocks late, through
    a ``DCCA``. The domain must be declared with ``async_reset=True``."""

    def __init__(self, domain="sync", stages=2):
        if stages < 2:
            raise ValueError("GlobalReset needs at least 2 stages (the release is resynchronised)")
        self.domain, self.stages = domain, stages
        super().__init__({"arst": In(1)})

    def elaborate(self, platform):
        m = Module()
        # The chain's own domain: the same clock, reset by arst (asynchronously).
        cd = ClockDomain(f"{self.domain}_reset_chain", async_reset=True, local=True)
        m.domains += cd
        m.d.comb += [cd.clk.eq(ClockSignal(self.domain)), cd.rst.eq(self.arst)]
        chain = [Signal(init=1, name=f"stage{i}", attrs={"async_reg": "TRUE"}) for i in range(self.stages)]
        m.d[cd.name] += chain[0].eq(0)
        m.d[cd.name] += [chain[i].eq(chain[i - 1]) for i in range(1, self.stages)]
        m.submodules.global_buffer = Instance(
            "DCCA", i_CLKI=chain[-1], i_CE=Const(1), o_CLKO=ResetSignal(self.domain)
        )
        return m
