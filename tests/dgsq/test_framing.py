"""REQUEST/GRANT and container framing blocks (rtl/dgsq/*_framing.py, control_demux.py)
on Verilator, each against a plain-Python reference."""

import pytest

from opengse.sim.runner import run_cocotb


def test_control_demux():
    run_cocotb("control_demux", {}, "cocotb_control_demux")


@pytest.mark.parametrize("slot_bits,ttl", [(6, 64), (3, 17)])
def test_grant_framing(slot_bits, ttl):
    run_cocotb("grant_framing", {"slot_bits": slot_bits, "ttl": ttl}, "cocotb_grant_framing")


@pytest.mark.parametrize("depth", [4, 2])
def test_container_framing(depth):
    run_cocotb(
        "container_framing",
        {"queue_bits": 6, "credit_bits": 24, "ttl": 64, "depth": depth},
        "cocotb_container_framing",
    )
