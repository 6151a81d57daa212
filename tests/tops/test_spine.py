"""GSESpine (rtl/tops/spine.py) on Verilator against sim/spine_model.py.

``test_spine`` drives the table and reads the counters as ports (``config_ports``, as
the fabric harness does); ``test_spine_registers`` builds the catalog spine (the
AXI4-Lite bank) and reaches the same table and counters over the bus
(tests/tops/cocotb_spine_regs.py)."""

from dataclasses import replace
from functools import partial

from opengse.rtl.catalog import get_block
from opengse.rtl.tops.spine import GSESpine
from opengse.sim.runner import run_cocotb

#: The catalog spine with its table and counters as ports (its own build folder).
SPINE_PORTS = replace(get_block("spine"), name="spine_ports", factory=partial(GSESpine, config_ports=True))


def test_spine():
    run_cocotb(SPINE_PORTS, {"ports": 4, "nodes": 16}, "cocotb_spine")


def test_spine_registers():
    run_cocotb("spine", {"ports": 2, "nodes": 8, "buffer_bytes": 2048, "delay": 8}, "cocotb_spine_regs")
