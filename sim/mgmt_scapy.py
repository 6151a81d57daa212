"""Scapy layers of the management protocols, written from docs/management.md
independently of the gateware (rtl/mgmt/) and of gsectl's encoder (firmware/transport.py).

Ethernet: ``Ether(type=0x88B6) / GSEMgmt(key=..., seq=..., records=[MgmtRecord(...), ...])``.
UART: :func:`uart_request` and :func:`parse_uart_response` give the bytes of a request
and read those of a response.
"""

from scapy.fields import (
    ByteEnumField,
    ByteField,
    PacketListField,
    ShortField,
    XByteField,
    XIntField,
    XLongField,
    XShortField,
)
from scapy.layers.l2 import Ether
from scapy.packet import Packet, bind_layers

__all__ = [
    "MGMT_ETHERTYPE",
    "MgmtRecord",
    "GSEMgmt",
    "uart_request",
    "parse_uart_response",
    "OPS",
    "STATUSES",
]

MGMT_ETHERTYPE = 0x88B6
OPS = {1: "read", 2: "write"}
STATUSES = {0: "okay", 2: "slverr", 3: "decerr"}


class MgmtRecord(Packet):
    name = "MgmtRecord"
    fields_desc = [
        ByteEnumField("op", 1, OPS),
        ByteEnumField("status", 0, STATUSES),
        ShortField("reserved", 0),
        XIntField("addr", 0),
        XIntField("data", 0),
    ]

    def extract_padding(self, s):
        return b"", s


class GSEMgmt(Packet):
    name = "GSEMgmt"
    fields_desc = [
        XShortField("magic", 0x474D),
        ByteField("version", 1),
        XByteField("flags", 0),
        XLongField("key", 0),
        ShortField("seq", 0),
        ByteField("count", None),
        ByteField("reserved", 0),
        PacketListField("records", [], MgmtRecord, count_from=lambda p: p.count),
    ]

    def post_build(self, pkt, pay):
        if self.count is None:
            pkt = pkt[:14] + bytes([len(self.records)]) + pkt[15:]
        return pkt + pay


bind_layers(Ether, GSEMgmt, type=MGMT_ETHERTYPE)


def _checksum(body):
    return (-sum(body)) & 0xFF


def uart_request(op, addr, data=0, *, corrupt=False):
    """The 11 bytes of a UART request (``corrupt``: a wrong checksum)."""
    body = bytes([op]) + addr.to_bytes(4, "big") + data.to_bytes(4, "big")
    return bytes([0xA5]) + body + bytes([_checksum(body) ^ (0x5A if corrupt else 0)])


def parse_uart_response(raw):
    """``(status, data)`` of a 7-byte UART response; raises ``ValueError`` when malformed."""
    if len(raw) != 7 or raw[0] != 0x5A:
        raise ValueError(f"not a UART response: {raw.hex()}")
    if sum(raw[1:]) & 0xFF:
        raise ValueError(f"bad UART response checksum: {raw.hex()}")
    return raw[1], int.from_bytes(raw[2:6], "big")
