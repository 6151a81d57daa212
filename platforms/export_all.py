"""``gse export --all -c CONFIG -o DIR``: the whole design as an ASIC hand-off.

From one configuration (TOML) it writes, for every product block of the catalog:

* ``<module>.v``: the block, flattened, its memories left as instances;
* ``<module>.json``: its manifest (module, parameters, clock and reset, every port,
  interfaces by protocol, the memories it instantiates);
* ``<module>.vlt``: the Verilator waivers the Verilog needs (each justified);

and once for the run:

* ``memories/gse_sram_<n>r1w_<depth>x<width>.v``: each memory shape once, the
  behavioural model an SRAM macro replaces (the block files do not repeat them, so
  the file list compiles as one design);
* ``gse.f``: the file list (memories first), relative to DIR;
* ``gse_verilator.f``: the same list for Verilator, every ``<module>.vlt`` first;
* ``gse_export.json``: the index: the configuration used, every module with its
  files, every memory with its shape and the blocks that use it;
* ``README.md``: what is there and how to regenerate it.

The output is deterministic: the same configuration gives byte-identical files (no
paths, no dates). The configuration::

    [gse]                # GSEConfig: sizes shared by the blocks (rtl/config.py)
    data_width = 64
    queues = 64
    [blocks.voq]         # a block's own parameters, over what [gse] gives it
    queue_limit_cells = 128

An unknown section, key or block, a value of the wrong type or out of range is an
error (:class:`ConfigError`) that names the key.
"""

import json
import os
import re
import time
from pathlib import Path

from opengse.rtl.catalog import blocks, resolve_params
from opengse.rtl.config import GSEConfig

from .export import write_export

__all__ = ["ConfigError", "load_config", "block_params", "build_all", "export_all"]

#: Which GSEConfig method gives a block's shared parameters.
_FROM_CONFIG = {
    "tagger": lambda c: {"data_width": c.data_width, "ethertype": c.ethertype},
    "parser": lambda c: {"data_width": c.data_width, "ethertype": c.ethertype},
    "ctl_encoder": lambda c: {"data_width": c.data_width, "ethertype": c.ethertype},
    "ctl_decoder": lambda c: {"data_width": c.data_width, "ethertype": c.ethertype},
    "voq": GSEConfig.voq_params,
    "dgsq_manager": GSEConfig.manager_params,
    "grant_arbiter": GSEConfig.arbiter_params,
    "sprayer": GSEConfig.sprayer_params,
    "reorder": GSEConfig.reorder_params,
    "link_monitor": lambda c: {"data_width": c.data_width, "links": c.uplinks},
    "leaf": lambda c: _leaf_params(c),
    "spine": lambda c: _spine_params(c),
}

#: The catalog leaf's largest frame (rtl/tops/leaf, LEAF_PARAMS): its reorder slots
#: must hold a container and the frame that may overrun it.
_LEAF_MAX_FRAME = 1536


def _leaf_params(c):
    # GSELeaf builds its GSEConfig from these; the rest ([blocks.leaf]) are its own.
    # The slot is the power of two at or above a container, a frame and the tag.
    need = c.container_bytes + _LEAF_MAX_FRAME + 18
    return {
        "data_width": c.data_width,
        "host_ports": c.host_ports,
        "uplinks": c.uplinks,
        "nodes": c.nodes,
        "queues": c.queues,
        "voq_buffer_bytes": c.voq_buffer_bytes,
        "egress_buffer_bytes": c.egress_buffer_bytes,
        "reorder_window": c.reorder_window,
        "container_bytes": c.container_bytes,
        "max_inflight": c.max_inflight,
        "spray_policy": c.spray_policy,
        "max_frame_bytes": _LEAF_MAX_FRAME,
        "slot_bytes": 1 << (need - 1).bit_length(),
    }


