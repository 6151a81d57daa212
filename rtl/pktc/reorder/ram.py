"""The slot RAM of the reorder buffer: one write port, one read port, two clocks of read latency.

Its own module in the exported Verilog (``gse_reorder_ram_<depth>x<width>``, found by
the export wherever a SlotRAM is instantiated, like an SRAM of rtl/lib/sram.py), so
that an ASIC flow can put an SRAM macro there; :meth:`SlotRAM.describe` is its
manifest entry.

Interface (fixed port names, after ``clk`` and ``rst``; ``rst`` is unused):

* ``w_en``, ``w_addr``, ``w_data`` (in): write ``w_data`` at ``w_addr`` when ``w_en``.
* ``r_en``, ``r_addr`` (in), ``r_data`` (out): ``r_data`` is the word at the
  ``r_addr`` presented two clocks earlier with ``r_en`` high (it holds while
  ``r_en`` is low). A read of the address written in the same clock returns the
  old word (the reorder buffer never does this: it reads a slot only once it is
  complete). Contents are not reset.

Structure (ECP5): the depth is cut into banks of at most 16384 words, and each bank
into the widest DP16KD slice whose depth covers it (16K x 1 for a full bank), so
that the only multiplexer is the one between banks. Each bank's output is registered
once more, right at its block RAMs, and the bank multiplexer works from those
registers: the slow block RAM clock-to-output never meets logic in the same clock.
At the defaults (32768 x 68) that is two banks of 68 16K x 1 slices (136 DP16KD).
"""

from amaranth.hdl import Module, Signal, unsigned
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = ["SlotRAM", "BANK_DEPTH"]

BANK_DEPTH = 16384
# DP16KD shapes (depth, width)
SHAPES = ((16384, 1), (8192, 2), (4096, 4), (2048, 9), (1024, 18), (512, 36))


class SlotRAM(wiring.Component):
    def __init__(self, width, depth):
        self.width, self.depth = width, depth
        abits = max(1, (depth - 1).bit_length())
        super().__init__(
            {
                "w_en": In(1),
                "w_addr": In(abits),
                "w_data": In(width),
                "r_en": In(1),
                "r_addr": In(abits),
                "r_data": Out(width),
            }
        )

    @property
    def module_name(self):
        """The Verilog module name this memory is exported as (one per shape)."""
        return f"gse_reorder_ram_{self.depth}x{self.width}"

    def describe(self):
        """What an SRAM macro in its place must provide (for the export's manifest)."""
        return {
            "kind": "sram",
            "depth": self.depth,
            "width": self.width,
            "write_ports": 1,
            "read_ports": 1,
            "read_latency_cycles": 2,
            "read_enable": True,
            "read_during_write": "old data",
            "reset": "none (contents undefined after power-up)",
            "reset_less": True,
        }

    def elaborate(self, platform):
        m = Module()
        nbanks = (self.depth + BANK_DEPTH - 1) // BANK_DEPTH
        bank_bits = (nbanks - 1).bit_length()
        lo_bits = len(self.r_addr) - bank_bits
        outs = []
        for b in range(nbanks):
            depth_b = min(BANK_DEPTH, self.depth - b * BANK_DEPTH)
            slice_w = max(w for d, w in SHAPES if d >= min(depth_b, BANK_DEPTH))
            here = (self.w_addr[lo_bits:] == b) if bank_bits else 1
            q = Signal(self.width, name=f"bank{b}_q")
            for k, lo in enumerate(range(0, self.width, slice_w)):
                hi = min(lo + slice_w, self.width)
                mem = Memory(shape=unsigned(hi - lo), depth=depth_b, init=[])
                m.submodules[f"bank{b}_mem{k}"] = mem
                wp, rp = mem.write_port(), mem.read_port()
                m.d.comb += [
                    wp.en.eq(self.w_en & here),
                    wp.addr.eq(self.w_addr[:lo_bits]),
                    wp.data.eq(self.w_data[lo:hi]),
                    rp.en.eq(self.r_en),
                    rp.addr.eq(self.r_addr[:lo_bits]),
                ]
                m.d.sync += q[lo:hi].eq(rp.data)
            outs.append(q)
        if bank_bits:
            sel1, sel2 = Signal(bank_bits), Signal(bank_bits)
            with m.If(self.r_en):
                m.d.sync += sel1.eq(self.r_addr[lo_bits:])
            m.d.sync += sel2.eq(sel1)
            with m.Switch(sel2):
                for b, q in enumerate(outs):
                    with m.Case(b):
                        m.d.comb += self.r_data.eq(q)
        else:
            m.d.comb += self.r_data.eq(outs[0])
        return m
