"""GSELeaf: the GSP leaf switch, H host ports and U uplinks (docs/leaf.md).

The parts, one file each: :mod:`.ingress_store` (the always-ready store with pause at
every receiving port), :mod:`.dest_lookup` (dst MAC -> node, port), :mod:`.host_classify`
(store + lookup + the frame's headers), :mod:`.host_ingress` (tagger, DGSQ manager,
VOQ buffer, container framing, sprayer), :mod:`.uplink_tx` (PROBEs first, round-robin
of the host pipelines, pause), :mod:`.fabric_ingress` (store, parser, split by type),
:mod:`.control_rx` (decoder, REQUEST/GRANT to the addressed port),
:mod:`.host_egress` (reorder, untag, egress FIFO, grant arbiter), :mod:`.pause_gate`.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ... import interfaces
from ...catalog import BlockSpec
from ...config import GSEConfig
from ...lib.pause_fifo import pause_thresholds
from ...lib.stat_ports import forward_stats, stat_members
from ...lib.stream import AXIStreamSignature
from ...pktc.link_monitor import LinkMonitor
from ...regs.bank import AXI4LiteRegisterBank, port_name
from ...regs.description import Access
from ...regs.from_signature import connect_registers
from ...regs.system import SystemCounters
from .control_rx import ControlRx
from .dest_lookup import DestLookup, dest_entry_layout
from .fabric_ingress import FabricIngress
from .host_egress import HostEgress
from .host_ingress import HostIngress
from .registers import (
    connect_dest_table,
    connect_leaf_registers,
    forward_query,
    leaf_register_map,
    query_members,
    stored_counters,
)
from .uplink_tx import UplinkTx

__all__ = ["GSELeaf", "EXPORTS", "LB_MODES", "LEAF_CONFIG_KEYS"]

LB_MODES = ("gse", "ecmp")


def _pow2_at_most(n):
    p = 1
    while p * 2 <= n:
        p *= 2
    return p


def _others_busy(hins, p):
    """The uplinks the other host ports' sprayers carry a container on (0 with one
    host port, and in ECMP mode, where ``sp_busy`` is never driven)."""
    out = 0
    for q, h in enumerate(hins):
        if q != p:
            out = out | h.sp_busy
    return out


#: The destination table's key and answer are registered (DestLookup ``latency``): it is
#: shared by the host ports, and the routes between them and it were the ECPIX-5 leaf's
#: longest path (11.5 ns, docs/boards.md).
LOOKUP_LATENCY = 2


class GSELeaf(wiring.Component):
    """A GSE leaf: ``H`` host ports and ``U`` uplinks (see docs/leaf.md).

    Parameters: ``config`` (:class:`~opengse.rtl.config.GSEConfig`), ``lb`` ("gse": spray
    with request/grant; "ecmp": each flow hashed onto one uplink, pushed at once, no
    reorder; the VOQ buffers' bytes become per-uplink output queues), ``delay`` (link delay in clocks, for the
    pause headroom of the stores), ``host_store_bytes`` / ``fab_store_bytes`` (the
    always-ready stores at each host port and uplink), ``max_frame_bytes``,
    ``slot_bytes`` / ``reorder_timeout`` (reorder buffers; a slot holds one container
    and the frame that may overrun it: default the power of two at or above
    ``container_bytes + max_frame_bytes + 18``), ``probe_interval``,
    ``refresh_cycles``, ``idle_cycles``, ``lease_cycles``, ``n_req``, ``lean_requests``
    (default on: the managers' ``request_low_water`` at 3 containers; docs/leaf.md),
    ``extra_blocks`` (:class:`~opengse.rtl.regs.description.RegisterBlock`\\ s of RO
    registers a top adds to the leaf's map, after the leaf's own blocks: each register
    ``r`` of block ``b`` is an input ``b_r`` of the leaf, e.g. a management port's
    counters; :class:`~.managed_leaf.ManagedLeaf`), ``counter_store`` (default off: the
    parts' 32-bit counters are kept in one block RAM by the bank's
    :class:`~opengse.rtl.regs.counter_store.CounterStore`, the parts keep only their low
    bits; :func:`~.registers.stored_counters` lists them; the board leaves use it), and
    with it ``extra_counters`` (names of extra blocks whose 32-bit registers are counters
    that advance by at most one per clock: stored as well).

    Interface (exported names):

    * ``s_axis_host_<p>_*`` (in, untagged Ethernet II from host p; ``tready`` is 1),
      ``host_pause_<p>`` (out: the leaf asks host p to stop), ``m_axis_host_<p>_*``
      (out, untagged frames to host p), ``host_pause_in_<p>`` (in).
    * ``s_axis_fab_<u>_*`` (in, from the spine side of uplink u; ``tready`` 1),
      ``fab_pause_<u>`` (out), ``m_axis_fab_<u>_*`` (out, to the spine; ``tready`` is
      honoured), ``fab_pause_in_<u>`` (in), ``link_up`` (U bits, in).
    * ``healthy`` (out, U): the link monitor's healthy set.
    * ``s_axil_*`` (AXI4-Lite, 32-bit): configuration and every counter, the map of
      :func:`~.registers.leaf_register_map` (``leaf.node_base``: host port p is node
      ``node_base + p``; ``leaf.ecmp_seed``; ``leaf.host_tc[p]``, ``leaf.host_tenant[p]``;
      the destination table through ``leaf.dest_*``; the parts' counters; GSE mode:
      ``h<p>_in.voq_query_*``, host port p's VOQ per-queue / per-tenant counts).
    * With ``config_ports`` = True instead of the bank (a simulation harness that pokes
      ports): ``node_base``, ``ecmp_seed``, ``host_tc_<p>``, ``host_tenant_<p>``,
      ``s_dest`` (table writes, :func:`~.dest_lookup.dest_entry_layout`),
      ``dest_rd_index`` -> ``dest_rd_entry``, and every counter as a port
      ``<part>_<sub>_stat_<name>`` (``h<p>_in``, ``h<p>_out``, ``u<u>_rx``, ``u<u>_tx``,
      ``ctl``, ``lm``), and (GSE mode) each host port's VOQ query port as
      ``h<p>_in_voq_query_<name>`` (in: ``queue``, ``tenant``; out a clock later:
      ``pkts``, ``bytes``, ``cells``, ``drops``, ``tenant_cells``, ``tenant_drops``).
    """

    def __init__(
        self,
        config=GSEConfig(),
        lb="gse",
        delay=100,
        host_store_bytes=32768,
        fab_store_bytes=16384,
        max_frame_bytes=9216,
        slot_bytes=None,
        reorder_timeout=32768,
        probe_interval=1024,
        refresh_cycles=8192,
        idle_cycles=16384,
        lease_cycles=8192,
        n_req=64,
        config_ports=False,
        lean_requests=True,
        extra_blocks=(),
        counter_store=False,
        extra_counters=(),
    ):
        if lb not in LB_MODES:
            raise ValueError(f"lb must be one of {', '.join(LB_MODES)}, not {lb!r}")
        cfg = self.config = config
        self.lb = lb
        need = cfg.container_bytes + max_frame_bytes + 18
        if slot_bytes is None:
            slot_bytes = 1 << (need - 1).bit_length()
        elif slot_bytes < need:
            raise ValueError(
                f"slot_bytes {slot_bytes} cannot hold a {cfg.container_bytes}-byte container and the "
                f"{max_frame_bytes}-byte frame that may overrun it (needs {need})"
            )
        H, U, w = cfg.host_ports, cfg.uplinks, cfg.data_width
        bpb = w // 8
        # headroom above XOFF: 2 x delay beats and one frame (pause_thresholds)
        hx = pause_thresholds(delay, max_frame_bytes, w, host_store_bytes)
        fx = pause_thresholds(delay, max_frame_bytes + 18, w, fab_store_bytes)
        self.lookup = DestLookup(entries=cfg.nodes, ports=H, latency=LOOKUP_LATENCY)
        # GSE mode: the per-(host port, uplink) queues; with them the control frames go
        # round them and the sprayers need not avoid each other (rtl/config.py)
        host_queue_bytes = cfg.uplink_queue_bytes if lb == "gse" and H > 1 else 0
        if host_queue_bytes and host_queue_bytes < max_frame_bytes + 18:
            # store-and-forward: a frame longer than the queue could never leave it
            raise ValueError(
                f"GSEConfig.uplink_queue_bytes {host_queue_bytes} cannot hold a tagged "
                f"{max_frame_bytes}-byte frame (needs {max_frame_bytes + 18}; or 0: no queues)"
            )
        self._avoid = not host_queue_bytes
        self.hin = [
            HostIngress(
                cfg,
                store_depth=host_store_bytes // bpb,
                xoff_bytes=hx[1],
                xon_bytes=hx[2],
                max_frame_bytes=max_frame_bytes,
                refresh_cycles=refresh_cycles,
                idle_cycles=idle_cycles,
                lb=lb,
                lean_requests=lean_requests,
                ctrl_uplinks=bool(host_queue_bytes),
                lookup_latency=LOOKUP_LATENCY,
            )
            for _ in range(H)
        ]
        self.hout = [
            HostEgress(
                cfg,
                port=p,
                reorder=int(lb == "gse"),
                slot_bytes=slot_bytes,
                reorder_timeout=reorder_timeout,
                n_req=n_req,
                lease_cycles=lease_cycles,
            )
            for p in range(H)
        ]
        self.fin = [FabricIngress(w, H, fab_store_bytes, fx[1], fx[2], cfg.ethertype) for _ in range(U)]
        # ECMP: the VOQ buffers' bytes become the uplinks' output queues (same total)
        queue_bytes = 0 if lb == "gse" else _pow2_at_most(H * cfg.voq_buffer_bytes // U)
        self.utx = [UplinkTx(w, H, queue_bytes, host_queue_bytes) for _ in range(U)]
        self.ctl = ControlRx(w, U, H, cfg.ethertype)
        self.lm = LinkMonitor(data_width=w, links=U, interval=probe_interval)
        sig = AXIStreamSignature(w)
        members = {
            "s_axis_host": In(sig).array(H),
            "host_pause": Out(1).array(H),
            "m_axis_host": Out(sig).array(H),
            "host_pause_in": In(1).array(H),
            "s_axis_fab": In(sig).array(U),
            "fab_pause": Out(1).array(U),
            "m_axis_fab": Out(sig).array(U),
            "fab_pause_in": In(1).array(U),
            "link_up": In(U),
            "healthy": Out(U),
        }
        self._stat_parts = {"lm": self.lm, "ctl": self.ctl}
        for p in range(H):
            self._stat_parts[f"h{p}_in"] = self.hin[p]
            self._stat_parts[f"h{p}_out"] = self.hout[p]
        for u in range(U):
            self._stat_parts[f"u{u}_rx"] = self.fin[u]
            self._stat_parts[f"u{u}_tx"] = self.utx[u]
        self.config_ports = config_ports
        if config_ports:
            members.update(
                {
                    "node_base": In(16),
                    "ecmp_seed": In(32),
                    "host_tc": In(interfaces.FIELD_BITS["tc"]).array(H),
                    "host_tenant": In(interfaces.FIELD_BITS["tenant"]).array(H),
                    "s_dest": In(stream.Signature(dest_entry_layout(cfg.nodes))),
                    "dest_rd_index": In(range(cfg.nodes)),
                    "dest_rd_entry": Out(dest_entry_layout(cfg.nodes)),
                }
            )
            for prefix, part in self._stat_parts.items():
                members.update(stat_members(prefix, part, nested=True))
                members.update(query_members(prefix, part))
        self.extra_blocks = tuple(extra_blocks)
        if self.extra_blocks and config_ports:
            raise ValueError("extra_blocks need the register bank (not config_ports)")
        for blk in self.extra_blocks:
            for reg in blk:
                if reg.access != Access.RO or reg.const:
                    raise ValueError(f"extra block {blk.name}: {reg.name} is not a plain RO register")
                member, name = In(reg.width), port_name(blk, reg)
                if name in members:
                    raise ValueError(f"extra block {blk.name}: port {name!r} collides with a leaf port")
                members[name] = member.array(reg.count) if reg.count > 1 else member
        if not config_ports:
            self.regmap = leaf_register_map(self, self.extra_blocks)
            counters = stored_counters(self, self.regmap) if counter_store else None
            for blk in self.extra_blocks if counter_store else ():
                if blk.name in extra_counters:
                    counters.update({port_name(blk, reg): 1 for reg in blk if reg.width == 32})
            self.bank = AXI4LiteRegisterBank(self.regmap, counters=counters)
            members.update(
                {n: mb for n, mb in self.bank.signature.members.items() if n.startswith("s_axil_")}
            )
        super().__init__(members)

    def parts(self):
        """``{prefix: part}``: the parts whose counters the leaf shows."""
        return dict(self._stat_parts)

    def _config(self, m):
        """The configuration signals, from the ports or from the register bank."""
        H = self.config.host_ports
        node_base, seed = Signal(16, name="cfg_node_base"), Signal(32, name="cfg_ecmp_seed")
        tcs = [Signal(interfaces.FIELD_BITS["tc"], name=f"cfg_tc_{p}") for p in range(H)]
        tenants = [Signal(interfaces.FIELD_BITS["tenant"], name=f"cfg_tenant_{p}") for p in range(H)]
        lookup = self.lookup
        if self.config_ports:
            wiring.connect(m, wiring.flipped(self.s_dest), lookup.s_write)
            m.d.comb += [
                node_base.eq(self.node_base),
                seed.eq(self.ecmp_seed),
                lookup.rd_index.eq(self.dest_rd_index),
                self.dest_rd_entry.eq(lookup.rd_entry),
            ]
            m.d.comb += [tcs[p].eq(self.host_tc[p]) for p in range(H)]
            m.d.comb += [tenants[p].eq(self.host_tenant[p]) for p in range(H)]
            for prefix, part in self._stat_parts.items():
                forward_stats(m, self, prefix, part, nested=True)
                forward_query(m, self, prefix, part)
            return node_base, seed, tcs, tenants
        m.submodules.bank = bank = self.bank
        m.submodules.sys = sysc = SystemCounters(self.regmap.fingerprint())
        for name, member in bank.signature.members.items():
            if name.startswith("s_axil_"):
                ours, theirs = getattr(self, name), getattr(bank, name)
                m.d.comb += theirs.eq(ours) if member.flow == In else ours.eq(theirs)
        connect_registers(m, bank, self.regmap["sys"], sysc, skip=("scratch",))
        connect_leaf_registers(m, bank, self.regmap, self)
        connect_dest_table(m, bank, lookup)
        for blk in self.extra_blocks:
            for reg in blk:
                m.d.comb += getattr(bank, port_name(blk, reg)).eq(getattr(self, port_name(blk, reg)))
        m.d.comb += [
            node_base.eq(bank.leaf_node_base),
            seed.eq(bank.leaf_ecmp_seed),
            bank.leaf_healthy.eq(self.lm.healthy),
            bank.leaf_link_up.eq(self.link_up),
        ]
        host_tc, host_tenant = bank.elements("leaf", "host_tc"), bank.elements("leaf", "host_tenant")
        m.d.comb += [tcs[p].eq(host_tc[p]) for p in range(H)]
        m.d.comb += [tenants[p].eq(host_tenant[p]) for p in range(H)]
        return node_base, seed, tcs, tenants

    def elaborate(self, platform):
        m = Module()
        H, U = self.config.host_ports, self.config.uplinks
        m.submodules.lookup = lookup = self.lookup
        m.submodules.ctl = ctl = self.ctl
        m.submodules.lm = lm = self.lm
        node_base, ecmp_seed, tcs, tenants = self._config(m)

        def near(value, name):
            """``value`` through a register of its own for one consumer: configuration
            (and the link monitor's healthy set) fans out across the chip, and a copy per
            part is placed beside it, so no route from the bank reaches a part's logic in
            the clock it is used (fab_in's node compare, 6 ns of route on the ECPIX-5
            leaf). Each takes effect a clock later."""
            reg = Signal.like(value, name=name)
            m.d.sync += reg.eq(value)
            return reg

        m.d.comb += [
            ctl.node_base.eq(near(node_base, "ctl_node_base")),
            lm.src_node.eq(near(node_base, "lm_node_base")),
            lm.link_up.eq(self.link_up),
            self.healthy.eq(lm.healthy),
        ]
        for p in range(H):
            hin, hout = self.hin[p], self.hout[p]
            m.submodules[f"host_in_{p}"] = hin
            m.submodules[f"host_out_{p}"] = hout
            node = Signal(16, name=f"node_{p}")
            m.d.comb += node.eq(node_base + p)
            wiring.connect(m, wiring.flipped(self.s_axis_host[p]), hin.s_axis)
            m.d.comb += [
                self.host_pause[p].eq(hin.pause),
                lookup.key[p].eq(hin.lookup_key),
                hin.lookup_result.eq(lookup.result[p]),
                hin.node_id.eq(near(node, f"host_in_{p}_node_id")),
                hin.tc.eq(near(tcs[p], f"host_in_{p}_tc")),
                hin.tenant.eq(near(tenants[p], f"host_in_{p}_tenant")),
                hin.healthy.eq(near(lm.healthy, f"host_in_{p}_healthy")),
                hin.ecmp_seed.eq(near(ecmp_seed, f"host_in_{p}_ecmp_seed")),
                hin.sp_avoid.eq(_others_busy(self.hin, p) if self._avoid else 0),
                hout.node_id.eq(near(node, f"host_out_{p}_node_id")),
                hout.pause_in.eq(self.host_pause_in[p]),
            ]
            wiring.connect(m, ctl.m_grant[p], hin.s_grant)
            wiring.connect(m, ctl.m_req[p], hout.s_req)
            wiring.connect(m, hout.m_grant_frames, hin.s_grant_frames)
            wiring.connect(m, hout.m_axis, wiring.flipped(self.m_axis_host[p]))
        for u in range(U):
            fin, utx = self.fin[u], self.utx[u]
            m.submodules[f"fab_in_{u}"] = fin
            m.submodules[f"uplink_tx_{u}"] = utx
            wiring.connect(m, wiring.flipped(self.s_axis_fab[u]), fin.s_axis)
            m.d.comb += [
                self.fab_pause[u].eq(fin.pause),
                fin.node_base.eq(near(node_base, f"fab_in_{u}_node_base")),
                lm.probe_rx[u].eq(fin.probe_rx),
                # a far end that pauses us is alive: pause is PFC frames it sends. Its
                # PROBE return may wait behind data it holds (the spine's input store),
                # so a congested lossless link was taken for dead and ECMP's flows
                # moved (incast: 4 down events, 115 frames reordered, 6 late)
                lm.rx_frame[u].eq(fin.frame_rx | self.fab_pause_in[u]),
                lm.tx_data[u].eq(utx.tx_data),
                utx.pause_in.eq(self.fab_pause_in[u]),
                utx.node_base.eq(near(node_base, f"uplink_tx_{u}_node_base")),
            ]
            wiring.connect(m, fin.m_ctl, ctl.s_ctl[u])
            for p in range(H):
                wiring.connect(m, fin.m_data[p], self.hout[p].s_data[u])
                wiring.connect(m, self.hin[p].m_up[u], utx.s_host[p])
                if self.hin[p].ctrl_uplinks:
                    wiring.connect(m, self.hin[p].m_ctl_up[u], utx.s_ctrl[p])
            wiring.connect(m, lm.m_probe[u], utx.s_probe)
            wiring.connect(m, utx.m_axis, wiring.flipped(self.m_axis_fab[u]))
        return m


#: The GSEConfig fields the catalog's leaf factory takes among its parameters (the rest
#: are GSELeaf's own).
LEAF_CONFIG_KEYS = (
    "data_width",
    "host_ports",
    "uplinks",
    "nodes",
    "queues",
    "tenants",
    "voq_buffer_bytes",
    "egress_buffer_bytes",
    "reorder_window",
    "max_inflight",
    "container_bytes",
    "spray_policy",
    "uplink_queue_bytes",
)


def _leaf(lb=0, **params):
    cfg = GSEConfig(**{k: v for k, v in params.items() if k in LEAF_CONFIG_KEYS})
    rest = {k: v for k, v in params.items() if k not in LEAF_CONFIG_KEYS}
    return GSELeaf(cfg, lb=LB_MODES[lb], **rest)


#: The catalog's leaf (``gse export leaf``, ``gse bench leaf``): a 2 x 2, 64-bit GSE
#: leaf of an 8-node fabric with small buffers (1536-byte frames, 2 KB containers, reorder
#: windows of 2), the configuration that fits LFE5UM5G-85F (docs/leaf.md, ECP5). The
#: reference fabric's 4 x 4 leaf is ``GSELeaf(GSEConfig(), delay=100)`` (``lb`` 0 = gse,
#: 1 = ecmp).
LEAF_PARAMS = {
    "lb": 0,
    "data_width": 64,
    "host_ports": 2,
    "uplinks": 2,
    "nodes": 8,
    "queues": 16,
    "voq_buffer_bytes": 16384,
    "egress_buffer_bytes": 8192,
    "reorder_window": 2,
    "max_inflight": 2,
    "container_bytes": 2048,
    "spray_policy": 1,
    "uplink_queue_bytes": 0,
    "delay": 16,
    "host_store_bytes": 4096,
    "fab_store_bytes": 4096,
    "max_frame_bytes": 1536,
    "slot_bytes": 4096,
    "reorder_timeout": 4096,
    "probe_interval": 1024,
    "n_req": 16,
}

EXPORTS = [
    BlockSpec(
        name="leaf",
        module="gse_leaf",
        factory=_leaf,
        params=LEAF_PARAMS,
        description="GSP leaf switch: H host ports and U uplinks; host ingress (store, "
        "destination lookup, tagger, DGSQ manager, VOQ, container framing, sprayer), "
        "uplinks (PROBEs, round-robin, pause), fabric ingress (store, parser, control "
        "decode), host egress (reorder, untag, egress FIFO, grant arbiter)",
    )
]
