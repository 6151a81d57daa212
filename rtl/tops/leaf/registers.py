"""The leaf's register map: its own configuration and every part's counters, behind one
AXI4-Lite bank (docs/leaf.md, Registers; docs/register-map.md for the mechanism).

Blocks of the map: ``sys``; ``leaf`` (configuration: ``node_base``, ``ecmp_seed``,
``host_tc[p]``, ``host_tenant[p]``, the destination table through ``dest_*``, status
``healthy``, ``link_up``, ``lb``); then one block per part: ``lm`` (link monitor),
``ctl`` (control receive), ``h<p>_in`` / ``h<p>_out`` (host port p's ingress and
egress), ``u<u>_rx`` / ``u<u>_tx`` (uplink u). A part's counter ``<sub>_stat_<name>``
is the RO register ``<sub>_<name>``, documented as the sub-block's ``stat_<name>`` is
in :data:`~opengse.rtl.regs.blocks.BLOCK_REGISTERS`.

A part's query port (``voq_query_*`` of ``h<p>_in`` in GSE mode: the VOQ buffer's
per-queue and per-tenant counts, drop tables included) is a set of registers of its
block: the inputs RW (``voq_query_queue``, ``voq_query_tenant``), the outputs RO
(valid a clock after an index is written, so any AXI4-Lite read after the write
sees them). With the leaf's ``config_ports`` the same ports are the leaf's
``<part>_voq_query_*`` (:func:`query_members`, :func:`forward_query`).
"""

from amaranth.hdl import Shape
from amaranth.lib import wiring

from ...regs.bank import port_name
from ...regs.blocks import BLOCK_REGISTERS
from ...regs.description import Access, Register, RegisterBlock, RegisterMap
from ...regs.system import system_block

__all__ = [
    "leaf_register_map",
    "stored_counters",
    "connect_leaf_registers",
    "connect_dest_table",
    "query_members",
    "forward_query",
    "SUB_KINDS",
]

#: Prefix of a part's sub-block -> catalog kind whose register docs describe it.
SUB_KINDS = {
    "tag": "tagger",
    "mgr": "dgsq_manager",
    "voq": "voq",
    "cf": "container_framing",
    "sp": "sprayer",
    "req_enc": "ctl_encoder",
    "sel": "ecmp_selector",
    "ro": "reorder",
    "untag": "parser",
    "arb": "grant_arbiter",
    "gf": "grant_framing",
    "store": "pause_fifo",
    "parser": "parser",
    "dec": "ctl_decoder",
}

#: Counters and status of the leaf's own parts (not catalog blocks).
OWN_DOCS = {
    "cls_stat_frames": "frames passed to the tagger",
    "cls_stat_drop_unknown": "frames dropped whole: destination MAC not in the table",
    "cls_stat_drop_spoof": "frames dropped whole: they already carried the GSE EtherType",
    "cls_stat_store_frames": "frames the host-side store took",
    "cls_stat_store_drop_overflow": "frames dropped whole: the host-side store was full (host ignored pause)",
    "cls_stat_store_drop_bad": "frames dropped whole: marked bad in `tuser`",
    "cls_stat_store_drop_runt": "frames dropped whole: shorter than 14 bytes",
    "cls_stat_store_drop_long": "frames dropped whole: longer than the leaf's max_frame_bytes",
    "cls_stat_store_pause_cycles": "clocks the leaf asked this host to pause",
    "voq_free_cells": "free cells of the VOQ buffer",
    "ctx_used": "DGSQ contexts in use",
    "stat_frames_out": "frames sent to the host",
    "stat_drop_bad": "frames the egress FIFO dropped whole: flagged bad",
    "stat_drop_oversize": "frames the egress FIFO dropped whole: larger than the FIFO",
    "stat_arrivals": "frames that entered the egress FIFO (arrivals reported to the arbiter)",
    "stat_pause_cycles": "clocks the receiver asked this port to pause",
    "stat_drop_admit": "frames for this port dropped whole at an uplink's admission queue: "
    "more than was granted (GSE)",
    "stat_admit_drop_bad": "frames for this port dropped whole at an uplink's admission queue: "
    "flagged bad (GSE)",
    "fifo_level": "beats in the egress FIFO",
    "stat_probes": "PROBE frames received (uplink) or sent (uplink tx)",
    "stat_drop_unrouted": "frames dropped whole: no output here (DATA for another leaf, not GSE, "
    "a control frame for no host port of this leaf)",
    "stat_requests": "REQUEST headers handed to a grant arbiter",
    "stat_grants": "GRANT headers handed to a DGSQ manager",
    "stat_frames": "frames sent on the uplink",
    "stat_held_cycles": "clocks a frame waited at the uplink because of pause",
    "stat_drop_queue": "frames an uplink queue dropped whole: bad or longer than the queue",
}


def _width(member):
    return Shape.cast(member.shape).width, (member.dimensions[0] if member.dimensions else 1)


#: Parts that are catalog blocks themselves.
PART_KINDS = {"lm": "link_monitor"}


