"""Every catalog block exports lint-clean Verilog with a manifest that matches it, its
kept memory modules have fixed, readable port names (an ASIC team swaps them for SRAM
macros behind a wrapper with exactly these ports), every memory in every manifest
states its depth, width, ports, read latency and whether it is reset-less, and the export passes an
integrator's first gates (plain Verilator with the shipped waivers, Icarus Verilog)."""

import json
import re
import shutil
import subprocess

import pytest
from amaranth.hdl import Elaboratable, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from opengse.rtl.catalog import blocks
from opengse.platforms.export import MEMORY_KEYS, manifest, write_export
from opengse.rtl.header.gse_header import GSE_FIELDS
from opengse.platforms.lint import lint
from opengse.platforms.tools import tool_env
from opengse.sim.runner import export_block

SPECS = sorted({spec.name: spec for spec in blocks().values()}.values(), key=lambda s: s.name)

#: Every SRAM (rtl/lib/sram.py) is kept under its shape's name.
SRAM_NAME = re.compile(r"gse_sram_(\d+)r1w_(\d+)x(\d+)(_en)?")
#: The other kept memories (name pattern): their exact ports (name: direction).
OTHER_RAMS = {
    r"gse_reorder_ram_\d+x\d+": {
        "w_en": "input",
        "w_addr": "input",
        "w_data": "input",
        "r_en": "input",
        "r_addr": "input",
        "r_data": "output",
    }
}


#: Clock-domain crossings kept as modules (the MAC's): their exact ports, clocks first.
_IN, _OUT = "input", "output"
CDC_MODULES = {
    r"gse_cdc_async_fifo_\d+x\d+": {
        **dict.fromkeys(("wclk", "wrst", "rclk", "rrst", "w_data", "w_en", "r_en"), _IN),
        **dict.fromkeys(("w_rdy", "w_level", "r_data", "r_rdy", "r_level", "r_rst"), _OUT),
    },
    "gse_cdc_pulse": {"iclk": _IN, "irst": _IN, "oclk": _IN, "orst": _IN, "i": _IN, "o": _OUT},
}


def verilog_ports(text, module):
    """{name: (direction, width)} of ``module`` in ``text``."""
    body = text[text.index(f"module {module}(") :]
    body = body[: body.index("endmodule")]
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


def _lint_case(spec):
    # The composed leaf's export takes minutes (about 3 of Yosys and 1 of Verilator on
    # an idle core; several times that on a loaded machine): a longer time limit.
    marks = [pytest.mark.timeout(3600)] if spec.name == "leaf" else []
    return pytest.param(spec, marks=marks, id=spec.name)


@pytest.mark.parametrize("spec", [_lint_case(s) for s in SPECS])
def test_export_lint_and_manifest(spec, tmp_path):
    # The export the cocotb benches build from (build/sim/<block>-<params>/rtl/): a block
    # a bench also builds at its defaults is exported once in a regression.
    v_path, j_path, params = export_block(spec)
    assert params == dict(spec.params)
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
    kept = {}
    for sub in doc["submodules"]:
        assert re.search(rf"^module {sub['module']}\(", text, re.M), f"{sub['module']} missing"
        in_verilog = verilog_ports(text, sub["module"])
        assert in_verilog == {p["name"]: (p["direction"], p["width"]) for p in sub["ports"]}
        kept[sub["module"]] = in_verilog
        if "cdc" in sub:
            check_cdc_entry(sub)
        else:
            check_sram_manifest(sub, in_verilog)
            check_memory_entry(sub)
    check_kept_modules(spec, params, text, kept)
    assert "initial" not in text, "registers must not rely on initial values"
    check_integrator_gates(spec, v_path, doc, tmp_path)


ICARUS = shutil.which("iverilog")


