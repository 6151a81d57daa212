"""DGSQ closed loop RTL-to-RTL: manager + control frames + grant arbiter on Verilator.

See docs/dgsq-loop.md. One Verilator build (~40 s) for all cases."""

import pytest

from opengse.sim.runner import run_cocotb

from dgsq_loop_top import SPEC as DGSQ_LOOP
from test_dgsq import ARBITER, BUILD_ARGS, MANAGER

#: The manager and arbiter with their test_dgsq.py parameters; one build.
LOOP = {**MANAGER, **ARBITER, "src_node": 5, "dst_node": 9, "port": 3, "link_reg": 1}

#: Seeds 1, 3 and 4 of the lossless test showed the manager/arbiter mismatch of
#: docs/dgsq-loop.md (a second container on one GRANT), fixed in the manager; seed 0 a
#: REQUEST-acknowledgement race (fixed in the arbiter); seed 3 then still ended with two
#: arb_stat_arr_unknown because the source counted credit in exact bytes while the
#: egress reports whole credit units per packet, fixed by using credit in whole units
#: per packet at the source too (VOQ buffer credit_unit 64, the manager's backlog in
#: rounded bytes; docs/dgsq-loop.md). All are regression cases.


@pytest.mark.parametrize(
    "testcase,seed",
    [
        ("test_loop_lossless", 0),
        ("test_loop_lossless", 1),
        ("test_loop_lossless", 3),
        ("test_loop_lossless", 4),
        ("test_loop_control_loss", 0),
    ],
)
def test_dgsq_loop(testcase, seed):
    run_cocotb(
        DGSQ_LOOP,
        LOOP,
        "cocotb_dgsq_loop",
        testcase=testcase,
        build_args=BUILD_ARGS,
        extra_env={"DGSQ_LOOP_CASE_SEED": str(seed)},
    )


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="issue 18's bounds do not hold (lossless test, seed 41): egress occupancy 326 units "
    "above the 1024-unit buffer (one 9000 B packet is 141; two overruns at once), and per queue "
    "12416 B granted beyond the credit asked (one container is 4096 B; two GRANTs for 1920 B)",
)
def test_dgsq_loop_tight_bounds():
    run_cocotb(
        DGSQ_LOOP,
        LOOP,
        "cocotb_dgsq_loop",
        testcase="test_loop_lossless",
        build_args=BUILD_ARGS,
        extra_env={"DGSQ_LOOP_CASE_SEED": "0", "DGSQ_LOOP_TIGHT": "1"},
    )
