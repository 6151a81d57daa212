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
      :func:`dest_result_layout`): the lowest valid entry whose ``mac`` equals
      ``key[i]`` (``mac`` is written in the same byte order); ``hit`` 0 when none does.
      With ``latency`` 0 combinational; with 2, the key is registered at the table and
      the answer registered after its compares: ``result[i]`` in clock ``t + 2`` answers
      ``key[i]`` of clock ``t`` (from the table of clock ``t + 1``), so neither the route
      from a port's key to the shared table nor the route back shares a clock with the
      compares.
    * ``rd_index`` (in) -> ``rd_entry`` (out): combinational read-back of one entry.

    Storage: flip-flops (``entries`` x 73 bits), shared by the ports with ``latency`` 0,
    one copy per port with 2; ``entries`` 48-bit comparators per port.
    """

    def __init__(self, entries=16, ports=1, latency=0):
        if entries < 1 or ports < 1:
            raise ValueError(f"entries and ports must be >= 1, not {entries!r}, {ports!r}")
        if latency not in (0, 2):
            raise ValueError(f"latency must be 0 or 2, not {latency!r}")
        self.entries, self.ports, self.latency = entries, ports, latency
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
        wr = self.s_write
        m.d.comb += wr.ready.eq(1)
        # with latency, a copy of the table per port: the ports sit apart on the chip and
        # each one's compares then read entries placed beside them
        copies = self.ports if self.latency else 1
        tables = [Array(Signal(layout, name=f"entry_{c}_{k}") for k in range(n)) for c in range(copies)]
        with m.If(wr.valid):
            m.d.sync += [t[wr.payload.index].eq(wr.payload) for t in tables]
        # lowest matching entry wins: the last assignment in this loop is the lowest
        for i in range(self.ports):
            key, res = self.key[i], self.result[i]
            table = tables[i if self.latency else 0]
            if self.latency:
                key_r = Signal(48, name=f"key_{i}")
                res_c = Signal(dest_result_layout(), name=f"result_{i}")
                m.d.sync += [key_r.eq(key), res.eq(res_c)]
                key, res = key_r, res_c
            for k in reversed(range(n)):
                e = table[k]
                with m.If(e.in_use & (e.mac == key)):
                    m.d.comb += [res.hit.eq(1), res.dst_node.eq(e.dst_node), res.port.eq(e.port)]
        m.d.comb += [self.rd_entry.eq(tables[0][self.rd_index]), self.rd_entry.index.eq(self.rd_index)]
        return m
