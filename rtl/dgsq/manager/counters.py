"""ManagerCounters: the DGSQ manager's event counters."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["ManagerCounters", "COUNTERS", "INC_BITS"]

#: Counter names and what each counts (``stat_<name>`` ports of the manager).
COUNTERS = {
    "pool_full": "packets held because no context was free (once per packet)",
    "alloc": "contexts allocated",
    "freed": "contexts freed after the idle time",
    "requests": "REQUESTs sent",
    "refresh": "REQUESTs made due by the refresh timer",
    "grants": "GRANTs accepted (type, id range and key matched)",
    "grant_unknown": "GRANTs that matched no live context (no effect)",
    "grant_gap": "accepted GRANTs whose seq was not the last one + 1",
    "grant_unused": "GRANTs whose credit was dropped: the queue had run dry",
    "grant_void": "GRANTs that brought no container (queue dry, debt, a later container took"
    " their credit): REQUESTs report them",
    "releases": "release requests sent",
}


#: Counters that may count more than one per clock: the width of their increment.
INC_BITS = {"grant_void": 5}


class ManagerCounters(wiring.Component):
    """32-bit wrapping event counters.

    Interface: for each name of :data:`COUNTERS`, ``inc_<name>`` in (count one this
    clock; for the names of :data:`INC_BITS`, add its value) and ``stat_<name>`` out.
    Timing: ``stat_<name>`` shows an increment one clock after ``inc_<name>``; reset to 0.
    """

    def __init__(self):
        members = {}
        for name in COUNTERS:
            members[f"inc_{name}"] = In(INC_BITS.get(name, 1))
        for name in COUNTERS:
            members[f"stat_{name}"] = Out(32)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        for name in COUNTERS:
            stat = getattr(self, f"stat_{name}")
            inc = getattr(self, f"inc_{name}")
            if len(inc) == 1:
                with m.If(inc):
                    m.d.sync += stat.eq(stat + 1)
            else:
                m.d.sync += stat.eq(stat + inc)
        return m
