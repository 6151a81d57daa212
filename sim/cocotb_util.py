"""Small pieces every cocotb bench here uses.

Bounded waits: a test must never hang, so every wait for the DUT has a limit in
clocks and fails with :class:`WaitTimeout` naming what it waited for ("waited 20000
clocks for frame 17 on m_axis"). :func:`recv_within` takes the next item from a
sink (cocotbext-axi's ``AxiStreamSink`` or :class:`~opengse.sim.valid_ready.FieldStreamSink`),
:func:`wait_until` waits for a condition, :func:`within` bounds any awaitable.
Behind them, :func:`opengse.sim.runner.run_cocotb` gives every cocotb test a
simulated-time limit, so even an unbounded ``await sink.recv()`` ends.
"""

import inspect

import cocotb
from cocotb.triggers import ClockCycles, First, ReadOnly, RisingEdge

__all__ = [
    "random_pause",
    "reset_dut",
    "drain_until",
    "WaitTimeout",
    "DEFAULT_WAIT_CLOCKS",
    "wait_until",
    "recv_within",
    "within",
    "LastBeatUser",
]

#: Default bound of the waits below: far longer than any block takes to answer
#: (the DGSQ lease of 8192 clocks is the longest timer a test waits out).
DEFAULT_WAIT_CLOCKS = 200_000


class WaitTimeout(AssertionError):
    """A bounded wait ran out: the DUT did not do what the test waited for."""


def random_pause(rng, p):
    """Pause generator for cocotbext-axi style streams: True (pause) with probability
    ``p`` each cycle."""
    while True:
        yield rng.random() < p


async def reset_dut(dut, cycles=4, clk="clk", rst="rst"):
    """Hold the synchronous reset for ``cycles`` clock cycles, then one idle cycle."""
    clock, reset = getattr(dut, clk), getattr(dut, rst)
    reset.value = 1
    for _ in range(cycles):
        await RisingEdge(clock)
    reset.value = 0
    await RisingEdge(clock)


async def drain_until(clk, finished, progress, timeout, idle, on_timeout):
    """Wait until ``finished()`` — giving up after ``timeout`` clocks in which
    ``progress()`` (a count of transfers seen) did not change, then calling
    ``on_timeout(quiet_clocks)`` — then ``idle`` more clocks, so that unexpected extra
    output shows up before the end-of-test checks."""
    quiet, seen = 0, progress()
    while not finished():
        await RisingEdge(clk)
        now = progress()
        quiet, seen = (0 if now != seen else quiet + 1), now
        if quiet >= timeout:
            on_timeout(quiet)
            break
    for _ in range(idle):
        await RisingEdge(clk)


async def wait_until(clk, condition, what, clocks=DEFAULT_WAIT_CLOCKS):
    """Wait, one rising edge of ``clk`` at a time, until ``condition()`` is true; return
    the number of edges waited. After ``clocks`` edges raise :class:`WaitTimeout`
    ("waited N clocks for WHAT")."""
    for n in range(clocks + 1):
        if condition():
            return n
        if n < clocks:
            await RisingEdge(clk)
    raise WaitTimeout(f"waited {clocks} clocks for {what}")


def _sink_clock(sink):
    clk = getattr(sink, "clock", None)
    if clk is None:
        clk = getattr(sink, "clk", None)
    if clk is None:
        raise TypeError(f"{type(sink).__name__} has no clock; pass clk=")
    return clk


def _sink_name(sink):
    name = getattr(sink, "name", None)
    if isinstance(name, str) and name:
        return name
    bus = getattr(sink, "bus", None)
    tdata = getattr(bus, "tdata", None) if bus is not None else None
    name = getattr(tdata, "_name", None)
    return name[: -len("_tdata")] if name and name.endswith("_tdata") else type(sink).__name__


async def recv_within(sink, what=None, clocks=DEFAULT_WAIT_CLOCKS, clk=None):
    """The next item of ``sink`` (a frame of a cocotbext-axi ``AxiStreamSink``, a dict of
    a :class:`~opengse.sim.valid_ready.FieldStreamSink`), waiting at most ``clocks``
    clocks for it. On timeout raise :class:`WaitTimeout`: "waited N clocks for WHAT on
    PORT" (``what`` defaults to "an item")."""
    clk = clk if clk is not None else _sink_clock(sink)
    label = f"{what or 'an item'} on {_sink_name(sink)}"
    await wait_until(clk, lambda: not sink.empty(), label, clocks)
    return sink.recv_nowait()


async def within(clk, what, awaitable, clocks=DEFAULT_WAIT_CLOCKS):
    """Await ``awaitable`` (a coroutine, task or trigger) for at most ``clocks`` rising
    edges of ``clk`` and return its result; on timeout cancel it and raise
    :class:`WaitTimeout` ("waited N clocks for WHAT")."""
    task = cocotb.start_soon(awaitable) if inspect.iscoroutine(awaitable) else awaitable
    if isinstance(task, cocotb.task.Task):
        if not task.done():
            await First(task, ClockCycles(clk, clocks))
        if not task.done():
            task.cancel()
            raise WaitTimeout(f"waited {clocks} clocks for {what}")
        return task.result()
    limit = ClockCycles(clk, clocks)
    first = await First(awaitable, limit)
    if first is limit:
        raise WaitTimeout(f"waited {clocks} clocks for {what}")
    return first


class LastBeatUser:
    """``tuser`` of every last beat taken on an AXI-Stream port, in order.

    cocotbext-axi's sink drops the ``tkeep``-0 bytes of a frame with their ``tuser``,
    so a frame whose last beat has ``tkeep == 0`` reads the ``tuser`` of an earlier
    beat there. This monitor samples the handshake itself: ``pop()`` gives the next
    frame's last-beat ``tuser`` (bit 0); ``len()`` how many are waiting (a
    sink may hold a frame a clock before this monitor has sampled its last beat)."""

    def __init__(self, dut, prefix, clk):
        self._sig = {n: getattr(dut, f"{prefix}_{n}") for n in ("tvalid", "tready", "tlast", "tuser")}
        self._clk = clk
        self._seen = []
        cocotb.start_soon(self._run())

    async def _run(self):
        s = self._sig
        while True:
            await RisingEdge(self._clk)
            await ReadOnly()
            if int(s["tvalid"].value) and int(s["tready"].value) and int(s["tlast"].value):
                self._seen.append(int(s["tuser"].value) & 1)

    def __len__(self):
        return len(self._seen)

    def pop(self):
        assert self._seen, "no last beat recorded for a frame the sink received"
        return self._seen.pop(0)
