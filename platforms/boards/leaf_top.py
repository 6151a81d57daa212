"""Leaf top: a scaled-down :class:`~opengse.rtl.tops.leaf.managed_leaf.ManagedLeaf` (a
:class:`~opengse.rtl.tops.leaf.GSELeaf` with its management port) on a board's RGMII ports.

Ports of the leaf and what they meet on the board:

* host port 0: RGMII port 0 (a host, e.g. a PC, cabled to it); host ports 1..H-1 (on
  a board with room for them): an internal :class:`~opengse.rtl.tb.traffic_gen.TrafficGenerator`
  and :class:`~opengse.rtl.tb.traffic_check.TrafficChecker` each (configured as in the
  self-test: 4 flows, 60..1514-byte frames, to host 0's node);
* uplink 0: RGMII port 1 where the board has one (Colorlight 5A-75B: two boards cabled
  port 1 to port 1 form a two-leaf fabric, and its leaf has that one uplink); otherwise
  looped back to the leaf's own fabric port; uplinks 1..U-1: looped back (a register
  stage each way; the leaf's PROBEs come back and the link monitor keeps them healthy).
* ``link_up`` (no MDIO link status is read): 1 for every uplink on a board whose
  uplinks are all looped back; where uplink 0 is RGMII port 1 (a cable to another
  board), 1 for uplink 0 only: a looped-back uplink would return this leaf's containers
  for the other leaf to itself, where they are dropped (not its nodes). The pause inputs
  are 0 (the MAC neither sends nor honours pause frames).
* management (docs/management.md): frames of EtherType 0x88B6 on host port 0 (the
  RGMII port a host is cabled to) and the board's UART (``Board.uart``, 115200 baud)
  reach the leaf's register bank, with the management port's
  default key; ``gsectl`` writes the destination table and ``node_base`` and reads
  every counter. On a board whose UART pins are the LED's (``Board.uart_replaces_led``:
  the Colorlight 5A-75B) the top has no status LED.

``sizes`` (a :class:`Sizes`) are the scaled-down parameters; docs/boards.md gives the
figures and why each was chosen. Clocks (:mod:`.clocking`): the RGMII transmit side at
125 MHz as in the self-test; the core (``sync``: the leaf, the MACs' core side, the
generators) at ``Sizes.core_hz`` (or the ``core_hz`` argument, ``gse build
--core-mhz``). The core need not run at the line's 125 MHz: its beats are 4 or 8 bytes
wide where RGMII carries one byte a clock, and the MACs' crossings are asynchronous
FIFOs with a store-and-forward transmit side. :class:`Sizes` requires the core to
carry at least twice a port's line rate (:data:`MIN_CORE_BYTES_PER_S`). The startup
times and the UART's 115200 baud are kept in seconds and baud at any core clock.
"""

import math
from dataclasses import dataclass, replace

from amaranth.hdl import Elaboratable, Module, Signal
from amaranth.lib import io
from amaranth.lib.wiring import connect

from opengse.rtl.config import GSEConfig
from opengse.rtl.tb.traffic_check import TrafficChecker
from opengse.rtl.tb.traffic_gen import TrafficGenerator
from opengse.rtl.tops.leaf.managed_leaf import ManagedLeaf

from .clocking import CORE_HZ, TX_HZ, BoardClocks
from .pll import solve_pll
from .rgmii_port import RGMIIPort, rx_clock_preferences
from .selftest import FLOWS, SelfTestTop, drive_led
from .startup import StartupSequencer

__all__ = ["LeafTop", "Sizes", "SIZES", "MIN_CORE_BYTES_PER_S"]

#: The core's floor, bytes a second per stream: twice a gigabit port's 125 MB/s, so a
#: port's frames with the GSE header and container framing added (about 1.3 times the
#: bytes at 60-byte frames) and the control frames beside them still fit in one stream.
MIN_CORE_BYTES_PER_S = 2 * 125e6
#: The management UART's rate.
UART_BAUD = 115200


