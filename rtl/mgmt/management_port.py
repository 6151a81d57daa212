"""ManagementPort: management frames and a UART bridge, one AXI4-Lite master."""

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..lib.stream import AXIStreamSignature
from ..regs.description import Access, Register, RegisterBlock
from . import protocol as P
from .axil_master import AXI4LiteMaster
from .command_arbiter import CommandArbiter
from .frame_responder import FrameResponder
from .uart_bridge import UARTBridge
from .uart_rx import UARTReceiver
from .uart_tx import UARTTransmitter

__all__ = ["ManagementPort", "MGMT_COUNTERS", "mgmt_register_block"]

#: The port's counters: ``stat_<name>`` -> what it counts.
MGMT_COUNTERS = {
    "mgmt_requests": "management frames executed",
    "mgmt_bad_port": "management frames dropped: from a port other than the allowed one",
    "mgmt_malformed": "management frames dropped: malformed (EtherType, magic, version, "
    "record count, unknown op, truncated, marked bad)",
    "mgmt_bad_key": "management frames dropped: wrong key",
    "mgmt_bus_errors": "management frame records answered SLVERR or DECERR",
    "uart_requests": "UART requests executed",
    "uart_bad_checksum": "UART requests dropped: bad checksum",
    "uart_malformed": "UART requests dropped: unknown op, or cut short",
    "uart_framing": "UART bytes dropped: stop bit low",
    "uart_overrun": "UART bytes dropped: the previous byte was not taken in time",
}


def mgmt_register_block(name="mgmt"):
    """The port's counters as a register block: RO ``<name>.<counter>`` of 32 bits for
    every entry of :data:`MGMT_COUNTERS` (a top drives register ``c`` from ``stat_c``)."""
    return RegisterBlock(
        name,
        [Register(n, 32, Access.RO, doc=d) for n, d in MGMT_COUNTERS.items()],
        doc="management port counters",
    )


class ManagementPort(wiring.Component):
    """Register access from a host port's management frames and from a UART, through one
    AXI4-Lite master (docs/management.md).

    Parameters: ``data_width``, ``key``, ``allowed_port``, ``port_bits``,
    ``max_records``, ``mac`` (of :class:`~.frame_responder.FrameResponder`); ``divisor``
    (clocks per UART bit); ``addr_width`` (of the AXI4-Lite port); ``uart_idle_limit``
    (of :class:`~.uart_bridge.UARTBridge`).

    Interface:

    * ``s_axis`` / ``m_axis``: management frames in (``tuser[0]`` bad frame,
      ``tuser[1:]`` ingress port) and responses out (see ``FrameResponder``).
    * ``uart_rx`` (in, idle high), ``uart_tx`` (out): the 8N1 UART.
    * ``m_axil_*``: the AXI4-Lite master port (see :class:`~.axil_master.AXI4LiteMaster`).
    * ``stat_<name>`` (out, 32 each): :data:`MGMT_COUNTERS`.

    When both sides have an access ready, frames go first; each side waits for its
    response before the next, so the UART waits at most one frame access.
    """

    def __init__(
        self,
        data_width=64,
        key=P.DEFAULT_KEY,
        allowed_port=0,
        port_bits=1,
        max_records=16,
        divisor=1085,
        addr_width=16,
        uart_idle_limit=1 << 20,
        mac=P.DEFAULT_MAC,
    ):
        self._responder = FrameResponder(data_width, key, allowed_port, port_bits, max_records, mac)
        self._master = AXI4LiteMaster(addr_width)
        self._rx, self._tx = UARTReceiver(divisor), UARTTransmitter(divisor)
        self._bridge = UARTBridge(uart_idle_limit)
        axil = {n: mb for n, mb in self._master.signature.members.items() if n.startswith("m_axil_")}
        super().__init__(
            {
                "s_axis": In(AXIStreamSignature(data_width, 1 + port_bits)),
                "m_axis": Out(AXIStreamSignature(data_width)),
                "uart_rx": In(1, init=1),
                "uart_tx": Out(1, init=1),
                **axil,
                **{f"stat_{n}": Out(32) for n in MGMT_COUNTERS},
            }
        )

    def elaborate(self, platform):
        m = Module()
        m.submodules.responder = resp = self._responder
        m.submodules.master = master = self._master
        m.submodules.uart_rx = rx = self._rx
        m.submodules.uart_tx = tx = self._tx
        m.submodules.bridge = bridge = self._bridge
        m.submodules.arbiter = arb = CommandArbiter(2)
        wiring.connect(m, wiring.flipped(self.s_axis), resp.s_axis)
        wiring.connect(m, resp.m_axis, wiring.flipped(self.m_axis))
        m.d.comb += [rx.rx.eq(self.uart_rx), self.uart_tx.eq(tx.tx)]
        wiring.connect(m, rx.m_data, bridge.s_rx)
        wiring.connect(m, bridge.m_tx, tx.s_data)
        wiring.connect(m, resp.m_cmd, arb.s_cmd[0])
        wiring.connect(m, arb.m_rsp[0], resp.s_rsp)
        wiring.connect(m, bridge.m_cmd, arb.s_cmd[1])
        wiring.connect(m, arb.m_rsp[1], bridge.s_rsp)
        wiring.connect(m, arb.m_cmd, master.s_cmd)
        wiring.connect(m, master.m_rsp, arb.s_rsp)
        for name, member in master.signature.members.items():
            if name.startswith("m_axil_"):
                ours, theirs = getattr(self, name), getattr(master, name)
                m.d.comb += ours.eq(theirs) if member.flow == Out else theirs.eq(ours)
        sources = {"mgmt": resp, "uart": bridge}
        for name in MGMT_COUNTERS:
            side, _, stat = name.partition("_")
            src = {"framing": rx, "overrun": rx}.get(stat, sources[side])
            m.d.comb += getattr(self, f"stat_{name}").eq(getattr(src, f"stat_{stat}"))
        return m
