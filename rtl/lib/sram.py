"""A block RAM with one write port and N registered read ports, as its own module.

The VOQ buffer keeps every large table (cells, links, per-queue state, counters) in
one of these, so that the exported Verilog has one separate, fixed-name module per
memory (``keep_modules``) an ASIC flow can swap for an SRAM macro, and so that Yosys
maps it to ECP5 DP16KD block RAM (one copy per read port beyond what the primitive's
two ports give).

Interface: ``w_en, w_addr, w_data``; for read port ``i``: ``r<i>_addr`` in,
``r<i>_data`` out. Kept as its own module, it has exactly these ports, after ``clk``
and ``rst`` (``rst`` unused), whatever its size (rtl/export.py). Timing: the read data of the address presented in cycle ``t`` is
valid in cycle ``t+1`` (registered, always enabled); a read of the address written in
the same cycle returns the old contents (not transparent). No reset: contents are
undefined after power-up (the user clears what it needs).
"""
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = ["VOQRam"]


class VOQRam(wiring.Component):
    def __init__(self, width, depth, n_read=1):
        self.width, self.depth, self.n_read = width, depth, n_read
        members = {"w_en": In(1), "w_addr": In(range(depth)), "w_data": In(width)}
        for i in range(n_read):
            members[f"r{i}_addr"] = In(range(depth))
            members[f"r{i}_data"] = Out(width)
        super().__init__(members)

    def read(self, i):
        return getattr(self, f"r{i}_addr"), getattr(self, f"r{i}_data")

    def elaborate(self, platform):
        m = Module()
        m.submodules.mem = mem = Memory(shape=self.width, depth=self.depth, init=[])
        wp = mem.write_port()
        m.d.comb += [wp.en.eq(self.w_en), wp.addr.eq(self.w_addr), wp.data.eq(self.w_data)]
        for i in range(self.n_read):
            rp = mem.read_port(domain="sync")
            addr, data = self.read(i)
            m.d.comb += [rp.addr.eq(addr), data.eq(rp.data)]
        return m
