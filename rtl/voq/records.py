"""Records the parts of the VOQ buffer exchange, and the rows of its tables.

All sizes come from a :class:`~opengse.rtl.voq.geometry.VOQGeometry` ``g``.

Events to the accounting unit (each a ``stream.Signature``; the producer holds it in
registers until the accounting unit takes it):

* :func:`commit_layout` — enqueue: a packet's cells join a queue;
* :func:`takeoff_layout` — walker: a packet's cells leave a queue (release planned);
* :func:`free_layout` — emitter: a packet's cells go back to the free list.

Between walker and emitter: :func:`cell_desc_layout` (one per cell to read out). Table
rows: :func:`qptr_layout`, :func:`qcnt_layout`, :func:`pkt_layout`. Memory ports of the
parts: :func:`ram_read_port`, :func:`ram_write_port` (joined to the buffer's
:class:`~opengse.rtl.lib.sram.VOQRam` tables by :func:`join_ram_read` and
:func:`join_ram_write`).
"""

from amaranth.hdl import Cat, Value
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

__all__ = [
    "DROP_REASONS",
    "R_BAD",
    "R_FULL",
    "R_QUEUE",
    "R_TENANT",
    "R_DT",
    "commit_layout",
    "takeoff_layout",
    "free_layout",
    "drop_layout",
    "cell_desc_layout",
    "qptr_layout",
    "qcnt_layout",
    "pkt_layout",
    "ram_read_port",
    "ram_write_port",
    "join_ram_read",
    "join_ram_write",
    "pack",
]

DROP_REASONS = ("bad", "full", "queue", "tenant", "dt")
R_BAD, R_FULL, R_QUEUE, R_TENANT, R_DT = range(5)


def pack(layout, **fields):
    """Cat() of struct fields in layout order (for memory write data)."""
    return Cat(*(Value.cast(fields[name])[: field.width] for name, field in layout))


# ---- events ------------------------------------------------------------------------------


def commit_layout(g):
    """A packet admitted whole: its queue and tenant, cells, length in bytes, first and
    last cell (the cells are linked in order from ``head`` to ``tail``)."""
    return data.StructLayout(
        {"queue": g.qw, "tenant": g.tw, "cells": g.cnw, "len": g.lw, "head": g.cw, "tail": g.cw}
    )


def takeoff_layout(g):
    """The packet at the head of ``queue`` taken off it: its length, cells and last cell
    (whose link is the queue's new head)."""
    return data.StructLayout({"queue": g.qw, "len": g.lw, "cells": g.cnw, "last": g.cw})


def free_layout(g):
    """A sent packet's cells (``head`` .. ``tail``, linked) back to the free list."""
    return data.StructLayout({"head": g.cw, "tail": g.cw, "cells": g.cnw, "tenant": g.tw})


def drop_layout(g):
    """A dropped packet, for the per-queue and per-tenant drop counters."""
    return data.StructLayout({"queue": g.qw, "tenant": g.tw})


def cell_desc_layout(g):
    """One cell for the emitter to read: ``lidx`` its last beat, ``first``/``last`` of its
    packet, ``kc`` the last beat's highest byte, ``rel_end`` the last cell of its release;
    ``nodata``: no cell, only the end of an empty release."""
    return data.StructLayout(
        {
            "cell": g.cw,
            "lidx": g.lcb,
            "first": 1,
            "last": 1,
            "kc": max(1, g.lbpb),
            "tenant": g.tw,
            "rel_end": 1,
            "nodata": 1,
        }
    )


# ---- table rows --------------------------------------------------------------------------


def qptr_layout(g):
    """A queue's first and last cell (two tables: ``qhead``, ``qtail``)."""
    return data.StructLayout({"head": g.cw, "tail": g.cw})


def qcnt_layout(g):
    """A queue's backlog: packets, bytes, cells (table ``qcnt``)."""
    return data.StructLayout({"pkts": g.cnw, "bytes": g.lw, "cells": g.cnw})


def pkt_layout(g):
    """A packet's length and tenant, stored at its first cell (table ``pkt``)."""
    return data.StructLayout({"len": g.lw, "tenant": g.tw})


# ---- memory ports ------------------------------------------------------------------------


def ram_read_port(depth, width):
    """A registered read port as its user sees it: ``addr`` out, ``data`` in (the word at
    the address of the previous cycle)."""
    return wiring.Signature({"addr": Out(range(depth)), "data": In(width)})


def ram_write_port(depth, width):
    """A write port as its user sees it: ``en``, ``addr``, ``data`` out."""
    return wiring.Signature({"en": Out(1), "addr": Out(range(depth)), "data": Out(width)})


def join_ram_read(m, ram, index, port):
    """Drive read port ``index`` of ``ram`` (a ``VOQRam``) from a part's ``port``."""
    addr, rdata = ram.read(index)
    m.d.comb += [addr.eq(port.addr), port.data.eq(rdata)]


def join_ram_write(m, ram, port):
    m.d.comb += [ram.w_en.eq(port.en), ram.w_addr.eq(port.addr), ram.w_data.eq(port.data)]
