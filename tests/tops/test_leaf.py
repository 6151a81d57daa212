"""GSELeaf (rtl/tops/leaf/) on Verilator: one leaf (small buffers), uplinks looped
back to its own fabric ports (tests/tops/leaf_loop_top.py, tests/tops/cocotb_leaf_loop.py),
configured and read over AXI4-Lite, in both modes.

The leaf is a large design: each run exports it (minutes of elaboration and Yosys; the
export is cached with the build) and builds it (Verilator, C++ at -O0 to keep the build
short). The default regression runs a 2 x 2 leaf in GSE mode, the product's mode; the
4 x 4 leaf in both modes and the 2 x 2 ECMP leaf run under ``make test-slow``.
"""

import pytest
from leaf_loop_top import SPEC

from opengse.sim.runner import run_cocotb


def _run(params):
    run_cocotb(SPEC, params, "cocotb_leaf_loop", build_args=("--output-split", "0"), cxx_opt="-O0")


@pytest.mark.timeout(3600)
def test_leaf_gse_loopback_2x2():
    _run({"lb": 0, "hosts": 2, "uplinks": 2})


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_leaf_ecmp_loopback_2x2():
    _run({"lb": 1, "hosts": 2, "uplinks": 2})


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("lb", [0, 1], ids=["gse", "ecmp"])
def test_leaf_loopback_4x4(lb):
    _run({"lb": lb})
