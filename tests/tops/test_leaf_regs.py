"""The catalog leaf (``gse export leaf``'s 2 x 2 GSE configuration) on Verilator, read
over AXI4-Lite: each host port's VOQ query port in the register map
(tests/tops/cocotb_leaf_regs.py). It builds with test_leaf.py's arguments, so it runs
on the loopback's export and build of the catalog leaf (the same ``build/sim/leaf-...``
directory): measured at load 15, 0.1 s of build and 14 s of CPU for the simulation."""

import pytest
from test_leaf import BUILD_ARGS

from opengse.sim.runner import run_cocotb


@pytest.mark.timeout(3600)
def test_leaf_voq_query_registers():
    run_cocotb("leaf", None, "cocotb_leaf_regs", build_args=BUILD_ARGS, cxx_opt="-O0")
