"""``gse fabric``: build the L x S fabric, run a pattern in GSE and/or ECMP mode, report.

``add_arguments`` fills the sub-parser, ``run`` executes it; bad options raise
``ValueError`` with a one-line reason, which the command line prints and exits 2 on.
"""

import json
import sys
import time
from pathlib import Path

__all__ = ["add_arguments", "run", "PATTERNS"]

#: The traffic patterns (issue 14 item 5): the generator tables come from
#: :mod:`opengse.sim.patterns`.
PATTERNS = ("permutation", "inter-leaf", "leaf-shift", "all-to-all", "ring", "incast", "uniform")


def add_arguments(sp):
    sp.add_argument(
        "--pattern", default="permutation", help=f"one of: {', '.join(PATTERNS)} (default permutation)"
    )
    sp.add_argument(
        "--frame-bytes", type=int, default=1500, metavar="N", help="frame size, 60..9000 (default 1500)"
    )
    sp.add_argument(
        "--flows", type=int, default=1, metavar="N", help="flows (queue pairs) per destination (default 1)"
    )
    sp.add_argument(
        "--tenants", type=int, default=1, metavar="N", help="tenants, hosts assigned in turn (default 1)"
    )
    sp.add_argument(
        "--cycles", type=int, default=400_000, metavar="N", help="clocks of traffic (default 400000)"
    )
    sp.add_argument(
        "--warmup",
        type=int,
        default=100_000,
        metavar="N",
        help="clocks left out before the window (default 100000)",
    )
    sp.add_argument(
        "--sample", type=int, default=5_000, metavar="N", help="counter sampling interval (default 5000)"
    )
    sp.add_argument("--lb", default="both", help="gse, ecmp or both (default both)")
    sp.add_argument(
        "--hash-seeds", type=int, default=8, metavar="N", help="ECMP: runs over hash seeds 1..N (default 8)"
    )
    sp.add_argument(
        "--fail-uplink",
        action="append",
        default=[],
        metavar="LEAF:PORT@CYCLE",
        help="fail the uplink of LEAF on PORT at CYCLE (repeatable)",
    )
    sp.add_argument(
        "--control-loss",
        type=float,
        default=0.0,
        metavar="RATE",
        help="fraction of REQUEST/GRANT frames lost",
    )
    sp.add_argument("--leaves", type=int, default=4, help="L (default 4)")
    sp.add_argument("--spines", type=int, default=4, help="S = uplinks per leaf (default 4)")
    sp.add_argument("--hosts", type=int, default=4, help="host ports per leaf H (default 4)")
    sp.add_argument("--delay", type=int, default=100, help="link delay in clocks (default 100)")
    sp.add_argument(
        "--container-bytes",
        type=int,
        default=4096,
        metavar="N",
        help="GSE container (grant) size of the leaves, a power of two (default 4096)",
    )
    sp.add_argument("--json", action="store_true", help="print one JSON object per mode")
    sp.add_argument(
        "--png",
        default="build/fabric/fabric.png",
        metavar="FILE",
        help="the plot (default build/fabric/fabric.png)",
    )
    sp.add_argument("--no-progress", action="store_true", help="no progress bar")
    sp.add_argument(
        "--jobs", type=int, default=2, metavar="N", help="runs of one model at once (ECMP seeds; default 2)"
    )
    sp.add_argument(
        "--record",
        metavar="NAME",
        help="store this run's figures as scenario NAME in the figures file (adds or replaces)",
    )
    sp.add_argument(
        "--from-json",
        metavar="FILE",
        help="with --record: record a saved `gse fabric --json` output instead of running",
    )
    sp.add_argument("--note", default=None, help="with --record: a note kept with the scenario")
    doc = sp.add_mutually_exclusive_group()
    doc.add_argument(
        "--write-doc", action="store_true", help="render the figures file's tables into the doc (no run)"
    )
    doc.add_argument(
        "--check-doc", action="store_true", help="exit 1 if the doc's tables differ from the figures file"
    )
    sp.add_argument("--figures", default="docs/fabric-figures.json", metavar="FILE")
    sp.add_argument("--doc", default="docs/fabric.md", metavar="FILE")


