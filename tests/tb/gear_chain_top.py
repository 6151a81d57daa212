"""Test-only composition: TrafficGenerator -> impairer -> FabricLink -> TrafficChecker.

The impairer sits between the generator and the link and spoils the traffic on command:
``hold`` (sampled at a frame's first beat) keeps that frame back in a FIFO and sends it
after the frame that follows (reordering, within a flow when both are of one flow);
``flip`` inverts bit 0 of the beat going into the link in that clock (corruption).
``tap_axis`` is a copy of what the checker receives, for the bench to watch.
"""

from amaranth import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from opengse.rtl.catalog import BlockSpec
from opengse.rtl.lib.stat_ports import forward_stats, stat_members
from opengse.rtl.lib.stream import AXIStreamSignature
from opengse.rtl.tb.link import FabricLink
from opengse.rtl.tb.traffic_check import TrafficChecker
from opengse.rtl.tb.traffic_gen import TrafficGenerator, dst_write_layout

GEN_CONFIG = [
    "enable",
    "host",
    "frame_min",
    "frame_max",
    "rate",
    "flows",
    "random",
    "tenant",
    "tc",
    "seed",
    "pause",
]


class GearChain(wiring.Component):
    def __init__(self, data_width, delay):
        self.data_width, self.delay = data_width, delay
        self.gen = TrafficGenerator(data_width)
        self.link = FabricLink(data_width, delay=delay)
        self.chk = TrafficChecker(data_width)
        members = {n: In(self.gen.signature.members[n].shape) for n in GEN_CONFIG}
        members.update(
            {
                "s_dst": In(stream.Signature(dst_write_layout(self.gen.max_flows))),
                "chk_host": In(8),
                "hist_addr": In(self.chk.signature.members["hist_addr"].shape),
                "hist_data": Out(32),
                "fail": In(1),
                "hold": In(1),
                "flip": In(1),
                "tap_axis": Out(AXIStreamSignature(data_width)),
            }
        )
        for prefix, block in (("gen", self.gen), ("link", self.link), ("chk", self.chk)):
            members.update(stat_members(prefix, block))
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        gen, link, chk = self.gen, self.link, self.chk
        m.submodules.gen, m.submodules.link, m.submodules.chk = gen, link, chk
        for n in GEN_CONFIG:
            m.d.comb += getattr(gen, n).eq(getattr(self, n))
        wiring.connect(m, wiring.flipped(self.s_dst), gen.s_dst)
        m.d.comb += [
            chk.host.eq(self.chk_host),
            chk.hist_addr.eq(self.hist_addr),
            self.hist_data.eq(chk.hist_data),
        ]
        m.d.comb += [link.fail.eq(self.fail), link.pause_in.eq(0)]

        # the impairer
        beat_w = len(gen.m_axis.payload.as_value())
        m.submodules.fifo = fifo = SyncFIFOBuffered(width=beat_w, depth=2048)
        g = gen.m_axis
        o = wiring.Signature({"valid": Out(1), "payload": Out(g.payload.shape())}).create()
        in_frame = Signal()
        with m.If(g.valid & g.ready):
            m.d.sync += in_frame.eq(~g.payload.last)
        m.d.comb += fifo.w_data.eq(g.payload.as_value())
        with m.FSM():
            with m.State("PASS"):
                with m.If(g.valid & ~in_frame & self.hold):
                    m.d.comb += [fifo.w_en.eq(1), g.ready.eq(fifo.w_rdy)]
                    with m.If(~g.payload.last & fifo.w_rdy):
                        m.next = "STORE"
                    with m.Elif(fifo.w_rdy):
                        m.next = "PASS_ONE"
                with m.Else():
                    m.d.comb += [g.ready.eq(1), o.valid.eq(g.valid), o.payload.eq(g.payload)]
            with m.State("STORE"):
                m.d.comb += [fifo.w_en.eq(g.valid), g.ready.eq(fifo.w_rdy)]
                with m.If(g.valid & fifo.w_rdy & g.payload.last):
                    m.next = "PASS_ONE"
            with m.State("PASS_ONE"):
                m.d.comb += [g.ready.eq(1), o.valid.eq(g.valid), o.payload.eq(g.payload)]
                with m.If(g.valid & g.payload.last):
                    m.next = "RELEASE"
            with m.State("RELEASE"):
                m.d.comb += [fifo.r_en.eq(1), o.valid.eq(fifo.r_rdy), o.payload.eq(fifo.r_data)]
                with m.If(fifo.r_rdy & o.payload.last):
                    m.next = "PASS"
        m.d.comb += [
            link.s_axis.valid.eq(o.valid),
            link.s_axis.payload.eq(o.payload),
            link.s_axis.payload.data[0].eq(o.payload.data[0] ^ self.flip),
        ]

        wiring.connect(m, link.m_axis, chk.s_axis)
        m.d.comb += [self.tap_axis.valid.eq(link.m_axis.valid), self.tap_axis.payload.eq(link.m_axis.payload)]
        for prefix, block in (("gen", gen), ("link", link), ("chk", chk)):
            forward_stats(m, self, prefix, block)
        return m


SPEC = BlockSpec(
    name="gear_chain",
    module="gse_gear_chain",
    factory=GearChain,
    params={"data_width": 64, "delay": 30},
    description="test-only: traffic generator -> impairer (hold, flip) -> fabric link -> traffic checker",
)
