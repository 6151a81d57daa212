"""FrameResponder: answers management request frames with register accesses."""

from amaranth import Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..lib.stream import AXIStreamSignature, check_data_width
from . import protocol as P
from .byte_stream import BeatsToBytes, BytesToBeats
from .commands import command_layout, response_layout

__all__ = ["FrameResponder", "record_layout"]


def record_layout():
    """A record as the responder keeps it: the request's ``op``, ``addr``, ``data``; after
    the access, ``status`` and (for a read) the data read in ``data``."""
    return data.StructLayout({"op": 8, "status": 2, "addr": 32, "data": 32})


def _be_byte(value, nbytes, i):
    """Byte ``i`` of ``value`` sent big-endian (most significant first)."""
    return value.word_select(nbytes - 1 - i, 8)


class FrameResponder(wiring.Component):
    """The Ethernet side of in-band management (docs/management.md has the format).

    Parameters: ``data_width`` (of both streams), ``key`` (64-bit: a request must carry
    it), ``mac`` (the source address of the responses, written as the usual hex
    number: ``0x020000000001`` is 02:00:00:00:00:01; requests may be sent to any
    address, broadcast included), ``allowed_port`` (the ingress port requests must come from), ``port_bits``
    (width of the port number), ``max_records`` (records per request, 1..255).

    Interface:

    * ``s_axis`` (in, AXI4-Stream, ``tuser`` of ``1 + port_bits``): frames for the
      responder; ``tuser[0]`` on the last beat marks a bad frame, ``tuser[1:]`` on the
      first beat is the port the frame came in on. Ready while a request is being
      received (a byte per clock); low while the responder executes a request and sends
      its answer (a few hundred clocks): the host port's store holds the next frame.
    * ``m_axis`` (out, AXI4-Stream, 1-bit ``tuser``, always 0): one response frame per
      accepted request, to the requester's MAC, at least 60 bytes.
    * ``m_cmd`` (out) / ``s_rsp`` (in): bus accesses, one at a time, to an
      :class:`~.axil_master.AXI4LiteMaster` (through a :class:`~.command_arbiter.CommandArbiter`).
    * Counters (32-bit, wrapping), each frame counted once, in this order of checks:
      ``stat_bad_port`` (from another port), ``stat_malformed`` (bad frame, not this
      EtherType, magic, version or a response flag, a record count of 0 or above
      ``max_records``, an unknown op, shorter than its records), ``stat_bad_key``,
      else ``stat_requests``. ``stat_bus_errors``: records answered SLVERR or DECERR.

    Timing: the verdict is made in the clock after the frame's last byte, from registered
    flags (no byte is taken in that clock); each record is read from the record memory
    into the ``m_cmd`` register a clock before it is offered (``m_cmd``'s ``valid`` and
    payload are registers).

    A dropped frame never touches the bus: records are stored as they arrive, and the
    accesses start only after the frame's last byte passed every check. Bytes after
    the last record (Ethernet padding) are ignored. Records run in order; one that
    fails does not stop the next.
    """

    def __init__(
        self, data_width=64, key=P.DEFAULT_KEY, allowed_port=0, port_bits=1, max_records=16, mac=P.DEFAULT_MAC
    ):
        check_data_width(data_width)
        if not 1 <= max_records <= 255:
            raise ValueError(f"max_records must be 1..255, not {max_records!r}")
        if not 0 <= key < 2**64:
            raise ValueError("key must be a 64-bit unsigned integer")
        if not 0 <= mac < 2**48 or mac >> 40 & 1:
            raise ValueError("mac must be a 48-bit unicast address (0x020000000001 for 02:00:00:00:00:01)")
        if not 0 <= allowed_port < 2**port_bits:
            raise ValueError(f"allowed_port {allowed_port!r} does not fit {port_bits} bits")
        self.data_width, self.key, self.allowed_port = data_width, key, allowed_port
        self.port_bits, self.max_records, self.mac = port_bits, max_records, mac
        members = {
            "s_axis": In(AXIStreamSignature(data_width, 1 + port_bits)),
            "m_axis": Out(AXIStreamSignature(data_width)),
            "m_cmd": Out(stream.Signature(command_layout())),
            "s_rsp": In(stream.Signature(response_layout())),
        }
        for name in ("requests", "bad_port", "bad_key", "malformed", "bus_errors"):
            members[f"stat_{name}"] = Out(32)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        n = self.max_records
        m.submodules.rx_bytes = rx = BeatsToBytes(self.data_width, 1 + self.port_bits)
        m.submodules.tx_beats = tx = BytesToBeats(self.data_width)
        wiring.connect(m, wiring.flipped(self.s_axis), rx.s_axis)
        wiring.connect(m, tx.m_axis, wiring.flipped(self.m_axis))
        m.submodules.records = mem = Memory(shape=record_layout(), depth=n, init=[])
        wp = mem.write_port()
        rp = mem.read_port(domain="comb")

        st = {
            "src": Signal(48),  # the requester's MAC, first byte in bits 7:0
            "seq": Signal(16),
            "count": Signal(8),
        }
        # record being stored / executed / sent: the memory's only address, so that no
        # state decode runs into its read
        k = Signal(range(n + 1))
        m.d.comb += [rp.addr.eq(k), wp.addr.eq(k)]
        k_last = Signal()  # k + 1 == count, registered (k settles clocks before its use)
        m.d.sync += k_last.eq(k + 1 == st["count"])
        # the response's last byte index, registered from the count (stable from the
        # request's verdict on, many clocks before the response starts)
        last_index = Signal(range(max(P.MIN_FRAME_BYTES, P.HEADER_BYTES + P.RECORD_BYTES * n)))
        assert P.RECORD_BYTES == 12  # 12 x count as two shifts (no multiplier)
        unpadded = P.HEADER_BYTES + (st["count"] << 3) + (st["count"] << 2)
        m.d.sync += last_index.eq(Mux(unpadded < P.MIN_FRAME_BYTES, P.MIN_FRAME_BYTES, unpadded) - 1)
        cmd = self.m_cmd
        # receiving: a register (not a decode of the state), so that a byte's logic
        # starts from registers only
        rx_on = Signal(init=1)
        accept = self._receive(m, rx.m_bytes, wp, st, k, rx_on)
        with m.FSM():
            with m.State("RX"):
                with m.If(accept):
                    m.d.sync += rx_on.eq(0)
                    m.next = "FETCH"
            with m.State("FETCH"):  # record k into the command register
                m.d.sync += [
                    cmd.valid.eq(1),
                    cmd.payload.write.eq(rp.data.op == P.OP_WRITE),
                    cmd.payload.addr.eq(rp.data.addr),
                    cmd.payload.data.eq(rp.data.data),
                ]
                m.next = "EXEC"
            with m.State("EXEC"):
                with m.If(cmd.ready):
                    m.d.sync += cmd.valid.eq(0)
                    m.next = "WAIT"
            with m.State("WAIT"):
                m.d.comb += self.s_rsp.ready.eq(1)
                m.d.comb += [wp.data.op.eq(rp.data.op), wp.data.addr.eq(rp.data.addr)]
                m.d.comb += [
                    wp.data.status.eq(self.s_rsp.payload.resp),
                    wp.data.data.eq(self.s_rsp.payload.data),
                ]
                with m.If(self.s_rsp.valid):
                    m.d.comb += wp.en.eq(1)
                    with m.If(self.s_rsp.payload.resp != P.STATUS_OKAY):
                        m.d.sync += self.stat_bus_errors.eq(self.stat_bus_errors + 1)
                    m.d.sync += k.eq(k + 1)
                    with m.If(k_last):
                        m.d.sync += k.eq(0)
                        m.next = "TX"
                    with m.Else():
                        m.next = "FETCH"
            with m.State("TX"):
                with m.If(self._transmit(m, tx.s_bytes, rp, st, k, last_index)):
                    m.d.sync += [k.eq(0), rx_on.eq(1)]
                    m.next = "RX"
        return m

    def _receive(self, m, b, wp, st, k, rx_on):
        """Parse a request a byte at a time; store its records (record ``k``); the
        verdict in the clock after its last byte, from registered flags (no byte is
        taken in that clock). What the next byte is checked against (``exp``,
        ``chk_fmt``, ``chk_key``) and where it falls (``in_body``, ``rec_end``) are
        registered with ``pos`` and ``rec_byte``, so a byte meets only its own compare.
        Bytes are taken while ``rx_on``; returns the signal true when a request passed
        every check (the clock of its verdict)."""
        n = self.max_records
        pos = Signal(range(P.HEADER_BYTES + 1))  # saturates at the first record byte
        in_body = Signal()  # pos == HEADER_BYTES
        rec_byte = Signal(range(P.RECORD_BYTES))
        rec_end = Signal()  # rec_byte == RECORD_BYTES - 1
        remaining = Signal(8)  # records still to come, kept as a counter
        rec_due = Signal()  # remaining != 0, kept with it
        op, addr, wdata = Signal(8), Signal(32), Signal(32)
        port_ok, bad_fmt, bad_key = Signal(), Signal(), Signal()
        fmt_now, key_now = Signal(), Signal()
        judge, truncated, bad_frame = Signal(), Signal(), Signal()
        exp, chk_fmt, chk_key = Signal(8), Signal(), Signal()
        byte = b.payload.data
        take = Signal()
        accept = Signal()
        m.d.comb += [b.ready.eq(rx_on & ~judge), take.eq(b.valid & b.ready)]

        # the header bytes checked, by position: format, then the key
        fixed = [P.ETHERTYPE >> 8, P.ETHERTYPE & 0xFF, P.MAGIC >> 8, P.MAGIC & 0xFF, P.VERSION, 0]
        checks = {12 + i: (v, 0) for i, v in enumerate(fixed)}
        checks.update({18 + i: (self.key >> 8 * (7 - i) & 0xFF, 1) for i in range(8)})
        completes = Signal()
        m.d.comb += completes.eq(in_body & rec_due & rec_end)
        m.d.comb += [
            fmt_now.eq(
                (chk_fmt & (byte != exp))
                | (~in_body & (pos == 28) & ((byte == 0) | (byte > n)))
                | (completes & (op != P.OP_READ) & (op != P.OP_WRITE))
            ),
            key_now.eq(chk_key & (byte != exp)),
        ]
        with m.If(take):
            m.d.sync += [chk_fmt.eq(0), chk_key.eq(0)]
            with m.If(~in_body):
                with m.Switch(pos):
                    for i in range(6):
                        with m.Case(6 + i):
                            m.d.sync += st["src"].word_select(i, 8).eq(byte)
                    with m.Case(26):
                        m.d.sync += st["seq"][8:].eq(byte)
                    with m.Case(27):
                        m.d.sync += st["seq"][:8].eq(byte)
                    with m.Case(28):
                        m.d.sync += [st["count"].eq(byte), remaining.eq(byte), rec_due.eq(byte != 0)]
                    with m.Case(29):
                        m.d.sync += in_body.eq(1)
                with m.Switch(pos):  # what the next byte is checked against
                    for p, (value, is_key) in checks.items():
                        with m.Case(p - 1):
                            m.d.sync += [exp.eq(value), (chk_key if is_key else chk_fmt).eq(1)]
            with m.Elif(rec_due):
                with m.Switch(rec_byte):
                    with m.Case(0):
                        m.d.sync += op.eq(byte)
                    with m.Case(4, 5, 6, 7):
                        m.d.sync += addr.eq((addr << 8) | byte)
                    with m.Case(8, 9, 10, 11):
                        m.d.sync += wdata.eq((wdata << 8) | byte)
                m.d.sync += [rec_byte.eq(rec_byte + 1), rec_end.eq(rec_byte == P.RECORD_BYTES - 2)]
                with m.If(rec_end):
                    m.d.sync += [rec_byte.eq(0), k.eq(k + 1), remaining.eq(remaining - 1)]
                    m.d.sync += rec_due.eq(remaining != 1)
                    m.d.comb += [
                        wp.en.eq(1),
                        wp.data.op.eq(op),
                        wp.data.status.eq(0),
                        wp.data.addr.eq(addr),
                        wp.data.data.eq((wdata << 8) | byte),
                    ]

        port_now = Signal()
        m.d.comb += port_now.eq(Mux(pos == 0, b.payload.user[1:] == self.allowed_port, port_ok))
        with m.If(take):
            m.d.sync += [bad_fmt.eq(bad_fmt | fmt_now), bad_key.eq(bad_key | key_now), port_ok.eq(port_now)]
            with m.If(~in_body):
                m.d.sync += pos.eq(pos + 1)
            with m.If(b.payload.last):
                m.d.sync += [
                    judge.eq(1),
                    truncated.eq(~in_body | (remaining != completes)),
                    bad_frame.eq(b.payload.user[0]),
                ]
                m.d.sync += [pos.eq(0), in_body.eq(0), rec_byte.eq(0), rec_end.eq(0)]
                m.d.sync += [remaining.eq(0), rec_due.eq(0), chk_fmt.eq(0), chk_key.eq(0)]
        with m.If(judge):  # the frame's verdict, every input a register
            m.d.sync += [judge.eq(0), bad_fmt.eq(0), bad_key.eq(0), k.eq(0)]
            with m.If(~port_ok):
                m.d.sync += self.stat_bad_port.eq(self.stat_bad_port + 1)
            with m.Elif(bad_fmt | truncated | bad_frame):
                m.d.sync += self.stat_malformed.eq(self.stat_malformed + 1)
            with m.Elif(bad_key):
                m.d.sync += self.stat_bad_key.eq(self.stat_bad_key + 1)
            with m.Else():
                m.d.sync += self.stat_requests.eq(self.stat_requests + 1)
                m.d.comb += accept.eq(1)
        return accept

    def _transmit(self, m, o, rp, st, k, last_index):
        """Send the response a byte at a time into ``o``, whose ``valid`` and payload are
        registered here (the byte multiplexer ends in a register); returns the signal
        true in the clock its last byte is taken."""
        tpos = Signal(range(P.HEADER_BYTES + 1))  # saturates at the first record byte
        rec_byte = Signal(range(P.RECORD_BYTES))
        sent = Signal.like(last_index)
        produced = Signal()  # the last byte has been offered
        byte = Signal(8)
        header = {12: P.ETHERTYPE >> 8, 13: P.ETHERTYPE & 0xFF, 14: P.MAGIC >> 8, 15: P.MAGIC & 0xFF}
        header.update({16: P.VERSION, 17: P.FLAG_RESPONSE})
        with m.Switch(tpos):
            for i in range(6):
                with m.Case(i):
                    m.d.comb += byte.eq(st["src"].word_select(i, 8))
                with m.Case(6 + i):
                    m.d.comb += byte.eq(_be_byte(Const(self.mac, 48), 6, i))
            for i, v in header.items():
                with m.Case(i):
                    m.d.comb += byte.eq(v)
            with m.Case(26):
                m.d.comb += byte.eq(st["seq"][8:])
            with m.Case(27):
                m.d.comb += byte.eq(st["seq"][:8])
            with m.Case(28):
                m.d.comb += byte.eq(st["count"])
            with m.Case(P.HEADER_BYTES):
                with m.If(k < st["count"]):
                    with m.Switch(rec_byte):
                        with m.Case(0):
                            m.d.comb += byte.eq(rp.data.op)
                        with m.Case(1):
                            m.d.comb += byte.eq(rp.data.status)
                        for i in range(4):
                            with m.Case(4 + i):
                                m.d.comb += byte.eq(_be_byte(rp.data.addr, 4, i))
                            with m.Case(8 + i):
                                m.d.comb += byte.eq(_be_byte(rp.data.data, 4, i))
        done = Signal()
        m.d.comb += done.eq(o.valid & o.ready & o.payload.last)
        with m.If(o.valid & o.ready):
            m.d.sync += o.valid.eq(0)
        with m.If((~o.valid | o.ready) & ~produced):
            m.d.sync += [o.valid.eq(1), o.payload.data.eq(byte), o.payload.user.eq(0)]
            m.d.sync += [o.payload.last.eq(sent == last_index), sent.eq(sent + 1)]
            with m.If(sent == last_index):
                m.d.sync += produced.eq(1)
            with m.If(tpos != P.HEADER_BYTES):
                m.d.sync += tpos.eq(tpos + 1)
            with m.Elif(k < st["count"]):
                m.d.sync += rec_byte.eq(rec_byte + 1)
                with m.If(rec_byte == P.RECORD_BYTES - 1):
                    m.d.sync += [rec_byte.eq(0), k.eq(k + 1)]
        with m.If(done):
            m.d.sync += [sent.eq(0), tpos.eq(0), rec_byte.eq(0), produced.eq(0)]
        return done
