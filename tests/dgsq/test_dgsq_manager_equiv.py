"""Co-simulation of the DGSQ manager against the reference commit's (docs/dgsq.md,
"Equivalence with the reference"): every output, every clock, on random traffic.

Slow-marked (two Verilator builds: the check and one mutant). Run with
``.venv/bin/python -m pytest tests/dgsq/test_dgsq_manager_equiv.py -m slow -n 0``."""
import json

import pytest

from opengse.sim.runner import run_cocotb

from manager_equiv_top import SPEC, compared_names, reference_available
from test_dgsq import BUILD_ARGS, MANAGER

CYCLES = 100000


def _run(mutation=0, seed=1, cycles=CYCLES):
    why = reference_available()
    if why:
        pytest.skip(f"no reference to compare with: {why}")
    params = {**MANAGER, "mutation": mutation}
    run_cocotb(SPEC, params, "cocotb_dgsq_manager_equiv", build_args=BUILD_ARGS,
               extra_env={"EQUIV_NAMES": json.dumps(compared_names(params)),
                          "EQUIV_CYCLES": str(cycles), "EQUIV_SEED": str(seed)})


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_manager_matches_reference(seed):
    _run(seed=seed)


@pytest.mark.slow
def test_manager_equivalence_can_fail():
    """One deliberate change (the sweep's slot every 64 clocks, not 32) is caught."""
    with pytest.raises(AssertionError, match="outputs differ from the reference"):
        _run(mutation=1)
