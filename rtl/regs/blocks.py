"""The registers of every catalog block, derived from its signature.

:data:`BLOCK_REGISTERS` maps a catalog block name to a :class:`BlockRegisters`: the
meaning of each of its plain ports, the RW reset values, the ports another block drives
inside a top (``wired``), and registers described by hand where the block takes its
configuration through a stream (the grant arbiter's tenant weights). Counters are the
blocks' ``stat_*`` outputs: unsigned, wrapping at their width.

:func:`block_registers` turns one into a :class:`~.description.RegisterBlock` for a
built component (widths and array sizes come from the component, so they follow its
parameters); :func:`reference_map` is the map of one instance of every block with the
catalog defaults, which ``gse regs`` documents.
"""

from dataclasses import dataclass, field

from amaranth.hdl import Cat

from .description import Access, Register, RegisterMap
from .bank import port_name
from .from_signature import connect_registers, register_block
from .system import system_block

__all__ = ["BlockRegisters", "BLOCK_REGISTERS", "block_registers", "connect_block", "reference_map"]


@dataclass(frozen=True)
class BlockRegisters:
    doc: str
    docs: dict  # port name -> meaning
    resets: dict = field(default_factory=dict)  # RW port -> reset value
    wired: tuple = ()  # ports joined to other blocks in a top
    extra: object = None  # callable(component) -> [Register]
    connect_extra: object = None  # callable(m, bank, block, component)


def _arbiter_weights(component):
    return [
        Register(
            "weight",
            8,
            Access.RW,
            reset=1,
            count=component.n_tenants,
            strobe=True,
            doc="tenant weight: grants per round-robin round for requesters of "
            "tenant `i` (tenant id modulo the array size); a write sends it "
            "to the arbiter's `s_cfg`. 0 behaves as 1",
        )
    ]


def _connect_arbiter_weights(m, bank, block, arbiter):
    """A write of ``weight[i]`` is one ``s_cfg`` transfer (tenant ``i``, the new weight) in
    the clock after it took effect; the arbiter's ``s_cfg`` is always ready, and one
    write happens per clock at most, so none is lost."""
    reg = block["weight"]
    name = port_name(block, reg)
    written, values = getattr(bank, f"{name}_written"), getattr(bank, name)
    m.d.comb += arbiter.s_cfg.valid.eq(Cat(*written).any())
    for i in range(reg.count):
        with m.If(written[i]):
            m.d.comb += [arbiter.s_cfg.payload.tenant.eq(i), arbiter.s_cfg.payload.weight.eq(values[i])]


_W = "frames marked bad in `tuser` by the MAC (passed on flagged)"

