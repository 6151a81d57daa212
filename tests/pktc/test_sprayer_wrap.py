"""Sprayer: per-destination seq across 65535 -> 0 (the cached build of test_pktc)."""

from test_pktc import run


def test_sprayer_seq_wrap():
    run("sprayer", {"data_width": 64, "uplinks": 4, "nodes": 16, "policy": 0}, "cocotb_sprayer_wrap")
