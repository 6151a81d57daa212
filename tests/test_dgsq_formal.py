"""Formal checks of the GrantArbiter (yowasp-sby, via opengse.sim.formal).

Small configuration: 4 requesters, 2 tenants, grant 4 credit units, egress buffer 10
credit units (room for two grants only), lease 16 clocks. Every input (requests,
arrivals, weight writes, egress room, output back-pressure, reset) is free.

Properties, checked every clock:

* the arbiter never grants a requester with no backlog (demand 0), nor a free slot,
  nor one already at its in-flight limit;
* (default depth 10 clocks, enough for a REQUEST to be taken and granted twice;
  ``-m slow`` runs depth 16, ``DGSQ_FORMAL_DEPTH`` overrides the default)
* the credit granted and not yet arrived never exceeds the egress buffer
  (``outstanding <= buffer_credits``), and a grant is only issued while
  ``outstanding + grant <= buffer_credits``.
"""
import os

import pytest
from amaranth.hdl import Assert, Cover, Elaboratable, Module, Signal
from amaranth.lib import wiring

from opengse.rtl.grant_arbiter import GrantArbiter
from opengse.sim.formal import prove
from opengse.sim.runner import BUILD_ROOT

PARAMS = dict(n_req=4, buffer_credits=10, grant_credits=4, max_inflight=2, n_tenants=2,
              lease_cycles=16)


class ArbiterProperties(Elaboratable):
    def __init__(self, **params):
        self.dut = GrantArbiter(**params)

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        G, BUF, K = dut.grant_credits, dut.buffer_credits, dut.max_inflight
        m.d.comb += Assert(dut.outst <= BUF, "outstanding credit exceeds the egress buffer")
        with m.If(dut.g_fire):
            m.d.comb += Assert(dut.outst + G <= BUF, "grant without egress room")
        for i in range(dut.n_req):
            with m.If(dut.g_sel[i]):
                m.d.comb += [
                    Assert(dut.valid[i], "grant to a free slot"),
                    Assert(dut.demand[i] != 0, "grant to a requester with no backlog"),
                    Assert(dut.inflight[i] < K, "grant beyond the in-flight limit"),
                ]
        # Non-vacuity: two grants and a completed container are reachable.
        n_grants = Signal(2)
        with m.If(dut.g_fire & (n_grants != 3)):
            m.d.sync += n_grants.eq(n_grants + 1)
        m.d.comb += Cover((n_grants == 1) & dut.g_fire)
        return m


def _ports(dut):
    out = []
    for _path, _flow, value in dut.signature.flatten(dut):
        out.append(value.as_value() if hasattr(value, "as_value") else value)
    return out


@pytest.mark.parametrize("depth", [
    int(os.environ.get("DGSQ_FORMAL_DEPTH", 10)),
    pytest.param(16, marks=pytest.mark.slow),
])
def test_arbiter_safety_bmc(depth):
    top = ArbiterProperties(**PARAMS)
    res = prove(top, ports=_ports(top.dut), depth=depth, mode="bmc",
                workdir=BUILD_ROOT / "formal" / f"grant_arbiter_bmc{depth}")
    assert res.passed


def test_arbiter_grants_reachable():
    """The properties are not vacuous: two grants within 10 clocks are reachable."""
    top = ArbiterProperties(**PARAMS)
    res = prove(top, ports=_ports(top.dut), depth=10, mode="cover",
                workdir=BUILD_ROOT / "formal" / "grant_arbiter_cover")
    assert res.passed
