"""The bus command and response records that the management front ends exchange with
:class:`~.axil_master.AXI4LiteMaster`."""

from amaranth.lib import data

__all__ = ["command_layout", "response_layout"]


def command_layout():
    """One bus access: ``write`` (1: write ``data`` at ``addr``; 0: read ``addr``)."""
    return data.StructLayout({"write": 1, "addr": 32, "data": 32})


def response_layout():
    """Its answer: ``resp`` (AXI4-Lite: 0 OKAY, 2 SLVERR, 3 DECERR) and, for a read, ``data``."""
    return data.StructLayout({"resp": 2, "data": 32})
