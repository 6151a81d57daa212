"""DestLookup: the leaf's destination table, dst MAC -> (dst_node, port)."""

from amaranth.hdl import Array, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["DestLookup", "dest_entry_layout", "dest_result_layout"]


def dest_entry_layout(entries):
    """A table write: entry ``index`` becomes (``in_use``, ``mac``, ``dst_node``, ``port``);
    ``in_use`` 1: the entry takes part in lookups. (Not called ``valid``: exported, the
    field of stream ``s_dest`` would be ``s_dest_valid``, the handshake's name.)"""
    return data.StructLayout({"index": range(entries), "in_use": 1, "mac": 48, "dst_node": 16, "port": 8})


def dest_result_layout():
    """A lookup's answer: ``hit`` and, when it hit, the entry's ``dst_node`` and ``port``."""
    return data.StructLayout({"hit": 1, "dst_node": 16, "port": 8})


class DestLookup(wiring.Component):
    """A fully associative table of ``entries`` destination MAC addresses.

    Interface:

    * ``s_write`` (in, :func:`dest_entry_layout`, always ready): sets one entry; it
      takes part in lookups from the next clock on. After reset no entry is in use.
    * ``key[i]`` (in, 48, one per lookup port ``i`` < ``ports``): a MAC address, first
      byte on the wire in bits 7:0 (as it lies in ``tdata``). ``result[i]`` (out,
      :func:`dest_result_layout`): combinational; the lowest valid entry whose ``mac``
      equals ``key[i]`` (``mac`` is written in the same byte order); ``hit`` 0 when
      none does.
    * ``rd_index`` (in) -> ``rd_entry`` (out): combinational read-back of one entry.

    Storage: flip-flops (``entries`` x 73 bits), shared by the ports; ``entries`` 48-bit
    comparators per port.
    """

    def __init__(self, entries=16, ports=1):
        if entries < 1 or ports < 1:
            raise ValueError(f"entries and ports must be >= 1, not {entries!r}, {ports!r}")
        self.entries, self.ports = entries, ports
        super().__init__(
            {
                "s_write": In(stream.Signature(dest_entry_layout(entries))),
                "key": In(48).array(ports),
                "result": Out(dest_result_layout()).array(ports),
                "rd_index": In(range(entries)),
                "rd_entry": Out(dest_entry_layout(entries)),
            }
        )

    def elaborate(self, platform):
        m = Module()
        n = self.entries
        layout = dest_entry_layout(n)
        table = Array(Signal(layout, name=f"entry_{k}") for k in range(n))
        wr = self.s_write
        m.d.comb += wr.ready.eq(1)
        with m.If(wr.valid):
            m.d.sync += table[wr.payload.index].eq(wr.payload)
        # lowest matching entry wins: the last assignment in this loop is the lowest
        for i in range(self.ports):
            key, res = self.key[i], self.result[i]
            for k in reversed(range(n)):
                e = table[k]
                with m.If(e.in_use & (e.mac == key)):
                    m.d.comb += [res.hit.eq(1), res.dst_node.eq(e.dst_node), res.port.eq(e.port)]
        m.d.comb += [self.rd_entry.eq(table[self.rd_index]), self.rd_entry.index.eq(self.rd_index)]
        return m
