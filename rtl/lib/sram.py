"""SRAM: the one memory contract of the project.

Every block keeps its tables (cells, links, per-queue state, contexts, slots, seq
numbers, reorder slots) in :class:`SRAM` instances, so that

* the exported Verilog has one separate module per memory, named after its shape
  (``gse_sram_<n>r1w_<depth>x<width>``, ``_en`` appended with read enables), that an
  ASIC flow swaps for a compiled SRAM macro: the export finds every instance itself
  (platforms/export.py) and the manifest lists each with its depth, width, ports and
  read latency;
* Yosys maps it to ECP5 DP16KD block RAM (one copy per read port beyond what the
  primitive's two ports give).

Interface (exported port names, after ``clk`` and ``rst``; ``rst`` is unused: the
memory is reset-less): ``w_en, w_addr, w_data``; per read port ``i``: ``r<i>_addr``
in, ``r<i>_data`` out, and with ``read_en`` an ``r<i>_en`` in.

Timing: the read data of the address presented in cycle ``t`` is valid in cycle
``t+1`` (registered; with ``read_en`` the data register loads only when ``r<i>_en``
was high, otherwise it holds). A read of the address written in the same cycle
returns the old contents (not transparent). Contents are undefined after power-up:
a block clears what it needs after reset.
"""

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = ["SRAM", "VOQRam"]


class SRAM(wiring.Component):
    """``depth`` words of ``width`` bits, one write port, ``n_read`` registered read
    ports (see the module docstring)."""

    def __init__(self, width, depth, n_read=1, *, read_en=False):
        if width < 1 or depth < 2 or n_read < 1:
            raise ValueError("SRAM needs width >= 1, depth >= 2 and n_read >= 1")
        self.width, self.depth, self.n_read, self.read_en = width, depth, n_read, read_en
        members = {"w_en": In(1), "w_addr": In(range(depth)), "w_data": In(width)}
        for i in range(n_read):
            if read_en:
                members[f"r{i}_en"] = In(1)
            members[f"r{i}_addr"] = In(range(depth))
            members[f"r{i}_data"] = Out(width)
        super().__init__(members)

    @property
    def module_name(self):
        """The Verilog module name this memory is exported as."""
        return f"gse_sram_{self.n_read}r1w_{self.depth}x{self.width}" + ("_en" if self.read_en else "")

    def describe(self):
        """What an SRAM macro in its place must provide (for the manifest)."""
        return {
            "kind": "sram",
            "depth": self.depth,
            "width": self.width,
            "write_ports": 1,
            "read_ports": self.n_read,
            "read_latency_cycles": 1,
            "read_enable": self.read_en,
            "read_during_write": "old data",
            "reset": "none (contents undefined after power-up)",
            "reset_less": True,
        }

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
            if self.read_en:
                m.d.comb += rp.en.eq(getattr(self, f"r{i}_en"))
        return m


#: The name the VOQ buffer gave it first; the same component.
VOQRam = SRAM
