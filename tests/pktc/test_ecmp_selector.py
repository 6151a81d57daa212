"""ECMPSelector (rtl/pktc/ecmp_selector.py) on Verilator against sim/ecmp_model.py."""

import binascii
import random

import pytest

from opengse.sim.ecmp_model import crc32_reflected
from opengse.sim.runner import run_cocotb


def test_model_crc_is_crc32():
    """The model's bitwise CRC is the IEEE CRC-32 (zlib's, without its inversions)."""
    rng = random.Random(1)
    for _ in range(50):
        data = rng.randbytes(rng.randrange(0, 40))
        start = rng.randrange(1 << 32)
        assert crc32_reflected(data, start) == ~binascii.crc32(data, ~start & 0xFFFFFFFF) & 0xFFFFFFFF
    assert crc32_reflected(b"123456789", 0xFFFFFFFF) ^ 0xFFFFFFFF == 0xCBF43926  # the check value


# 1: a leaf cabled straight to another leaf (every flow on uplink 0 while it is healthy)
@pytest.mark.parametrize("uplinks", [4, 3, 1])
def test_ecmp_selector(uplinks):
    run_cocotb("ecmp_selector", {"uplinks": uplinks, "data_width": 64}, "cocotb_ecmp_selector")
