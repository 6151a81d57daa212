"""``gse``: the OpenGSE command line.

gse blocks                                   list blocks and their parameters
gse export BLOCK [-p NAME=VALUE ...] -o DIR  Verilog + JSON manifest
gse bench BLOCK [--json] [--seeds 1,2,3] [--no-pnr]
gse run [-o DIR] [--seeds ...] [--no-pnr]    the main job: export and bench every block
gse regs [-o ROOT] [--check]                 docs/registers.md + firmware/gse_regs.h
gse regs --bench [--seeds 1,2,3]             the reference map's bank on ECP5
gse figures [--write | --check] [--update BLOCK [--bench-json FILE]]
                                             the README's figures table from docs/figures.json
gse fabric [--lb gse|ecmp|both] [--pattern P] [--json] ...
                                             the leaf-spine fabric benchmark (docs/fabric.md)
gse sim --pcap-in FILE [FILE ...] -o DIR [--map-macs] [--lb gse|ecmp] ...
                                             pcaps through the fabric, one pcap per host out
gse build --board NAME [--top selftest|leaf] [--seed N] [--core-mhz MHZ] [-o DIR]
                                             a board bitstream, timing and resources (docs/boards.md)
"""

import argparse
import json
import sys

__all__ = ["main"]


class CLIError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        # One line, no usage dump, no traceback.
        raise CLIError(message)


def _params(pairs):
    out = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise CLIError(f"parameter {pair!r} is not NAME=VALUE")
        name, value = pair.split("=", 1)
        out[name.strip()] = value.strip()
    return out


def _seeds(text):
    try:
        seeds = tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        raise CLIError(f"--seeds takes integers separated by commas, not {text!r}") from None
    if not seeds:
        raise CLIError("--seeds needs at least one seed")
    return seeds


def _unique_blocks():
    from opengse.rtl.catalog import blocks

    seen, out = set(), []
    for spec in blocks().values():
        if spec.name not in seen:
            seen.add(spec.name)
            out.append(spec)
    return out


def cmd_blocks(args):
    for spec in _unique_blocks():
        params = " ".join(f"{k}={v}" for k, v in spec.params.items())
        print(f"{spec.name:16} {spec.module:24} {params}")
        if spec.description:
            print(f"{'':16} {spec.description}")
    return 0


def _bench_regs(seeds):
    """The reference map's AXI4-Lite bank on ECP5 (out of context): Fmax, LUT4, FF."""
    from opengse.platforms.ecp5 import implement
    from opengse.platforms.export import write_export
    from opengse.rtl.regs.bank import AXI4LiteRegisterBank
    from opengse.rtl.regs.blocks import reference_map
    from opengse.sim.runner import BUILD_ROOT

    regmap = reference_map()
    workdir = BUILD_ROOT / "bench" / "regs_bank"
    v_path, _ = write_export(AXI4LiteRegisterBank(regmap), "gse_regs_bank", {}, workdir)
    figures = implement(v_path, "gse_regs_bank", workdir / "ecp5", seeds=seeds)
    figures["registers"] = sum(r.count for _, r in regmap.registers())
    figures["words"] = len(regmap.words())
    return figures


def cmd_regs(args):
    from pathlib import Path
    from opengse.firmware.regs_gen import reference_outputs, write_outputs

    if args.bench:
        _print_figures("regs bank (reference map)", _bench_regs(_seeds(args.seeds)))
        return 0
    if args.check:
        stale = [
            str(rel)
            for rel, text in reference_outputs().items()
            if not (Path(args.output) / rel).exists() or (Path(args.output) / rel).read_text() != text
        ]
        if stale:
            raise CLIError("out of date (run `gse regs`): " + ", ".join(stale))
        print("register map outputs are up to date")
        return 0
    written = write_outputs(args.output)
    for path in written:
        print(f"wrote {path}")
    if not written:
        print("register map outputs are up to date")
    return 0


def _export(spec, params, out_dir, lint):
    from opengse.rtl.catalog import resolve_params
    from opengse.platforms.export import write_export

    try:
        params = resolve_params(spec, params)
        component = spec.build(**params)
    except (ValueError, TypeError, AssertionError) as exc:
        raise CLIError(f"{spec.name}: {exc}") from None
    v_path, j_path = write_export(
        component,
        spec.module,
        params,
        out_dir,
        description=spec.description,
        keep_modules=spec.kept_modules(**params),
    )
    print(f"wrote {v_path} and {j_path}")
    if lint:
        from opengse.platforms.lint import lint as run_lint

        ok, out = run_lint([v_path], spec.module)
        print(f"verilator --lint-only -Wall: {'clean' if ok else 'WARNINGS'}")
        if not ok:
            print(out)
            return 1
    return 0


