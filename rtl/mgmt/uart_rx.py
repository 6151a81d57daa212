"""UARTReceiver: 8N1 serial bytes from a pin."""

from amaranth import Cat, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

__all__ = ["UARTReceiver", "check_divisor"]


def check_divisor(divisor):
    if not isinstance(divisor, int) or divisor < 4:
        raise ValueError(f"divisor (clocks per bit) must be an integer >= 4, not {divisor!r}")
    return divisor


class UARTReceiver(wiring.Component):
    """8 data bits, no parity, one stop bit, least significant bit first.

    Parameters: ``divisor``, clocks per bit (``clock_hz // baud``; 1085 for 115200 baud
    at 125 MHz).

    Interface:

    * ``rx`` (in): the pin, idle high; synchronised here (two flip-flops).
    * ``m_data`` (out, 8 bits): each byte received, held until taken.
    * ``stat_framing`` (out, 32): bytes dropped because their stop bit was low.
    * ``stat_overrun`` (out, 32): bytes dropped because the previous one was not yet
      taken when they ended.

    Timing: a start bit is a low level at the centre of the bit after a falling edge
    (a shorter glitch is ignored); each bit is sampled at its centre; the byte is
    offered in the clock after the centre of its stop bit, and the receiver waits for
    the next falling edge from there (after a low stop bit, for the line to go high
    first, so a break or a bad byte cannot start a false one).
    """

    def __init__(self, divisor):
        self.divisor = check_divisor(divisor)
        super().__init__(
            {
                "rx": In(1, init=1),
                "m_data": Out(stream.Signature(8)),
                "stat_framing": Out(32),
                "stat_overrun": Out(32),
            }
        )

    def elaborate(self, platform):
        m = Module()
        d = self.divisor
        rx = Signal(init=1)
        m.submodules.sync = FFSynchronizer(self.rx, rx, init=1)
        timer = Signal(range(d))
        bit = Signal(range(8))
        shift = Signal(8)
        o = self.m_data
        with m.If(o.valid & o.ready):
            m.d.sync += o.valid.eq(0)
        with m.If(timer != 0):
            m.d.sync += timer.eq(timer - 1)
        with m.FSM():
            with m.State("IDLE"):
                with m.If(~rx):
                    m.d.sync += timer.eq(d // 2 - 1)
                    m.next = "START"
            with m.State("START"):
                with m.If(timer == 0):
                    m.d.sync += [timer.eq(d - 1), bit.eq(0)]
                    m.next = "DATA"
                    with m.If(rx):
                        m.next = "IDLE"
            with m.State("DATA"):
                with m.If(timer == 0):
                    m.d.sync += [shift.eq(Cat(shift[1:], rx)), bit.eq(bit + 1), timer.eq(d - 1)]
                    with m.If(bit == 7):
                        m.next = "STOP"
            with m.State("STOP"):
                with m.If(timer == 0):
                    m.next = "IDLE"
                    with m.If(~rx):
                        m.d.sync += self.stat_framing.eq(self.stat_framing + 1)
                        m.next = "BREAK"
                    with m.Elif(o.valid & ~o.ready):
                        m.d.sync += self.stat_overrun.eq(self.stat_overrun + 1)
                    with m.Else():
                        m.d.sync += [o.valid.eq(1), o.payload.eq(shift)]
            with m.State("BREAK"):  # after a low stop bit: wait for the line to go idle
                with m.If(rx):
                    m.next = "IDLE"
        return m
