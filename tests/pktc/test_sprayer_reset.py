"""Sprayer: random resets in mid-traffic (the cached build of test_pktc)."""

from test_pktc import run


def test_sprayer_random_resets():
    run("sprayer", {"data_width": 64, "uplinks": 4, "nodes": 16, "policy": 0}, "cocotb_sprayer_reset")