def check_integrator_gates(spec, v_path, doc, tmp_path):
    """What an integrator runs on an export first:

    * it is self-contained for Verilator: ``verilator --lint-only -Wall`` given only
      the export's files — the ``.v`` and the ``.vlt`` waiver file its manifest names —
      prints no warning. That is the project's lint (``opengse.platforms.lint.lint``
      runs the same command) and, ``-Wall`` being every warning, also an integrator's
      plain run with the default warnings: one Verilator run checks both (the leaf's
      takes a minute under load);
    * it compiles and elaborates in a second simulator, Icarus Verilog (Debian package
      ``iverilog``; ``make install`` installs it where it can; without it that part is
      skipped, and says so in the test's output).
    """
    tool_env()
    waivers = v_path.parent / doc["verilator_waivers"]
    assert waivers.exists(), "the manifest names a waiver file that was not written"
    proc = subprocess.run(
        ["verilator", "--lint-only", "-Wall", "--top-module", spec.module, str(waivers), str(v_path)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "%Warning" not in out, out[-4000:]
    if ICARUS is None:
        print("Icarus Verilog (Debian package iverilog) is not installed: gate not run")
        return
    vvp = tmp_path / "a.vvp"
    proc = subprocess.run(
        [ICARUS, "-g2005", "-s", spec.module, "-o", str(vvp), str(v_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"iverilog failed on {spec.module}:\n" + (proc.stdout + proc.stderr)[-4000:]
    run = subprocess.run(["vvp", "-n", str(vvp)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr


def test_parser_has_brief_names():
    spec = blocks()["parser"]
    v_path, _, _ = export_block(spec, {"data_width": 64, "strip": 1})
    ports = verilog_ports(v_path.read_text(), spec.module)
    for side in ("s_axis", "m_axis"):
        for sig in ("tdata", "tkeep", "tvalid", "tready", "tlast", "tuser"):
            assert f"{side}_{sig}" in ports
    assert ports["s_axis_tdata"] == ("input", 64) and ports["s_axis_tkeep"] == ("input", 8)
    assert ports["m_hdr_valid"][0] == "output" and ports["m_hdr_ready"][0] == "input"
    for name, _off, _n, _lsb, width in GSE_FIELDS:
        assert ports[f"m_hdr_{name}"] == ("output", width)
    assert set(ports) >= {"clk", "rst"}


def expected_kept_ports(module, ports):
    """{name: direction} a kept module must have (``ports``: what it has)."""
    cdc = [k for k in CDC_MODULES if re.fullmatch(k, module)]
    if cdc:
        return dict(CDC_MODULES[cdc[0]])
    expected = {"clk": "input", "rst": "input"}
    sram = SRAM_NAME.fullmatch(module)
    if sram:
        n_read, read_en = int(sram.group(1)), bool(sram.group(4))
        expected.update({"w_en": "input", "w_addr": "input", "w_data": "input"})
        for i in range(n_read):
            expected.update({f"r{i}_addr": "input", f"r{i}_data": "output"})
            if read_en:
                expected[f"r{i}_en"] = "input"
    else:
        (kind,) = [k for k in OTHER_RAMS if re.fullmatch(k, module)] or [None]
        assert kind, f"new kept module {module}: list its ports in this test"
        expected.update(OTHER_RAMS[kind])
    return expected


def check_sram_manifest(sub, ports):
    """An SRAM's manifest entry states its shape, and the shape is the one in its name
    and in its port widths."""
    sram = SRAM_NAME.fullmatch(sub["module"])
    if not sram:
        return
    mem = sub["memory"]
    assert (mem["read_ports"], mem["depth"], mem["width"]) == tuple(map(int, sram.groups()[:3]))
    assert mem["write_ports"] == 1 and mem["read_latency_cycles"] == 1
    assert ports["w_data"][1] == mem["width"]
    assert ports["w_addr"][1] == max(1, (mem["depth"] - 1).bit_length())


def check_memory_entry(sub):
    """One ``submodules`` entry of a manifest: a memory, fully described, whose ports
    have the widths its shape implies."""
    mem = sub.get("memory")
    assert mem is not None, f"{sub['module']} ({sub['path']}): kept module without a memory description"
    missing = [k for k in MEMORY_KEYS if k not in mem]
    assert not missing, f"{sub['module']}: manifest lacks {missing}"
    assert mem["kind"] == "sram" and mem["depth"] >= 2 and mem["width"] >= 1
    assert mem["write_ports"] == 1 and mem["read_ports"] >= 1
    assert mem["read_latency_cycles"] in (1, 2)
    assert isinstance(mem["reset_less"], bool) and isinstance(mem["read_enable"], bool)
    assert mem["reset_less"] == mem["reset"].startswith("none")
    ports = {p["name"]: (p["direction"], p["width"]) for p in sub["ports"]}
    abits = max(1, (mem["depth"] - 1).bit_length())
    assert ports["w_data"] == ("input", mem["width"]) and ports["w_addr"] == ("input", abits)
    reads = sorted(n for n in ports if re.fullmatch(r"r\d*_data", n))
    assert len(reads) == mem["read_ports"], (sub["module"], reads)
    for data in reads:
        assert ports[data] == ("output", mem["width"])
        assert ports[data.replace("_data", "_addr")] == ("input", abits)
        assert (data.replace("_data", "_en") in ports) == mem["read_enable"]


def check_cdc_entry(sub):
    """A crossing's manifest entry: its kind and which domain each clock port is."""
    cdc = sub["cdc"]
    assert cdc["kind"] in ("async_fifo", "pulse_synchronizer")
    ports = {p["name"] for p in sub["ports"]}
    assert set(cdc["clocks"]) <= ports and len(set(cdc["clocks"].values())) == 2, cdc


def test_mac_crossings_are_named_modules(tmp_path):
    """The MAC's clock-domain crossings are modules of their own (an STA or CDC tool
    finds them by name), each listed in the manifest with its clocks' domains."""
    spec = blocks()["rgmii_mac"]
    params = dict(spec.params)
    doc = manifest(spec.build(**params), spec.module, params, keep_modules=spec.kept_modules(**params))
    cdc = {s["path"]: (s["module"], s["cdc"]["clocks"]) for s in doc["submodules"] if "cdc" in s}
    assert cdc["rx_crossing.fifo"][1] == {"wclk": "rx", "rclk": "sync"}
    assert cdc["tx_crossing.crossing"][1] == {"wclk": "sync", "rclk": "tx"}
    assert cdc["rx_crossing.fifo"][0].startswith("gse_cdc_async_fifo_")
    assert cdc["tx_crossing.crossing"][0].startswith("gse_cdc_async_fifo_16x")
    assert {m for m, _c in cdc.values()} >= {"gse_cdc_pulse"}
    # every crossing of the MAC: the receive FIFO, the transmit crossing, the pulses; the
    # transmit store is in `sync` alone, no crossing, and its memory an SRAM module
    assert sum(m.startswith("gse_cdc_async_fifo_") for m, _c in cdc.values()) == 2
    assert not any(path.startswith("tx_crossing.store") for path in cdc)
    srams = {s["path"]: s["module"] for s in doc["submodules"] if s.get("memory")}
    words = params.get("tx_fifo_bytes", 4096) * 8 // params.get("data_width", 64)
    assert srams["tx_crossing.store.mem"].startswith(f"gse_sram_1r1w_{words}x"), srams


def test_reorder_ram_has_its_shape():
    """The reorder buffer's slot RAM (not an SRAM of rtl/lib/sram.py) is described like
    one: two clocks of read latency, a read enable, the depth and width of its slots."""
    spec = blocks()["reorder"]
    params = dict(spec.params)
    doc = manifest(spec.build(**params), spec.module, params, keep_modules=spec.kept_modules(**params))
    (ram,) = [s for s in doc["submodules"] if s["module"].startswith("gse_reorder_ram_")]
    check_memory_entry(ram)
    # sources x window slots of slot_bytes, one word a beat: data and a 4-bit byte count
    words = params["sources"] * params["window"] * params["slot_bytes"] // (params["data_width"] // 8)
    mem = ram["memory"]
    assert ram["module"] == f"gse_reorder_ram_{mem['depth']}x{mem['width']}"
    assert (mem["depth"], mem["width"], mem["read_latency_cycles"]) == (words, params["data_width"] + 4, 2)


def export_kept(spec, params, out_dir):
    """({kept module: its Verilog ports}, Verilog text); checks them against the manifest."""
    v_path, j_path = write_export(
        spec.build(**params), spec.module, params, out_dir, keep_modules=spec.kept_modules(**params)
    )
    text, doc = v_path.read_text(), json.loads(j_path.read_text())
    kept = {}
    for sub in doc["submodules"]:
        in_verilog = verilog_ports(text, sub["module"])
        in_manifest = {p["name"]: (p["direction"], p["width"]) for p in sub["ports"]}
        assert in_verilog == in_manifest, sub["module"]
        kept[sub["path"]] = in_verilog
    return kept, text


def check_kept_modules(spec, params, text, kept):
    """The kept modules are exactly the block's memories, with readable, expected port
    names."""
    from opengse.platforms.export import kept_modules

    assert set(kept) == {k.module for k in kept_modules(spec.build(**params), spec.kept_modules(**params))}
    for module, ports in kept.items():
        header = re.search(rf"^module {module}\((.*?)\);", text, re.M | re.S).group(1)
        assert "$" not in header and "port" not in header and "__" not in header, header
        for name in ports:
            assert re.fullmatch(r"[a-z][a-z0-9_]*", name), f"{module}: port {name!r}"
        assert {n: d for n, (d, _w) in ports.items()} == expected_kept_ports(module, ports)
        # The parent instantiates it by its fixed name.
        assert re.search(rf"^\s*{module} \S+\s+\(", text, re.M), f"no instance of {module}"


def test_kept_ports_stable_across_parameters_and_runs(tmp_path):
    """Port names do not depend on the parameters (widths, and so SRAM module names, do),
    nor on the run."""
    spec = blocks()["voq"]
    small = dict(
        spec.params,
        buffer_bytes=4096,
        cell_bytes=64,
        queues=8,
        tenants=4,
        queue_limit_cells=32,
        tenant_reserved_cells=4,
        tenant_limit_cells=40,
    )
    default, text = export_kept(spec, dict(spec.params), tmp_path / "a")
    again, text_again = export_kept(spec, dict(spec.params), tmp_path / "b")
    other, _ = export_kept(spec, small, tmp_path / "c")
    assert text_again == text
    assert {m: list(p) for m, p in other.items()} == {m: list(p) for m, p in default.items()}
    assert other["cell_ram"]["w_addr"][1] < default["cell_ram"]["w_addr"][1]


class _Inner(Elaboratable):
    """A plain Elaboratable kept module: ports are its public signals."""

    def __init__(self):
        self.a = Signal(8)
        self.y = Signal(8)
        self._hidden = Signal(8)

    def elaborate(self, platform):
        m = Module()
        m.d.sync += [self.y.eq(self.a), self._hidden.eq(self.a + 1)]
        return m


class _Outer(wiring.Component):
    a: In(8)
    y: Out(8)

    def __init__(self, leak=False):
        self.leak = leak
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.submodules.inner = inner = _Inner()
        m.d.comb += [inner.a.eq(self.a), self.y.eq(inner._hidden if self.leak else inner.y)]
        return m


def test_kept_plain_elaboratable(tmp_path):
    v_path, j_path = write_export(_Outer(), "outer", {}, tmp_path, keep_modules={"inner": "inner_mod"})
    ok, out = lint([v_path], "outer")
    assert ok, out
    ports = verilog_ports(v_path.read_text(), "inner_mod")
    assert ports == {"clk": ("input", 1), "rst": ("input", 1), "a": ("input", 8), "y": ("output", 8)}
    (sub,) = json.loads(j_path.read_text())["submodules"]
    assert (sub["module"], sub["path"]) == ("inner_mod", "inner")
    with pytest.raises(ValueError, match="outside its interface: _hidden"):
        write_export(_Outer(leak=True), "outer", {}, tmp_path / "leak", keep_modules={"inner": "inner_mod"})
    with pytest.raises(ValueError, match="no submodule 'nope'"):
        write_export(_Outer(), "outer", {}, tmp_path / "bad", keep_modules={"nope": "x"})
