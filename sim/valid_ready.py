"""cocotb drivers for side-channel valid/ready streams (``<prefix>_valid``,
``<prefix>_ready`` and one ``<prefix>_<field>`` per field), with pause generators
like cocotbext-axi's streams.

Waits are bounded: :meth:`FieldStreamSink.recv` and :meth:`FieldStreamSource.wait`
give up after ``timeout`` clocks (default
:data:`~opengse.sim.cocotb_util.DEFAULT_WAIT_CLOCKS`) with a
:class:`~opengse.sim.cocotb_util.WaitTimeout` naming the port ("waited 200000 clocks
for item 3 on m_hdr").
"""

from collections import deque

import cocotb
from cocotb.triggers import Event, RisingEdge

from .cocotb_util import DEFAULT_WAIT_CLOCKS, wait_until

__all__ = ["FieldStreamSource", "FieldStreamSink"]


def _high(sig):
    # 1, and not X/Z: before reset a DUT's outputs are X on a four-state simulator
    # (Icarus), where Verilator starts them at 0 or a random value.
    return str(sig.value) == "1"


class _Base:
    def __init__(self, dut, prefix, clk, fields=None):
        self.clk = clk
        self.name = prefix
        self.valid = getattr(dut, f"{prefix}_valid")
        self.ready = getattr(dut, f"{prefix}_ready")
        if fields is None:
            names = [n for n in dir(dut) if n.startswith(prefix + "_")]
            fields = [n[len(prefix) + 1 :] for n in names if n[len(prefix) + 1 :] not in ("valid", "ready")]
        self.fields = {f: getattr(dut, f"{prefix}_{f}") for f in fields}
        self.queue = deque()
        self._pause = None

    def set_pause_generator(self, gen):
        self._pause = gen

    def _paused(self):
        return bool(next(self._pause)) if self._pause is not None else False


class FieldStreamSource(_Base):
    """Drives items (dicts of field values) onto a valid/ready stream, in order."""

    def __init__(self, dut, prefix, clk, fields=None):
        super().__init__(dut, prefix, clk, fields)
        self.sent = 0
        self.valid.value = 0
        self._idle = Event()
        self._idle.set()
        cocotb.start_soon(self._run())

    def send(self, item):
        self.queue.append(dict(item))
        self._idle.clear()

    async def wait(self, timeout=DEFAULT_WAIT_CLOCKS):
        """Wait until every queued item has been taken (at most ``timeout`` clocks)."""
        await wait_until(
            self.clk,
            lambda: not (self.queue or self.valid.value),
            f"{self.name} to take {len(self.queue) + int(bool(self.valid.value))} "
            f"more item(s) ({self.sent} taken so far)",
            timeout,
        )

    async def _run(self):
        current = None
        while True:
            await RisingEdge(self.clk)
            if current is not None and self.valid.value and _high(self.ready):
                current = None
                self.sent += 1
            if current is None and self.queue and not self._paused():
                current = self.queue.popleft()
                for name, sig in self.fields.items():
                    sig.value = int(current.get(name, 0))
                self.valid.value = 1
            elif current is None:
                self.valid.value = 0


class FieldStreamSink(_Base):
    """Collects items from a valid/ready stream; ``ready`` follows the pause generator."""

    def __init__(self, dut, prefix, clk, fields=None):
        super().__init__(dut, prefix, clk, fields)
        self.received = 0
        self.ready.value = 0
        cocotb.start_soon(self._run())

    def empty(self):
        return not self.queue

    def count(self):
        return len(self.queue)

    def recv_nowait(self):
        return self.queue.popleft()

    async def recv(self, timeout=DEFAULT_WAIT_CLOCKS):
        """The next item, waiting at most ``timeout`` clocks for it."""
        await wait_until(
            self.clk,
            lambda: bool(self.queue),
            f"item {self.received - len(self.queue) + 1} on {self.name}",
            timeout,
        )
        return self.queue.popleft()

    async def _run(self):
        # Sampled right after the edge, as cocotbext-axi does: the values the DUT saw.
        while True:
            await RisingEdge(self.clk)
            if _high(self.valid) and self.ready.value:
                self.queue.append({n: int(s.value) for n, s in self.fields.items()})
                self.received += 1
            self.ready.value = 0 if self._paused() else 1
