"""A plain-Python model of what a register bank answers a management record
(docs/register-map.md, The bank): the reference for the management benches.

It keeps the RW registers' values (from their reset values), the staged low words of
wide RW registers, and the snapshot of a wide register's high words taken when its low
word is read (what a read of a high word returns); it predicts, per 32-bit access,
the AXI4-Lite response and, where the value is known, the data read: ``None`` for an
RO register the hardware drives (counters, status), which the bench checks by other
means.
"""

from opengse.rtl.regs.description import WORD_BYTES, Access

__all__ = ["BankModel", "OKAY", "SLVERR", "DECERR"]

OKAY, SLVERR, DECERR = 0, 2, 3


class BankModel:
    def __init__(self, regmap, addr_width):
        self.map, self.addr_width = regmap, addr_width
        self.words = regmap.words()
        self.values = {}
        for blk, reg in regmap.registers():
            if reg.access == Access.RW or reg.const:
                for i in range(reg.count):
                    self.values[regmap.address(blk, reg, i)] = reg.reset
        self.staged = {}
        self.snapshots = {}

    def _word(self, addr):
        if addr >> self.addr_width:
            return None
        return self.words.get(addr & ~(WORD_BYTES - 1))

    def read(self, addr):
        """``(status, data or None)``."""
        hit = self._word(addr)
        if hit is None:
            return DECERR, 0
        blk, reg, i, w = hit
        base = self.map.address(blk, reg, i)
        value = self.values.get(base)
        if w == 0:
            # reading the low word snapshots the high words; reading those returns it
            self.snapshots[base] = None if value is None else value >> 32
            return OKAY, None if value is None else value & 0xFFFF_FFFF
        snap = self.snapshots.get(base, 0)
        return OKAY, None if snap is None else (snap >> (32 * (w - 1))) & 0xFFFF_FFFF

    def write(self, addr, value):
        """The status; an accepted write updates the model."""
        hit = self._word(addr)
        if hit is None:
            return DECERR
        blk, reg, i, w = hit
        if reg.access == Access.RO:
            return SLVERR
        if reg.access == Access.RW:
            base = self.map.address(blk, reg, i)
            if w < reg.words - 1:
                self.staged[(base, w)] = value
            else:
                # the bank keeps each staged low word (from the reset value) and
                # commits it with the top word
                whole = value << (32 * w)
                for k in range(reg.words - 1):
                    whole |= self.staged.get((base, k), (reg.reset >> (32 * k)) & 0xFFFF_FFFF) << (32 * k)
                self.values[base] = whole & reg.mask
        return OKAY
