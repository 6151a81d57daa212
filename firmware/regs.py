"""The Python driver of the register map: named registers over any 32-bit bus.

``Registers(bus)`` gives attribute access to every register of a
:class:`~opengse.rtl.regs.description.RegisterMap` (default: the reference map that
``gse regs`` documents), where ``bus`` is any object with ``read32(addr) -> int`` and
``write32(addr, value)`` (byte addresses): a simulation, a management-frame or UART
link later. It is built from the same description as the RTL bank, the C header and
docs/registers.md, so none of them can disagree::

    regs = Registers(bus)             # checks sys.ident and sys.map_id first
    regs.tagger.frames                # read an RO counter
    regs.dgsq_manager.node_id = 7     # write an RW register (range checked)
    regs.sprayer.bytes[2]             # element 2 of an array register
    regs.top.events                   # read W1C sticky bits ...
    regs.top.clear("events", 0b1)     # ... and clear bit 0 (writes 1 to it)
    regs.read("voq.query_pkts"); regs.write("voq.query_queue", 3); regs.dump()

Wide registers (over 32 bits) are read low word first (the bank snapshots the high
words then, so the value is from one clock) and written low word first (the write of
the top word commits the whole value).

Errors (:class:`RegisterError`, with a message naming the register): an unknown block
or register, a value out of range or not an integer, a write to an RO register,
assigning a W1C register (use ``clear``), an index out of range, a bus that reports a
failure (it should raise; ``bus`` errors pass through unchanged).

:class:`AsyncRegisters` is the same driver for a bus whose ``read32``/``write32`` are
coroutines (a cocotb AXI4-Lite master): ``await regs.read(...)``, ``write``, ``clear``,
``dump``, ``check``.
"""

from opengse.rtl.regs.description import WORD_BYTES, Access
from opengse.rtl.regs.system import IDENT

__all__ = ["RegisterError", "Registers", "AsyncRegisters"]


class RegisterError(Exception):
    pass


class _Unknown(RegisterError, AttributeError):
    pass


def _default_map():
    from opengse.rtl.regs.blocks import reference_map

    return reference_map()


# ---- bus operations as generators: one core for the sync and the async driver -----------


def _read_ops(addr, reg):
    value = 0
    for w in range(reg.words):  # low word first: it snapshots the rest
        word = yield ("r", addr + WORD_BYTES * w)
        value |= (int(word) & 0xFFFF_FFFF) << (32 * w)
    return value & reg.mask


def _write_ops(addr, reg, value):
    for w in range(reg.words):  # the top word, last, commits
        yield ("w", addr + WORD_BYTES * w, (value >> (32 * w)) & 0xFFFF_FFFF)


def _run(bus, ops):
    try:
        op = next(ops)
        while True:
            if op[0] == "r":
                result = bus.read32(op[1])
            else:
                bus.write32(op[1], op[2])
                result = None
            op = ops.send(result)
    except StopIteration as stop:
        return stop.value


async def _arun(bus, ops):
    try:
        op = next(ops)
        while True:
            if op[0] == "r":
                result = await bus.read32(op[1])
            else:
                await bus.write32(op[1], op[2])
                result = None
            op = ops.send(result)
    except StopIteration as stop:
        return stop.value


class _Core:
    """Name resolution and checks, shared by both drivers."""

    def __init__(self, regmap):
        self.map = regmap if regmap is not None else _default_map()

    def resolve(self, path, index=None):
        """``"block.register"`` (or ``"block.register[i]"``) -> (address, register)."""
        if not isinstance(path, str) or path.count(".") != 1:
            raise RegisterError(f"register {path!r}: name it as block.register")
        blk_name, reg_name = path.split(".")
        if reg_name.endswith("]") and "[" in reg_name:
            reg_name, _, idx = reg_name[:-1].partition("[")
            try:
                index = int(idx, 0)
            except ValueError:
                raise RegisterError(f"register {path!r}: index {idx!r} is not an integer") from None
        blk, reg = self.lookup(blk_name, reg_name)
        if reg.count > 1 and index is None:
            raise RegisterError(f"{path} is an array of {reg.count}: give an index")
        index = 0 if index is None else index
        if not isinstance(index, int) or not 0 <= index < reg.count:
            raise RegisterError(f"{blk.name}.{reg.name}: index {index!r} out of range 0..{reg.count - 1}")
        return self.map.address(blk, reg, index), reg

    def lookup(self, blk_name, reg_name):
        try:
            blk = self.map[blk_name]
        except KeyError:
            raise _Unknown(
                f"unknown block {blk_name!r}; blocks: " + ", ".join(b.name for b in self.map)
            ) from None
        if reg_name not in blk:
            raise _Unknown(
                f"unknown register {blk_name}.{reg_name}; {blk_name} has: " + ", ".join(r.name for r in blk)
            )
        return blk, blk[reg_name]

    @staticmethod
    def check_value(path, reg, value):
        if isinstance(value, bool) or not isinstance(value, int):
            raise RegisterError(f"{path}: value {value!r} is not an integer")
        if not 0 <= value <= reg.mask:
            raise RegisterError(
                f"{path}: value {value:#x} out of range for {reg.width} bits (0..{reg.mask:#x})"
            )
        return value

    def write_ops(self, path, value, index=None):
        addr, reg = self.resolve(path, index)
        if reg.access == Access.RO:
            raise RegisterError(f"{path} is read-only")
        if reg.access == Access.W1C:
            raise RegisterError(f"{path} is write-1-to-clear: use clear({path!r}, bits)")
        return _write_ops(addr, reg, self.check_value(path, reg, value))

    def clear_ops(self, path, bits=None, index=None):
        addr, reg = self.resolve(path, index)
        if reg.access != Access.W1C:
            raise RegisterError(f"{path} is not a W1C register")
        bits = reg.mask if bits is None else self.check_value(path, reg, bits)
        return _write_ops(addr, reg, bits)

    def read_ops(self, path, index=None):
        addr, reg = self.resolve(path, index)
        return _read_ops(addr, reg)

    def every_register(self):
        for blk, reg in self.map.registers():
            for i in range(reg.count):
                yield f"{blk.name}.{reg.name}" + (f"[{i}]" if reg.count > 1 else ""), i

    def check_ops(self):
        ident = yield from self.read_ops("sys.ident")
        if ident != IDENT:
            raise RegisterError(f"no OpenGSE register bank: sys.ident reads {ident:#010x}, not {IDENT:#010x}")
        map_id = yield from self.read_ops("sys.map_id")
        if map_id != self.map.fingerprint():
            raise RegisterError(
                f"the hardware's register map ({map_id:#010x}) is not this "
                f"description ({self.map.fingerprint():#010x})"
            )