#: Prefix of a part's query ports; the rest of the name is the VOQ buffer's port.
QUERY_PREFIX = "voq_query_"


def _part_doc(port, kind=None):
    if kind is not None:
        return BLOCK_REGISTERS[kind].docs[port]
    if port in OWN_DOCS:
        return OWN_DOCS[port]
    if port.startswith(QUERY_PREFIX):  # the VOQ buffer's description, in the leaf's names
        doc = BLOCK_REGISTERS["voq"].docs[port[len("voq_") :]]
        return "voq: " + doc.replace("`query_", "`" + QUERY_PREFIX)
    sub, sep, name = port.partition("_stat_")
    if sep and sub in SUB_KINDS:
        doc = BLOCK_REGISTERS[SUB_KINDS[sub]].docs.get(f"stat_{name}")
        if doc:
            return f"{SUB_KINDS[sub]}: {doc}"
    raise ValueError(f"no description for the leaf part port {port!r}")


#: Outputs of parts that other parts take (not registers).
WIRED_OUT = ("pause", "lookup_key", "probe_rx", "frame_rx", "tx_data", "sp_busy")


def query_members(prefix, part):
    """``{<prefix>_voq_query_<name>: member}``: a part's query port (both flows), as
    members of a top that shows it as ports (the leaf's ``config_ports``)."""
    return {f"{prefix}_{n}": mb for n, mb in part.signature.members.items() if n.startswith(QUERY_PREFIX)}


def forward_query(m, top, prefix, part):
    """Join ``top``'s ports of :func:`query_members` to ``part``'s query port."""
    for n, member in part.signature.members.items():
        if n.startswith(QUERY_PREFIX):
            ours, theirs = getattr(top, f"{prefix}_{n}"), getattr(part, n)
            m.d.comb += theirs.eq(ours) if member.flow == wiring.In else ours.eq(theirs)


def part_inputs(part):
    """``{register name: (port name, width, count)}`` of a part's RW registers: the
    inputs of its query port (its other inputs are wired by the leaf)."""
    return {
        name: (name,) + _width(member)
        for name, member in part.signature.members.items()
        if not member.is_signature and member.flow == wiring.In and name.startswith(QUERY_PREFIX)
    }


def part_ports(part):
    """``{register name: (port name, width, count)}`` of a part's RO registers: every
    counter and status output, the query port's outputs included (not its streams,
    not its inputs)."""
    out = {}
    for name, member in part.signature.members.items():
        if member.is_signature or member.flow != wiring.Out or name in WIRED_OUT:
            continue
        reg = name.replace("_stat_", "_") if "_stat_" in name else name
        reg = reg[len("stat_") :] if reg.startswith("stat_") else reg
        out[reg] = (name,) + _width(member)
    return out


def leaf_block(leaf):
    cfg, H, U = leaf.config, leaf.config.host_ports, leaf.config.uplinks
    ib = max(1, (cfg.nodes - 1).bit_length())
    regs = [
        Register(
            "lb", 1, Access.RO, reset=int(leaf.lb == "ecmp"), const=True, doc="load balancing: 0 gse, 1 ecmp"
        ),
        Register("node_base", 16, Access.RW, doc="node of host port 0; host port p is node `node_base + p`"),
        Register(
            "ecmp_seed",
            32,
            Access.RW,
            doc="ECMP hash seed (CRC-32 start value of every host port's selector)",
        ),
        Register("host_tc", 3, Access.RW, count=H, doc="traffic class of host port `i`'s frames"),
        Register("host_tenant", 12, Access.RW, count=H, doc="tenant of host port `i`'s frames"),
        Register(
            "dest_index",
            ib,
            Access.RW,
            doc="destination table entry that `dest_write` sets and `dest_rd_*` show",
        ),
        Register(
            "dest_mac", 48, Access.RW, doc="MAC of the entry to write (first byte on the wire in bits 7:0)"
        ),
        Register("dest_node", 16, Access.RW, doc="dst_node of the entry to write"),
        Register("dest_port", 8, Access.RW, doc="host port (on its leaf) of the entry to write"),
        Register("dest_valid", 1, Access.RW, doc="1: the entry to write takes part in lookups"),
        Register(
            "dest_write",
            1,
            Access.RW,
            strobe=True,
            doc="any write sets entry `dest_index` to (`dest_valid`, `dest_mac`, `dest_node`, `dest_port`)",
        ),
        Register("dest_rd_mac", 48, Access.RO, doc="entry `dest_index`: MAC"),
        Register("dest_rd_node", 16, Access.RO, doc="entry `dest_index`: dst_node"),
        Register("dest_rd_port", 8, Access.RO, doc="entry `dest_index`: host port"),
        Register("dest_rd_valid", 1, Access.RO, doc="entry `dest_index`: valid"),
        Register("healthy", U, Access.RO, doc="uplinks the link monitor holds healthy"),
        Register("link_up", U, Access.RO, doc="the `link_up` inputs"),
    ]
    return RegisterBlock("leaf", regs, doc=f"GSE leaf ({leaf.lb}): configuration and status (rtl/tops/leaf/)")


