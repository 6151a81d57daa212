"""Reorder buffer: random resets in mid-traffic (the cached 64-bit build)."""

from test_pktc import REORDER, run


def test_reorder_random_resets():
    run("reorder", REORDER, "cocotb_reorder_reset")