def _get(name):
    from opengse.rtl.catalog import get_block

    try:
        return get_block(name)
    except KeyError as exc:
        raise CLIError(exc.args[0]) from None


def cmd_export(args):
    if args.all:
        if args.block or args.param:
            raise CLIError(
                "--all exports every block from the configuration: give no BLOCK "
                "and no -p (put parameters in the configuration's [blocks.NAME])"
            )
        from opengse.platforms.export_all import ConfigError, export_all, load_config

        try:
            cfg, overrides = load_config(args.config)
            index = export_all(args.output, cfg, overrides)
        except ConfigError as exc:
            raise CLIError(str(exc)) from None
        if args.lint:
            from pathlib import Path
            from opengse.platforms.lint import lint as run_lint

            out = Path(args.output)
            status = 0
            for m in index["modules"]:
                mems = [
                    out / index["memories"][n]["file"]
                    for n in index["memories"]
                    if m["module"] in index["memories"][n]["used_by"]
                ]
                ok, text = run_lint(mems + [out / m["verilog"]], m["module"])
                print(f"{m['module']}: verilator --lint-only -Wall: {'clean' if ok else 'WARNINGS'}")
                if not ok:
                    print(text)
                    status = 1
            return status
        return 0
    if args.config:
        raise CLIError("-c/--config goes with --all")
    if not args.block:
        raise CLIError("name a BLOCK to export, or give --all")
    return _export(_get(args.block), _params(args.param), args.output, args.lint)


def _bench(spec, seeds, pnr):
    from opengse.sim.benches import bench_for

    found = bench_for(spec.name)
    if found is None:
        return None
    return found[1](seeds=seeds, pnr=pnr)


def _print_figures(name, figures):
    print(f"== {name}")
    for key, value in figures.items():
        if isinstance(value, dict):
            value = json.dumps(value)
        print(f"  {key:28} {value}")


def _pnr_timeout(args):
    import os

    if args.pnr_timeout is not None:
        if args.pnr_timeout < 0:
            raise CLIError("--pnr-timeout takes seconds >= 0 (0: no limit)")
        os.environ["OPENGSE_PNR_TIMEOUT"] = str(args.pnr_timeout)


def cmd_bench(args):
    _pnr_timeout(args)
    spec = _get(args.block)
    figures = _bench(spec, _seeds(args.seeds), not args.no_pnr)
    if figures is None:
        raise CLIError(f"block {spec.name!r} has no benchmark")
    if args.json:
        print(json.dumps(figures))
    else:
        _print_figures(spec.name, figures)
    return 0


def cmd_figures(args):
    from opengse.sim import figures as fg

    try:
        if args.bench_json and not args.update:
            raise CLIError("--bench-json needs --update BLOCK")
        doc = fg.load(args.figures)
        if args.update:
            spec = _get(args.update)
            if args.bench_json:
                with open(args.bench_json) as f:
                    bench = json.load(f)
                seeds = fg.seeds_of(bench)
                source = (
                    f"`gse bench {spec.name} --json"
                    f"{' --seeds ' + ','.join(map(str, seeds)) if seeds else ' --no-pnr'}` "
                    "(its saved output)"
                )
            else:
                _pnr_timeout(args)
                seeds = _seeds(args.seeds)
                bench = _bench(spec, seeds, not args.no_pnr)
                if bench is None:
                    raise CLIError(f"block {spec.name!r} has no benchmark")
                source = (
                    f"`gse bench {spec.name} --json --seeds {','.join(map(str, seeds))}"
                    f"{' --no-pnr' if args.no_pnr else ''}`"
                )
            source += f" at commit {fg.commit_of()}"
            rows = fg.merge(doc, spec.name, bench, source)
            fg.save(args.figures, doc)
            print(f"updated {', '.join(rows)} in {args.figures}")
        if args.write or args.check:
            with open(args.readme) as f:
                readme = f.read()
            new = fg.update_readme(readme, doc)
            if args.check:
                if new != readme:
                    print(
                        f"{args.readme}: the figures table differs from {args.figures}; "
                        "run `gse figures --write`",
                        file=sys.stderr,
                    )
                    return 1
                print(f"{args.readme}: the figures table matches {args.figures}")
            else:
                with open(args.readme, "w") as f:
                    f.write(new)
                print(f"wrote the figures table into {args.readme}")
        elif not args.update:
            print(fg.render_table(doc), end="")
    except (ValueError, KeyError, json.JSONDecodeError) as exc:
        raise CLIError(str(exc).strip("'\"")) from None
    return 0


