"""Every catalog block exports lint-clean Verilog with a manifest that matches it."""
import json
import re

import pytest

from opengse.rtl.catalog import blocks
from opengse.rtl.export import write_export
from opengse.rtl.gse_header import GSE_FIELDS
from opengse.sim.lint import lint

SPECS = sorted({spec.name: spec for spec in blocks().values()}.values(), key=lambda s: s.name)


def verilog_ports(text, module):
    """{name: (direction, width)} of ``module`` in ``text``."""
    body = text[text.index(f"module {module}("):]
    body = body[:body.index("endmodule")]
    # Yosys writes $pmux cells as functions, whose own `input` lines are not ports.
    body = re.sub(r"^\s*function\b.*?^\s*endfunction\b", "", body, flags=re.M | re.S)
    ports = {}
    for direction, rng, name in re.findall(r"^\s*(input|output)\s+(\[\d+:\d+\]\s+)?(\w+);", body, re.M):
        width = 1
        if rng:
            hi, lo = map(int, re.findall(r"\d+", rng))
            width = hi - lo + 1
        ports[name] = (direction, width)
    return ports


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_export_lint_and_manifest(spec, tmp_path):
    params = dict(spec.params)
    v_path, j_path = write_export(spec.build(**params), spec.module, params, tmp_path,
                                  description=spec.description,
                                  keep_modules=spec.kept_modules(**params))
    ok, out = lint([v_path], spec.module)
    assert ok, out
    text = v_path.read_text()
    doc = json.loads(j_path.read_text())
    assert doc["module"] == spec.module
    assert doc["parameters"] == params
    assert doc["clocks"][0]["name"] == "clk" and doc["clocks"][0]["reset"] == "rst"
    in_verilog = verilog_ports(text, spec.module)
    in_manifest = {p["name"]: (p["direction"], p["width"]) for p in doc["ports"]}
    assert in_manifest == in_verilog
    grouped = {name for i in doc["interfaces"] for name in i["ports"].values()}
    assert grouped == set(in_manifest) - {"clk", "rst"}
    for name in doc["submodules"]:
        assert re.search(rf"^module {name}\(", text, re.M), f"memory module {name} missing"
    assert "initial" not in text, "registers must not rely on initial values"


def test_parser_has_brief_names(tmp_path):
    spec = blocks()["parser"]
    v_path, _ = write_export(spec.build(data_width=64, strip=1), spec.module, {}, tmp_path)
    ports = verilog_ports(v_path.read_text(), spec.module)
    for side in ("s_axis", "m_axis"):
        for sig in ("tdata", "tkeep", "tvalid", "tready", "tlast", "tuser"):
            assert f"{side}_{sig}" in ports
    assert ports["s_axis_tdata"] == ("input", 64) and ports["s_axis_tkeep"] == ("input", 8)
    assert ports["m_hdr_valid"][0] == "output" and ports["m_hdr_ready"][0] == "input"
    for name, _off, _n, _lsb, width in GSE_FIELDS:
        assert ports[f"m_hdr_{name}"] == ("output", width)
    assert set(ports) >= {"clk", "rst"}
