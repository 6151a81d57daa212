"""The spine's register map: its forwarding table and every counter behind one AXI4-Lite
bank (docs/spine.md, Registers; docs/register-map.md for the mechanism).

Blocks of the map:

* ``sys`` (:func:`~opengse.rtl.regs.system.system_block`): identification, map
  fingerprint, scratch, uptime;
* ``spine``: the shape (``ports``, ``nodes``, constants) and the forwarding table:
  ``route_node`` selects an entry, a write of ``route_write`` sets it to
  ``route_port`` (``ports`` = no route), ``route_rd_port`` reads entry ``route_node``
  back (combinational, so any read after the write of ``route_node`` sees it);
* ``in``: per input ``i`` (arrays of ``ports``), the counters ``stat_<name>_<i>`` of
  :data:`~.spine.INPUT_COUNTERS` as ``in.<name>[i]``;
* ``out``: per output ``o``, :data:`~.spine.OUTPUT_COUNTERS` as ``out.<name>[o]``.

All counters are 32-bit, wrapping, RO.
"""

from ..regs.description import Access, Register, RegisterBlock, RegisterMap
from ..regs.system import system_block

__all__ = ["spine_register_map", "COUNTER_DOCS"]

#: What each counter counts (docs, C header, driver).
COUNTER_DOCS = {
    "frames_in": "frames taken at the input (last beats)",
    "drop_runt": "parser: frames dropped whole, shorter than the headers",
    "drop_ver": "parser: frames dropped whole, unknown GSE version",
    "drop_type": "parser: frames dropped whole, unknown GSE type",
    "drop_ttl": "parser: frames dropped whole, ttl 0 on arrival",
    "drop_not_gse": "frames dropped whole: no GSE EtherType",
    "drop_no_route": "frames dropped whole: dst_node >= nodes, or its table entry has no port",
    "err_len": "DATA frames whose len is wrong (flagged bad, dropped at the output)",
    "pause_cycles": "clocks the input asked its sender to pause (pause_<i> = 1)",
    "drop_overflow": "frames the input store had no room for (the sender ignored pause)",
    "frames_out": "frames sent on the output",
    "ctl_out": "of which control frames (REQUEST, GRANT, PROBE)",
    "drop_bad": "frames dropped whole by the output queues: tuser set on their last beat",
    "drop_oversize": "frames dropped whole by the output queues: longer than the queue",
    "held_cycles": "clocks a frame waited at the output because of pause_in_<o>",
}


def spine_register_map(spine):
    """The :class:`~opengse.rtl.regs.description.RegisterMap` of a
    :class:`~.spine.GSESpine`."""
    from .spine import INPUT_COUNTERS, OUTPUT_COUNTERS

    n, nodes = spine.ports, spine.nodes
    pw = (n).bit_length()  # range(n + 1)
    nw = max(1, (nodes - 1).bit_length())
    table = RegisterBlock(
        "spine",
        [
            Register("ports", 8, Access.RO, reset=n, const=True, doc="fabric ports N"),
            Register("nodes", 16, Access.RO, reset=nodes, const=True, doc="forwarding table entries"),
            Register(
                "route_node",
                nw,
                Access.RW,
                doc="table entry that `route_write` sets and `route_rd_port` shows",
            ),
            Register(
                "route_port",
                pw,
                Access.RW,
                doc=f"output port of the entry to write; {n} (N) removes the route",
            ),
            Register(
                "route_write",
                1,
                Access.RW,
                strobe=True,
                doc="any write sets entry `route_node` to `route_port`; "
                "frames looked up from the next clock on use it",
            ),
            Register(
                "route_rd_port",
                pw,
                Access.RO,
                doc=f"entry `route_node`: its port ({n}: no route, the reset value)",
            ),
        ],
        doc="GSE spine: shape and forwarding table (rtl/tops/spine.py)",
    )
    ins = RegisterBlock(
        "in",
        [Register(c, 32, Access.RO, count=n, doc=COUNTER_DOCS[c]) for c in INPUT_COUNTERS],
        doc="per input port i: counters",
    )
    outs = RegisterBlock(
        "out",
        [Register(c, 32, Access.RO, count=n, doc=COUNTER_DOCS[c]) for c in OUTPUT_COUNTERS],
        doc="per output port o: counters",
    )
    return RegisterMap(
        [system_block(), table, ins, outs], name="spine", doc=f"GSE spine, {n} ports, {nodes} nodes"
    )
