"""The register description: registers, grouped in blocks, placed in one address map.

Everything a host sees of the switch's configuration and counters is described here
once, in plain Python; the RTL bank (:mod:`.bank`), ``docs/registers.md``, the C header
``firmware/gse_regs.h`` and the Python driver (:mod:`opengse.firmware.regs`) are all
generated from the same :class:`RegisterMap`, so they cannot disagree.

* A :class:`Register` has a name, a width in bits (1..64), an :class:`Access`, a reset
  value, a meaning (``doc``) and a ``count`` (an array of ``count`` equal registers,
  like a per-uplink counter). It occupies ``ceil(width / 32)`` 32-bit words per element.
* A :class:`RegisterBlock` groups the registers of one block instance. Offsets are
  assigned in order (each register aligned to its own size, a power of two of words)
  unless given; explicit offsets are checked for overlap and alignment.
* A :class:`RegisterMap` places blocks in one byte-address space: each block gets a
  window of a power of two bytes (at least 64) aligned to its size, in order unless a
  base is given; overlap is an error.

Addresses are byte addresses of 32-bit words (bits 1:0 zero). Word ``k`` of a wide
register holds bits ``32k+31 : 32k``.
"""

import enum
import json
import re
import zlib
from dataclasses import dataclass, field, replace

__all__ = ["Access", "Register", "RegisterBlock", "RegisterMap", "WORD_BYTES"]

WORD_BYTES = 4
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_MIN_WINDOW = 64


def _pow2_at_least(n):
    p = 1
    while p < n:
        p <<= 1
    return p


class Access(enum.Enum):
    """How the host may use a register.

    * ``RO``: read-only. The block drives the value (a counter or a status); a write
      is refused with SLVERR. With ``const=True`` the value is the register's
      ``reset`` and the bank drives it itself (an identification word).
    * ``RW``: read-write configuration. The bank holds the value, starting from
      ``reset``, and drives it to the block.
    * ``W1C``: sticky event bits. The block pulses an event bit; the bank holds it set
      until the host writes 1 to it (writing 0 leaves it). An event in the same clock
      as the clearing write wins: the bit stays set.
    """

    RO = "RO"
    RW = "RW"
    W1C = "W1C"


@dataclass(frozen=True)
class Register:
    name: str
    width: int
    access: Access
    reset: int = 0
    doc: str = ""
    count: int = 1
    offset: int = None  # bytes within the block; None: the next free, aligned
    const: bool = False  # RO only: the value is ``reset``, driven by the bank
    strobe: bool = False  # RW only: the bank also pulses ``<port>_written``

    def __post_init__(self):
        if not _NAME.match(self.name):
            raise ValueError(f"register name {self.name!r}: lower case, digits and _ only")
        if not isinstance(self.access, Access):
            raise ValueError(f"register {self.name!r}: access must be an Access, not {self.access!r}")
        if not 1 <= self.width <= 64:
            raise ValueError(f"register {self.name!r}: width must be 1..64, not {self.width}")
        if self.access == Access.W1C and self.width > 32:
            raise ValueError(f"register {self.name!r}: a W1C register is at most 32 bits")
        if self.const and self.access != Access.RO:
            raise ValueError(f"register {self.name!r}: only an RO register can be const")
        if self.strobe and self.access != Access.RW:
            raise ValueError(f"register {self.name!r}: only an RW register has a write strobe")
        if not 1 <= self.count <= 4096:
            raise ValueError(f"register {self.name!r}: count must be 1..4096")
        if not 0 <= self.reset < (1 << self.width):
            raise ValueError(
                f"register {self.name!r}: reset {self.reset:#x} does not fit in {self.width} bits"
            )
        if self.reset and self.access in (Access.RO, Access.W1C) and not self.const:
            raise ValueError(
                f"register {self.name!r}: only RW and const registers have a reset value of their own"
            )
        if self.offset is not None and (self.offset < 0 or self.offset % self.stride):
            raise ValueError(
                f"register {self.name!r}: offset {self.offset:#x} is not aligned to {self.stride} bytes"
            )
        if not self.doc:
            raise ValueError(f"register {self.name!r}: say what it means (doc)")

    @property
    def words(self):
        """32-bit words per element."""
        return (self.width + 31) // 32

    @property
    def stride(self):
        """Bytes from one element to the next (and the alignment of the register)."""
        return _pow2_at_least(self.words) * WORD_BYTES

    @property
    def size(self):
        return self.count * self.stride

    @property
    def mask(self):
        return (1 << self.width) - 1

    @property
    def writable(self):
        return self.access in (Access.RW, Access.W1C)