@dataclass(frozen=True)
class Sizes:
    """The leaf's scaled parameters on one board."""

    host_ports: int = 1
    uplinks: int = 2
    data_width: int = 64
    nodes: int = 4
    queues: int = 8
    tenants: int = 2
    voq_buffer_bytes: int = 8192
    egress_buffer_bytes: int = 4096
    container_bytes: int = 2048
    reorder_window: int = 2
    host_store_bytes: int = 4096
    fab_store_bytes: int = 4096
    max_frame_bytes: int = 1536
    slot_bytes: int = 4096
    n_req: int = 8
    mac_fifo_bytes: int = 2048
    core_hz: float = CORE_HZ

    def __post_init__(self):
        if self.core_hz * self.data_width / 8 < MIN_CORE_BYTES_PER_S:
            floor = MIN_CORE_BYTES_PER_S * 8 / self.data_width / 1e6
            raise ValueError(
                f"a core clock of {self.core_hz / 1e6:g} MHz at {self.data_width} bits carries less "
                f"than twice a gigabit port's line rate: at least {floor:g} MHz"
            )

    def config(self):
        return GSEConfig(
            # containers in flight per requester: the whole reorder window
            max_inflight=self.reorder_window,
            data_width=self.data_width,
            host_ports=self.host_ports,
            uplinks=self.uplinks,
            nodes=self.nodes,
            queues=self.queues,
            tenants=self.tenants,
            voq_buffer_bytes=self.voq_buffer_bytes,
            egress_buffer_bytes=self.egress_buffer_bytes,
            container_bytes=self.container_bytes,
            reorder_window=self.reorder_window,
            uplink_queue_bytes=0,  # the board leaves keep their block RAM
        )


#: Board name -> the leaf built for it.
SIZES = {
    # The LFE5U-25F: a 32-bit datapath (2 Gb/s at the 62.5 MHz core, twice its 1 Gb/s
    # RGMII ports) halves every beat-wide register (slices, FIFOs, parsers' windows); a
    # two-board fabric has 2 host nodes, each host one context per destination (tc and
    # tenant are per port), so at most 2 requesters per egress port: 2 queues and 2
    # arbiter slots, no spare (with 4 each the leaf filled 93 % of the LUT4 and
    # nextpnr's placer stalled). The rest (counters and register bank, the arbiter's
    # lanes) does not scale with sizes (docs/boards.md).
    # One uplink: the board's one fabric port (GSEConfig's second uplink was a looped-back
    # dead end held down, about 1 600 LUT4).
    "colorlight-5a75b": Sizes(uplinks=1, data_width=32, nodes=2, queues=2, n_req=2, core_hz=62.5e6),
    # The core at 62.5 MHz on both boards: the composed leaf does not close at 125 MHz
    # on either part (docs/boards.md, "Core clock"), and 62.5 MHz at 32 or 64 bits
    # carries twice or four times the line rate.
    "ecpix5-85": Sizes(
        host_ports=2, voq_buffer_bytes=16384, egress_buffer_bytes=8192, reorder_window=4, core_hz=62.5e6
    ),
}


