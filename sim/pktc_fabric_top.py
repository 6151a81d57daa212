"""Test-only top: the PKTC path of one source leaf and one destination leaf.

Sprayer (with its link monitor) and reorder buffer in one Verilog module, so that
one cocotb bench can put an emulated fabric between them (tests/cocotb_pktc_fabric.py):

* ``s_axis``/``s_meta``/``s_ctrl``: the sprayer's inputs (see
  :class:`~opengse.rtl.pktc.sprayer.ContainerSprayer`).
* ``m_up_<i>``: the sprayer's uplinks, to the emulated links.
* ``s_fab``: the reorder buffer's input (frames that crossed the fabric, merged).
* ``m_axis``: the reorder buffer's output.
* ``link_up`` (in): link status to the link monitor. ``link_fail`` (in): the
  emulated links that lose everything, PROBEs included: each PROBE the monitor
  sends on link i comes back (as the far end's keep-alive) ``probe_delay`` clocks
  later unless ``link_fail[i]``. ``healthy`` (out): the monitor's healthy set,
  which also drives the sprayer.
* ``sp_stat_*``, ``lm_stat_*``, ``ro_stat_*``: the three blocks' counters.

Not a product block: registered in the catalog only so that the test runner can
export and build it.
"""
from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from opengse.rtl.catalog import BlockSpec
from opengse.rtl.pktc.sprayer import ContainerSprayer, SprayMetaLayout
from opengse.rtl.pktc.link_monitor import LinkMonitor
from opengse.rtl.pktc.reorder import ReorderBuffer
from opengse.rtl.lib.stat_ports import forward_stats, stat_members
from opengse.rtl.lib.stream import AXIStreamSignature

__all__ = ["PktcTestbenchTop", "SPEC"]


class PktcTestbenchTop(wiring.Component):
    def __init__(self, data_width=64, uplinks=4, policy=0, sources=4, window=8, slot_bytes=2048,
                 timeout=2048, interval=256, miss_limit=2, rejoin=2, probe_delay=40):
        self.sp = ContainerSprayer(data_width=data_width, uplinks=uplinks, nodes=16, policy=policy)
        self.lm = LinkMonitor(data_width=data_width, links=uplinks, interval=interval,
                              miss_limit=miss_limit, rejoin=rejoin)
        self.ro = ReorderBuffer(data_width=data_width, sources=sources, window=window,
                                slot_bytes=slot_bytes, timeout=timeout)
        self.uplinks, self.probe_delay = uplinks, probe_delay
        members = {
            "s_axis": In(AXIStreamSignature(data_width)),
            "s_meta": In(stream.Signature(SprayMetaLayout)),
            "s_ctrl": In(AXIStreamSignature(data_width)),
            "m_up": Out(AXIStreamSignature(data_width)).array(uplinks),
            "s_fab": In(AXIStreamSignature(data_width)),
            "m_axis": Out(AXIStreamSignature(data_width)),
            "link_up": In(uplinks),
            "link_fail": In(uplinks),
            "healthy": Out(uplinks),
        }
        for prefix, block in (("sp", self.sp), ("lm", self.lm), ("ro", self.ro)):
            members.update(stat_members(prefix, block))
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        m.submodules.sp = sp = self.sp
        m.submodules.lm = lm = self.lm
        m.submodules.ro = ro = self.ro
        U = self.uplinks
        wiring.connect(m, wiring.flipped(self.s_axis), sp.s_axis)
        wiring.connect(m, wiring.flipped(self.s_meta), sp.s_meta)
        wiring.connect(m, wiring.flipped(self.s_ctrl), sp.s_ctrl)
        for i in range(U):
            wiring.connect(m, sp.m_axis[i], wiring.flipped(self.m_up[i]))
        wiring.connect(m, wiring.flipped(self.s_fab), ro.s_axis)
        wiring.connect(m, ro.m_axis, wiring.flipped(self.m_axis))
        m.d.comb += [lm.link_up.eq(self.link_up), lm.src_node.eq(0),
                     sp.healthy.eq(lm.healthy), self.healthy.eq(lm.healthy)]
        # PROBE loopback through the emulated links: a fixed delay line per link
        for i in range(U):
            p = lm.m_probe[i]
            m.d.comb += p.ready.eq(1)
            sent = p.valid & p.payload.last
            line = Signal(self.probe_delay, name=f"probe_line{i}")
            m.d.sync += line.eq((line << 1) | (sent & ~self.link_fail[i]))
            m.d.comb += lm.probe_rx[i].eq(line[-1] & ~self.link_fail[i])
        for prefix, block in (("sp", sp), ("lm", lm), ("ro", ro)):
            forward_stats(m, self, prefix, block)
        return m


SPEC = BlockSpec(
        name="pktc_fabric_tb", module="gse_pktc_fabric_tb", factory=PktcTestbenchTop,
        params={"data_width": 64, "uplinks": 4, "policy": 0, "sources": 4, "window": 8,
                "slot_bytes": 2048, "timeout": 2048, "interval": 256, "miss_limit": 2,
                "rejoin": 2, "probe_delay": 40},
        description="test-only: sprayer + link monitor + reorder buffer with a PROBE loopback, "
                    "for the emulated-fabric test",
        keep_modules=lambda **p: {"ro.ram": "gse_reorder_ram"},
)
