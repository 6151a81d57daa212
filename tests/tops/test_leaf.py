"""GSELeaf (rtl/tops/leaf/) on Verilator: the catalog's leaf (``gse export leaf``: 2 x 2,
64 bit, small buffers) whose uplinks loop back to its own fabric ports through the
bench's delay lines (tests/tops/cocotb_leaf_loop.py), configured and read over
AXI4-Lite, in both modes.

The leaf is a large design: its export takes minutes of elaboration and Yosys and its
build (Verilator, C++ at -O0) about a minute more. The default regression's leaf tests
share one of each: this loopback, ``test_leaf_regs.py`` and the export lint of
``tests/platforms/test_export.py`` all use the catalog leaf at its defaults
(``build/sim/leaf-...``), the loopback needing no wrapper of its own. The 2 x 2 ECMP
leaf and the 4 x 4 leaf in both modes (builds of their own, with :data:`LOOP_PARAMS`)
run under ``make test-slow``.
"""

import dataclasses

import pytest

from opengse.rtl.catalog import get_block
from opengse.rtl.tops.leaf import LEAF_CONFIG_KEYS
from opengse.sim.runner import run_cocotb

#: Verilator's arguments of every build of the catalog leaf (test_leaf_regs.py's too:
#: the same arguments, the same build).
BUILD_ARGS = ("--output-split", "0")


#: The slow runs' leaf: 4 nodes, reorder windows of 4, 8 KB stores, 8-clock links and
#: shorter refresh, idle and lease times than the catalog's (the configuration these
#: runs had as a test-only top of their own).
LOOP_PARAMS = {
    "nodes": 4,
    "reorder_window": 4,
    "delay": 8,
    "host_store_bytes": 8192,
    "fab_store_bytes": 8192,
    "reorder_timeout": 2048,
    "probe_interval": 256,
    "refresh_cycles": 2048,
    "idle_cycles": 4096,
    "lease_cycles": 4096,
}
#: The catalog leaf with those defaults (refresh, idle and lease times are GSELeaf
#: arguments the catalog leaves at theirs).
LOOP = dataclasses.replace(
    get_block("leaf"), name="leaf_loop", params={**get_block("leaf").params, **LOOP_PARAMS}
)


def run_leaf(spec, params, module):
    run_cocotb(spec, params, module, build_args=BUILD_ARGS, cxx_opt="-O0")


@pytest.mark.timeout(3600)
def test_leaf_gse_loopback_2x2():
    run_leaf("leaf", None, "cocotb_leaf_loop")


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_leaf_ecmp_loopback_2x2():
    run_leaf(LOOP, {"lb": 1}, "cocotb_leaf_loop")


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("lb", [0, 1], ids=["gse", "ecmp"])
def test_leaf_loopback_4x4(lb):
    run_leaf(LOOP, {"lb": lb, "host_ports": 4, "uplinks": 4}, "cocotb_leaf_loop")


def board_leaf_spec(board, **override):
    """The catalog leaf cut to a board leaf's sizes (platforms/boards/leaf_top.py: its
    ``Sizes``, data width included, and GSELeaf's defaults for what ``LeafTop`` does not
    set: link ``delay`` 100, the timers), without the board's management port and MACs;
    ``override``: parameters that differ from the board's (e.g. ``uplinks``)."""
    from opengse.platforms.boards.leaf_top import SIZES

    sz = SIZES[board]
    cfg = sz.config()
    params = {"lb": 0, **{k: getattr(cfg, k) for k in LEAF_CONFIG_KEYS}, "delay": 100}
    params.update(
        host_store_bytes=sz.host_store_bytes,
        fab_store_bytes=sz.fab_store_bytes,
        max_frame_bytes=sz.max_frame_bytes,
        slot_bytes=sz.slot_bytes,
        n_req=sz.n_req,
    )
    params.update(override)
    name = f"leaf_{board.replace('-', '_')}" + "".join(f"_{k}{v}" for k, v in sorted(override.items()))
    return dataclasses.replace(get_block("leaf"), name=name, params=params)


# In the default regression (a build of its own, about 1 minute here): the only leaf
# test at 32 bits, the width the Colorlight board leaf is built at, and with one uplink,
# as two boards cabled port 1 to port 1 use it (no spine). The ECMP mode (every flow on
# uplink 0) under make test-slow.
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("lb", [0, pytest.param(1, marks=pytest.mark.slow)], ids=["gse", "ecmp"])
def test_leaf_colorlight_sizes_loopback(lb):
    """The Colorlight 5A-75B leaf's sizes (1 x 1, its data width: 32 bits), host 0 to
    itself over its looped-back uplink: every container on uplink 0, seq numbers,
    reorder, REQUEST/GRANT and PROBEs as with more uplinks."""
    run_leaf(board_leaf_spec("colorlight-5a75b"), {"lb": lb}, "cocotb_leaf_loop")


# The same leaf with two uplinks (what the board leaf was built with before it could have
# one): spraying at 32 bits. Under make test-slow.
@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_leaf_colorlight_sizes_two_uplink_loopback():
    run_leaf(board_leaf_spec("colorlight-5a75b", uplinks=2), None, "cocotb_leaf_loop")


def test_one_host_port_leaf_takes_tc_and_tenant_whole():
    """A leaf with one host port (the Colorlight's) has ``leaf.host_tc`` and
    ``leaf.host_tenant`` as plain registers, not arrays of one: written over AXI4-Lite,
    the host ingress gets every bit (it used to take bit 0). Amaranth simulation, under a
    second."""
    from amaranth.sim import Simulator
    from regs.test_regs_bank import SimBus

    spec = board_leaf_spec("colorlight-5a75b")
    leaf = spec.factory(**spec.params)
    assert leaf.config.host_ports == 1
    got = {}

    async def bench(ctx):
        bus = SimBus(ctx, leaf)
        await bus.write32(leaf.regmap.address("leaf", "host_tc"), 5)
        await bus.write32(leaf.regmap.address("leaf", "host_tenant"), 0x5A3)
        await ctx.tick().repeat(8)  # the registers near the host ingress
        got.update(tc=ctx.get(leaf.hin[0].tc), tenant=ctx.get(leaf.hin[0].tenant))

    sim = Simulator(leaf)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert got == {"tc": 5, "tenant": 0x5A3}
