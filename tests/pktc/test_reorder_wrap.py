"""Reorder buffer: per-source seq across 65535 -> 0 (the cached 64-bit build)."""

from test_pktc import REORDER, run


def test_reorder_seq_wrap():
    run("reorder", REORDER, "cocotb_reorder_wrap")