def _spine_params(c):
    # One spine port per leaf: ``nodes`` host ports in all, ``host_ports`` a leaf.
    return {
        "data_width": c.data_width,
        "nodes": c.nodes,
        "ports": max(2, c.nodes // c.host_ports),
        "ethertype": c.ethertype,
    }


#: Memory modules (one per shape): defined once in ``memories/``, not in block files.
_SRAM_MODULE = re.compile(r"^module (gse_sram_\w+|gse_reorder_ram_\w+)\(.*?^endmodule\n", re.M | re.S)


def _cpu_seconds():
    # This process and the tools it ran (Yosys is a subprocess).
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class ConfigError(ValueError):
    pass


def _role(spec):
    """``top`` (the leaf and spine switches), ``test gear`` (rtl/tb: fabric links,
    traffic generator and checker) or ``block``."""
    where = getattr(spec.factory, "__module__", "")
    if where.startswith("opengse.rtl.tops"):
        return "top"
    if where.startswith("opengse.rtl.tb"):
        return "test gear"
    return "block"


def _product_blocks():
    seen, out = set(), []
    for spec in blocks().values():
        if spec.name not in seen:
            seen.add(spec.name)
            out.append(spec)
    return sorted(out, key=lambda s: s.name)


def load_config(path=None, text=None):
    """``(GSEConfig, {block: {param: value}})`` from a TOML file (or its ``text``); no
    file: the defaults."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    if text is None and path is not None:
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise ConfigError(f"cannot read configuration {path}: {exc.strerror}") from None
    try:
        doc = tomllib.loads(text or "")
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"configuration is not valid TOML: {exc}") from None
    for key in doc:
        if key not in ("gse", "blocks"):
            raise ConfigError(f"unknown section [{key}]; sections: [gse], [blocks.<name>]")
    gse = doc.get("gse", {})
    for key, value in gse.items():
        if not isinstance(value, int) or isinstance(value, bool):
            raise ConfigError(f"gse.{key} must be an integer, not {value!r}")
    try:
        cfg = GSEConfig.from_dict(gse)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"[gse]: {exc}") from None
    known = {s.name: s for s in _product_blocks()}
    overrides = {}
    for name, table in doc.get("blocks", {}).items():
        if name not in known:
            raise ConfigError(f"unknown block [blocks.{name}]; blocks: " + ", ".join(sorted(known)))
        if not isinstance(table, dict):
            raise ConfigError(f"blocks.{name} must be a table")
        for key, value in table.items():
            if key not in known[name].params:
                raise ConfigError(
                    f"blocks.{name}.{key}: no such parameter; parameters: "
                    + ", ".join(sorted(known[name].params))
                )
            if not isinstance(value, int) or isinstance(value, bool):
                raise ConfigError(f"blocks.{name}.{key} must be an integer, not {value!r}")
        overrides[name] = dict(table)
    return cfg, overrides


def block_params(spec, cfg, overrides):
    """A block's parameters: its defaults, what the shared config gives it, then its own
    table. The block itself checks the combination; its error names the block."""
    shared = _FROM_CONFIG.get(spec.name, lambda c: {})(cfg)
    shared = {k: v for k, v in shared.items() if k in spec.params and v is not None}
    params = resolve_params(spec, {**shared, **overrides.get(spec.name, {})})
    return params


def build_all(cfg=None, overrides=None, names=None):
    """``[(spec, params, component)]`` of every product block (or of ``names``), all
    checked before anything is written."""
    cfg = cfg or GSEConfig()
    overrides = overrides or {}
    built = []
    for spec in _product_blocks():
        if names is not None and spec.name not in names:
            continue
        params = block_params(spec, cfg, overrides)
        try:
            built.append((spec, params, spec.build(**params)))
        except (ValueError, TypeError, AssertionError) as exc:
            for _s, _p, unused in built:  # never elaborated: not a design error
                unused._MustUse__silence = True
            raise ConfigError(f"[blocks.{spec.name}] (or what [gse] gives it): {exc}") from None
    return built


def export_all(out_dir, cfg=None, overrides=None, *, names=None, log=print):
    """Write the hand-off into ``out_dir``; return the index (a dict). ``names``: only
    these blocks (tests)."""
    cfg = cfg or GSEConfig()
    overrides = overrides or {}
    built = build_all(cfg, overrides, names)
    out = Path(out_dir)
    (out / "memories").mkdir(parents=True, exist_ok=True)
    modules, memories, files = [], {}, []
    for spec, params, component in built:
        started = _cpu_seconds(), time.monotonic()
        v_path, j_path = write_export(
            component,
            spec.module,
            params,
            out,
            description=spec.description,
            keep_modules=spec.kept_modules(**params),
        )
        text = v_path.read_text()
        for mo in _SRAM_MODULE.finditer(text):
            mem_file = out / "memories" / f"{mo.group(1)}.v"
            if mo.group(1) not in memories:
                mem_file.write_text(mo.group(0))
                memories[mo.group(1)] = {"file": f"memories/{mem_file.name}", "used_by": []}
            memories[mo.group(1)]["used_by"].append(spec.module)
        v_path.write_text(_SRAM_MODULE.sub("", text))
        doc = json.loads(j_path.read_text())
        for sub in doc["submodules"]:
            if sub["module"] in memories and "memory" in sub:
                memories[sub["module"]].update(sub["memory"])
        files.append(v_path.name)
        modules.append(
            {
                "module": spec.module,
                "block": spec.name,
                "role": _role(spec),
                "verilog": v_path.name,
                "manifest": j_path.name,
                "waivers": doc["verilator_waivers"],
                "parameters": params,
                "description": spec.description,
            }
        )
        log(
            f"wrote {v_path.name}, {j_path.name} ({_cpu_seconds() - started[0]:.1f} s CPU,"
            f" {time.monotonic() - started[1]:.1f} s wall)"
        )
    for mem in memories.values():
        mem["used_by"] = sorted(set(mem["used_by"]))
    filelist = [m["file"] for _n, m in sorted(memories.items())] + files
    (out / "gse.f").write_text("".join(f"{f}\n" for f in filelist))
    waivers = sorted(m["waivers"] for m in modules)
    (out / "gse_verilator.f").write_text("".join(f"{f}\n" for f in waivers + filelist))
    index = {
        "configuration": {"gse": cfg.as_dict(), "blocks": overrides},
        "modules": modules,
        "memories": dict(sorted(memories.items())),
        "filelist": "gse.f",
        "verilator_filelist": "gse_verilator.f",
    }
    (out / "gse_export.json").write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")
    (out / "README.md").write_text(_readme(index))
    log(
        f"wrote {len(modules)} modules, {len(memories)} memory shapes, gse.f, gse_verilator.f,"
        " gse_export.json, README.md"
    )
    return index


def _readme(index):
    lines = [
        "# OpenGSE Verilog hand-off",
        "",
        "Generated by `gse export --all`; regenerate it with the same configuration",
        "(`gse_export.json` holds it) to get byte-identical files.",
        "",
        "- `gse.f`: the file list, memories first (paths relative to this folder).",
        "- `gse_verilator.f`: the same for Verilator, the waiver files first:",
        "  `verilator --lint-only -Wall --top-module gse_leaf -f gse_verilator.f`.",
        "- `<module>.v`: one block or top, flattened, one clock `clk` and one",
        "  synchronous active-high reset `rst` (the MAC adds its `rx`/`tx` clocks); its",
        "  memories are instances of the modules in `memories/`.",
        "- The tops `gse_leaf` (a leaf switch: host ports, uplinks, AXI4-Lite",
        "  registers) and `gse_spine` (a spine switch: fabric ports, AXI4-Lite",
        "  registers: its table and counters) each hold their blocks; the block files",
        "  are for teams that compose their own. Test gear (links, traffic",
        "  generator and checker) is for simulation, not for silicon.",
        "- `<module>.json`: the block's manifest: parameters, clock and reset, every port",
        "  (name, direction, width), interfaces grouped by protocol, memories used.",
        "- `<module>.vlt`: the Verilator lint waivers it needs (each one justified);",
        "  `verilator --lint-only -Wall <module>.vlt -f gse.f` is clean.",
        "- `memories/gse_sram_<n>r1w_<depth>x<width>.v`: behavioural models, one write",
        "  port and n registered read ports (data the clock after the address, old data",
        "  on a same-address write), no reset: replace each with a compiled SRAM of the",
        "  same ports. `memories/gse_reorder_ram_<depth>x<width>.v`: the reorder",
        "  buffer's slot RAM, one read port with enable, two clocks of read latency.",
        "",
    ]
    for role, title in (("top", "Tops"), ("block", "Blocks"), ("test gear", "Test gear")):
        rows = [m for m in index["modules"] if m["role"] == role]
        if not rows:
            continue
        lines += [f"## {title}", "", "| module | block | parameters |", "|---|---|---|"]
        for m in rows:
            params = ", ".join(f"{k}={v}" for k, v in sorted(m["parameters"].items()))
            lines.append(f"| `{m['module']}` | {m['block']} | {params} |")
        lines.append("")
    lines += [
        "## Memories",
        "",
        "| memory | depth x width | read ports | read latency | reset-less | used by |",
        "|---|---|---|---|---|---|",
    ]
    for name, mem in index["memories"].items():
        lines.append(
            f"| `{name}` | {mem.get('depth')} x {mem.get('width')} | {mem.get('read_ports')} | "
            f"{mem.get('read_latency_cycles')} | {'yes' if mem.get('reset_less') else 'no'} | "
            f"{', '.join(mem['used_by'])} |"
        )
    return "\n".join(lines) + "\n"