def cmd_run(args):
    _pnr_timeout(args)
    seeds = _seeds(args.seeds)
    status = 0
    benched = set()
    results = {}
    for spec in _unique_blocks():
        status |= _export(spec, {}, args.output, lint=False)
    for spec in _unique_blocks():
        from opengse.sim.benches import bench_for

        found = bench_for(spec.name)
        if found is None or found[0] in benched:
            continue
        benched.add(found[0])
        figures = _bench(spec, seeds, not args.no_pnr)
        results[spec.name] = figures
        _print_figures(spec.name, figures)
    if args.json:
        print(json.dumps(results))
    return status


def cmd_report(args):
    from opengse.platforms.area import format_area, report_area
    from opengse.platforms.export_all import ConfigError, load_config

    try:
        cfg, overrides = load_config(args.config)
        names = None
        if args.block:
            names = [_get(b).name for b in args.block]
        result = report_area(
            args.output,
            cfg,
            overrides,
            names=names,
            log=(lambda *a: None) if args.json else (lambda msg: print(msg, file=sys.stderr)),
        )
    except ConfigError as exc:
        raise CLIError(str(exc)) from None
    print(json.dumps(result) if args.json else format_area(result))
    return 0


def cmd_formal(args):
    import time
    from opengse.sim.properties import PROPERTIES, run_property
    from opengse.sim.runner import BUILD_ROOT

    for n in args.names:
        if n not in PROPERTIES:
            raise CLIError(f"unknown property {n!r}; properties: " + ", ".join(PROPERTIES))
    names = args.names or list(PROPERTIES)
    # without names or --all: the fast subset runs, the others are listed as skipped
    run = set(names) if (args.names or args.all) else {n for n in names if PROPERTIES[n].fast}
    if args.list:
        for n in names:
            s = PROPERTIES[n].summary()
            tag = "" if s["fast"] else "  (--all)"
            print(f"{n:28} {s['block']:24} {s['mode']:5} depth {s['depth']:3}{tag}: {s['asserts']}")
            print(f"{'':28} assumes: {s['assumptions']}")
            if s["bounded_why"]:
                print(f"{'':28} bounded: {s['bounded_why']}")
        return 0
    rows, status, total = [], 0, time.monotonic()
    for n in names:
        prop = PROPERTIES[n]
        row = prop.summary()
        if n not in run:
            rows.append({**row, "result": "SKIP", "seconds": 0.0})
            continue
        if not args.json:
            print(f"{n}: {prop.mode} depth {prop.depth} ...", file=sys.stderr, flush=True)
        t0 = time.monotonic()
        r = run_property(prop, BUILD_ROOT / "formal" / f"gse-{n}", timeout=args.timeout)
        row = {**row, "result": r.status, "seconds": round(time.monotonic() - t0, 1)}
        if not r.passed:
            status = 1
            row["log"] = str(r.workdir)
            traces = sorted(str(p) for p in r.workdir.rglob("*.vcd"))
            if traces:
                row["trace"] = traces[0]
        rows.append(row)
    if args.json:
        print(json.dumps(rows))
        return status
    for row in rows:
        secs = "" if row["result"] == "SKIP" else f"{row['seconds']:7.1f} s"
        print(
            f"{row['result']:7} {row['name']:28} {row['block']:24} {row['mode']:5} "
            f"depth {row['depth']:3} {secs:>9}  {row['asserts']}"
        )
        print(f"{'':8}assumes: {row['assumptions']}")
        if row["bounded_why"]:
            print(f"{'':8}bounded: {row['bounded_why']}")
        if "log" in row:
            print(f"{'':8}log: {row['log']}" + (f"  trace: {row['trace']}" if "trace" in row else ""))
    ran = [r for r in rows if r["result"] != "SKIP"]
    passed = sum(r["result"] == "PASS" for r in ran)
    skipped = len(rows) - len(ran)
    print(
        f"{passed}/{len(ran)} passed in {time.monotonic() - total:.0f} s"
        + (f"; {skipped} skipped (slow: gse formal --all)" if skipped else "")
    )
    return status


def cmd_fabric(args):
    from opengse.sim.fabric import command

    try:
        return command.run(args)
    except ValueError as exc:
        raise CLIError(str(exc)) from None