BLOCK_REGISTERS = {
    "tagger": BlockRegisters(
        "GSE tagger of a host port (rtl/header/tagger.py)",
        {
            "stat_frames": "frames tagged",
            "stat_drop_spoof": "frames dropped whole: they already carried the GSE EtherType",
            "stat_drop_runt": "frames dropped whole: shorter than 14 bytes",
            "stat_err_frame": _W,
        },
    ),
    "parser": BlockRegisters(
        "GSE parser of a fabric port (rtl/header/parser.py)",
        {
            "stat_frames": "GSE frames passed",
            "stat_other": "non-GSE frames passed",
            "stat_drop_runt": "frames dropped whole: ended before the 32-byte header",
            "stat_drop_ver": "frames dropped whole: `ver` is not 1",
            "stat_drop_type": "frames dropped whole: reserved `type`",
            "stat_drop_ttl": "frames dropped whole: `ttl` is 0",
            "stat_err_len": "DATA frames whose `len` + 18 differs from their length (passed flagged)",
            "stat_err_frame": _W,
        },
    ),
    "voq": BlockRegisters(
        "VOQ buffer: shared packet buffer, per-queue accounting (rtl/voq/buffer.py)",
        {
            "query_queue": "queue the `query_*` registers show (read them a clock later)",
            "query_pkts": "packets in queue `query_queue`",
            "query_bytes": "bytes in queue `query_queue`",
            "query_cells": "cells held by queue `query_queue`",
            "query_drops": "packets dropped for queue `query_queue`",
            "query_tenant": "tenant the `query_tenant_*` registers show",
            "query_tenant_cells": "cells held by tenant `query_tenant`",
            "query_tenant_drops": "packets dropped for tenant `query_tenant`",
            "init_done": "1 once the tables are cleared after reset (no input before)",
            "stat_free_cells": "free cells (free list length, sentinel and the packet "
            "being written included)",
            "stat_queued_cells": "cells on queues",
            "stat_deq_cells": "cells taken off a queue, not yet returned",
            "stat_enq_cells": "cells the packet being written occupies",
            "stat_invariant_err": "sticky: an accounting check failed (never should)",
            "stat_enq_pkts": "packets enqueued",
            "stat_deq_pkts": "packets sent",
            "stat_drop_bad": "packets dropped: flagged bad in `tuser`",
            "stat_drop_full": "packets dropped: no free cell (or none of the shared pool)",
            "stat_drop_queue": "packets dropped: queue at its cell limit",
            "stat_drop_tenant": "packets dropped: tenant at its cell limit",
            "stat_drop_dt": "packets dropped: dynamic threshold (alpha x free)",
        },
    ),
    "grant_arbiter": BlockRegisters(
        "grant arbiter of one host egress port (rtl/dgsq/arbiter/)",
        {
            "outstanding": "credit units granted and not yet arrived",
            "slots_used": "live requester slots",
            "stat_grants": "GRANTs issued",
            "stat_requests": "REQUESTs received",
            "stat_req_no_slot": "REQUESTs dropped: no free slot",
            "stat_arr_unknown": "arrivals for no live slot (ignored)",
            "stat_lease_expired": "slots freed because their grants' data never came",
            "stat_room_stall": "clocks a grant waited for egress room",
        },
        wired=("egress_room",),
        extra=_arbiter_weights,
        connect_extra=_connect_arbiter_weights,
    ),
    "dgsq_manager": BlockRegisters(
        "DGSQ manager: source-side dynamic queues, REQUESTs, GRANTs (rtl/dgsq/manager/)",
        {
            "node_id": "this leaf's node id (`src_node` of its REQUESTs)",
            "ctx_used": "queue contexts in use",
            "stat_pool_full": "packets held because the context pool was full",
            "stat_alloc": "contexts allocated",
            "stat_freed": "contexts freed after their idle time",
            "stat_requests": "REQUESTs sent",
            "stat_refresh": "REQUESTs sent by the refresh timer",
            "stat_grants": "GRANTs received",
            "stat_grant_unknown": "GRANTs for a free context (no effect)",
            "stat_grant_gap": "GRANTs whose `seq` skipped one (a GRANT was lost)",
            "stat_grant_unused": "grants whose container left credit unused",
            "stat_grant_void": "GRANTs that brought no container (void; REQUESTs report them)",
            "stat_releases": "container releases sent to the VOQ",
        },
    ),
    "ctl_encoder": BlockRegisters(
        "REQUEST/GRANT frame encoder (rtl/header/control_frames.py)",
        {
            "mac_da": "destination MAC of control frames",
            "mac_sa": "source MAC of control frames",
            "stat_frames": "control frames sent",
        },
    ),
    "ctl_decoder": BlockRegisters(
        "REQUEST/GRANT frame decoder (rtl/header/control_frames.py)",
        {
            "stat_ctl": "good REQUEST/GRANT frames",
            "stat_drop_other": "frames dropped: not GSE control (DATA, PROBE, not GSE, "
            "shorter than 14 bytes)",
            "stat_drop_malformed": "frames dropped: bad `ver`, reserved `type`, `ttl` 0 "
            "or shorter than 32 bytes",
            "stat_drop_err": "frames dropped: flagged bad in `tuser`",
        },
    ),
    "sprayer": BlockRegisters(
        "container sprayer over the fabric uplinks (rtl/pktc/sprayer.py)",
        {
            "stat_containers": "containers sent on uplink `i`",
            "stat_bytes": "bytes sent on uplink `i`",
            "stat_ctrl": "control frames sent",
            "stat_stall_no_uplink": "clocks a ready container or control frame waited for a healthy uplink",
        },
        wired=("healthy", "avoid", "busy"),
    ),
    "link_monitor": BlockRegisters(
        "PROBE keep-alives and the healthy-uplink set (rtl/pktc/link_monitor.py)",
        {
            "src_node": "this leaf's node id (in PROBEs)",
            "healthy": "uplinks in the healthy set, one bit each",
            "stat_probes_sent": "PROBEs sent on link `i`",
            "stat_probes_rcvd": "PROBEs received on link `i`",
            "stat_probes_missed": "intervals link `i` went without a PROBE or data",
            "stat_probes_skipped": "PROBEs not sent on link `i`: it sent data and received a frame "
            "other than a PROBE in the interval before",
            "stat_down_events": "times link `i` left the healthy set",
        },
        wired=("probe_rx", "rx_frame", "tx_data", "link_up"),
    ),
    "reorder": BlockRegisters(
        "reorder buffer of the fabric ingress (rtl/pktc/reorder/)",
        {
            "stat_frames_in": "frames received",
            "stat_containers_out": "containers released in order",
            "stat_lost": "containers skipped after the timeout (missing or partial)",
            "stat_drop_dup": "frames of a container already stored or released",
            "stat_drop_window": "frames of a container more than the window ahead",
            "stat_drop_orphan": "frames of a container whose FIRST frame never came",
            "stat_drop_bad": "containers discarded whole: a frame flagged bad, or larger than a slot",
            "stat_drop_runt": "frames shorter than the 32-byte tagged header",
            "stat_drop_other": "frames not v1 DATA, or from a source out of range",
            "stat_lost_overrun": "of stat_lost, heads skipped at once: proven lost by skip_distance",
        },
    ),
    "control_demux": BlockRegisters(
        "decoded control headers to the arbiter and the manager (rtl/dgsq/control_demux.py)",
        {
            "stat_requests": "REQUESTs passed to the grant arbiter",
            "stat_grants": "GRANTs passed to the DGSQ manager",
            "stat_drop_type": "control headers of another type (dropped)",
        },
    ),
    "grant_framing": BlockRegisters(
        "grant decisions to GRANT headers (rtl/dgsq/grant_framing.py)",
        {
            "node_id": "this leaf's node id (`src_node` of its GRANTs)",
            "port": "the egress port whose arbiter this is (`port` of its GRANTs)",
            "stat_grants": "GRANT headers sent",
        },
    ),
    "container_framing": BlockRegisters(
        "releases to the VOQ and the sprayer's descriptors (rtl/dgsq/container_framing.py)",
        {
            "stat_releases": "releases passed to the VOQ buffer",
            "stat_empty_releases": "releases that sent no packet (queue empty or no credit)",
        },
    ),
    "packet_mux": BlockRegisters(
        "whole-packet multiplexer (rtl/lib/packet_mux.py)", {"stat_packets": "packets taken from input `i`"}
    ),
    "packet_demux": BlockRegisters(
        "whole-packet demultiplexer (rtl/lib/packet_demux.py)",
        {"stat_drop_unrouted": "packets whose select named no output (dropped whole)"},
    ),
    "skid_buffer": BlockRegisters("two-entry register slice (rtl/lib/skid_buffer.py)", {}),
    "ecmp_selector": BlockRegisters(
        "ECMP baseline uplink choice by a CRC-32 of the flow key (rtl/pktc/ecmp_selector.py)",
        {
            "seed": "hash seed: the CRC-32 start value",
            "stat_frames": "frames sent on uplink `i`",
            "stat_mac_hashed": "frames hashed on their MACs (not IPv4 in GSE, or shorter than 56 bytes)",
            "stat_drop_no_uplink": "frames dropped because no uplink was healthy",
        },
        wired=("healthy",),
    ),
    "pause_fifo": BlockRegisters(
        "always-ready receive store of a paused link (rtl/lib/pause_fifo.py)",
        {
            "pause": "1 while the store asks its sender to stop (above XOFF until below XON)",
            "level": "beats in the store",
            "stat_drop_overflow": "frames the store had no room for (dropped, or cut and flagged bad)",
            "stat_pause_cycles": "clocks with `pause` = 1",
            "stat_peak_level": "highest `level` since reset",
        },
    ),
    "pause_gate": BlockRegisters(
        "holds a sending port at frame boundaries while paused (rtl/lib/pause_gate.py)",
        {
            "stat_pause_cycles": "clocks with `pause` = 1",
            "stat_held_cycles": "clocks a frame waited at the gate because of `pause`",
        },
        wired=("pause",),
    ),
    "rgmii_mac": BlockRegisters(
        "RGMII 1 Gb/s MAC (rtl/mac/mac.py)",
        {
            "stat_rx_good": "frames received with a good FCS",
            "stat_rx_error": "frames received with an RX error (rx_ctl), passed flagged",
            "stat_rx_runt": "frames shorter than 64 bytes with FCS, passed flagged",
            "stat_rx_bad_fcs": "frames with a bad FCS, passed flagged",
            "stat_rx_overrun": "frames cut or dropped because the core side was full",
            "stat_rx_no_sfd": "carrier events without a start-of-frame delimiter",
            "stat_tx_frames": "frames sent",
            "stat_tx_bad": "frames sent with an inverted FCS (flagged bad in `tuser`)",
            "stat_tx_underrun": "frames cut off with tx_er (data came too late)",
        },
        wired=("rgmii_rxd", "rgmii_rx_ctl", "rgmii_txd", "rgmii_tx_ctl", "rgmii_txc"),
    ),
    "spine": BlockRegisters(
        "GSF spine switch (rtl/tops/spine.py)",
        {
            "route_rd_node": "node whose route `route_rd_port` shows",
            "route_rd_port": "output port of node `route_rd_node` (>= ports: no route)",
            "stat_frames_in": "frames received on port `i`",
            "stat_drop_runt": "frames dropped on port `i`: shorter than the 32-byte header",
            "stat_drop_ver": "frames dropped on port `i`: `ver` is not 1",
            "stat_drop_type": "frames dropped on port `i`: reserved `type`",
            "stat_drop_ttl": "frames dropped on port `i`: `ttl` 0 on arrival",
            "stat_drop_not_gse": "frames dropped on port `i`: not the GSE EtherType",
            "stat_drop_no_route": "frames dropped on port `i`: no route for `dst_node`",
            "stat_err_len": "DATA frames on port `i` whose `len` disagrees (passed flagged)",
            "stat_frames_out": "frames sent on port `i`",
            "stat_ctl_out": "control frames sent on port `i`",
            "stat_drop_bad": "frames for port `i` dropped whole: flagged bad in `tuser`",
            "stat_drop_oversize": "frames for port `i` dropped: larger than its queue",
            "stat_pause_cycles": "clocks input `i` asked its sender to pause",
            "stat_drop_overflow": "frames input `i`'s pause store had no room for (sender ignored pause)",
            "stat_held_cycles": "clocks a frame waited at output `i` because its receiver paused it",
        },
        wired=("pause", "pause_in"),
    ),
    "fabric_link": BlockRegisters(
        "failable delay-line link of a simulated fabric (rtl/tb/link.py)",
        {
            "stat_beats": "beats delivered (busy clocks: the link's utilisation)",
            "stat_frames": "frames delivered",
            "stat_beats_lost": "beats lost while the link was failed",
            "stat_frames_lost": "frames lost or cut by a failure",
            "stat_refused": "beats offered while the receiver was not ready (a broken contract)",
        },
        wired=("fail", "pause_in", "pause_out"),
    ),
    "traffic_gen": BlockRegisters(
        "RoCEv2-like traffic generator of test runs and boards (rtl/tb/traffic_gen.py)",
        {
            "enable": "1: send; the destination table is written while 0",
            "host": "this generator's host id (MAC, IPv4 address, payload source)",
            "frame_min": "smallest frame in bytes (60..9000)",
            "frame_max": "largest frame in bytes (frame_min..9000)",
            "rate": "offered rate, 65536 = line rate",
            "flows": "flows in use (0 sends nothing)",
            "random": "1: flows drawn at random; 0: in turn",
            "tenant": "tenant carried in the payload",
            "tc": "traffic class carried in the payload",
            "seed": "seed of the per-flow UDP source ports and the random draws",
            "stat_frames": "frames sent",
            "stat_bytes": "original frame bytes sent (DA..end of payload)",
            "stat_paused": "clocks a frame waited because of `pause`",
        },
        wired=("pause",),
    ),
    "traffic_check": BlockRegisters(
        "traffic checker of test runs and boards (rtl/tb/traffic_check.py)",
        {
            "host": "this checker's host id (frames for another host are foreign)",
            "hist_addr": "latency histogram bin to read on `hist_data`",
            "hist_data": "frames counted in bin `hist_addr`",
            "stat_frames": "frames received",
            "stat_bytes": "bytes received",
            "stat_good_frames": "frames received intact, in order, once",
            "stat_good_bytes": "bytes of those frames",
            "stat_lost": "net loss: sequence gaps per flow",
            "stat_reordered": "frames behind their flow's next sequence number",
            "stat_duplicate": "frames received twice",
            "stat_late": "frames more than the window behind their flow",
            "stat_corrupt": "frames whose payload check failed",
            "stat_bad": "frames with `tuser` set on their last beat",
            "stat_foreign": "frames not from a generator, or for another host",
            "stat_lat_sum": "sum of latencies (clocks) of good frames",
            "stat_lat_max": "largest latency (clocks) seen",
            "stat_tenant_bytes": "good bytes of tenant `i`",
        },
    ),
    "leaf": BlockRegisters(
        "GSE leaf (rtl/tops/leaf/); a leaf carries its own AXI4-Lite bank with the map of "
        "rtl/tops/leaf/registers.py (configuration and every part's counters)",
        {"healthy": "uplinks the leaf's link monitor holds healthy"},
        wired=("host_pause", "host_pause_in", "fab_pause", "fab_pause_in", "link_up")
        + tuple(
            f"s_axil_{n}"
            for n in (
                "awaddr awvalid awready wdata wstrb wvalid wready bresp bvalid bready "
                "araddr arvalid arready rdata rresp rvalid rready"
            ).split()
        ),
    ),
}


