"""Test-only composition: a ManagementPort driving a register bank that carries the
leaf's own register block (``leaf``: the destination table and link state, the same
description rtl/tops/leaf/registers.py gives a 2 x 2 leaf of 16 nodes) and the
management port's counters (block ``mgmt``).

The ``leaf.dest_*`` registers write a real :class:`~opengse.rtl.tops.leaf.dest_lookup.DestLookup`
(as the leaf does), whose lookup port is the top's ``lookup_key`` -> ``lookup_hit``,
``lookup_node``, ``lookup_port``, so a bench sees a table entry that management
writes take effect. ``link_up`` (in) drives ``leaf.link_up`` and ``leaf.healthy``.
The full leaf is not used: its Verilator build takes minutes and the management path
only needs its register block (docs/management.md, Tests).
"""

from types import SimpleNamespace

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from opengse.rtl.catalog import BlockSpec
from opengse.rtl.lib.stream import AXIStreamSignature
from opengse.rtl.mgmt.management_port import MGMT_COUNTERS, ManagementPort, mgmt_register_block
from opengse.rtl.regs.bank import AXI4LiteRegisterBank
from opengse.rtl.regs.description import RegisterMap
from opengse.rtl.regs.from_signature import connect_registers
from opengse.rtl.regs.system import SystemCounters, system_block
from opengse.rtl.tops.leaf.dest_lookup import DestLookup
from opengse.rtl.tops.leaf.registers import connect_dest_table, leaf_block

NODES, HOST_PORTS, UPLINKS = 16, 2, 2
ADDR_WIDTH = 12
PORT_BITS = 2
TEST_KEY = 0x0123_4567_89AB_CDEF
TEST_MAC = 0x02_00_00_00_00_01  # 02:00:00:00:00:01
ALLOWED_PORT = 1
DIVISOR = 8  # clocks per UART bit: short, so a bench sends many bytes
UART_IDLE_LIMIT = 2000
MAX_RECORDS = 8


def _leaf_shape():
    return SimpleNamespace(
        config=SimpleNamespace(host_ports=HOST_PORTS, uplinks=UPLINKS, nodes=NODES), lb="gse"
    )


def top_map():
    return RegisterMap(
        [system_block(), leaf_block(_leaf_shape()), mgmt_register_block()], name="mgmt_top", doc="test top"
    )


class MgmtTop(wiring.Component):
    def __init__(self, data_width=64):
        self.regmap = top_map()
        self._port = ManagementPort(
            data_width,
            key=TEST_KEY,
            allowed_port=ALLOWED_PORT,
            port_bits=PORT_BITS,
            max_records=MAX_RECORDS,
            divisor=DIVISOR,
            addr_width=ADDR_WIDTH,
            uart_idle_limit=UART_IDLE_LIMIT,
            mac=TEST_MAC,
        )
        super().__init__(
            {
                "s_axis": In(AXIStreamSignature(data_width, 1 + PORT_BITS)),
                "m_axis": Out(AXIStreamSignature(data_width)),
                "uart_rx": In(1, init=1),
                "uart_tx": Out(1, init=1),
                "link_up": In(UPLINKS),
                "lookup_key": In(48),
                "lookup_hit": Out(1),
                "lookup_node": Out(16),
                "lookup_port": Out(8),
            }
        )

    def elaborate(self, platform):
        m = Module()
        m.submodules.port = port = self._port
        m.submodules.bank = bank = AXI4LiteRegisterBank(self.regmap, addr_width=ADDR_WIDTH)
        m.submodules.sys = sysc = SystemCounters(self.regmap.fingerprint())
        m.submodules.table = table = DestLookup(NODES, 1)
        wiring.connect(m, wiring.flipped(self.s_axis), port.s_axis)
        wiring.connect(m, port.m_axis, wiring.flipped(self.m_axis))
        m.d.comb += [port.uart_rx.eq(self.uart_rx), self.uart_tx.eq(port.uart_tx)]
        for name, member in bank.signature.members.items():
            if name.startswith("s_axil_"):
                master = getattr(port, "m_axil_" + name[len("s_axil_") :])
                slave = getattr(bank, name)
                m.d.comb += slave.eq(master) if member.flow == In else master.eq(slave)
        connect_registers(m, bank, self.regmap["sys"], sysc, skip=("scratch",))
        for name in MGMT_COUNTERS:
            m.d.comb += getattr(bank, f"mgmt_{name}").eq(getattr(port, f"stat_{name}"))
        connect_dest_table(m, bank, table)
        m.d.comb += [
            bank.leaf_link_up.eq(self.link_up),
            bank.leaf_healthy.eq(self.link_up),
            table.key[0].eq(self.lookup_key),
            self.lookup_hit.eq(table.result[0].hit),
            self.lookup_node.eq(table.result[0].dst_node),
            self.lookup_port.eq(table.result[0].port),
        ]
        return m


TOP = BlockSpec(
    name="mgmt_top",
    module="gse_mgmt_top",
    factory=lambda data_width: MgmtTop(data_width),
    params={"data_width": 64},
    description="test-only: management port + a register bank with the leaf's register block",
)
