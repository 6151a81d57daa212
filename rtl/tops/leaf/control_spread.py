"""ControlSpread: a host pipeline's REQUEST/GRANT frames onto the healthy uplinks."""

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ...lib.packet_demux import PacketDemux
from ...lib.round_robin import next_in_turn
from ...lib.stream import AXIStreamSignature

__all__ = ["ControlSpread"]


class ControlSpread(wiring.Component):
    """Whole control frames from ``s_axis`` to one of ``m_axis[0..U-1]``, taking the
    healthy uplinks in turn, frame by frame (GSE mode with per-host uplink queues: the
    control frames go round the queues, so that a GRANT or REQUEST never waits behind a
    container queued for an uplink, see :class:`~.uplink_tx.UplinkTx`).

    Parameters: ``data_width``, ``uplinks`` U (2..16).

    Interface: ``s_axis`` (in, AXI-Stream), ``m_axis[u]`` (out), ``healthy`` (in, U
    bits: the link monitor's set; with none healthy the frames wait).

    Timing: a :class:`~opengse.rtl.lib.packet_demux.PacketDemux` (latency 1 clock, one
    beat per clock); its select is the uplink register, taken with a frame's first beat
    (so a frame never changes uplink) and moved on to the next healthy one then, or
    while it names an unhealthy one.
    """

    def __init__(self, data_width=64, uplinks=2):
        self.uplinks = uplinks
        self.demux = PacketDemux(uplinks, data_width)
        sig = AXIStreamSignature(data_width)
        super().__init__({"s_axis": In(sig), "m_axis": Out(sig).array(uplinks), "healthy": In(uplinks)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.demux = demux = self.demux
        wiring.connect(m, wiring.flipped(self.s_axis), demux.s_axis)
        for u in range(self.uplinks):
            wiring.connect(m, demux.m_axis[u], wiring.flipped(self.m_axis[u]))
        sel = Signal(range(self.uplinks))
        nxt, nxt_ok = next_in_turn(m, self.healthy, sel)
        ok = self.healthy.bit_select(sel, 1)
        m.d.comb += [demux.s_sel.valid.eq(ok), demux.s_sel.payload.index.eq(sel)]
        with m.If((demux.s_sel.ready | ~ok) & nxt_ok):
            m.d.sync += sel.eq(nxt)
        return m
