"""Transports for gsectl: a 32-bit register bus (``read32``/``write32``, as
:class:`~opengse.firmware.regs.Registers` wants) over management frames or a UART.

The byte formats are in docs/management.md (and rtl/mgmt/protocol.py, which the
gateware uses); this module encodes and decodes them on its own, from the document.

* :class:`FrameBus` runs each access as one request frame and waits for the response
  with the same sequence number. It sends and receives frames through a *link*:
  :class:`RawEthernetLink` (a Linux ``AF_PACKET`` socket on a network interface; needs
  ``CAP_NET_RAW``) or :class:`DatagramLink` (a Unix datagram socket, one frame per
  datagram: how a simulation offers its frame port).
* :class:`UartBus` runs each access as one UART request on a serial device (a plain
  ``termios`` file: no pyserial).

Errors are :class:`TransportError`: no answer within the timeout (after the retries),
an access the bank refused (SLVERR, DECERR), a device that cannot be opened.
"""

import os
import select
import socket
import struct
import tempfile
import time

__all__ = [
    "TransportError",
    "BusError",
    "FrameBus",
    "RawEthernetLink",
    "DatagramLink",
    "UartBus",
    "parse_mac",
    "encode_request",
    "decode_response",
]

ETHERTYPE = 0x88B6
MAGIC = 0x474D
VERSION = 1
OP_READ, OP_WRITE = 1, 2
STATUS_NAMES = {0: "OKAY", 2: "SLVERR (refused: read-only)", 3: "DECERR (nothing mapped there)"}
UART_SYNC_REQUEST, UART_SYNC_RESPONSE = 0xA5, 0x5A


class TransportError(Exception):
    pass


class BusError(TransportError):
    """The bank answered an access with an error."""

    def __init__(self, op, addr, status):
        self.op, self.addr, self.status = op, addr, status
        what = "read" if op == OP_READ else "write"
        super().__init__(f"{what} of {addr:#06x} answered {STATUS_NAMES.get(status, f'status {status}')}")


def parse_mac(text):
    """``"02:00:00:00:00:01"`` -> 6 bytes; raises ``ValueError`` naming the text."""
    parts = text.replace("-", ":").split(":")
    try:
        if len(parts) != 6:
            raise ValueError
        out = bytes(int(p, 16) for p in parts)
    except ValueError:
        raise ValueError(f"{text!r} is not a MAC address (six hex bytes, colon separated)") from None
    return out


# ---- management frames ------------------------------------------------------------------


def encode_request(dst, src, key, seq, records):
    """A request frame: ``records`` is a list of ``(op, addr, data)``."""
    head = dst + src + struct.pack(">HHBBQHBB", ETHERTYPE, MAGIC, VERSION, 0, key, seq, len(records), 0)
    body = b"".join(struct.pack(">BBHII", op, 0, 0, addr, data) for op, addr, data in records)
    frame = head + body
    return frame + bytes(max(0, 60 - len(frame)))


def decode_response(frame, seq):
    """``[(op, status, addr, data), ...]`` of a response to ``seq``, or ``None`` when
    ``frame`` is not one (another protocol, a request, another sequence number)."""
    if len(frame) < 30:
        return None
    ethertype, magic, version, flags, _key, rseq, count, _r = struct.unpack(">HHBBQHBB", frame[12:30])
    if (ethertype, magic, version, flags, rseq) != (ETHERTYPE, MAGIC, VERSION, 1, seq):
        return None
    if len(frame) < 30 + 12 * count:
        raise TransportError(f"response {seq} is truncated: {len(frame)} bytes for {count} records")
    out = []
    for k in range(count):
        op, status, _r, addr, data = struct.unpack(">BBHII", frame[30 + 12 * k : 42 + 12 * k])
        out.append((op, status, addr, data))
    return out


class RawEthernetLink:
    """Frames on a Linux network interface (``AF_PACKET``; root or ``CAP_NET_RAW``).

    Only frames of the management EtherType are received. ``mac`` is the interface's
    own address (read from ``/sys/class/net/IFACE/address``)."""

    def __init__(self, iface):
        try:
            self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETHERTYPE))
            self.sock.bind((iface, ETHERTYPE))
        except (OSError, AttributeError) as e:
            raise TransportError(f"cannot open a raw socket on {iface!r}: {e}") from None
        try:
            with open(f"/sys/class/net/{iface}/address") as f:
                self.mac = parse_mac(f.read().strip())
        except (OSError, ValueError):
            self.mac = bytes.fromhex("020000000002")

    def send(self, frame):
        self.sock.send(frame)

    def recv(self, timeout):
        ready, _, _ = select.select([self.sock], [], [], max(0.0, timeout))
        return self.sock.recv(2048) if ready else None

    def close(self):
        self.sock.close()