@dataclass
class RegisterBlock:
    """The registers of one block instance; offsets assigned (or checked) on creation."""

    name: str
    registers: list
    doc: str = ""
    base: int = None  # bytes in the map; None: placed by the RegisterMap

    def __post_init__(self):
        if not _NAME.match(self.name):
            raise ValueError(f"block name {self.name!r}: lower case, digits and _ only")
        placed, used, names = [], [], set()
        fixed = [r for r in self.registers if r.offset is not None]
        for reg in fixed:
            used.append((reg.offset, reg.offset + reg.size, reg.name))
        cursor = 0
        for reg in self.registers:
            if reg.name in names:
                raise ValueError(f"block {self.name!r}: register {reg.name!r} twice")
            names.add(reg.name)
            if reg.offset is None:
                off = -(-cursor // reg.stride) * reg.stride
                while any(lo < off + reg.size and off < hi for lo, hi, _ in used):
                    off += reg.stride
                reg = replace(reg, offset=off)
                used.append((off, off + reg.size, reg.name))
            cursor = reg.offset + reg.size
            placed.append(reg)
        spans = sorted(used)
        for (lo1, hi1, n1), (lo2, hi2, n2) in zip(spans, spans[1:]):
            if lo2 < hi1:
                raise ValueError(
                    f"block {self.name!r}: registers {n1!r} and {n2!r} overlap "
                    f"({lo1:#x}..{hi1:#x} and {lo2:#x}..{hi2:#x})"
                )
        self.registers = placed
        self._by_name = {r.name: r for r in placed}

    @property
    def size(self):
        """The block's window: a power of two of bytes, at least 64."""
        end = max((r.offset + r.size for r in self.registers), default=0)
        return max(_MIN_WINDOW, _pow2_at_least(end))

    def __getitem__(self, name):
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(
                f"block {self.name!r} has no register {name!r}; registers: " + ", ".join(self._by_name)
            ) from None

    def __iter__(self):
        return iter(self.registers)

    def __contains__(self, name):
        return name in self._by_name


@dataclass
class RegisterMap:
    """Blocks placed in one address space. ``name`` prefixes the C header's macros."""

    blocks: list
    name: str = "gse"
    doc: str = ""
    _by_name: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        placed, used = [], []
        fixed = [b for b in self.blocks if b.base is not None]
        for blk in fixed:
            if blk.base % blk.size:
                raise ValueError(
                    f"block {blk.name!r}: base {blk.base:#x} is not aligned to "
                    f"its window ({blk.size:#x} bytes)"
                )
            used.append((blk.base, blk.base + blk.size, blk.name))
        cursor = 0
        for blk in self.blocks:
            if blk.name in self._by_name:
                raise ValueError(f"register map: block {blk.name!r} twice")
            if blk.base is None:
                base = -(-cursor // blk.size) * blk.size
                while any(lo < base + blk.size and base < hi for lo, hi, _ in used):
                    base += blk.size
                blk = RegisterBlock(blk.name, blk.registers, blk.doc, base)
                used.append((base, base + blk.size, blk.name))
            cursor = blk.base + blk.size
            placed.append(blk)
            self._by_name[blk.name] = blk
        spans = sorted(used)
        for (lo1, hi1, n1), (lo2, hi2, n2) in zip(spans, spans[1:]):
            if lo2 < hi1:
                raise ValueError(f"register map: blocks {n1!r} and {n2!r} overlap")
        self.blocks = placed

    # ---- look-ups ---------------------------------------------------------------------
    def __getitem__(self, name):
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"no block {name!r}; blocks: " + ", ".join(self._by_name)) from None

    def __iter__(self):
        return iter(self.blocks)

    @property
    def size(self):
        return max((b.base + b.size for b in self.blocks), default=_MIN_WINDOW)

    @property
    def addr_width(self):
        """Byte-address bits that reach every register."""
        return max(2, (self.size - 1).bit_length())

    def registers(self):
        """``(block, register)`` for every register, in address order."""
        return [
            (b, r)
            for b in sorted(self.blocks, key=lambda b: b.base)
            for r in sorted(b.registers, key=lambda r: r.offset)
        ]

    def address(self, block, register, index=0):
        """Byte address of element ``index`` of ``block.register`` (names or objects)."""
        blk = self[block] if isinstance(block, str) else block
        reg = blk[register] if isinstance(register, str) else register
        if not 0 <= index < reg.count:
            raise IndexError(f"{blk.name}.{reg.name} has {reg.count} element(s), not index {index}")
        return blk.base + reg.offset + index * reg.stride

    def words(self):
        """``{byte address: (block, register, index, word)}`` for every mapped word."""
        out = {}
        for blk, reg in self.registers():
            for i in range(reg.count):
                for w in range(reg.words):
                    out[self.address(blk, reg, i) + WORD_BYTES * w] = (blk, reg, i, w)
        return out

    # ---- a canonical form, to ship with a bitstream and to fingerprint the map ----------
    def as_dict(self):
        return {
            "name": self.name,
            "doc": self.doc,
            "blocks": [
                {
                    "name": b.name,
                    "base": b.base,
                    "doc": b.doc,
                    "registers": [
                        {
                            "name": r.name,
                            "offset": r.offset,
                            "width": r.width,
                            "access": r.access.value,
                            "reset": r.reset,
                            "count": r.count,
                            "const": r.const,
                            "strobe": r.strobe,
                            "doc": r.doc,
                        }
                        for r in b.registers
                    ],
                }
                for b in self.blocks
            ],
        }

    @classmethod
    def from_dict(cls, d):
        blocks = [
            RegisterBlock(
                b["name"],
                [
                    Register(
                        r["name"],
                        r["width"],
                        Access(r["access"]),
                        r["reset"],
                        r["doc"],
                        r["count"],
                        r["offset"],
                        r["const"],
                        r["strobe"],
                    )
                    for r in b["registers"]
                ],
                b["doc"],
                b["base"],
            )
            for b in d["blocks"]
        ]
        return cls(blocks, d["name"], d["doc"])

    def fingerprint(self):
        """CRC-32 of the layout (names, offsets, widths, access, resets, counts; not the
        prose): what the bank's ``sys.map_id`` register returns, so a driver can tell
        that it talks to hardware built from the same description."""
        layout = [
            [
                b.name,
                b.base,
                [[r.name, r.offset, r.width, r.access.value, r.reset, r.count] for r in b.registers],
            ]
            for b in self.blocks
        ]
        return zlib.crc32(json.dumps(layout, separators=(",", ":")).encode())