class _Array:
    def __init__(self, regs, path, reg):
        self._regs, self._path, self._reg = regs, path, reg

    def __len__(self):
        return self._reg.count

    def __getitem__(self, i):
        return self._regs.read(self._path, i)

    def __setitem__(self, i, value):
        self._regs.write(self._path, value, i)

    def __iter__(self):
        return (self[i] for i in range(len(self)))


class _Block:
    def __init__(self, regs, blk):
        object.__setattr__(self, "_regs", regs)
        object.__setattr__(self, "_blk", blk)

    def _path(self, name):
        self._regs._core.lookup(self._blk.name, name)  # unknown -> RegisterError
        return f"{self._blk.name}.{name}"

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        path = self._path(name)
        reg = self._blk[name]
        return _Array(self._regs, path, reg) if reg.count > 1 else self._regs.read(path)

    def __setattr__(self, name, value):
        self._regs.write(self._path(name), value)

    def clear(self, name, bits=None, index=None):
        self._regs.clear(self._path(name), bits, index)

    def __dir__(self):
        return [r.name for r in self._blk] + ["clear"]


class Registers:
    """The register map over ``bus`` (``read32``/``write32``); see the module doc.

    ``check=True`` reads ``sys.ident`` and ``sys.map_id`` first and raises
    :class:`RegisterError` unless the hardware was built from ``regmap``."""

    def __init__(self, bus, regmap=None, *, check=True):
        self._bus = bus
        self._core = _Core(regmap)
        if check:
            _run(bus, self._core.check_ops())

    @property
    def map(self):
        return self._core.map

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return _Block(self, self._core.map[name])
        except KeyError:
            raise _Unknown(
                f"unknown block {name!r}; blocks: " + ", ".join(b.name for b in self._core.map)
            ) from None

    def __dir__(self):
        return [b.name for b in self._core.map] + ["read", "write", "clear", "dump", "map"]

    def read(self, path, index=None):
        return _run(self._bus, self._core.read_ops(path, index))

    def write(self, path, value, index=None):
        _run(self._bus, self._core.write_ops(path, value, index))

    def clear(self, path, bits=None, index=None):
        """Clear W1C bits ``bits`` (default: all) of ``path``."""
        _run(self._bus, self._core.clear_ops(path, bits, index))

    def dump(self):
        """``{"block.register[i]": value}`` of every register, in address order."""
        return {name: self.read(name.split("[")[0], i) for name, i in self._core.every_register()}


class AsyncRegisters:
    """:class:`Registers` for a bus with ``async`` ``read32``/``write32``; call
    ``await regs.check()`` where :class:`Registers` would check on creation."""

    def __init__(self, bus, regmap=None):
        self._bus = bus
        self._core = _Core(regmap)

    @property
    def map(self):
        return self._core.map

    async def check(self):
        await _arun(self._bus, self._core.check_ops())

    async def read(self, path, index=None):
        return await _arun(self._bus, self._core.read_ops(path, index))

    async def write(self, path, value, index=None):
        await _arun(self._bus, self._core.write_ops(path, value, index))

    async def clear(self, path, bits=None, index=None):
        await _arun(self._bus, self._core.clear_ops(path, bits, index))

    async def dump(self):
        return {name: await self.read(name.split("[")[0], i) for name, i in self._core.every_register()}
