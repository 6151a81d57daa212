import os

import pytest

from opengse.sim.runner import run_cocotb

# Frame sizes 60..1514 in steps of the stride (13 is prime to the beat width, so every
# tkeep pattern of the last beat is covered; 112 sizes); the `slow` run takes every size.
# MAC_SIZE_STRIDE in the environment overrides both.


def _run(data_width, stride):
    stride = os.environ.get("MAC_SIZE_STRIDE", str(stride))
    run_cocotb(
        "rgmii_mac",
        {"data_width": data_width, "txc_shift": 1},
        "cocotb_rgmii_mac",
        extra_env={"MAC_SIZE_STRIDE": stride},
    )


@pytest.mark.parametrize("data_width,stride", [(8, 13), (64, 13)])
def test_rgmii_mac(data_width, stride):
    _run(data_width, stride)


@pytest.mark.slow
@pytest.mark.parametrize("data_width", [8, 64])
def test_rgmii_mac_every_size(data_width):
    _run(data_width, 1)
