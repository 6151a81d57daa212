"""Test-only top: one spine as a black box behind the fabric harness.

Its fabric ports are idle (inputs held invalid, outputs always ready); everything else
- the route-table write stream, the read-back address, the counters - is reached
through the harness's ``cfg_*`` port and ``o_*`` outputs, which is what
tests/fabric/test_harness.py checks through the fabric's C++ main.
"""

from amaranth.hdl import Module
from amaranth.lib import wiring

from opengse.rtl.tops.spine import GSESpine
from opengse.sim.fabric.blackbox import BlackBox
from opengse.sim.fabric.harness import Harness

PORTS = 2


class HarnessTop(wiring.Component):
    def __init__(self):
        self.spine_rtl = GSESpine(ports=PORTS, data_width=64, nodes=4, buffer_bytes=1024, config_ports=True)
        self.spine = BlackBox(self.spine_rtl, "gse_spine")
        self.harness = Harness([("sp", self.spine, {"s_axis", "m_axis"})])
        super().__init__(self.harness.members())

    def address_map(self):
        return self.harness.address_map()

    def elaborate(self, platform):
        m = Module()
        m.submodules.sp = sp = self.spine
        for i in range(PORTS):
            m.d.comb += [sp.s_axis[i].valid.eq(0), sp.m_axis[i].ready.eq(1)]
        self.harness.elaborate(m, self)
        return m


def make_top():
    top = HarnessTop()
    return top, {"gse_spine": top.spine_rtl}