def block_registers(kind, component, name=None):
    """The :class:`~.description.RegisterBlock` of ``component``, a built catalog block
    of kind ``kind`` (``"voq"``, ...), named ``name`` in the map (default ``kind``)."""
    spec = BLOCK_REGISTERS[kind]
    extra = spec.extra(component) if spec.extra else ()
    return register_block(
        name or kind, component, spec.docs, doc=spec.doc, resets=spec.resets, wired=spec.wired, extra=extra
    )


def connect_block(m, bank, kind, block, component):
    """Join ``component`` (a block of kind ``kind``) to its registers ``block`` in
    ``bank``: every derived register by port name, and the hand-described ones (the
    arbiter's weights onto its ``s_cfg``)."""
    spec = BLOCK_REGISTERS[kind]
    extra = [r.name for r in spec.extra(component)] if spec.extra else []
    connect_registers(m, bank, block, component, skip=extra)
    if spec.connect_extra:
        spec.connect_extra(m, bank, block, component)


#: Build options of blocks whose catalog build has its own bank: the reference map
#: describes their ports (the spine's table and counters, ``config_ports``); the
#: spine's own map is :func:`~opengse.rtl.tops.spine_registers.spine_register_map`.
PORTS_BUILD = {"spine": {"config_ports": True}}


def reference_map():
    """One instance of every catalog block with its default parameters, behind the
    ``sys`` block: the map ``gse regs`` documents. A top with other parameters or several
    instances builds its own map the same way (see docs/register-map.md)."""
    from ..catalog import get_block

    blocks = [system_block()]
    for kind in BLOCK_REGISTERS:
        spec = get_block(kind)
        component = spec.factory(**spec.params, **PORTS_BUILD.get(kind, {}))
        component._MustUse__silence = True  # built for its signature only
        blocks.append(block_registers(kind, component))
    return RegisterMap(blocks, name="gse", doc="reference map: one instance of every block, catalog defaults")
