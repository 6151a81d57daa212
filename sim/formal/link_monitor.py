"""Link monitor: a link that stops receiving frames (PROBEs or any other), or goes
down, leaves ``healthy`` within the documented bound.

Configuration (:data:`PARAMS`): one link, ``interval`` 16 clocks, ``miss_limit`` K = 1,
``rejoin`` M = 1. The wrapper counts the clocks since ``probe_rx`` or ``rx_frame`` was
last high
(``since``, saturating; it starts saturated, as if no PROBE ever came) and since
``link_up`` was last low, and asserts every clock:

* ``since`` >= (K + 1) * ``interval`` -> ``healthy`` is 0 (the bound of
  rtl/pktc/link_monitor.py: at most (K + 1) * interval clocks after the last frame
  received, whether PROBEs were skipped or not; one clock less than before the
  ``idle_only`` rule, when a PROBE arriving in an interval's last clock also counted
  for the next interval);
* ``link_up`` was low two clocks ago -> ``healthy`` is 0 (``link_up`` is registered
  once, then the decision is: the link leaves 2 clocks after a clock with ``link_up``
  low).

``probe_rx``, ``rx_frame``, ``tx_data``, ``link_up``, ``src_node``, ``m_probe_tready``
and ``rst`` are free.
:data:`PROBE_BOUND` - 1 and a 1-clock ``link_up`` bound are refuted (tests/formal), so
both bounds are tight.
"""

from amaranth.hdl import Assert, Cover, Elaboratable, Module, Mux, Signal

from .registry import Property, inputs_of, register, register_reach

__all__ = ["LinkMonitorBound", "PARAMS", "PROBE_BOUND"]

PARAMS = dict(data_width=64, links=1, interval=16, miss_limit=1, rejoin=1)
PROBE_BOUND = (PARAMS["miss_limit"] + 1) * PARAMS["interval"]  # 32


class LinkMonitorBound(Elaboratable):
    def __init__(self, probe_bound=PROBE_BOUND, down_delay=2, cover=False, **params):
        from opengse.rtl.pktc.link_monitor import LinkMonitor

        self.dut = LinkMonitor(**{**PARAMS, **params})
        self.probe_bound, self.down_delay, self.cover = probe_bound, down_delay, cover

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        top = self.probe_bound
        since = Signal(range(top + 1), init=top)
        heard = dut.probe_rx[0] | dut.rx_frame[0]
        m.d.sync += since.eq(Mux(heard, 0, Mux(since == top, top, since + 1)))
        with m.If(since >= top):
            m.d.comb += Assert(~dut.healthy[0], "healthy past the PROBE timeout bound")
        down = Signal(self.down_delay)  # link_up low 1 .. down_delay clocks ago
        m.d.sync += down.eq(down << 1 | ~dut.link_up[0])
        with m.If(down[self.down_delay - 1]):
            m.d.comb += Assert(~dut.healthy[0], "healthy after link_up fell")
        if self.cover:
            m.d.comb += Cover(dut.healthy[0] & (since == top - 1), "healthy up to the bound")
        return m


def _build(cover=False):
    top = LinkMonitorBound(cover=cover)
    return top, inputs_of(top.dut)


LEAVES = register(
    Property(
        name="link_monitor_leaves_healthy",
        block="link_monitor",
        asserts=f"healthy is 0 once {PROBE_BOUND} = (K+1)*interval clocks passed without a "
        "frame received, and 2 clocks after link_up was low (1 link, interval 16, K 1, M 1); "
        "unbounded",
        assumptions="none: probe_rx, rx_frame, tx_data, link_up, src_node, m_probe_tready and "
        "rst are all free",
        mode="prove",
        depth=40,
        build=_build,
        options={"engine": "smtbmc yices"},
    )
)
register_reach(LEAVES, "a link still healthy one clock before the bound (the bound is tight)", depth=60)
