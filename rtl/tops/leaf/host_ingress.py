"""HostIngress: one host port's GSE source path, host frames to containers on the
uplinks (the leaf's GSP ingress, docs/leaf.md)."""

from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ... import interfaces
from ...config import GSEConfig
from ...dgsq.container_framing import ContainerFraming
from ...dgsq.manager import DGSQManager
from ...header.control_frames import ControlFrameEncoder
from ...header.tagger import GSETagger
from ...lib.packet_mux import PRIORITY, PacketMux
from ...lib.skid_buffer import skid_between
from ...lib.stat_ports import forward_stats, stat_members
from ...lib.stream import AXIStreamSignature
from ...pktc.ecmp_selector import ECMPSelector
from ...pktc.sprayer import ContainerSprayer
from ...voq.buffer import VOQBuffer
from .dest_lookup import dest_result_layout
from .control_spread import ControlSpread
from .host_classify import HostClassify

__all__ = ["HostIngress", "FABRIC_MAC"]

#: Control frames between leaves carry these locally administered addresses; the
#: fabric forwards by the GSE header (``dst_node``), never by MAC.
FABRIC_MAC = 0x02_47_53_45_00_00


class HostIngress(wiring.Component):
    """Host port -> store -> lookup -> tagger -> DGSQ manager + VOQ buffer + container
    framing -> sprayer -> ``U`` uplinks, with the port's REQUESTs and its egress
    arbiter's GRANTs as control frames ahead of data (``lb`` = "gse"); or, with ``lb``
    = "ecmp", store -> lookup -> tagger -> :class:`~opengse.rtl.pktc.ecmp_selector.ECMPSelector`
    -> the uplink the flow hashes to, at once (no manager, VOQ or sprayer).

    Parameters: ``config`` (:class:`~opengse.rtl.config.GSEConfig`: widths, queues,
    buffers, uplinks U, nodes), ``store_depth`` (beats of the host-side store),
    ``xoff_bytes``/``xon_bytes`` (its pause thresholds), ``max_frame_bytes`` (the
    largest host frame: the VOQ room kept free before a frame is let in; a longer
    one is dropped at the store, ``cls_stat_store_drop_long``), manager
    timers ``refresh_cycles``, ``idle_cycles``, ``lookup_latency`` (of the
    :class:`~.dest_lookup.DestLookup` it is joined to; :class:`~.host_classify.HostClassify`).

    Interface:

    * ``s_axis`` (in, no back-pressure), ``pause`` (out): the host link.
    * ``lookup_key`` (out) / ``lookup_result`` (in): one port of the leaf's
      :class:`~.dest_lookup.DestLookup`.
    * ``node_id``, ``tc``, ``tenant`` (in): this port's node (``node_base + p``), class
      and tenant.
    * ``s_grant`` (in, :func:`~opengse.rtl.interfaces.grant_in`): decoded GRANTs for
      this port's manager. ``s_grant_frames`` (in, AXI-Stream): GRANT frames of this
      port's egress arbiter, sent on the uplinks with priority over REQUESTs and data.
    * ``m_up[u]`` (out, AXI-Stream): the uplinks; ``healthy`` (in, U): the link
      monitor's set. ``ecmp_seed`` (in, 32): the selector's CRC start value (ECMP).
    * Counters: ``<part>_stat_*`` of the parts (``cls``, ``tag``, ``mgr``, ``voq``,
      ``cf``, ``sp``, ``req_enc``; ECMP: ``cls``, ``tag``, ``sel``); ``ctx_used``
      (status, GSE mode).
    * GSE mode: the VOQ buffer's query port as ``voq_query_<name>``
      (:class:`~opengse.rtl.voq.buffer.VOQBuffer`'s ``query_<name>``: in
      ``voq_query_queue``, ``voq_query_tenant``; out a clock later the queue's
      ``pkts``, ``bytes``, ``cells``, ``drops`` and the tenant's ``tenant_cells``,
      ``tenant_drops``).

    Timing: the parts' (see each), and a register slice (SkidBuffer, 1 clock) between
    the classifier and the tagger, and in GSE mode between the classifier and the
    manager, the manager and each of its three outputs' takers (VOQ buffer, framing,
    REQUEST encoder), the tagger and the VOQ buffer, the VOQ buffer and the sprayer, the
    VOQ buffer's packet records and the framing, the framing's descriptors and the
    sprayer, the control mux and the sprayer, and the
    sprayer and each uplink, so that no ready runs from one part into the next. The
    store holds a frame until it is whole (its length goes into the tag and the
    manager's backlog); a frame enters the tagger only while the VOQ buffer has
    ``max_frame_bytes`` x 2 plus its dynamic-threshold margin free (a registered test,
    a clock late), so admission never drops (it back-pressures into the store, which
    pauses the host).
    """

    def __init__(
        self,
        config=GSEConfig(),
        store_depth=2048,
        xoff_bytes=None,
        xon_bytes=None,
        max_frame_bytes=9216,
        refresh_cycles=8192,
        idle_cycles=16384,
        lb="gse",
        lean_requests=True,
        ctrl_uplinks=False,
        lookup_latency=0,
    ):
        cfg = self.config = config
        w, U = cfg.data_width, cfg.uplinks
        self.lb = lb
        self.ctrl_uplinks = ctrl_uplinks and lb == "gse"
        gse = lb == "gse"
        self.cls = HostClassify(
            w,
            store_depth,
            xoff_bytes,
            xon_bytes,
            ethertype=cfg.ethertype,
            with_pkt=int(gse),
            max_frame_bytes=max_frame_bytes,
            lookup_latency=lookup_latency,
        )
        self.tag = GSETagger(w, cfg.ethertype)
        members = {
            "s_axis": In(AXIStreamSignature(w)),
            "pause": Out(1),
            "lookup_key": Out(48),
            "lookup_result": In(dest_result_layout()),
            "node_id": In(16),
            "tc": In(interfaces.FIELD_BITS["tc"]),
            "tenant": In(interfaces.FIELD_BITS["tenant"]),
            "s_grant": In(interfaces.grant_in()),
            "s_grant_frames": In(AXIStreamSignature(w)),
            "m_up": Out(AXIStreamSignature(w)).array(U),
            "healthy": In(U),
            "ecmp_seed": In(32),
            # uplinks the other host ports' sprayers carry a container on (GSE mode);
            # this port's, for theirs
            "sp_avoid": In(U),
            "sp_busy": Out(U),
        }
        if self.ctrl_uplinks:
            # control frames beside the sprayer, one stream per uplink (UplinkTx s_ctrl)
            members["m_ctl_up"] = Out(AXIStreamSignature(w)).array(U)
        if not gse:
            self.sel = ECMPSelector(uplinks=U, data_width=w, ethertype=cfg.ethertype)
            self._parts = {"cls": self.cls, "tag": self.tag, "sel": self.sel}
            for prefix, part in self._parts.items():
                members.update(stat_members(prefix, part))
            super().__init__(members)
            return
        # lean REQUESTs (docs/leaf.md): the arbiter's view of a queue's demand leaves
        # out what it granted, so it need only outlast a REQUEST's flight (about one
        # container's grant time): 3 containers; at saturation a REQUEST per 2-3 GRANTs
        low_water = 3 * cfg.container_bytes if lean_requests else None
        self.mgr = DGSQManager(
            **cfg.manager_params(),
            refresh_cycles=refresh_cycles,
            idle_cycles=idle_cycles,
            request_low_water=low_water,
        )
        cells = cfg.voq_cells
        voq = cfg.voq_params()
        # Limits at the whole buffer and the widest dynamic threshold: the gate below,
        # not admission, keeps the buffer from overflowing.
        voq.update(queue_limit_cells=cells, tenant_reserved_cells=0, tenant_limit_cells=cells, alpha_log2=4)
        # early_report: a release is reported when it is planned, so the manager starts
        # the queue's next container while this one drains and no gap opens between
        # two containers of a queue. With least-loaded spraying and 8 containers in
        # flight it took the 2x2x2 inter-leaf figure from 0.949 to 0.965, the overhead
        # limit (docs/leaf.md); measured before those, with uneven flows, it had not
        # shown (0.941 against 0.945).
        self.voq = VOQBuffer(**voq, early_report=True)
        frame_cells = -(-(max_frame_bytes + 18) // cfg.cell_bytes)
        self.reserve_cells = 2 * frame_cells + cells // 16 + 2
        if self.reserve_cells >= cells:
            raise ValueError(f"voq_buffer_bytes too small for {max_frame_bytes}-byte frames")
        self.cf = ContainerFraming(queue_bits=cfg.queue_bits, credit_bits=cfg.credit_bits)
        self.sp = ContainerSprayer(**cfg.sprayer_params())
        self.req_enc = ControlFrameEncoder(w, cfg.ethertype)
        self.ctl_mux = PacketMux(2, w, policy=PRIORITY)
        self.ctl_spread = ControlSpread(w, U) if self.ctrl_uplinks else None
        self._parts = {
            "cls": self.cls,
            "tag": self.tag,
            "mgr": self.mgr,
            "voq": self.voq,
            "cf": self.cf,
            "sp": self.sp,
            "req_enc": self.req_enc,
        }
        members.update(ctx_used=Out(16))
        # the VOQ buffer's query port, as ``voq_query_*`` (the leaf's registers)
        for name, member in self.voq.signature.members.items():
            if name.startswith("query_"):
                members[f"voq_{name}"] = member
        for prefix, part in self._parts.items():
            members.update(stat_members(prefix, part))
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        for name, part in self._parts.items():
            m.submodules[name] = part
        cls, tag = self.cls, self.tag
        # host side: store + lookup, the tag (and in GSE mode the packet descriptor)
        wiring.connect(m, wiring.flipped(self.s_axis), cls.s_axis)
        m.d.comb += [
            self.pause.eq(cls.pause),
            self.lookup_key.eq(cls.lookup_key),
            cls.lookup_result.eq(self.lookup_result),
            cls.node_id.eq(self.node_id),
            cls.tc.eq(self.tc),
            cls.tenant.eq(self.tenant),
        ]
        # register slices between the classifier and the tagger (and, below, the
        # manager): without them the store's descriptor, the tagger's window and the
        # manager's engine made one chain of ready logic (about 20 LUT levels)
        skid_between(m, "cls_data_skid", cls.m_axis, tag.s_axis)
        skid_between(m, "cls_hdr_skid", cls.m_hdr, tag.s_hdr)
        if self.lb == "gse":
            self._elaborate_gse(m)
        else:
            # ECMP: each tagged frame at once on the uplink its flow hashes to
            sel = self.sel
            wiring.connect(m, tag.m_axis, sel.s_axis)
            m.d.comb += [
                cls.start_ok.eq(1),
                sel.seed.eq(self.ecmp_seed),
                sel.healthy.eq(self.healthy),
                self.s_grant.ready.eq(1),
                self.s_grant_frames.ready.eq(1),
            ]
            for u in range(self.config.uplinks):
                wiring.connect(m, sel.m_axis[u], wiring.flipped(self.m_up[u]))
        for prefix, part in self._parts.items():
            forward_stats(m, self, prefix, part)
        return m

    def _elaborate_gse(self, m):
        m.submodules.ctl_mux = ctl_mux = self.ctl_mux
        cls, tag, mgr, voq, cf, sp = self.cls, self.tag, self.mgr, self.voq, self.cf, self.sp
        # registered: the VOQ's init FSM and the free-cell compare do not run into the
        # store's read logic; a clock's lag is covered by the reserve (a frame takes
        # at least 8 clocks, and its cells are counted only when the VOQ writes them)
        start_ok = Signal()
        m.d.sync += start_ok.eq(voq.init_done & (voq.stat_free_cells >= self.reserve_cells))
        m.d.comb += [cls.start_ok.eq(start_ok), self.ctx_used.eq(mgr.ctx_used), mgr.node_id.eq(self.node_id)]
        skid_between(m, "cls_pkt_skid", cls.m_pkt, mgr.s_pkt)

        # manager <-> VOQ buffer <-> container framing
        skid_between(m, "tag_voq_skid", tag.m_axis, voq.s_axis)
        # register slices on the manager's outputs: their ready (the VOQ's enqueue,
        # the framing and the VOQ's walker, the REQUEST encoder) is then a register
        # where the manager's WRITE decides whether the event completes
        skid_between(m, "mgr_pkt_skid", mgr.m_pkt, voq.s_meta)
        skid_between(m, "mgr_rel_skid", mgr.m_rel, cf.s_rel)
        wiring.connect(m, cf.m_deq, voq.s_deq)
        wiring.connect(m, voq.m_deq_done, cf.s_done)
        wiring.connect(m, cf.m_done, mgr.s_rel_done)
        # a register slice: the framing's descriptor ready (its head compare) does not
        # run into the VOQ's packet-record FIFO (the data has one more slice too)
        skid_between(m, "voq_desc_skid", voq.m_desc, cf.s_desc)
        wiring.connect(m, wiring.flipped(self.s_grant), mgr.s_grant)
        for name, member in voq.signature.members.items():
            if name.startswith("query_"):
                ours, theirs = getattr(self, f"voq_{name}"), getattr(voq, name)
                m.d.comb += theirs.eq(ours) if member.flow == In else ours.eq(theirs)

        # the sprayer: data from the VOQ, control frames (GRANTs first, then REQUESTs)
        skid_between(m, "voq_sp_skid", voq.m_axis, sp.s_axis)
        skid_between(m, "cf_sp_skid", cf.m_meta, sp.s_meta)
        skid_between(m, "mgr_req_skid", mgr.m_req, self.req_enc.s_ctl)
        m.d.comb += [
            self.req_enc.mac_da.eq(FABRIC_MAC | 0xFF),
            self.req_enc.mac_sa.eq(Cat(self.node_id[:8], Const(0x01, 8), Const(FABRIC_MAC >> 16, 32))),
        ]
        wiring.connect(m, wiring.flipped(self.s_grant_frames), ctl_mux.s_axis[0])
        wiring.connect(m, self.req_enc.m_axis, ctl_mux.s_axis[1])
        # a register slice after the control mux: the sprayer's ready does not run
        # through the mux into the egress arbiter's GRANT output (host_out)
        if self.ctl_spread is None:
            skid_between(m, "ctl_skid", ctl_mux.m_axis, sp.s_ctrl)
        else:
            m.submodules.ctl_spread = spread = self.ctl_spread
            skid_between(m, "ctl_skid", ctl_mux.m_axis, spread.s_axis)
            m.d.comb += spread.healthy.eq(self.healthy)
            for u in range(self.config.uplinks):
                wiring.connect(m, spread.m_axis[u], wiring.flipped(self.m_ctl_up[u]))
        m.d.comb += [sp.healthy.eq(self.healthy), sp.avoid.eq(self.sp_avoid), self.sp_busy.eq(sp.busy)]
        # a register slice per uplink: the uplinks' ready (their muxes and pause gates)
        # does not run into the sprayer, and through it into the VOQ, framing and manager
        for u in range(self.config.uplinks):
            skid_between(m, f"up_skid_{u}", sp.m_axis[u], wiring.flipped(self.m_up[u]))
