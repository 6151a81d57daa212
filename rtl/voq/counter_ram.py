"""A table of saturating event counters kept in block RAM (read-modify-write).

Used by the VOQ buffer for its per-queue and per-tenant drop counters: 1024 queues
of 32-bit counters would cost 32k flip-flops; here they cost one or two DP16KD.

Interface:

* ``inc_valid, inc_index`` in, ``inc_ready`` out: add one to counter ``inc_index``
  (a transfer when ``inc_valid & inc_ready``).
* ``query_index`` in, ``query_data`` out: the counter's value one cycle later
  (registered read port; an increment in progress shows once written).
* ``init_done`` out: low while the table clears itself after reset (``depth`` cycles).

Timing: an increment takes 3 cycles (read, register, write) and the unit takes the
next one after it, so it absorbs one event every 3 cycles; ``inc_ready`` is low in
between. Counters saturate at ``2**width - 1``.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..lib.sram import VOQRam

__all__ = ["VOQCounterRAM"]


class VOQCounterRAM(wiring.Component):
    def __init__(self, depth, width=32):
        self.depth, self.width = depth, width
        super().__init__(
            {
                "inc_valid": In(1),
                "inc_index": In(range(depth)),
                "inc_ready": Out(1),
                "query_index": In(range(depth)),
                "query_data": Out(width),
                "init_done": Out(1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        m.submodules.ram = ram = VOQRam(self.width, self.depth, n_read=2)
        rmw_addr, rmw_data = ram.read(0)
        q_addr, q_data = ram.read(1)
        m.d.comb += [q_addr.eq(self.query_index), self.query_data.eq(q_data)]

        clr = Signal(range(self.depth + 1))
        idx = Signal(range(self.depth))
        old = Signal(self.width)
        m.d.comb += rmw_addr.eq(self.inc_index)
        with m.FSM():
            with m.State("CLEAR"):
                m.d.comb += [ram.w_en.eq(1), ram.w_addr.eq(clr), ram.w_data.eq(0)]
                m.d.sync += clr.eq(clr + 1)
                with m.If(clr == self.depth - 1):
                    m.next = "IDLE"
            with m.State("IDLE"):
                m.d.comb += [self.init_done.eq(1), self.inc_ready.eq(1)]
                with m.If(self.inc_valid):
                    m.d.sync += idx.eq(self.inc_index)
                    m.next = "READ"
            with m.State("READ"):
                m.d.comb += self.init_done.eq(1)
                m.d.sync += old.eq(rmw_data)
                m.next = "WRITE"
            with m.State("WRITE"):
                m.d.comb += [
                    self.init_done.eq(1),
                    ram.w_en.eq(1),
                    ram.w_addr.eq(idx),
                    ram.w_data.eq(old + (old != (1 << self.width) - 1)),
                ]
                m.next = "IDLE"
        return m
