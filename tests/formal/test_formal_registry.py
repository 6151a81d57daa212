"""The formal registry without a solver: every property is complete, its wrapper
elaborates to RTLIL, and the blocks the task names each have one."""

import pytest
from amaranth.back import rtlil

from opengse.sim.properties import PROPERTIES

#: at least one property per block of the datapath (issue 17 item 6)
BLOCKS = {
    "parser",
    "tagger",
    "voq",
    "grant_arbiter",
    "dgsq_manager",
    "ctl_encoder+ctl_decoder",
    "sprayer",
    "link_monitor",
    "reorder",
    "spine",
    "register_bank",
    "skid_buffer",
    "packet_mux",
    "packet_demux",
    "container_framing",
    "grant_framing",
    "control_demux",
    "pause_gate",
    "pause_fifo",
    "ecmp_selector",
    "fabric_link",
    "traffic_check",
    "traffic_gen",
    "mac",
    "leaf (dest_lookup)",
}


def test_every_block_has_a_property():
    have = {p.block for p in PROPERTIES.values() if p.mode != "cover"}
    assert BLOCKS <= have, f"blocks without a property: {sorted(BLOCKS - have)}"


@pytest.mark.parametrize("name", sorted(PROPERTIES))
def test_property_builds(name, tmp_path):
    p = PROPERTIES[name]
    assert p.asserts and p.assumptions and p.depth > 0
    assert p.mode in ("bmc", "prove", "cover")
    if p.mode == "bmc":
        assert p.bounded_why, f"{name}: a bounded property says why it is not proved unbounded"
    top, ports = p.build()
    il = rtlil.convert(top, ports=ports)
    assert "assert" in il or "cover" in il
