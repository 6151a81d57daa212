"""``gse``: the OpenGSE command line.

    gse blocks                                   list blocks and their parameters
    gse export BLOCK [-p NAME=VALUE ...] -o DIR  Verilog + JSON manifest
    gse bench BLOCK [--json] [--seeds 1,2,3] [--no-pnr]
    gse run [-o DIR] [--seeds ...] [--no-pnr]    the main job: export and bench every block
    gse figures [--write | --check] [--update BLOCK [--bench-json FILE]]
                                                 the README's figures table from docs/figures.json
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


def _export(spec, params, out_dir, lint):
    from opengse.rtl.catalog import resolve_params
    from opengse.platforms.export import write_export
    try:
        params = resolve_params(spec, params)
        component = spec.build(**params)
    except (ValueError, TypeError, AssertionError) as exc:
        raise CLIError(f"{spec.name}: {exc}") from None
    v_path, j_path = write_export(component, spec.module, params, out_dir,
                                  description=spec.description,
                                  keep_modules=spec.kept_modules(**params))
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
                source = (f"`gse bench {spec.name} --json"
                          f"{' --seeds ' + ','.join(map(str, seeds)) if seeds else ' --no-pnr'}` "
                          "(its saved output)")
            else:
                _pnr_timeout(args)
                seeds = _seeds(args.seeds)
                bench = _bench(spec, seeds, not args.no_pnr)
                if bench is None:
                    raise CLIError(f"block {spec.name!r} has no benchmark")
                source = (f"`gse bench {spec.name} --json --seeds {','.join(map(str, seeds))}"
                          f"{' --no-pnr' if args.no_pnr else ''}`")
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
                    print(f"{args.readme}: the figures table differs from {args.figures}; "
                          "run `gse figures --write`", file=sys.stderr)
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


def build_parser():
    p = _Parser(prog="gse", description="OpenGSE: export, lint and benchmark the GSE switch blocks.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sp = sub.add_parser("blocks", help="list the blocks and their parameters")
    sp.set_defaults(func=cmd_blocks)
    sp = sub.add_parser("export", help="write BLOCK as Verilog plus a JSON manifest")
    sp.add_argument("block")
    sp.add_argument("-p", "--param", action="append", metavar="NAME=VALUE",
                    help="set a parameter (repeatable)")
    sp.add_argument("-o", "--output", required=True, metavar="DIR")
    sp.add_argument("--lint", action="store_true",
                    help="also run verilator --lint-only -Wall (needs the test extras)")
    sp.set_defaults(func=cmd_export)
    sp = sub.add_parser("bench", help="benchmark BLOCK: throughput in simulation, Fmax and "
                                      "resources on ECP5")
    sp.add_argument("block")
    sp.add_argument("--json", action="store_true", help="print one JSON object")
    sp.add_argument("--seeds", default="1,2,3", help="nextpnr seeds (median Fmax)")
    sp.add_argument("--no-pnr", action="store_true", help="skip synthesis and place-and-route")
    sp.add_argument("--pnr-timeout", type=int, default=None, metavar="SECONDS",
                    help="bound each place-and-route run (default: none)")
    sp.set_defaults(func=cmd_bench)
    sp = sub.add_parser("run", help="the main job: export every block and benchmark each")
    sp.add_argument("-o", "--output", default="build/export", metavar="DIR")
    sp.add_argument("--seeds", default="1",
                    help="nextpnr seeds per block (default: one; `gse bench` takes 1,2,3)")
    sp.add_argument("--no-pnr", action="store_true")
    sp.add_argument("--pnr-timeout", type=int, default=600, metavar="SECONDS",
                    help="bound each place-and-route run (default: 600; 0: none)")
    sp.add_argument("--json", action="store_true", help="also print all figures as JSON")
    sp.set_defaults(func=cmd_run)
    sp = sub.add_parser("figures", help="the README's figures table, generated from docs/figures.json")
    act = sp.add_mutually_exclusive_group()
    act.add_argument("--write", action="store_true", help="rewrite the table in README.md")
    act.add_argument("--check", action="store_true",
                     help="exit 1 if README.md's table differs from the figures file")
    sp.add_argument("--update", metavar="BLOCK",
                    help="run `gse bench BLOCK --json` and store its figures (then --write)")
    sp.add_argument("--bench-json", metavar="FILE",
                    help="with --update: take the figures from a saved `gse bench BLOCK --json`")
    sp.add_argument("--seeds", default="1,2,3", help="with --update: nextpnr seeds")
    sp.add_argument("--no-pnr", action="store_true", help="with --update: skip place-and-route")
    sp.add_argument("--pnr-timeout", type=int, default=None, metavar="SECONDS")
    sp.add_argument("--figures", default="docs/figures.json", metavar="FILE")
    sp.add_argument("--readme", default="README.md", metavar="FILE")
    sp.set_defaults(func=cmd_figures)
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
