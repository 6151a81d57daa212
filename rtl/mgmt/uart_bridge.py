"""UARTBridge: register accesses from checksummed UART request frames."""

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from . import protocol as P
from .commands import command_layout, response_layout

__all__ = ["UARTBridge"]


class UARTBridge(wiring.Component):
    """One bus access per UART request (the byte format is in :mod:`.protocol` and
    docs/management.md).

    Parameters: ``idle_limit``: clocks without a byte after which a request that has
    begun is abandoned (counted in ``stat_malformed``); a host that lost a byte is back
    in step by its next request.

    Interface:

    * ``s_rx`` (in, 8 bits): bytes from a :class:`~.uart_rx.UARTReceiver`; ready while a
      request is being received (bytes that arrive while one is executed wait in the
      receiver, and an overrun there is counted).
    * ``m_tx`` (out, 8 bits): the response bytes, to a :class:`~.uart_tx.UARTTransmitter`.
    * ``m_cmd`` (out) / ``s_rsp`` (in): the bus access.
    * Counters (32-bit): ``stat_requests`` (executed), ``stat_bad_checksum``,
      ``stat_malformed`` (an unknown op, or a request cut short by ``idle_limit``).
      Bytes before a sync byte are skipped without a count (line noise, a host's
      partial request).

    A request whose checksum fails or whose op is unknown is dropped before it reaches
    the bus, with no response.
    """

    def __init__(self, idle_limit=1 << 20):
        if idle_limit < 1:
            raise ValueError(f"idle_limit must be >= 1, not {idle_limit!r}")
        self.idle_limit = idle_limit
        super().__init__(
            {
                "s_rx": In(stream.Signature(8)),
                "m_tx": Out(stream.Signature(8)),
                "m_cmd": Out(stream.Signature(command_layout())),
                "s_rsp": In(stream.Signature(response_layout())),
                "stat_requests": Out(32),
                "stat_bad_checksum": Out(32),
                "stat_malformed": Out(32),
            }
        )

    def elaborate(self, platform):
        m = Module()
        rx, tx = self.s_rx, self.m_tx
        body = Signal(8 * (P.UART_REQUEST_BYTES - 1))  # op, addr, data, checksum: first byte at the top
        count = Signal(range(P.UART_REQUEST_BYTES))
        csum = Signal(8)
        idle = Signal(range(self.idle_limit + 1))
        resp = Signal(8 * (P.UART_RESPONSE_BYTES - 2))  # status, data: first byte at the top
        neg_sum = Signal(8)  # 0 - the response bytes sent so far (after the sync byte)
        is_write = Signal()
        sent = Signal(range(P.UART_RESPONSE_BYTES))
        op = body[-8:]
        addr = body[-40:-8]
        wdata = body[8:40]
        with m.FSM():
            with m.State("HUNT"):
                m.d.comb += rx.ready.eq(1)
                with m.If(rx.valid & (rx.payload == P.UART_REQUEST_SYNC)):
                    m.d.sync += [count.eq(0), csum.eq(0), idle.eq(0)]
                    m.next = "BODY"
            with m.State("BODY"):
                m.d.comb += rx.ready.eq(1)
                m.d.sync += idle.eq(idle + 1)
                with m.If(rx.valid):
                    m.d.sync += [body.eq(Cat(rx.payload, body[:-8])), csum.eq(csum + rx.payload), idle.eq(0)]
                    m.d.sync += count.eq(count + 1)
                    with m.If(count == P.UART_REQUEST_BYTES - 2):
                        m.next = "CHECK"
                with m.Elif(idle == self.idle_limit):
                    m.d.sync += self.stat_malformed.eq(self.stat_malformed + 1)
                    m.next = "HUNT"
            with m.State("CHECK"):
                with m.If(csum != 0):
                    m.d.sync += self.stat_bad_checksum.eq(self.stat_bad_checksum + 1)
                    m.next = "HUNT"
                with m.Elif((op != P.OP_READ) & (op != P.OP_WRITE)):
                    m.d.sync += self.stat_malformed.eq(self.stat_malformed + 1)
                    m.next = "HUNT"
                with m.Else():
                    m.d.sync += self.stat_requests.eq(self.stat_requests + 1)
                    m.d.sync += is_write.eq(op == P.OP_WRITE)
                    m.next = "CMD"
            with m.State("CMD"):
                m.d.comb += [
                    self.m_cmd.valid.eq(1),
                    self.m_cmd.payload.write.eq(is_write),
                    self.m_cmd.payload.addr.eq(addr),
                    self.m_cmd.payload.data.eq(wdata),
                ]
                with m.If(self.m_cmd.ready):
                    m.next = "WAIT"
            with m.State("WAIT"):
                m.d.comb += self.s_rsp.ready.eq(1)
                with m.If(self.s_rsp.valid):
                    rd = Mux(is_write, 0, self.s_rsp.payload.data)  # a write answers data 0
                    m.d.sync += [resp.eq(Cat(rd, self.s_rsp.payload.resp, Const(0, 6))), sent.eq(0)]
                    m.d.sync += neg_sum.eq(0)
                    m.next = "SEND"
            with m.State("SEND"):
                # sync, status, data[4], then the checksum: the negated sum of the bytes
                # sent, added up as they leave (no adder tree on the response)
                m.d.comb += tx.valid.eq(1)
                m.d.comb += tx.payload.eq(resp[-8:])
                with m.If(sent == 0):
                    m.d.comb += tx.payload.eq(P.UART_RESPONSE_SYNC)
                with m.Elif(sent == P.UART_RESPONSE_BYTES - 1):
                    m.d.comb += tx.payload.eq(neg_sum)
                with m.If(tx.ready):
                    m.d.sync += sent.eq(sent + 1)
                    with m.If(sent != 0):
                        m.d.sync += [resp.eq(resp << 8), neg_sum.eq(neg_sum - resp[-8:])]
                    with m.If(sent == P.UART_RESPONSE_BYTES - 1):
                        m.next = "HUNT"
        return m
