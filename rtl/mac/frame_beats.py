"""The MAC's internal streams: byte and word beats, and the receive status code.

Inside the MAC a frame moves as bytes (GMII side) or words of ``data_width`` bits
(core side, through the clock-domain crossings). The last beat of a frame carries, on
receive, a :class:`RxStatus` (why the frame is bad, or ``OK``) and, on transmit, the
core's ``tuser`` bit. A word's ``count`` is its number of valid bytes minus one (bytes
fill a word from bit 0 up, as ``tkeep`` does; only a last word may be partial).
"""

import enum

from amaranth.hdl import unsigned
from amaranth.lib import data

__all__ = ["RxStatus", "byte_layout", "word_layout", "count_width"]


class RxStatus(enum.IntEnum):
    """Why a received frame leaves with ``tuser`` set; one reason per frame. A frame the
    receive FIFO cut or dropped is ``OVERRUN`` whatever else was wrong with it; otherwise
    the first of ``RX_ERROR``, ``RUNT``, ``BAD_FCS`` that applies."""

    OK = 0
    RX_ERROR = 1  # rx_ctl signalled an error (GMII rx_er) during the frame
    RUNT = 2  # fewer than 64 bytes, FCS included
    BAD_FCS = 3  # CRC-32 over the frame and its FCS is not the residue
    OVERRUN = 4  # the crossing FIFO was full: bytes were lost


STATUS_WIDTH = 3


def count_width(data_width):
    """Width of a word's ``count`` field (0 for byte words)."""
    return (data_width // 8 - 1).bit_length()


def byte_layout(user_width):
    """One byte of a frame: ``data``, ``last``, ``user`` (a status or the tuser bit)."""
    return data.StructLayout({"data": 8, "last": 1, "user": user_width})


def word_layout(data_width, user_width):
    """One word of a frame: ``data``, ``count`` (valid bytes - 1), ``last``, ``user``."""
    return data.StructLayout(
        {"data": data_width, "count": unsigned(count_width(data_width)), "last": 1, "user": user_width}
    )
