"""AXI4LiteMaster: one bus access at a time, from a command stream to an AXI4-Lite port."""

from amaranth import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .commands import command_layout, response_layout
from .protocol import STATUS_DECERR

__all__ = ["AXI4LiteMaster"]


class AXI4LiteMaster(wiring.Component):
    """Runs each command of ``s_cmd`` as one AXI4-Lite read or write on ``m_axil_*``.

    Parameters: ``addr_width``, the bits of ``m_axil_awaddr``/``m_axil_araddr``.

    Interface:

    * ``s_cmd`` (in, :func:`~.commands.command_layout`): ready only when no access is
      in flight; one access at a time.
    * ``m_rsp`` (out, :func:`~.commands.response_layout`): one per command, in order;
      it holds until taken, and the next command is accepted only after.
    * ``m_axil_awaddr, awvalid, awready, wdata, wstrb, wvalid, wready, bresp, bvalid,
      bready, araddr, arvalid, arready, rdata, rresp, rvalid, rready``: 32-bit data,
      ``wstrb`` all ones, no ``prot``.

    A command whose 32-bit address has a bit set at or above ``addr_width`` does not
    reach the bus (it would alias a mapped word): it is answered DECERR in the next
    clock but one (a read's data 0).

    Timing: the command is registered at its handshake (only its high address bits
    reduced to a flag) and decoded in the next clock; AW and W (or AR) are raised together in the
    clock after that and each drops at its own handshake; the response is registered
    from the B (or R) handshake, and a write's response carries the data written.
    """

    def __init__(self, addr_width=16):
        if not 3 <= addr_width <= 32:
            raise ValueError(f"addr_width must be 3..32, not {addr_width!r}")
        self.addr_width = aw = addr_width
        super().__init__(
            {
                "s_cmd": In(stream.Signature(command_layout())),
                "m_rsp": Out(stream.Signature(response_layout())),
                "m_axil_awaddr": Out(aw),
                "m_axil_awvalid": Out(1),
                "m_axil_awready": In(1),
                "m_axil_wdata": Out(32),
                "m_axil_wstrb": Out(4),
                "m_axil_wvalid": Out(1),
                "m_axil_wready": In(1),
                "m_axil_bresp": In(2),
                "m_axil_bvalid": In(1),
                "m_axil_bready": Out(1),
                "m_axil_araddr": Out(aw),
                "m_axil_arvalid": Out(1),
                "m_axil_arready": In(1),
                "m_axil_rdata": In(32),
                "m_axil_rresp": In(2),
                "m_axil_rvalid": In(1),
                "m_axil_rready": Out(1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        cmd, rsp, aw = self.s_cmd, self.m_rsp, self.addr_width
        write = Signal()
        addr = Signal(aw)
        wdata = Signal(32)
        m.d.comb += [self.m_axil_awaddr.eq(addr), self.m_axil_araddr.eq(addr), self.m_axil_wdata.eq(wdata)]
        m.d.comb += self.m_axil_wstrb.eq(0b1111)
        with m.If(rsp.valid & rsp.ready):
            m.d.sync += rsp.valid.eq(0)

        high = Signal()  # the address has a bit at or above addr_width
        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += cmd.ready.eq(~rsp.valid)
                # registered (the high address bits as a flag), decoded in the next clock
                with m.If(cmd.valid & cmd.ready):
                    m.d.sync += [write.eq(cmd.payload.write), addr.eq(cmd.payload.addr[:aw])]
                    m.d.sync += [
                        wdata.eq(cmd.payload.data),
                        high.eq(cmd.payload.addr[aw:] != 0 if aw < 32 else 0),
                    ]
                    m.next = "DECODE"
            with m.State("DECODE"):
                with m.If(high):
                    m.d.sync += [rsp.valid.eq(1), rsp.payload.resp.eq(STATUS_DECERR)]
                    m.d.sync += rsp.payload.data.eq(Mux(write, wdata, 0))
                    m.next = "IDLE"
                with m.Elif(write):
                    m.d.sync += [self.m_axil_awvalid.eq(1), self.m_axil_wvalid.eq(1)]
                    m.next = "WRITE"
                with m.Else():
                    m.d.sync += self.m_axil_arvalid.eq(1)
                    m.next = "READ"
            with m.State("WRITE"):
                with m.If(self.m_axil_awready):
                    m.d.sync += self.m_axil_awvalid.eq(0)
                with m.If(self.m_axil_wready):
                    m.d.sync += self.m_axil_wvalid.eq(0)
                m.d.comb += self.m_axil_bready.eq(1)
                with m.If(self.m_axil_bvalid):
                    m.d.sync += [
                        rsp.valid.eq(1),
                        rsp.payload.resp.eq(self.m_axil_bresp),
                        rsp.payload.data.eq(wdata),
                    ]
                    m.next = "IDLE"
            with m.State("READ"):
                with m.If(self.m_axil_arready):
                    m.d.sync += self.m_axil_arvalid.eq(0)
                m.d.comb += self.m_axil_rready.eq(~self.m_axil_arvalid)
                with m.If(self.m_axil_rvalid & ~self.m_axil_arvalid):
                    m.d.sync += [
                        rsp.valid.eq(1),
                        rsp.payload.resp.eq(self.m_axil_rresp),
                        rsp.payload.data.eq(self.m_axil_rdata),
                    ]
                    m.next = "IDLE"
        return m
