"""Test-only top: two host streams crossed through short FabricLinks.

``s_host0`` -> link (3 clocks) -> ``m_host1`` and ``s_host1`` -> link -> ``m_host0``;
``host<n>_pause`` is bit n of a harness register ``ctl.pause``, so a test can hold a
host's frames back at a given cycle. It has the host-stream ports of
:class:`~opengse.sim.fabric.top.FabricTop` (``hosts="stream"``) and an address map with
``host_streams``, so the fabric's C++ main drives it from frame files exactly as it
drives the fabric: tests/fabric/test_sim_pcap.py checks the C++ main's host streams
and the pcap conversion on it, without building a fabric.
"""

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from opengse.rtl.lib.stream import AXIStreamSignature
from opengse.rtl.tb.link import FabricLink
from opengse.sim.fabric.harness import Harness

HOSTS = 2
DELAY = 3


class PauseControl(wiring.Component):
    """Nothing but an input the harness drives: the hosts' pause bits."""

    pause: In(HOSTS)

    def elaborate(self, platform):
        return Module()


class StreamTop(wiring.Component):
    def __init__(self):
        self.ctl = PauseControl()
        self.links = [FabricLink(64, delay=DELAY) for _ in range(HOSTS)]
        units = [("ctl", self.ctl, set())]
        units += [
            (f"link{n}", lk, {"s_axis", "m_axis", "pause_in", "pause_out"}) for n, lk in enumerate(self.links)
        ]
        self.harness = Harness(units)
        members = self.harness.members()
        for n in range(HOSTS):
            members[f"s_host{n}"] = In(AXIStreamSignature(64))
            members[f"m_host{n}"] = Out(AXIStreamSignature(64))
            members[f"host{n}_pause"] = Out(1)
        super().__init__(members)

    def address_map(self):
        return {**self.harness.address_map(), "host_streams": HOSTS}

    def elaborate(self, platform):
        m = Module()
        m.submodules.ctl = self.ctl
        for n, lk in enumerate(self.links):
            m.submodules[f"link{n}"] = lk
            wiring.connect(m, wiring.flipped(getattr(self, f"s_host{n}")), lk.s_axis)
            wiring.connect(m, lk.m_axis, wiring.flipped(getattr(self, f"m_host{(n + 1) % HOSTS}")))
            m.d.comb += [lk.pause_in.eq(0), getattr(self, f"host{n}_pause").eq(self.ctl.pause[n])]
        self.harness.elaborate(m, self)
        return m


def make_top():
    return StreamTop(), {}