def cmd_sim(args):
    from opengse.sim.fabric import sim_command

    try:
        return sim_command.run(args)
    except ValueError as exc:
        raise CLIError(str(exc)) from None


def cmd_build(args):
    from opengse.platforms.boards import BOARDS, TOPS

    if args.board not in BOARDS:
        raise CLIError(f"unknown board {args.board!r}; boards: {', '.join(BOARDS)}")
    if args.top not in TOPS:
        raise CLIError(f"unknown top {args.top!r}; tops: {', '.join(TOPS)}")
    from opengse.platforms.build import BuildError, build

    if args.tries < 1:
        raise CLIError(f"--tries must be at least 1, not {args.tries}")
    options = {}
    if args.core_mhz is not None:
        if args.top != "leaf":
            raise CLIError("--core-mhz is an option of the leaf top (the self-test runs at 125 MHz)")
        options["core_hz"] = args.core_mhz * 1e6
    try:
        result = build(
            args.board,
            args.top,
            seed=args.seed,
            output=args.output,
            tries=args.tries,
            progress=lambda message: print(f"gse: {message}", file=sys.stderr, flush=True),
            **options,
        )
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    except BuildError as exc:
        print(f"gse: error: {exc}", file=sys.stderr)
        return 1
    print("\n".join(result.lines()))
    failed = [row for row in result.timing if not row["pass"]]
    for row in failed:
        print(
            f"gse: error: timing not met: {row['clock']} {row['achieved_mhz']:.1f} MHz "
            f"< {row['constraint_mhz']:.1f} MHz",
            file=sys.stderr,
        )
    return 1 if failed else 0


