"""ControlRx: the REQUEST and GRANT frames a leaf receives, decoded and handed to the
arbiter or manager of the host port they address."""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ... import interfaces
from ...dgsq.control_demux import ControlDemux
from ...header.control_frames import ControlFrameDecoder
from ...header.gse_header import GSE_ETHERTYPE, GSEType
from ...lib.packet_mux import ROUND_ROBIN, PacketMux
from ...lib.skid_buffer import SkidBuffer, skid_between
from ...lib.stream import AXIStreamSignature

__all__ = ["ControlRx"]


class ControlRx(wiring.Component):
    """Control frames of ``U`` uplinks -> round-robin mux -> one
    :class:`~opengse.rtl.header.control_frames.ControlFrameDecoder` -> per host port a
    :class:`~opengse.rtl.dgsq.control_demux.ControlDemux`.

    A REQUEST goes to host port ``port`` (the egress port it asks for; its ``dst_node``
    must be a node of this leaf), a GRANT to host port ``dst_node - node_base`` (the
    requester's node). A header naming no host port of this leaf is dropped and counted
    in ``stat_drop_unrouted``.

    Interface: ``s_ctl[u]`` (in, AXI-Stream: the control frames of uplink u),
    ``node_base`` (in), ``m_req[h]`` (out, :func:`~opengse.rtl.interfaces.request_record`,
    to arbiter h), ``m_grant[h]`` (out, :func:`~opengse.rtl.interfaces.grant_in`, to
    manager h), counters ``dec_stat_*`` (the decoder's), ``stat_requests``,
    ``stat_grants``, ``stat_drop_unrouted``.

    Timing: a register slice (SkidBuffer) on each ``s_ctl[u]``, the mux's register
    (none with one uplink: no mux), the decoder (a header 2 clocks after the frame's
    last beat), a register slice holding the decoded record with its routing, then one
    on each ``m_req[h]`` and ``m_grant[h]``. 8 beats
    per frame at 64 bits: the decoder takes one frame per 8 clocks, shared by the
    uplinks (control frames are a few percent of each link).
    """

    def __init__(self, data_width=64, uplinks=4, hosts=4, ethertype=GSE_ETHERTYPE):
        self.uplinks, self.hosts = uplinks, hosts
        # one uplink: no round-robin, its slice feeds the decoder
        self.mux = PacketMux(uplinks, data_width, policy=ROUND_ROBIN) if uplinks > 1 else None
        self.dec = ControlFrameDecoder(data_width, ethertype)
        self.demux = [ControlDemux() for _ in range(hosts)]
        sig = AXIStreamSignature(data_width)
        members = {
            "s_ctl": In(sig).array(uplinks),
            "node_base": In(16),
            "m_req": Out(interfaces.request_record()).array(hosts),
            "m_grant": Out(interfaces.grant_in()).array(hosts),
            "stat_requests": Out(32),
            "stat_grants": Out(32),
            "stat_drop_unrouted": Out(32),
        }
        from ...lib.stat_ports import stat_members

        members.update(stat_members("dec", self.dec))
        super().__init__(members)

    def elaborate(self, platform):
        from ...lib.stat_ports import forward_stats

        m = Module()
        H = self.hosts
        if self.mux is not None:
            m.submodules.mux = mux = self.mux
        m.submodules.dec = dec = self.dec
        if self.mux is None:
            skid_between(m, "in_skid_0", wiring.flipped(self.s_ctl[0]), dec.s_axis)
        else:
            for u in range(self.uplinks):
                # a register slice per uplink: the round-robin's ready (its pick from all
                # the inputs' valid) does not run back into the fabric ingress's demux
                skid_between(m, f"in_skid_{u}", wiring.flipped(self.s_ctl[u]), mux.s_axis[u])
            wiring.connect(m, mux.m_axis, dec.s_axis)
        # the routing (dst_node - node_base, its compare) into a register slice with the
        # control record: the demux below works from registers
        dc = dec.m_ctl
        local = Signal(16)  # dst_node - node_base: a host port of this leaf if < H
        m.d.comb += local.eq((dc.payload.dst_node - self.node_base)[:16])
        routed_layout = data.StructLayout({"ctl": dc.payload.shape(), "idx": 16})
        m.submodules.route_skid = route_skid = SkidBuffer(routed_layout)
        m.d.comb += [
            route_skid.s.valid.eq(dc.valid),
            route_skid.s.payload.ctl.eq(dc.payload),
            route_skid.s.payload.idx.eq(
                Mux(dc.payload.type == GSEType.REQUEST, Mux(local < H, dc.payload.port, H), local)
            ),
            dc.ready.eq(route_skid.s.ready),
        ]
        c = route_skid.m
        is_req = c.payload.ctl.type == GSEType.REQUEST
        idx = c.payload.idx
        ready_any = Signal()
        for h, cd in enumerate(self.demux):
            m.submodules[f"demux_{h}"] = cd
            m.d.comb += [cd.s_ctl.payload.eq(c.payload.ctl), cd.s_ctl.valid.eq(c.valid & (idx == h))]
            with m.If(idx == h):
                m.d.comb += ready_any.eq(cd.s_ctl.ready)
            # register slices: the arbiter's and the manager's ready do not run back
            # through the demux into the routing
            skid_between(m, f"req_skid_{h}", cd.m_req, wiring.flipped(self.m_req[h]))
            skid_between(m, f"grant_skid_{h}", cd.m_grant, wiring.flipped(self.m_grant[h]))
        unrouted = idx >= H
        m.d.comb += c.ready.eq(ready_any | unrouted)
        take = c.valid & c.ready
        with m.If(take):
            with m.If(unrouted):
                m.d.sync += self.stat_drop_unrouted.eq(self.stat_drop_unrouted + 1)
            with m.Elif(is_req):
                m.d.sync += self.stat_requests.eq(self.stat_requests + 1)
            with m.Else():
                m.d.sync += self.stat_grants.eq(self.stat_grants + 1)
        forward_stats(m, self, "dec", dec)
        return m
