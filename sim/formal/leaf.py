"""Leaf: its destination table (rtl/tops/leaf/dest_lookup.py) answers every lookup
with the lowest entry in use whose MAC matches.

:class:`LookupFirstMatch` (4 entries, 2 lookup ports, as the leaf uses it with one per
host port) keeps its own copy of the table from the writes on ``s_write`` and asserts,
every clock and for each port, in terms of that copy only:

* ``hit`` exactly when some entry in use has the key's MAC;
* on a hit, ``dst_node`` and ``port`` are those of the lowest such entry;
* the read-back ``rd_entry`` is the entry ``rd_index`` names; ``s_write`` is always ready.

Writes, keys and the read-back index are free. The table is the block's whole state
and each entry holds what its last write gave it, so every reachable table is reached
within 4 writes after reset: BMC to depth 6 covers every reachable state (for this
size), which is what an unbounded proof would show; k-induction itself does not close
(the table is not visible at the ports but through the one read-back index).
"""

from amaranth.hdl import Array, Assert, Assume, Cover, Elaboratable, Module, ResetSignal, Signal

from .registry import Property, inputs_of, register, register_reach

__all__ = ["LookupFirstMatch", "ENTRIES", "PORTS"]

ENTRIES, PORTS = 4, 2


class LookupFirstMatch(Elaboratable):
    def __init__(self, cover=False, highest=False):
        from opengse.rtl.tops.leaf.dest_lookup import DestLookup, dest_entry_layout

        self.dut = DestLookup(entries=ENTRIES, ports=PORTS)
        self.layout = dest_entry_layout(ENTRIES)
        self.cover = cover
        self.highest = highest  # the wrong claim (refuted): the highest match wins

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        m.d.comb += Assume(~ResetSignal())
        copy = Array(Signal(self.layout, name=f"copy_{k}") for k in range(ENTRIES))
        wr = dut.s_write
        with m.If(wr.valid):
            m.d.sync += copy[wr.payload.index].eq(wr.payload)
        m.d.comb += Assert(wr.ready, "s_write not ready")
        rd = copy[dut.rd_index]
        m.d.comb += Assert(
            (dut.rd_entry.in_use == rd.in_use)
            & (dut.rd_entry.mac == rd.mac)
            & (dut.rd_entry.dst_node == rd.dst_node)
            & (dut.rd_entry.port == rd.port)
            & (dut.rd_entry.index == dut.rd_index),
            "read-back is not the entry rd_index names",
        )
        order = list(reversed(range(ENTRIES))) if self.highest else list(range(ENTRIES))
        for i in range(PORTS):
            key, res = dut.key[i], dut.result[i]
            match = [copy[k].in_use & (copy[k].mac == key) for k in range(ENTRIES)]
            any_match = 0
            for k in range(ENTRIES):
                any_match = any_match | match[k]
            m.d.comb += Assert(res.hit == any_match, f"port {i}: hit is not 'some entry matches'")
            for n, k in enumerate(order):
                first = match[k]
                for j in order[:n]:
                    first = first & ~match[j]
                with m.If(first):
                    m.d.comb += Assert(
                        (res.dst_node == copy[k].dst_node) & (res.port == copy[k].port),
                        f"port {i}: the answer is not the lowest matching entry's",
                    )
                if self.cover and i == 0 and k == ENTRIES - 1:
                    # the last entry answers while a lower one is in use with another MAC
                    m.d.comb += Cover(first & copy[0].in_use & (res.port != copy[0].port))
        return m


def _build(cover=False):
    top = LookupFirstMatch(cover=cover)
    return top, inputs_of(top.dut)


LOOKUP = register(
    Property(
        name="leaf_dest_lookup_first_match",
        block="leaf (dest_lookup)",
        asserts="for each of 2 lookup ports: hit exactly when an entry in use has the key's MAC, and "
        "then dst_node and port of the lowest such entry; the read-back is the entry named; "
        "s_write always ready (4 entries)",
        assumptions="rst low after reset; table writes, keys and read-back index free",
        mode="bmc",
        depth=6,
        build=_build,
        options={"engine": "smtbmc yices"},
        bounded_why="the table is the whole state and each entry holds its last write, so every "
        "reachable table is reached within 4 writes: depth 6 covers every reachable state of this "
        "size; k-induction does not close (the table is seen only through one read-back index)",
    )
)
register_reach(LOOKUP, "the last entry answering while entry 0 is in use with another MAC")