def leaf_register_map(leaf, extra_blocks=()):
    """The leaf's :class:`~opengse.rtl.regs.description.RegisterMap`; ``extra_blocks``
    (a top's own blocks, e.g. its management port's counters) come after the leaf's."""
    blocks = [system_block(), leaf_block(leaf)]
    for prefix, part in leaf.parts().items():
        regs = [
            Register(reg, width, Access.RW, doc=_part_doc(port), count=count)
            for reg, (port, width, count) in part_inputs(part).items()
        ]
        regs += [
            Register(reg, width, Access.RO, doc=_part_doc(port, PART_KINDS.get(prefix)), count=count)
            for reg, (port, width, count) in part_ports(part).items()
        ]
        blocks.append(RegisterBlock(prefix, regs, doc=f"{type(part).__name__} {prefix} (rtl/tops/leaf/)"))
    blocks += list(extra_blocks)
    return RegisterMap(
        blocks, name="leaf", doc=f"GSE leaf, {leaf.config.host_ports} x {leaf.config.uplinks}, lb {leaf.lb}"
    )


#: Counters of the parts that may advance by more than one per clock: (sub-block, name)
#: -> the largest advance, from the leaf's GSEConfig.
COUNTER_STEPS = {
    ("sp", "bytes"): lambda cfg: cfg.data_width // 8,
    ("ro", "lost"): lambda cfg: 65535,  # a window jump
    ("", "drop_admit"): lambda cfg: cfg.uplinks,  # full and oversize, per admission queue
    ("", "admit_drop_bad"): lambda cfg: cfg.uplinks,
    ("", "frames"): lambda cfg: 2,  # the uplink's probes + its other frames
    # bad and oversize, per queue of the uplink (its own; one per host port with them)
    ("", "drop_queue"): lambda cfg: 2 * (1 + (cfg.host_ports if cfg.uplink_queue_bytes else 0)),
}

#: The largest advance per clock of a stored counter: every bit of it widens every stored
#: counter's low bits (the store's ``counter_bits``); a faster counter stays live.
MAX_STORED_STEP = 2


def stored_counters(leaf, regmap):
    """``{bank port: largest advance per clock}`` of the 32-bit counters of the leaf's
    parts (``<part>.<sub>_<name>`` from a ``<sub>_stat_<name>`` port, or ``<name>``
    from ``stat_<name>``) that a :class:`~opengse.rtl.regs.counter_store.CounterStore`
    keeps: all that advance by at most :data:`MAX_STORED_STEP` per clock (one, unless
    :data:`COUNTER_STEPS` says more)."""
    out = {}
    for prefix, part in leaf.parts().items():
        block = regmap[prefix]
        for reg, (port, width, _count) in part_ports(part).items():
            if width != 32 or "stat_" not in port:
                continue
            sub, _, name = port.rpartition("stat_")
            step = COUNTER_STEPS.get((sub[:-1], name), lambda cfg: 1)(leaf.config)
            if step <= MAX_STORED_STEP:
                out[port_name(block, block[reg])] = step
    return out


def _pairs(bank, block, reg, part, port):
    """(bank element, part element) of one register: a part's array member may have a
    single element (a counter per uplink of a one-uplink leaf), whose register, like
    any of count 1, is a plain port of the bank."""
    theirs = getattr(part, port)
    theirs = list(theirs) if part.signature.members[port].dimensions else [theirs]
    return zip(bank.elements(block.name, reg), theirs)


def connect_leaf_registers(m, bank, regmap, leaf):
    """Drive every part's RO registers in ``bank`` from the part's ports, and the
    part's query inputs from its RW registers."""
    for prefix, part in leaf.parts().items():
        block = regmap[prefix]
        for reg, (port, _w, _count) in part_inputs(part).items():
            for a, b in _pairs(bank, block, reg, part, port):
                m.d.comb += b.eq(a)
        for reg, (port, _w, _count) in part_ports(part).items():
            for a, b in _pairs(bank, block, reg, part, port):
                m.d.comb += a.eq(b)


def connect_dest_table(m, bank, lookup):
    """The ``leaf.dest_*`` registers of ``bank`` to a
    :class:`~.dest_lookup.DestLookup`: a write of ``dest_write`` stores entry
    ``dest_index``, and ``dest_rd_*`` read entry ``dest_index`` back."""
    w, rd = lookup.s_write, lookup.rd_entry
    m.d.comb += [
        w.valid.eq(bank.leaf_dest_write_written),
        w.payload.index.eq(bank.leaf_dest_index),
        w.payload.in_use.eq(bank.leaf_dest_valid),
        w.payload.mac.eq(bank.leaf_dest_mac),
        w.payload.dst_node.eq(bank.leaf_dest_node),
        w.payload.port.eq(bank.leaf_dest_port),
        lookup.rd_index.eq(bank.leaf_dest_index),
        bank.leaf_dest_rd_mac.eq(rd.mac),
        bank.leaf_dest_rd_node.eq(rd.dst_node),
        bank.leaf_dest_rd_port.eq(rd.port),
        bank.leaf_dest_rd_valid.eq(rd.in_use),
    ]
