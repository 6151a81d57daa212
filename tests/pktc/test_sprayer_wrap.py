"""Sprayer: per-destination seq across 65535 -> 0 (the cached build of test_pktc)."""

import pytest
from test_pktc import run


@pytest.mark.slow
def test_sprayer_seq_wrap():
    """65 600 containers: 3.3 ms of simulated time, 182 s of simulator wall time on the
    shared machine (load 12), so it runs in ``make test-slow``."""
    run("sprayer", {"data_width": 64, "uplinks": 4, "nodes": 16, "policy": 0}, "cocotb_sprayer_wrap")