class DatagramLink:
    """Frames as datagrams on a Unix socket at ``path`` (a simulation's frame port).

    The link binds its own temporary socket, so the simulation can answer it."""

    mac = bytes.fromhex("02000000aa01")

    def __init__(self, path):
        self.path = str(path)
        self._dir = tempfile.mkdtemp(prefix="gsectl-")
        self._own = os.path.join(self._dir, "link")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self._own)

    def send(self, frame):
        try:
            self.sock.sendto(frame, self.path)
        except OSError as e:
            raise TransportError(f"cannot reach the simulation at {self.path}: {e.strerror}") from None

    def recv(self, timeout):
        ready, _, _ = select.select([self.sock], [], [], max(0.0, timeout))
        return self.sock.recv(65536) if ready else None

    def close(self):
        self.sock.close()
        os.unlink(self._own)
        os.rmdir(self._dir)


class FrameBus:
    """``read32``/``write32`` as management frames over ``link``.

    ``key``: the 64-bit key the responder was built with; ``dst``: its MAC (6 bytes;
    default broadcast: the responder answers whatever address it was sent to);
    ``timeout`` seconds per attempt, ``retries`` more attempts (each with a new
    sequence number, so a late answer to an old one is ignored)."""

    def __init__(self, link, key, dst=b"\xff" * 6, timeout=1.0, retries=2):
        self.link, self.key, self.dst = link, key, dst
        self.timeout, self.retries = timeout, retries
        self.seq = int.from_bytes(os.urandom(2), "big")

    def exchange(self, records):
        """Run ``records`` (``[(op, addr, data)]``) in one frame; ``[(status, data)]``."""
        for _attempt in range(self.retries + 1):
            self.seq = (self.seq + 1) & 0xFFFF
            self.link.send(encode_request(self.dst, self.link.mac, self.key, self.seq, records))
            deadline = time.monotonic() + self.timeout
            while True:
                left = deadline - time.monotonic()
                frame = self.link.recv(left) if left > 0 else None
                if frame is None:
                    break
                answer = decode_response(frame, self.seq)
                if answer is not None:
                    return [(status, data) for _op, status, _addr, data in answer]
        raise TransportError(
            f"no answer to a management frame within {self.timeout:g} s ({self.retries + 1} attempts): "
            "check the interface, the key and the cabling"
        )

    def _one(self, op, addr, data=0):
        ((status, value),) = self.exchange([(op, addr, data)])
        if status:
            raise BusError(op, addr, status)
        return value

    def read32(self, addr):
        return self._one(OP_READ, addr)

    def write32(self, addr, value):
        self._one(OP_WRITE, addr, value)

    def close(self):
        self.link.close()


# ---- UART -------------------------------------------------------------------------------


def _checksum(body):
    return (-sum(body)) & 0xFF


class UartBus:
    """``read32``/``write32`` over the UART bridge on serial device ``dev`` (8N1 at
    ``baud``, raw mode). ``timeout`` seconds per attempt, ``retries`` more attempts."""

    def __init__(self, dev, baud=115200, timeout=1.0, retries=2):
        import termios

        self.timeout, self.retries = timeout, retries
        try:
            self.fd = os.open(dev, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        except OSError as e:
            raise TransportError(f"cannot open {dev}: {e.strerror}") from None
        try:
            attrs = termios.tcgetattr(self.fd)
            speed = getattr(termios, f"B{baud}", None)
            if speed is None:
                raise TransportError(f"baud rate {baud} is not one termios knows")
            attrs[0] = 0  # iflag: no translation, no flow control
            attrs[1] = 0  # oflag
            attrs[2] = termios.CS8 | termios.CREAD | termios.CLOCAL  # 8N1
            attrs[3] = 0  # lflag: raw, no echo
            attrs[4] = attrs[5] = speed
            attrs[6][termios.VMIN] = 0
            attrs[6][termios.VTIME] = 0
            termios.tcsetattr(self.fd, termios.TCSANOW, attrs)
            termios.tcflush(self.fd, termios.TCIOFLUSH)
        except termios.error as e:
            os.close(self.fd)
            raise TransportError(f"{dev} is not a serial device: {e}") from None

    def _read_response(self, deadline):
        buf = b""
        while True:
            start = buf.find(bytes([UART_SYNC_RESPONSE]))
            buf = buf[start:] if start >= 0 else b""
            if len(buf) >= 7:
                return buf[:7]
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                buf += os.read(self.fd, 64)

    def _one(self, op, addr, data=0):
        body = bytes([op]) + addr.to_bytes(4, "big") + data.to_bytes(4, "big")
        request = bytes([UART_SYNC_REQUEST]) + body + bytes([_checksum(body)])
        import termios

        for _attempt in range(self.retries + 1):
            termios.tcflush(self.fd, termios.TCIFLUSH)  # a late answer to an earlier try
            os.write(self.fd, request)
            raw = self._read_response(time.monotonic() + self.timeout)
            if raw is None or sum(raw[1:]) & 0xFF:
                continue  # lost or corrupted: ask again
            status, value = raw[1], int.from_bytes(raw[2:6], "big")
            if status:
                raise BusError(op, addr, status)
            return value
        raise TransportError(
            f"no answer on the UART within {self.timeout:g} s ({self.retries + 1} attempts): "
            "check the device, the baud rate and the cabling"
        )

    def read32(self, addr):
        return self._one(OP_READ, addr)

    def write32(self, addr, value):
        self._one(OP_WRITE, addr, value)

    def close(self):
        os.close(self.fd)
