"""Double-data-rate I/O for the RGMII pins: Amaranth's I/O buffers or a behavioural model.

RGMII moves four data bits and one control bit on each edge of a 125 MHz clock. On a
platform the pins go through :class:`amaranth.lib.io.DDRBuffer` (on ECP5 the platform
maps it to ``IDDRX1F`` / ``ODDRX1F``). Without a platform (Verilog export, Verilator,
out-of-context place-and-route) :class:`DDRBuffer` refuses to elaborate, so the same
interface is provided by plain flip-flops on both clock edges: :class:`DDRInputModel`
and :class:`DDROutputModel`. :func:`ddr_input` / :func:`ddr_output` choose: given an
I/O port (``platform.request(..., dir="-")``) they return a ``DDRBuffer``, given a width
they return the model. Both have the ``DDRBuffer`` interface and timing (latency 1):

* input: ``i[0]`` is the pin sampled at a rising edge, ``i[1]`` the pin at the falling
  edge that follows; both appear together one clock later, in the clock domain given.
* output: ``o[0]`` and ``o[1]`` are taken at a rising edge; the pin shows ``o[0]`` while
  the clock is high and ``o[1]`` while it is low, starting at that same edge.

The model's falling-edge flip-flops live in a local domain with ``clk_edge="neg"`` on the
same clock; the output multiplexer uses the clock as its select (a clock-forwarding
pattern that is fine in simulation and out-of-context timing, and is replaced by the
``ODDRX1F`` on a board).
"""

from amaranth.hdl import ClockDomain, ClockSignal, Module, Mux, Signal
from amaranth.lib import data, io, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["DDRInputModel", "DDROutputModel", "ddr_input", "ddr_output"]


class DDRInputModel(wiring.Component):
    """Behavioural DDR input register pair.

    Members: ``port`` (in, ``width``): the pin; ``i`` (out, ``ArrayLayout(width, 2)``):
    rising-edge sample in ``i[0]``, the following falling-edge sample in ``i[1]``, both
    registered in ``domain`` one cycle after the rising edge."""

    def __init__(self, width, domain):
        self._width = width
        self._domain = domain
        super().__init__({"port": In(width), "i": Out(data.ArrayLayout(width, 2))})

    def elaborate(self, platform):
        m = Module()
        fall = f"{self._domain}_fall"
        m.domains += (cd_fall := ClockDomain(fall, clk_edge="neg", local=True, reset_less=True))
        m.d.comb += cd_fall.clk.eq(ClockSignal(self._domain))
        rise_q = Signal(self._width)
        fall_q = Signal(self._width)
        m.d[self._domain] += rise_q.eq(self.port)
        m.d[fall] += fall_q.eq(self.port)
        m.d[self._domain] += [self.i[0].eq(rise_q), self.i[1].eq(fall_q)]
        return m


class DDROutputModel(wiring.Component):
    """Behavioural DDR output register pair.

    Members: ``o`` (in, ``ArrayLayout(width, 2)``): taken at each rising edge of
    ``domain``; ``port`` (out, ``width``): ``o[0]`` while the clock is high, ``o[1]``
    while it is low."""

    def __init__(self, width, domain):
        self._width = width
        self._domain = domain
        super().__init__({"o": In(data.ArrayLayout(width, 2)), "port": Out(width)})

    def elaborate(self, platform):
        m = Module()
        fall = f"{self._domain}_fall"
        m.domains += (cd_fall := ClockDomain(fall, clk_edge="neg", local=True, reset_less=True))
        m.d.comb += cd_fall.clk.eq(ClockSignal(self._domain))
        rise_q = Signal(self._width)
        high_q = Signal(self._width)
        fall_q = Signal(self._width)
        m.d[self._domain] += [rise_q.eq(self.o[0]), high_q.eq(self.o[1])]
        m.d[fall] += fall_q.eq(high_q)
        m.d.comb += self.port.eq(Mux(ClockSignal(self._domain), rise_q, fall_q))
        return m


def ddr_input(port_or_width, domain):
    """A DDR input in ``domain``: ``io.DDRBuffer`` on an I/O port, the model on a width.
    Returns ``(component, pin)``; ``pin`` is the model's ``port`` signal (to be driven
    from the top's pin member) or ``None`` for a platform buffer."""
    if isinstance(port_or_width, int):
        model = DDRInputModel(port_or_width, domain)
        return model, model.port
    return io.DDRBuffer("i", port_or_width, i_domain=domain), None


def ddr_output(port_or_width, domain):
    """A DDR output in ``domain``: ``io.DDRBuffer`` on an I/O port, the model on a width.
    Returns ``(component, pin)`` as :func:`ddr_input`."""
    if isinstance(port_or_width, int):
        model = DDROutputModel(port_or_width, domain)
        return model, model.port
    return io.DDRBuffer("o", port_or_width, o_domain=domain), None
