"""CommandArbiter: several management front ends share one bus master."""

from amaranth import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .commands import command_layout, response_layout

__all__ = ["CommandArbiter"]


class CommandArbiter(wiring.Component):
    """Passes one command at a time from ``s_cmd[i]`` to ``m_cmd`` and returns its
    response from ``s_rsp`` to ``m_rsp[i]``.

    Interface: ``s_cmd[i]`` (in) / ``m_rsp[i]`` (out) per front end ``i < n``;
    ``m_cmd`` (out) / ``s_rsp`` (in) to an :class:`~.axil_master.AXI4LiteMaster`.

    Policy: when no command is outstanding, the lowest ``i`` with a valid command is
    connected (combinationally: its command passes in the same clock); the grant holds
    until that command's response has been taken. A front end waits for its response
    before its next command, so none can starve the others for more than one access.
    """

    def __init__(self, n=2):
        if n < 1:
            raise ValueError(f"n must be >= 1, not {n!r}")
        self.n = n
        cmd, rsp = stream.Signature(command_layout()), stream.Signature(response_layout())
        super().__init__(
            {"s_cmd": In(cmd).array(n), "m_rsp": Out(rsp).array(n), "m_cmd": Out(cmd), "s_rsp": In(rsp)}
        )

    def elaborate(self, platform):
        m = Module()
        busy = Signal()
        owner = Signal(range(self.n))
        pick = Signal(range(self.n))
        for i in reversed(range(self.n)):
            with m.If(self.s_cmd[i].valid):
                m.d.comb += pick.eq(i)
        sel = Signal(range(self.n))
        m.d.comb += sel.eq(pick)
        with m.If(busy):
            m.d.comb += sel.eq(owner)
        for i in range(self.n):
            with m.If(~busy & (sel == i)):
                m.d.comb += [
                    self.m_cmd.valid.eq(self.s_cmd[i].valid),
                    self.m_cmd.payload.eq(self.s_cmd[i].payload),
                    self.s_cmd[i].ready.eq(self.m_cmd.ready),
                ]
            with m.If(busy & (owner == i)):
                m.d.comb += [
                    self.m_rsp[i].valid.eq(self.s_rsp.valid),
                    self.m_rsp[i].payload.eq(self.s_rsp.payload),
                    self.s_rsp.ready.eq(self.m_rsp[i].ready),
                ]
        with m.If(self.m_cmd.valid & self.m_cmd.ready):
            m.d.sync += [busy.eq(1), owner.eq(sel)]
        with m.If(self.s_rsp.valid & self.s_rsp.ready):
            m.d.sync += busy.eq(0)
        return m
