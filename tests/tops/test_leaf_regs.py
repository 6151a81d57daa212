"""The catalog leaf (``gse export leaf``'s 2 x 2 GSE configuration) on Verilator, read
over AXI4-Lite: each host port's VOQ query port in the register map
(tests/tops/cocotb_leaf_regs.py). A few minutes: the export of the leaf (cached with
the build) and a Verilator build at -O0; the simulation itself is short. Slow-marked
(813 s on a loaded 2-core machine: the regression's time goes to block tests; the
default leaf export test already shows the drop tables kept)."""

import pytest

from opengse.sim.runner import run_cocotb


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_leaf_voq_query_registers():
    run_cocotb("leaf", None, "cocotb_leaf_regs", build_args=("--output-split", "0"), cxx_opt="-O0")
