"""Scapy ``GSE`` layer: GSE v1 frames for tests and traffic, written from the brief's
byte table independently of the gateware's definition.

``Ether(type=0x88B5) / GSE(...) / payload``; dissection follows ``next_type`` for DATA.
"""

from scapy.fields import BitEnumField, BitField, ByteField, FlagsField, ShortField, XShortField
from scapy.layers.inet import IP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Ether
from scapy.packet import Packet, Raw, bind_layers

__all__ = ["GSE", "GSE_ETHERTYPE", "GSE_TYPES", "tag", "untag", "control_frame"]

GSE_ETHERTYPE = 0x88B5
GSE_TYPES = {0: "DATA", 1: "REQUEST", 2: "GRANT", 3: "PROBE"}


class GSE(Packet):
    name = "GSE"
    fields_desc = [
        BitField("ver", 1, 4),
        BitEnumField("type", 0, 4, GSE_TYPES),
        FlagsField("flags", 0, 8, ["FIRST", "LAST", "CE", "F3", "F4", "F5", "F6", "F7"]),
        BitField("tc", 0, 3),
        BitField("reserved", 0, 1),
        BitField("tenant", 0, 12),
        ShortField("src_node", 0),
        ShortField("dst_node", 0),
        ByteField("port", 0),
        ByteField("ttl", 64),
        ShortField("seq", 0),
        ShortField("len", 0),
        ShortField("dgsq", 0),
        XShortField("next_type", 0),
    ]

    def guess_payload_class(self, payload):
        if self.type == 0:
            nxt = {0x0800: IP, 0x86DD: IPv6, 0x0806: ARP}.get(self.next_type)
            if nxt is not None:
                return nxt
        return Raw

    def mysummary(self):
        return self.sprintf("GSE %type% %src_node%->%dst_node%:%port% seq=%seq% len=%len%")


bind_layers(Ether, GSE, type=GSE_ETHERTYPE)


def tag(frame, ethertype=GSE_ETHERTYPE, **fields):
    """Reference tagging: the bytes of ``frame`` with the GSE tag pushed after the SA."""
    raw = bytes(frame)
    eth = Ether(raw[:14])
    gse = GSE(next_type=eth.type, **fields)
    return raw[:12] + ethertype.to_bytes(2, "big") + bytes(gse) + raw[14:]


def untag(frame):
    """Reference untagging: the original frame of a tagged one."""
    raw = bytes(frame)
    return raw[:12] + raw[30:32] + raw[32:]


def control_frame(kind, dst="02:00:00:00:00:02", src="02:00:00:00:00:01", **fields):
    """A REQUEST, GRANT or PROBE frame padded to 60 bytes."""
    types = {v: k for k, v in GSE_TYPES.items()}
    pkt = Ether(dst=dst, src=src, type=GSE_ETHERTYPE) / GSE(type=types[kind], next_type=0, **fields)
    raw = bytes(pkt)
    return raw + bytes(max(0, 60 - len(raw)))
