"""The ``sys`` register block every map starts with, and the component behind it.

* ``ident`` (RO, const): ``0x47534531``, "GSE1" in ASCII: a host finds the bank.
* ``map_id`` (RO): the CRC-32 fingerprint of the register map the bank was built from
  (:meth:`~.description.RegisterMap.fingerprint`); the Python driver compares it with
  its own description and refuses to run against another map.
* ``scratch`` (RW): no effect; a host checks the bus with it.
* ``uptime`` (RO, 64 bits): clocks since reset, a time base for rates (read the low
  word first: it snapshots the high word, see the bank).
"""

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from .description import Access, Register, RegisterBlock

__all__ = ["IDENT", "system_block", "SystemCounters"]

IDENT = 0x47534531  # "GSE1"


def system_block():
    return RegisterBlock(
        "sys",
        [
            Register(
                "ident",
                32,
                Access.RO,
                reset=IDENT,
                const=True,
                doc='0x47534531 ("GSE1"): the register bank of an OpenGSE top',
            ),
            Register(
                "map_id", 32, Access.RO, doc="CRC-32 fingerprint of the register map the bank was built from"
            ),
            Register("scratch", 32, Access.RW, doc="no effect: for bus checks"),
            Register("uptime", 64, Access.RO, doc="clocks since reset"),
        ],
        doc="identification and time base",
    )


class SystemCounters(wiring.Component):
    """Drives the ``sys`` block's ``map_id`` (a constant) and ``uptime``.

    ``uptime`` counts every clock from ``uptime_init`` after reset (a test starts it
    near a 32-bit carry; a product top leaves it 0); registered, wraps at 64 bits."""

    def __init__(self, map_id, uptime_init=0):
        self._map_id, self._init = map_id, uptime_init
        super().__init__({"map_id": Out(32), "uptime": Out(64)})

    def elaborate(self, platform):
        m = Module()
        count = Signal(64, init=self._init)
        m.d.sync += count.eq(count + 1)
        m.d.comb += [self.map_id.eq(self._map_id), self.uptime.eq(count)]
        return m