def _modes(text):
    if text == "both":
        return ("gse", "ecmp")
    if text in ("gse", "ecmp"):
        return (text,)
    raise ValueError(f"--lb takes gse, ecmp or both, not {text!r}")


class _Progress:
    """One line on stderr, redrawn: mode, run, a bar, cycles/s."""

    def __init__(self, stream=sys.stderr):
        self.stream = stream
        self.last = 0.0

    def __call__(self, mode, label, cycle, total, cps):
        now = time.monotonic()
        if cycle < total and now - self.last < 0.2:
            return
        self.last = now
        frac = cycle / total if total else 1.0
        bar = "#" * int(30 * frac) + "." * (30 - int(30 * frac))
        tag = f"{mode}{' ' + label if label else ''}"
        self.stream.write(f"\r  {tag:12} [{bar}] {100 * frac:5.1f} %  {cps:>9,.0f} cycles/s")
        if cycle >= total:
            self.stream.write("\n")
        self.stream.flush()


def _doc_tables(args):
    from . import figures as ff

    doc = ff.load(args.figures)
    text = Path(args.doc).read_text()
    new = ff.update_doc(text, doc)
    if args.check_doc:
        if new != text:
            print(f"{args.doc}: the fabric tables differ from {args.figures}; run `gse fabric --write-doc`")
            return 1
        print(f"{args.doc}: the fabric tables match {args.figures}")
        return 0
    Path(args.doc).write_text(new)
    print(f"wrote the fabric tables into {args.doc}")
    return 0


def _record(args, results, command):
    from . import figures as ff

    doc = ff.load(args.figures)
    ff.record(doc, args.record, results, ff.commit_of(), command=command, note=args.note)
    ff.save(args.figures, doc)
    print(f"recorded scenario {args.record} in {args.figures}", file=sys.stderr)


def run(args):
    from .config import RunConfig, parse_fail_uplink
    from .top import FabricShape

    if args.write_doc or args.check_doc:
        if args.record:
            raise ValueError("--write-doc / --check-doc do not run: record first, then render")
        return _doc_tables(args)
    if args.from_json:
        if not args.record:
            raise ValueError("--from-json needs --record NAME")
        from . import figures as ff

        try:
            results = ff.parse_json_lines(Path(args.from_json).read_text())
        except OSError as exc:
            raise ValueError(f"--from-json: {exc.strerror}: {args.from_json}") from None
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"--from-json: {args.from_json} is not `gse fabric --json` output ({exc})"
            ) from None
        _record(args, results, None)
        return 0
    if args.jobs < 1:
        raise ValueError("--jobs must be >= 1")

    if args.pattern not in PATTERNS:
        raise ValueError(f"unknown --pattern {args.pattern!r}; patterns: {', '.join(PATTERNS)}")
    modes = _modes(args.lb)
    if args.hash_seeds < 1:
        raise ValueError("--hash-seeds must be >= 1")
    if args.sample < 100:
        raise ValueError("--sample must be >= 100 clocks")
    if args.delay < 1 or args.delay > 4096:
        raise ValueError("--delay must be 1..4096 clocks")
    shape = FabricShape(
        args.leaves, args.spines, args.hosts, args.delay, container_bytes=args.container_bytes
    )
    run_cfg = RunConfig(
        pattern=args.pattern,
        frame_bytes=args.frame_bytes,
        tenants=args.tenants,
        flows_per_dst=args.flows,
        cycles=args.cycles,
        warmup=args.warmup,
        sample=args.sample,
        fail_uplinks=[parse_fail_uplink(t) for t in args.fail_uplink],
        control_loss=args.control_loss,
    )
    run_cfg.check(shape)
    from .benchmark import run_benchmark
    from .report import format_table, to_json, write_png

    progress = None if args.no_progress else _Progress()

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    results = run_benchmark(
        shape, modes, run_cfg, hash_seeds=args.hash_seeds, progress=progress, log=log, jobs=args.jobs
    )
    png = Path(args.png)
    png.parent.mkdir(parents=True, exist_ok=True)
    write_png(results, png)
    if args.json:
        print(to_json(results))
    else:
        print(format_table(results))
        print(f"plot: {png}")
    if args.record:
        # the command rebuilt from the run's parameters: output-only options (--png,
        # --record, --no-progress, --jobs) are not part of what reproduces the figures
        _record(args, results, None)
    return 0
