"""Ethernet CRC-32 (IEEE 802.3 FCS), one byte per clock.

The CRC is the reflected form of polynomial 0x04C11DB7 (0xEDB88320), as ``zlib.crc32``
computes it: the register starts at ``0xFFFFFFFF``, each byte is shifted in least
significant bit first, and the FCS sent on the wire is the register inverted, least
significant byte first. Over a frame *with* its FCS the register ends at the constant
:data:`CRC32_RESIDUE` when the frame is intact.

:func:`crc32_next` builds the combinational next-register value as a matrix of XORs
(each output bit the XOR of the register and data bits it depends on), worked out in
Python from the bit-serial definition; it has no state of its own.
"""

from amaranth.hdl import Cat, Const, Value

__all__ = ["CRC32_INIT", "CRC32_RESIDUE", "crc32_next", "crc32_byte_model"]

_POLY = 0xEDB88320
CRC32_INIT = 0xFFFFFFFF
#: The register value after an intact frame and its FCS went through.
CRC32_RESIDUE = 0xDEBB20E3


def crc32_byte_model(crc, byte):
    """Plain-Python reference: the register after shifting in one byte."""
    crc ^= byte
    for _ in range(8):
        crc = (crc >> 1) ^ (_POLY if crc & 1 else 0)
    return crc


def _dependencies():
    # The update is linear over GF(2): output bit i = XOR of the register bits and data
    # bits whose unit vectors set it.
    deps = [([], []) for _ in range(32)]
    for j in range(32):
        out = crc32_byte_model(1 << j, 0)
        for i in range(32):
            if out >> i & 1:
                deps[i][0].append(j)
    for j in range(8):
        out = crc32_byte_model(0, 1 << j)
        for i in range(32):
            if out >> i & 1:
                deps[i][1].append(j)
    return deps


_DEPS = _dependencies()


def crc32_next(crc, byte):
    """Amaranth expression: the 32-bit register ``crc`` after the 8-bit ``byte``."""
    crc, byte = Value.cast(crc), Value.cast(byte)
    if len(byte) < 8:
        byte = Cat(byte, Const(0, 8 - len(byte)))
    bits = []
    for reg_bits, data_bits in _DEPS:
        terms = [crc[j] for j in reg_bits] + [byte[j] for j in data_bits]
        acc = Const(0, 1)
        for t in terms:
            acc = acc ^ t
        bits.append(acc)
    return Cat(*bits)
