"""ControlSpread: a host pipeline's REQUEST/GRANT frames onto the healthy uplinks."""

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

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

    Timing: no register on the path (``tready`` of the chosen output to ``s_axis``);
    the choice is a register, moved on after each frame's last beat (and while idle
    on an unhealthy uplink), so a frame never changes uplink.
    """

    def __init__(self, data_width=64, uplinks=2):
        self.uplinks = uplinks
        sig = AXIStreamSignature(data_width)
        super().__init__({"s_axis": In(sig), "m_axis": Out(sig).array(uplinks), "healthy": In(uplinks)})

    def elaborate(self, platform):
        m = Module()
        U = self.uplinks
        sel = Signal(range(U))
        nxt = Signal(range(U))
        nxt_ok = Signal()
        busy = Signal()  # inside a frame: the choice holds
        with m.Switch(sel):
            for r in range(U):
                with m.Case(r):
                    for k in reversed(range(U)):
                        idx = (r + 1 + k) % U
                        with m.If(self.healthy[idx]):
                            m.d.comb += [nxt.eq(idx), nxt_ok.eq(1)]
        ok = Signal()
        m.d.comb += ok.eq(self.healthy.bit_select(sel, 1))
        s = self.s_axis
        for u in range(U):
            m.d.comb += [self.m_axis[u].payload.eq(s.payload), self.m_axis[u].valid.eq(s.valid & (sel == u) & (ok | busy))]
        with m.Switch(sel):
            for u in range(U):
                with m.Case(u):
                    m.d.comb += s.ready.eq(self.m_axis[u].ready & (ok | busy))
        with m.If(s.valid & s.ready):
            m.d.sync += busy.eq(~s.payload.last)
            with m.If(s.payload.last & nxt_ok):
                m.d.sync += sel.eq(nxt)
        with m.Elif(~busy & ~ok & nxt_ok):
            m.d.sync += sel.eq(nxt)
        return m
