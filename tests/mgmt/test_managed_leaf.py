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


#: GSE mode in the default regression (it goes through the DGSQ path as well); ECMP mode,
#: a build of its own (~40 s) and ~1 min of simulation, under -m slow.
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("lb", [pytest.param(1, marks=pytest.mark.slow), 0], ids=["ecmp", "gse"])
def test_gsectl_manages_a_leaf(lb):
    gsectl = Path(sys.executable).parent / "gsectl"
    gsectl = str(gsectl) if gsectl.exists() else shutil.which("gsectl")
    assert gsectl, "the gsectl command is not installed (make install)"
    run_cocotb(
        TOP,
        {**PARAMS, "lb": lb},
        "cocotb_managed_leaf",
        cxx_opt="-O0",
        build_args=("--output-split", "0"),
        extra_env={"GSECTL": gsectl},
        sim_time_limit_ms=500,
    )


# the parts built before a bad parameter is refused are never elaborated
@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
def test_managed_leaf_map_ports_and_bad_parameters():
    from managed_leaf_top import managed_leaf

    from opengse.rtl.config import GSEConfig
    from opengse.rtl.mgmt.management_port import MGMT_COUNTERS
    from opengse.rtl.regs.description import Access, Register, RegisterBlock
    from opengse.rtl.tops.leaf import GSELeaf
    from opengse.rtl.tops.leaf.managed_leaf import ManagedLeaf

    leaf = managed_leaf()
    leaf._MustUse__silence = True
    names = [b.name for b in leaf.regmap.blocks]
    assert names[-1] == "mgmt" and [r.name for r in leaf.regmap["mgmt"]] == list(MGMT_COUNTERS)
    assert names[:-1] == [b.name for b in leaf.leaf.regmap.blocks][:-1]
    ports = set(leaf.signature.members)
    assert {"uart_rx", "uart_tx", "s_axis_host", "m_axis_host", "link_up"} <= ports
    assert not any(p.startswith(("s_axil_", "mgmt_")) for p in ports), ports
    cfg = GSEConfig(host_ports=2, uplinks=2, nodes=4)
    for kwargs, words in [
        ({"allowed_port": 2}, "allowed_port must be a host port"),
        ({"config_ports": True}, "config_ports"),
    ]:
        with pytest.raises(ValueError, match=words):
            ManagedLeaf(cfg, **kwargs)
    rw = RegisterBlock("x", [Register("knob", 8, Access.RW, doc="a knob")], doc="x")
    with pytest.raises(ValueError, match="not a plain RO register"):
        GSELeaf(cfg, extra_blocks=(rw,))
    clash = RegisterBlock("link", [Register("up", 2, Access.RO, doc="clash")], doc="x")
    with pytest.raises(ValueError, match="collides"):
        GSELeaf(cfg, extra_blocks=(clash,))
    with pytest.raises(ValueError, match="need the register bank"):
        GSELeaf(cfg, config_ports=True, extra_blocks=(leaf.mgmt_block,))
