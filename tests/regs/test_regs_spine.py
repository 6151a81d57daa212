"""The spine's register map (rtl/tops/spine_registers.py): what ``gse regs`` writes for
it is committed and current, it covers every table port and counter of the spine, its
C header compiles, and its JSON map (``gsectl --map``) is the same map."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from opengse.firmware.regs_gen import SPINE_DOCS_PATH, SPINE_HEADER_PATH, SPINE_MAP_PATH, reference_outputs
from opengse.rtl.regs.description import Access, RegisterMap
from opengse.rtl.tops.spine import INPUT_COUNTERS, OUTPUT_COUNTERS, GSESpine
from opengse.rtl.tops.spine_registers import spine_register_map

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("rel", [SPINE_DOCS_PATH, SPINE_HEADER_PATH, SPINE_MAP_PATH], ids=str)
def test_spine_outputs_committed(rel):
    assert (ROOT / rel).read_text() == reference_outputs()[rel], f"{rel} is out of date: run `gse regs`"


@pytest.mark.parametrize("ports,nodes", [(2, 4), (4, 16), (8, 64)])
def test_spine_map_covers_every_port(ports, nodes):
    spine = GSESpine(ports=ports, nodes=nodes, config_ports=True)  # the same ports, as ports
    regmap = spine_register_map(spine)
    stats = {n[len("stat_") :] for n in spine.signature.members if n.startswith("stat_")}
    assert {r.name for r in regmap["in"]} | {r.name for r in regmap["out"]} == stats
    for blk, names in (("in", INPUT_COUNTERS), ("out", OUTPUT_COUNTERS)):
        for name in names:
            reg = regmap[blk][name]
            assert reg.access == Access.RO and reg.count == ports and reg.width == 32 and reg.doc
    tbl = regmap["spine"]
    assert tbl["route_port"].mask >= ports and tbl["route_rd_port"].width == tbl["route_port"].width
    assert 1 << tbl["route_node"].width == nodes
    assert tbl["route_write"].strobe and tbl["ports"].reset == ports and tbl["nodes"].reset == nodes


def test_spine_bank_ports_are_axil_only():
    spine = GSESpine(ports=2, nodes=4)
    names = set(spine.signature.members)
    assert {"s_axis", "m_axis", "pause", "pause_in"} <= names
    assert not any(n.startswith("stat_") or n.startswith("route") or n == "s_route" for n in names)
    assert {n for n in names if n.startswith("s_axil_")} >= {"s_axil_awaddr", "s_axil_rdata", "s_axil_bresp"}


def test_spine_json_map_round_trips():
    doc = json.loads((ROOT / SPINE_MAP_PATH).read_text())
    again = RegisterMap.from_dict(doc)
    spec_map = GSESpine().regmap
    assert again.fingerprint() == spec_map.fingerprint()
    assert again.size == spec_map.size


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc")
def test_spine_header_compiles():
    proc = subprocess.run(
        ["gcc", "-fsyntax-only", "-Wall", "-Werror", "-x", "c", "-std=c99", str(ROOT / SPINE_HEADER_PATH)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