def build_parser():
    p = _Parser(prog="gse", description="OpenGSE: export, lint and benchmark the GSE switch blocks.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sp = sub.add_parser("blocks", help="list the blocks and their parameters")
    sp.set_defaults(func=cmd_blocks)
    sp = sub.add_parser("export", help="write BLOCK (or --all blocks) as Verilog plus a JSON manifest")
    sp.add_argument("block", nargs="?")
    sp.add_argument(
        "--all",
        action="store_true",
        help="every block, from one configuration (-c), with a file list, an "
        "index and the memories once each (ASIC hand-off)",
    )
    sp.add_argument(
        "-c",
        "--config",
        metavar="TOML",
        help="with --all: the configuration ([gse] sizes, [blocks.NAME] parameters)",
    )
    sp.add_argument(
        "-p", "--param", action="append", metavar="NAME=VALUE", help="set a parameter (repeatable)"
    )
    sp.add_argument("-o", "--output", required=True, metavar="DIR")
    sp.add_argument(
        "--lint", action="store_true", help="also run verilator --lint-only -Wall (needs the test extras)"
    )
    sp.set_defaults(func=cmd_export)
    sp = sub.add_parser("bench", help="benchmark BLOCK: throughput in simulation, Fmax and resources on ECP5")
    sp.add_argument("block")
    sp.add_argument("--json", action="store_true", help="print one JSON object")
    sp.add_argument("--seeds", default="1,2,3", help="nextpnr seeds (median Fmax)")
    sp.add_argument("--no-pnr", action="store_true", help="skip synthesis and place-and-route")
    sp.add_argument(
        "--pnr-timeout",
        type=int,
        default=None,
        metavar="SECONDS",
        help="bound each place-and-route run (default: none)",
    )
    sp.set_defaults(func=cmd_bench)
    sp = sub.add_parser("report", help="reports for ASIC teams: `gse report area`")
    sp.add_argument("what", choices=["area"], help="area: generic gate counts per block")
    sp.add_argument("-c", "--config", metavar="TOML", help="the configuration (as export --all)")
    sp.add_argument(
        "-b",
        "--block",
        action="append",
        metavar="BLOCK",
        help="only this block (repeatable; default: every block)",
    )
    sp.add_argument(
        "-o", "--output", default="build/area", metavar="DIR", help="work folder (default: build/area)"
    )
    sp.add_argument("--json", action="store_true", help="print one JSON object")
    sp.set_defaults(func=cmd_report)
    sp = sub.add_parser(
        "formal",
        help="run the blocks' formal properties (yowasp-sby) and "
        "print each with its result, depth and assumptions",
    )
    sp.add_argument(
        "names", nargs="*", metavar="PROPERTY", help="default: the fast ones (the others are listed, skipped)"
    )
    sp.add_argument("--all", action="store_true", help="run every property, the slow ones too")
    sp.add_argument("--list", action="store_true", help="list them without running")
    sp.add_argument("--json", action="store_true", help="print one JSON list")
    sp.add_argument("--timeout", type=int, default=None, metavar="SECONDS", help="bound each solver run")
    sp.set_defaults(func=cmd_formal)
    sp = sub.add_parser("run", help="the main job: export every block and benchmark each")
    sp.add_argument("-o", "--output", default="build/export", metavar="DIR")
    sp.add_argument(
        "--seeds", default="1", help="nextpnr seeds per block (default: one; `gse bench` takes 1,2,3)"
    )
    sp.add_argument("--no-pnr", action="store_true")
    sp.add_argument(
        "--pnr-timeout",
        type=int,
        default=600,
        metavar="SECONDS",
        help="bound each place-and-route run (default: 600; 0: none)",
    )
    sp.add_argument("--json", action="store_true", help="also print all figures as JSON")
    sp.set_defaults(func=cmd_run)
    sp = sub.add_parser("regs", help="write the register map's docs and C header")
    sp.add_argument(
        "-o",
        "--output",
        default=".",
        metavar="ROOT",
        help="tree to write docs/registers.md and firmware/gse_regs.h into (default: .)",
    )
    sp.add_argument(
        "--check", action="store_true", help="write nothing; fail if the files differ from the description"
    )
    sp.add_argument(
        "--bench", action="store_true", help="instead: the reference map's bank on ECP5 (Fmax, LUT4, FF)"
    )
    sp.add_argument("--seeds", default="1,2,3", help="nextpnr seeds for --bench")
    sp.set_defaults(func=cmd_regs)
    sp = sub.add_parser("figures", help="the README's figures table, generated from docs/figures.json")
    act = sp.add_mutually_exclusive_group()
    act.add_argument("--write", action="store_true", help="rewrite the table in README.md")
    act.add_argument(
        "--check", action="store_true", help="exit 1 if README.md's table differs from the figures file"
    )
    sp.add_argument(
        "--update", metavar="BLOCK", help="run `gse bench BLOCK --json` and store its figures (then --write)"
    )
    sp.add_argument(
        "--bench-json",
        metavar="FILE",
        help="with --update: take the figures from a saved `gse bench BLOCK --json`",
    )
    sp.add_argument("--seeds", default="1,2,3", help="with --update: nextpnr seeds")
    sp.add_argument("--no-pnr", action="store_true", help="with --update: skip place-and-route")
    sp.add_argument("--pnr-timeout", type=int, default=None, metavar="SECONDS")
    sp.add_argument("--figures", default="docs/figures.json", metavar="FILE")
    sp.add_argument("--readme", default="README.md", metavar="FILE")
    sp.set_defaults(func=cmd_figures)
    sp = sub.add_parser("fabric", help="build an L x S fabric, run a pattern in GSE and ECMP mode, report")
    from opengse.sim.fabric.command import add_arguments as fabric_arguments

    fabric_arguments(sp)
    sp.set_defaults(func=cmd_fabric)
    sp = sub.add_parser(
        "sim", help="run frames from pcaps (one per host) through a fabric, write one pcap per host"
    )
    from opengse.sim.fabric.sim_command import add_arguments as sim_arguments

    sim_arguments(sp)
    sp.set_defaults(func=cmd_sim)
    sp = sub.add_parser(
        "build", help="a board top as a bitstream, with timing and resources (docs/boards.md)"
    )
    sp.add_argument("--board", required=True, metavar="NAME", help="colorlight-5a75b or ecpix5-85")
    sp.add_argument("--top", default="selftest", metavar="TOP", help="selftest (default) or leaf")
    sp.add_argument("--seed", type=int, default=1, help="nextpnr seed (default: 1)")
    sp.add_argument(
        "--tries",
        type=int,
        default=3,
        metavar="N",
        help="seeds to try, from --seed up, when nextpnr finds no legal placement (default: 3)",
    )
    sp.add_argument(
        "--core-mhz",
        type=float,
        metavar="MHZ",
        help="the leaf top's core clock (default: the board's, docs/boards.md); a frequency "
        "the PLL makes beside 125 MHz, at least twice the line rate",
    )
    sp.add_argument("-o", "--output", metavar="DIR", help="default: build/boards/BOARD-TOP")
    sp.set_defaults(func=cmd_build)
    return p


def main(argv=None):
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        return args.func(args)
    except CLIError as exc:
        print(f"gse: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except (RuntimeError, OSError) as exc:
        print(f"gse: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
