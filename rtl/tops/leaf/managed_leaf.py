"""ManagedLeaf: a GSELeaf configured and watched through its own host port and a UART."""

from amaranth.hdl import Cat, Const, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ...config import GSEConfig
from ...lib.ethertype_split import EtherTypeSplit
from ...lib.packet_mux import PRIORITY, PacketMux
from ...lib.skid_buffer import SkidBuffer
from ...lib.stream import axis_beat_layout
from ...mgmt import protocol as P
from ...mgmt.management_port import ManagementPort, mgmt_register_block
from ...regs.bank import port_name
from . import GSELeaf

__all__ = ["ManagedLeaf"]


class ManagedLeaf(wiring.Component):
    """A :class:`~opengse.rtl.tops.leaf.GSELeaf` whose AXI4-Lite register bank is driven
    by a :class:`~opengse.rtl.mgmt.management_port.ManagementPort` (docs/management.md):

    * host port ``allowed_port``'s ingress goes through an
      :class:`~opengse.rtl.lib.ethertype_split.EtherTypeSplit`: frames of EtherType
      0x88B6 to the management port (``tuser[1:]`` = ``allowed_port``), every other
      frame to the leaf's host port;
    * the management responses and the leaf's frames for that host are merged whole
      (:class:`~opengse.rtl.lib.packet_mux.PacketMux`, strict priority: a response, one
      per request, goes ahead of the next data frame; it does not wait for
      ``host_pause_in``, which the leaf's own frames obey);
    * the management port's ``m_axil_*`` drives the leaf's ``s_axil_*``; its counters
      are the leaf map's block ``mgmt`` (:func:`~opengse.rtl.mgmt.management_port.mgmt_register_block`,
      registers ``mgmt.mgmt_requests`` ... ``mgmt.uart_overrun``), so
      :attr:`regmap` is the leaf's map with that block added.

    Management frames on the other host ports are data to the leaf like any frame (its
    destination table decides); only ``allowed_port`` reaches the registers.

    Parameters: ``config``, ``lb`` and ``leaf_params`` (any other
    :class:`~opengse.rtl.tops.leaf.GSELeaf` argument but ``config_ports``);
    ``allowed_port``, ``key``, ``max_records``, ``divisor``, ``uart_idle_limit``,
    ``mac`` (of the :class:`~opengse.rtl.mgmt.management_port.ManagementPort`, whose
    ``addr_width`` is the leaf bank's).

    Interface: the :class:`~opengse.rtl.tops.leaf.GSELeaf`'s, without ``s_axil_*``, plus
    ``uart_rx`` (in, idle high) and ``uart_tx`` (out). ``s_axis_host_<allowed_port>``'s
    ``tready`` is no longer constant 1: it is low while the split's window is full,
    i.e. while a management frame waits for the management port (which takes one byte
    per clock and holds its input while a request executes and its response leaves).
    Timing: the split adds 4 clocks at 64 bits to that port's ingress (docs of
    :class:`~opengse.rtl.lib.ethertype_split.EtherTypeSplit`), the merge 1 clock to its
    egress. Management frames pass a register slice between the split and the port
    (1 clock), so the port's ``tready`` (a byte-at-a-time parser's) stays off the
    split's window and the leaf's ingress.
    """

    def __init__(
        self,
        config=GSEConfig(),
        lb="gse",
        *,
        allowed_port=0,
        key=P.DEFAULT_KEY,
        max_records=16,
        divisor=1085,
        uart_idle_limit=1 << 20,
        mac=P.DEFAULT_MAC,
        **leaf_params,
    ):
        if leaf_params.get("config_ports"):
            raise ValueError("a managed leaf has its register bank (config_ports is not for it)")
        H = config.host_ports
        if not isinstance(allowed_port, int) or not 0 <= allowed_port < H:
            raise ValueError(f"allowed_port must be a host port, 0..{H - 1}, not {allowed_port!r}")
        self.allowed_port = allowed_port
        self.mgmt_block = mgmt_register_block()
        self.leaf = GSELeaf(
            config, lb, extra_blocks=(self.mgmt_block,), extra_counters=(self.mgmt_block.name,), **leaf_params
        )
        self.regmap = self.leaf.regmap
        self.port_bits = max(1, (H - 1).bit_length())
        self.mgmt = ManagementPort(
            config.data_width,
            key=key,
            allowed_port=allowed_port,
            port_bits=self.port_bits,
            max_records=max_records,
            divisor=divisor,
            addr_width=self.leaf.bank.addr_width,
            uart_idle_limit=uart_idle_limit,
            mac=mac,
        )
        self._stat_ports = {port_name(self.mgmt_block, reg) for reg in self.mgmt_block}
        members = {
            n: mb
            for n, mb in self.leaf.signature.members.items()
            if not n.startswith("s_axil_") and n not in self._stat_ports
        }
        members.update({"uart_rx": In(1, init=1), "uart_tx": Out(1, init=1)})
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        leaf, mgmt, a = self.leaf, self.mgmt, self.allowed_port
        w = leaf.config.data_width
        m.submodules.leaf = leaf
        m.submodules.mgmt = mgmt
        m.submodules.split = split = EtherTypeSplit(P.ETHERTYPE, w)
        m.submodules.merge = merge = PacketMux(2, w, policy=PRIORITY)

        # everything but the managed host port's streams and the bus: the leaf's own
        for name, member in self.signature.members.items():
            if name.startswith("uart_") or name in ("s_axis_host", "m_axis_host"):
                continue
            ours, theirs = getattr(self, name), getattr(leaf, name)
            pairs = zip(ours, theirs) if member.dimensions else [(ours, theirs)]
            for o, t in pairs:
                if member.is_signature:
                    if member.flow == In:
                        wiring.connect(m, wiring.flipped(o), t)
                    else:
                        wiring.connect(m, t, wiring.flipped(o))
                else:
                    m.d.comb += t.eq(o) if member.flow == In else o.eq(t)
        for p in range(leaf.config.host_ports):
            if p != a:
                wiring.connect(m, wiring.flipped(self.s_axis_host[p]), leaf.s_axis_host[p])
                wiring.connect(m, leaf.m_axis_host[p], wiring.flipped(self.m_axis_host[p]))

        # host port a: split by EtherType, responses merged ahead of the leaf's frames
        wiring.connect(m, wiring.flipped(self.s_axis_host[a]), split.s_axis)
        wiring.connect(m, split.m_axis[0], leaf.s_axis_host[a])
        # a register slice to the management port: its tready (a byte-at-a-time parser's)
        # does not run into the split's window and the leaf's ingress
        to_mgmt = split.m_axis[1]
        m.submodules.to_mgmt = slice_ = SkidBuffer(axis_beat_layout(w, 1 + self.port_bits))
        m.d.comb += [
            slice_.s.valid.eq(to_mgmt.valid),
            to_mgmt.ready.eq(slice_.s.ready),
            slice_.s.payload.data.eq(to_mgmt.payload.data),
            slice_.s.payload.keep.eq(to_mgmt.payload.keep),
            slice_.s.payload.last.eq(to_mgmt.payload.last),
            slice_.s.payload.user.eq(Cat(to_mgmt.payload.user[0], Const(a, self.port_bits))),
        ]
        wiring.connect(m, slice_.m, mgmt.s_axis)
        wiring.connect(m, mgmt.m_axis, merge.s_axis[0])
        wiring.connect(m, leaf.m_axis_host[a], merge.s_axis[1])
        wiring.connect(m, merge.m_axis, wiring.flipped(self.m_axis_host[a]))

        # the bus, the counters, the UART
        for name, member in leaf.signature.members.items():
            if name.startswith("s_axil_"):
                slave, master = getattr(leaf, name), getattr(mgmt, "m_axil_" + name[len("s_axil_") :])
                m.d.comb += slave.eq(master) if member.flow == In else master.eq(slave)
        for reg in self.mgmt_block:
            m.d.comb += getattr(leaf, port_name(self.mgmt_block, reg)).eq(getattr(mgmt, f"stat_{reg.name}"))
        m.d.comb += [mgmt.uart_rx.eq(self.uart_rx), self.uart_tx.eq(mgmt.uart_tx)]
        return m
