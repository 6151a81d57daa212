"""gsectl end to end against a real leaf: the installed ``gsectl`` drives a
:class:`~opengse.rtl.tops.leaf.managed_leaf.ManagedLeaf` (managed_leaf_top.py) on
Verilator through management frames on the leaf's host port and through its UART
(cocotb_managed_leaf.py)."""

import shutil
import sys
from pathlib import Path

import pytest
from managed_leaf_top import PARAMS, TOP

from opengse.sim.runner import run_cocotb


@pytest.mark.timeout(3600)
def test_gsectl_manages_a_leaf():
    gsectl = Path(sys.executable).parent / "gsectl"
    gsectl = str(gsectl) if gsectl.exists() else shutil.which("gsectl")
    assert gsectl, "the gsectl command is not installed (make install)"
    run_cocotb(
        TOP,
        PARAMS,
        "cocotb_managed_leaf",
        cxx_opt="-O0",
        build_args=("--output-split", "0"),
        extra_env={"GSECTL": gsectl},
        sim_time_limit_ms=500,
    )
