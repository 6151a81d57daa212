"""Test-only top: generators wired to checkers through links, no switch in between.

Host n's generator sends over one :class:`~opengse.rtl.tb.link.FabricLink` (named
``host_dn<d>``, as the fabric's egress links are) straight to the checker of host
``d = (n + 1) % N``: a permutation that needs no switch. It proves the fabric's run
path - configuration through the harness, sampling, the histogram read-out, the
measurement - on a network whose figures are known in closed form: every link carries
one untagged frame after the other, so the throughput is
``frame / (ceil(frame / 8) x 8)`` and every latency is the link delay plus one clock.
"""

from amaranth.hdl import Module
from amaranth.lib import wiring

from opengse.rtl.tb.link import FabricLink
from opengse.sim.fabric.harness import Harness
from opengse.sim.fabric.top import _chk, _gen


class DirectTop(wiring.Component):
    def __init__(self, shape):
        self.shape = shape
        N = shape.n_hosts
        self.gens = [_gen(shape, "gse") for _ in range(N)]
        self.chks = [_chk(shape, "gse") for _ in range(N)]
        self.links = [FabricLink(shape.data_width, delay=shape.delay) for _ in range(N)]
        units = []
        for n in range(N):
            units += [
                (f"gen{n}", self.gens[n], {"m_axis", "pause"}),
                (f"chk{n}", self.chks[n], {"s_axis"}),
                (f"host_dn{n}", self.links[n], {"s_axis", "m_axis", "pause_in", "pause_out"}),
            ]
        self.harness = Harness(units)
        self.black_boxes = {}
        super().__init__(self.harness.members())

    def address_map(self):
        return self.harness.address_map()

    def elaborate(self, platform):
        m = Module()
        N = self.shape.n_hosts
        for n in range(N):
            d = (n + 1) % N
            gen, link, chk = self.gens[n], self.links[d], self.chks[d]
            m.submodules[f"gen{n}"] = gen
            m.submodules[f"link{d}"] = link
            m.submodules[f"chk{d}"] = chk
            wiring.connect(m, gen.m_axis, link.s_axis)
            wiring.connect(m, link.m_axis, chk.s_axis)
            m.d.comb += [link.pause_in.eq(0), gen.pause.eq(link.pause_out)]
        self.harness.elaborate(m, self)
        return m