class LeafTop(Elaboratable):
    """The board's leaf (see the module docstring)."""

    #: nextpnr's router for ``gse build``, per board. ECPIX-5: router2, because router1
    #: did not converge on its leaf (overused wires for hours) where router2 took 90
    #: iterations. Colorlight (90 % of the 25F's LUTs): router1, because router2 came
    #: down to about 10 overused wires and then diverged (thousands by iteration 300)
    #: on two seeds, where router1 routed it.
    ROUTERS = {"colorlight-5a75b": "router1", "ecpix5-85": "router2"}

    @property
    def nextpnr_router(self):
        return self.ROUTERS.get(self.board.name)

    def __init__(self, board, sizes=None, core_hz=None, start_cycles=None, phy_reset_cycles=None):
        self.board = board
        self.sizes = sizes or SIZES[board.name]
        if core_hz is not None:
            self.sizes = replace(self.sizes, core_hz=core_hz)
        sz = self.sizes
        if sz.core_hz != TX_HZ:
            solve_pll(board.f_osc, TX_HZ, sz.core_hz)  # a ValueError now, not at elaboration
        # the self-test's times at 125 MHz (2**29 and 2**20 clocks), kept in seconds
        per_clock = sz.core_hz / CORE_HZ
        self.start_cycles = start_cycles or int((1 << 29) * per_clock)
        self.phy_reset_cycles = phy_reset_cycles or int((1 << 20) * per_clock)
        self.leaf = ManagedLeaf(
            sz.config(),
            allowed_port=0,
            host_store_bytes=sz.host_store_bytes,
            fab_store_bytes=sz.fab_store_bytes,
            max_frame_bytes=sz.max_frame_bytes,
            slot_bytes=sz.slot_bytes,
            n_req=sz.n_req,
            divisor=round(sz.core_hz / UART_BAUD),
            # the parts' counters in one block RAM: they keep only their low bits
            counter_store=True,
        )
        #: the register map the bitstream carries (``gse build`` writes it as
        #: ``leaf.map.json`` for ``gsectl --map``)
        self.regmap = self.leaf.regmap

    @property
    def core_hz(self):
        """The core clock, Hz (``gse build`` writes it into the register map's file)."""
        return self.sizes.core_hz

    def lpf_preferences(self):
        return rx_clock_preferences(self.board.rgmii_ports)

    def elaborate(self, platform):
        m = Module()
        board, sz = self.board, self.sizes
        m.submodules.clocks = clocks = BoardClocks(
            board.clk, board.f_osc, board.rst, tx90=bool(board.txc_shift), core_hz=sz.core_hz
        )
        m.domains += clocks.domains()
        m.submodules.startup = startup = StartupSequencer(self.phy_reset_cycles, self.start_cycles)
        m.submodules.leaf = leaf = self.leaf
        macs = []
        for i, p in enumerate(board.rgmii_ports[:2]):
            port = RGMIIPort(
                p,
                sz.data_width,
                rx_fifo_bytes=sz.mac_fifo_bytes,
                tx_fifo_bytes=sz.mac_fifo_bytes,
                txc_shift=board.txc_shift,
                phy_pins=(i == 0 or not board.shared_phy_pins),
            )
            macs.append(port.create_mac(platform))
            m.submodules[f"port{p}"] = port
            m.d.comb += port.phy_reset.eq(startup.phy_reset)
        connect(m, macs[0].m_axis, leaf.s_axis_host[0])
        connect(m, leaf.m_axis_host[0], macs[0].s_axis)
        for h in range(1, sz.host_ports):
            self._internal_host(m, leaf, h, startup.start)
        for u in range(sz.uplinks):
            if u == 0 and len(macs) > 1:
                connect(m, macs[1].m_axis, leaf.s_axis_fab[0])
                connect(m, leaf.m_axis_fab[0], macs[1].s_axis)
            else:
                self._loop_uplink(m, leaf, u)
        # Where uplink 0 is a cable to another board, a looped-back uplink would bring this
        # leaf's containers for the other leaf back to itself (dropped: not its nodes):
        # it is down, so the sprayers keep to uplink 0.
        m.d.comb += [leaf.link_up.eq(1 if len(macs) > 1 else -1)]
        m.d.comb += [leaf.host_pause_in[h].eq(0) for h in range(sz.host_ports)]
        if board.uart:
            pins = platform.request(*board.uart, dir="-")
            m.submodules.uart_tx = tx = io.Buffer("o", pins.tx)
            m.submodules.uart_rx = rx = io.Buffer("i", pins.rx)
            m.d.comb += [tx.o.eq(leaf.uart_tx), leaf.uart_rx.eq(rx.i)]
        if not board.uart_replaces_led:
            # the top bit toggles every 2**25 clocks at 125 MHz (0.27 s): the same at any core clock
            alive = Signal(26 + round(math.log2(sz.core_hz / CORE_HZ)))
            m.d.sync += alive.eq(alive + 1)
            drive_led(m, platform, board.led, alive[-1], "status_led")
        return m

    def _internal_host(self, m, leaf, h, start):
        w = self.sizes.data_width
        gen = m.submodules[f"gen{h}"] = TrafficGenerator(w, max_flows=FLOWS)
        chk = m.submodules[f"check{h}"] = TrafficChecker(w, sources=4, flows=FLOWS, tenants=2, bins=2)
        SelfTestTop._configure(m, gen, host=h, dst=0, seed=0x5EED_0000 + h, start=start)
        m.d.comb += chk.host.eq(h)
        m.d.comb += [
            leaf.s_axis_host[h].valid.eq(gen.m_axis.valid),
            leaf.s_axis_host[h].payload.eq(gen.m_axis.payload),
            gen.m_axis.ready.eq(leaf.s_axis_host[h].ready & ~leaf.host_pause[h]),
        ]
        connect(m, leaf.m_axis_host[h], chk.s_axis)

    @staticmethod
    def _loop_uplink(m, leaf, u):
        tx, rx = leaf.m_axis_fab[u], leaf.s_axis_fab[u]
        m.d.comb += tx.ready.eq(1)
        m.d.sync += [
            rx.valid.eq(tx.valid),
            rx.payload.eq(tx.payload),
            leaf.fab_pause_in[u].eq(leaf.fab_pause[u]),
        ]
