"""A bit-level 8N1 UART for cocotb benches: a driver of the DUT's ``rx`` pin and a
monitor of its ``tx`` pin, clocked by the DUT's clock (``divisor`` clocks a bit)."""

import collections

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge


class UartPins:
    def __init__(self, clk, rx, tx, divisor):
        self.clk, self.rx, self.tx, self.divisor = clk, rx, tx, divisor
        self.received = collections.deque()
        self.framing_errors = 0
        self.rx.value = 1
        cocotb.start_soon(self._monitor())

    async def send(self, data, bad_stop=False):
        """Send ``data`` (bytes) on the DUT's rx pin; ``bad_stop``: the stop bit low."""
        for byte in data:
            bits = [0] + [(byte >> i) & 1 for i in range(8)] + [0 if bad_stop else 1]
            for b in bits:
                self.rx.value = b
                await ClockCycles(self.clk, self.divisor)
        self.rx.value = 1

    async def _monitor(self):
        d = self.divisor
        while True:
            await RisingEdge(self.clk)
            if int(self.tx.value) != 0:
                continue
            await ClockCycles(self.clk, d // 2)
            if int(self.tx.value) != 0:
                continue
            byte = 0
            for i in range(8):
                await ClockCycles(self.clk, d)
                byte |= int(self.tx.value) << i
            await ClockCycles(self.clk, d)
            if int(self.tx.value) != 1:
                self.framing_errors += 1
                continue
            self.received.append(byte)

    def take(self, n):
        out = bytes(self.received.popleft() for _ in range(min(n, len(self.received))))
        return out
