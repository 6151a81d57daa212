"""The GSE v1 header, defined once for the gateware.

:data:`GSE_FIELDS` is the wire contract of ``docs/protocol.md`` (brief section 3):
for each field its byte offset in the 18-byte GSE header, how many bytes its
big-endian span covers, and the bit position and width of the field within that
span. Everything else here is derived from it: the Amaranth struct layout of the
header side channel, and the functions that pack fields into wire bytes and
unpack wire bytes into fields.
"""

from amaranth.hdl import Cat, Const
from amaranth.lib import data, enum

__all__ = [
    "GSE_ETHERTYPE",
    "GSE_VERSION",
    "GSE_HEADER_BYTES",
    "ETH_HEADER_BYTES",
    "TAGGED_HEADER_BYTES",
    "CREDIT_UNIT_BYTES",
    "CONTAINER_BYTES",
    "CONTROL_FRAME_BYTES",
    "GSEType",
    "GSEFlags",
    "GSE_FIELDS",
    "GSEHeaderLayout",
    "gse_header_layout",
    "pack_header",
    "unpack_header",
    "field_bits",
    "reserved_bits",
    "FIELD_NAMES",
]

GSE_ETHERTYPE = 0x88B5  # IEEE local experimental EtherType 1; a build parameter
GSE_VERSION = 1
ETH_HEADER_BYTES = 14  # DA(6) SA(6) EtherType(2)
GSE_HEADER_BYTES = 18  # the bytes after the GSE EtherType, next_type included
TAGGED_HEADER_BYTES = ETH_HEADER_BYTES + GSE_HEADER_BYTES  # 32: all header checks fit here
CREDIT_UNIT_BYTES = 64
CONTAINER_BYTES = 4096
CONTROL_FRAME_BYTES = 60  # control frames are padded to the Ethernet minimum (no FCS)


class GSEType(enum.Enum, shape=4):
    DATA = 0
    REQUEST = 1
    GRANT = 2
    PROBE = 3


class GSEFlags(enum.Flag, shape=8):
    FIRST = 0x01
    LAST = 0x02
    CE = 0x04


#: (name, byte offset in the GSE header, span bytes, lsb within the span, width)
GSE_FIELDS = (
    ("ver", 0, 1, 4, 4),
    ("type", 0, 1, 0, 4),
    ("flags", 1, 1, 0, 8),
    ("tc", 2, 2, 13, 3),
    ("tenant", 2, 2, 0, 12),
    ("src_node", 4, 2, 0, 16),
    ("dst_node", 6, 2, 0, 16),
    ("port", 8, 1, 0, 8),
    ("ttl", 9, 1, 0, 8),
    ("seq", 10, 2, 0, 16),
    ("len", 12, 2, 0, 16),
    ("dgsq", 14, 2, 0, 16),
    ("next_type", 16, 2, 0, 16),
)

FIELD_NAMES = tuple(f[0] for f in GSE_FIELDS)


def field_bits(name):
    """Positions ``(header byte, bit in byte)`` of field ``name``, LSB first."""
    for fname, off, n, lsb, width in GSE_FIELDS:
        if fname == name:
            return [(off + n - 1 - (lsb + k) // 8, (lsb + k) % 8) for k in range(width)]
    raise KeyError(name)


def reserved_bits():
    """Positions ``(header byte, bit in byte)`` that no field covers (zero on send)."""
    covered = {pos for name in FIELD_NAMES for pos in field_bits(name)}
    return [(byte, bit) for byte in range(GSE_HEADER_BYTES) for bit in range(8) if (byte, bit) not in covered]


def gse_header_layout(omit=()):
    """Struct layout with one member per GSE header field (minus ``omit``)."""
    return data.StructLayout({name: width for name, _o, _n, _l, width in GSE_FIELDS if name not in omit})


GSEHeaderLayout = gse_header_layout()


def _span(wire_bytes, offset, nbytes):
    # Big-endian span: the last byte is the least significant.
    return Cat(*reversed(wire_bytes[offset : offset + nbytes]))


def unpack_header(wire_bytes):
    """Fields from wire bytes: ``wire_bytes[k]`` is GSE header byte k (8-bit values).

    Returns a dict of field name to Amaranth value."""
    assert len(wire_bytes) >= GSE_HEADER_BYTES
    return {name: _span(wire_bytes, off, n)[lsb : lsb + width] for name, off, n, lsb, width in GSE_FIELDS}


def pack_header(fields):
    """Wire bytes from fields: a list of 18 8-bit values, GSE header byte k at index k.

    ``fields`` maps field names to Amaranth values (or ints); missing fields are zero,
    and so are the reserved bits."""
    spans = {}
    for name, off, n, lsb, width in GSE_FIELDS:
        value = fields.get(name, 0)
        if isinstance(value, int):
            value = Const(value, width)
        spans.setdefault((off, n), []).append((lsb, width, value))
    out = [None] * GSE_HEADER_BYTES
    for (off, n), parts in spans.items():
        bits = [Const(0, 1)] * (8 * n)
        for lsb, width, value in parts:
            for b in range(width):
                bits[lsb + b] = value[b]
        span = Cat(*bits)
        for k in range(n):
            out[off + n - 1 - k] = span[8 * k : 8 * k + 8]
    return out
