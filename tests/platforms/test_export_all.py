"""``gse export --all``: the ASIC hand-off from one configuration.

Deterministic (two runs, byte-identical, no paths or dates), one file list that
compiles as one design (each memory shape once), an index that lists every module and
memory, and configuration errors that name the key."""

import json
import shutil
import subprocess

import pytest

from opengse.firmware.cli import main
from opengse.platforms.export_all import ConfigError, build_all, export_all, load_config
from opengse.platforms.tools import tool_env

#: Two small blocks with memories of different shapes, one without: enough for the
#: files, index and determinism (the catalog-wide export is test_export.py's).
SUBSET = ["sprayer", "tagger", "dgsq_manager"]


def _tree(path):
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def test_export_all_deterministic_and_complete(tmp_path):
    cfg, over = load_config(text="[gse]\nqueues = 32\n[blocks.sprayer]\npolicy = 1\n")
    a = export_all(tmp_path / "a", cfg, over, names=SUBSET, log=lambda *_: None)
    export_all(tmp_path / "b", cfg, over, names=SUBSET, log=lambda *_: None)
    ta, tb = _tree(tmp_path / "a"), _tree(tmp_path / "b")
    assert ta == tb, "two runs of the same configuration differ"
    blob = b"".join(ta.values())
    assert str(tmp_path).encode() not in blob and b"/home/" not in blob
    assert {m["block"] for m in a["modules"]} == set(SUBSET)
    mgr = next(m for m in a["modules"] if m["block"] == "dgsq_manager")
    assert mgr["parameters"]["n_ctx"] == 32  # [gse] queues reached the manager
    spr = next(m for m in a["modules"] if m["block"] == "sprayer")
    assert spr["parameters"]["policy"] == 1  # [blocks.sprayer] reached it
    filelist = (tmp_path / "a" / "gse.f").read_text().split()
    assert set(filelist) == {p for p in ta if p.endswith(".v")}
    # Verilator's list: every shipped waiver file, then the same Verilog
    vlist = (tmp_path / "a" / "gse_verilator.f").read_text().split()
    assert vlist == sorted(m["waivers"] for m in a["modules"]) + filelist
    assert {m["role"] for m in a["modules"]} == {"block"}
    for name, mem in a["memories"].items():
        assert mem["file"] in filelist and mem["depth"] >= 2 and mem["width"] >= 1
        assert all(u in {m["module"] for m in a["modules"]} for u in mem["used_by"])
        # each shape is defined once: in its own file, in no block file
        defs = [p for p, body in ta.items() if f"module {name}(".encode() in body]
        assert defs == [mem["file"]], (name, defs)
    index = json.loads(ta["gse_export.json"])
    assert index["configuration"]["gse"]["queues"] == 32
    assert b"gse_dgsq_manager" in ta["README.md"]
    if shutil.which("iverilog"):
        proc = subprocess.run(
            ["iverilog", "-g2005", "-o", str(tmp_path / "x.vvp"), "-c", "gse.f"],
            cwd=tmp_path / "a",
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize(
    "toml,names",
    [
        ("[gse]\nqueus = 64\n", "queus"),
        ("[gse]\nqueues = 63\n", "queues"),
        ('[gse]\nqueues = "64"\n', "gse.queues"),
        ("[blocks.nosuch]\n", "nosuch"),
        ("[blocks.voq]\ncell_byte = 64\n", "blocks.voq.cell_byte"),
        ("[blocks.voq]\ncell_bytes = 3\n", "cell_bytes"),
        ("[other]\n", "[other]"),
        ("[gse\n", "TOML"),
    ],
)
def test_export_all_bad_config(toml, names, tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError, match=None) as exc:
        cfg, over = load_config(path)
        export_all(tmp_path / "out", cfg, over, names=["voq"], log=lambda *_: None)
    assert names in str(exc.value)
    assert not (tmp_path / "out").exists(), "nothing is written from a bad configuration"
    # The command line says the same in one line, exit 2, no traceback.
    assert main(["export", "--all", "-c", str(path), "-o", str(tmp_path / "cli")]) == 2
    err = capsys.readouterr().err
    assert names in err and "Traceback" not in err


def test_export_cli_usage_errors(tmp_path, capsys):
    assert main(["export", "-o", str(tmp_path)]) == 2
    assert "name a BLOCK" in capsys.readouterr().err
    assert main(["export", "voq", "--all", "-o", str(tmp_path)]) == 2
    assert "--all" in capsys.readouterr().err
    assert main(["export", "voq", "-c", "x.toml", "-o", str(tmp_path)]) == 2
    assert "--config goes with --all" in capsys.readouterr().err


def _silence(built):
    for _s, _p, component in built:  # built to read their parameters, never elaborated
        component._MustUse__silence = True


# Built, never elaborated: the parts the leaf makes in its constructor say so when
# collected.
@pytest.mark.filterwarnings("ignore:.*created but never used")
def test_tops_take_the_shared_configuration():
    """Both tops are in ``export --all`` and built from [gse] (without Yosys: the
    export of the tops themselves is test_export_all_tops_deterministic's)."""
    cfg, over = load_config(text="[gse]\nhost_ports = 2\nnodes = 8\nuplinks = 2\n[blocks.leaf]\ndelay = 20\n")
    built = build_all(cfg, over, names=["leaf", "spine", "voq"])
    _silence(built)
    params = {spec.name: p for spec, p, _c in built}
    assert set(params) == {"leaf", "spine", "voq"}
    leaf, spine = params["leaf"], params["spine"]
    assert (leaf["host_ports"], leaf["uplinks"], leaf["nodes"], leaf["delay"]) == (2, 2, 8, 20)
    assert leaf["queues"] == cfg.queues and leaf["container_bytes"] == cfg.container_bytes
    assert leaf["slot_bytes"] >= cfg.container_bytes + leaf["max_frame_bytes"] + 18
    assert (spine["ports"], spine["nodes"], spine["data_width"]) == (4, 8, cfg.data_width)
    everything = build_all(cfg, over)
    _silence(everything)
    assert {"leaf", "spine"} <= {spec.name for spec, _p, _c in everything}


@pytest.mark.slow
@pytest.mark.timeout(7200)
def test_export_all_tops_deterministic(tmp_path):
    """The tops, exported twice from one configuration: byte-identical, lint-clean with
    the shipped waivers, one design for Icarus. Slow: the leaf's export takes minutes
    (``make test-slow``)."""
    # The catalog leaf's sizes (rtl/tops/leaf LEAF_PARAMS): the smallest useful leaf.
    cfg, over = load_config(
        text="[gse]\nhost_ports = 2\nuplinks = 2\nnodes = 8\nqueues = 16\nvoq_buffer_bytes = 16384\n"
        "egress_buffer_bytes = 8192\nreorder_window = 2\nmax_inflight = 2\ncontainer_bytes = 2048\n"
    )
    names = ["leaf", "spine"]
    a = export_all(tmp_path / "a", cfg, over, names=names, log=lambda *_: None)
    export_all(tmp_path / "b", cfg, over, names=names, log=lambda *_: None)
    ta, tb = _tree(tmp_path / "a"), _tree(tmp_path / "b")
    assert ta == tb, "two runs of the same configuration differ"
    assert str(tmp_path).encode() not in b"".join(ta.values())
    assert {(m["module"], m["role"]) for m in a["modules"]} == {("gse_leaf", "top"), ("gse_spine", "top")}
    readme = ta["README.md"].decode()
    assert "## Tops" in readme and "`gse_leaf`" in readme and "`gse_spine`" in readme
    assert any(n.startswith("gse_reorder_ram_") for n in a["memories"]), "the leaf's slot RAMs are macros"
    tool_env()
    for top in ("gse_leaf", "gse_spine"):
        proc = subprocess.run(
            ["verilator", "--lint-only", "-Wall", "--top-module", top, "-f", "gse_verilator.f"],
            cwd=tmp_path / "a",
            capture_output=True,
            text=True,
            timeout=1200,
        )
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0 and "%Warning" not in out, out[-4000:]
    if shutil.which("iverilog"):
        proc = subprocess.run(
            ["iverilog", "-g2005", "-o", str(tmp_path / "x.vvp"), "-c", "gse.f"],
            cwd=tmp_path / "a",
            capture_output=True,
            text=True,
            timeout=1200,
        )
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
