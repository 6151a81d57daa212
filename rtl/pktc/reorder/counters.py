"""The reorder buffer's counters: 32-bit wrapping ``stat_*`` outputs.

Interface: one pulse input ``inc_<name>`` per counter (``lost`` takes a count,
``add_lost``, 16 bits, for a window jump), and ``stat_<name>`` out. Each input is
registered before its adder, so a counter moves two clocks after its pulse and no
adder sits behind the logic that raises the pulse.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["ReorderCounters", "STATS"]

STATS = (
    "frames_in",
    "containers_out",
    "lost",
    "drop_dup",
    "drop_window",
    "drop_orphan",
    "drop_bad",
    "drop_runt",
    "drop_other",
    "lost_overrun",
)


class ReorderCounters(wiring.Component):
    def __init__(self):
        super().__init__(
            {
                **{f"inc_{n}": In(1) for n in STATS if n != "lost"},
                "add_lost": In(16),
                **{f"stat_{n}": Out(32) for n in STATS},
            }
        )

    def elaborate(self, platform):
        m = Module()
        for n in STATS:
            src = self.add_lost if n == "lost" else getattr(self, f"inc_{n}")
            reg = Signal(len(src), name=f"{n}_d")
            stat = getattr(self, f"stat_{n}")
            m.d.sync += [reg.eq(src), stat.eq(stat + reg)]
        return m
