"""UARTTransmitter: 8N1 serial bytes to a pin."""

from amaranth import Cat, Const, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .uart_rx import check_divisor

__all__ = ["UARTTransmitter"]


class UARTTransmitter(wiring.Component):
    """8 data bits, no parity, one stop bit, least significant bit first.

    Parameters: ``divisor``, clocks per bit.

    Interface: ``s_data`` (in, 8 bits), ready while nothing is being sent; ``tx`` (out),
    the pin, high when idle (registered). A byte taken in one clock starts its start
    bit in the next; bytes offered back to back leave with no idle time between the
    stop bit and the next start bit (10 bit times per byte).
    """

    def __init__(self, divisor):
        self.divisor = check_divisor(divisor)
        super().__init__({"s_data": In(stream.Signature(8)), "tx": Out(1, init=1)})

    def elaborate(self, platform):
        m = Module()
        d = self.divisor
        shift = Signal(9, init=0x1FF)  # data[7:0], start: sent from bit 0; ones fill in (the stop bit)
        left = Signal(range(11))
        timer = Signal(range(d))
        m.d.comb += self.s_data.ready.eq(left == 0)
        m.d.sync += self.tx.eq(shift[0])
        with m.If(self.s_data.valid & self.s_data.ready):
            m.d.sync += [shift.eq(Cat(Const(0, 1), self.s_data.payload)), left.eq(10), timer.eq(d - 1)]
        with m.Elif(left != 0):
            m.d.sync += timer.eq(timer - 1)
            with m.If(timer == 0):
                m.d.sync += [shift.eq(Cat(shift[1:], Const(1, 1))), left.eq(left - 1), timer.eq(d - 1)]
        return m
