import os

import pytest

from opengse.sim.runner import run_cocotb


@pytest.mark.parametrize("data_width", [8, 64])
def test_rgmii_mac(data_width):
    # Every size 60..1514 at 64 bits; every 7th size at 8 bits (the sim is per byte
    # either way, the width converter is what differs).
    run_cocotb("rgmii_mac", {"data_width": data_width, "txc_shift": 1}, "cocotb_rgmii_mac",
               extra_env={"MAC_SIZE_STRIDE": os.environ.get("MAC_SIZE_STRIDE",
                                                            "1" if data_width == 64 else "7")})
