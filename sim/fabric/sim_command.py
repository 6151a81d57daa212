"""``gse sim``: frames from pcap files through the fabric, one pcap per host out.

``add_arguments`` fills the sub-parser, ``run`` executes it. Bad input (a missing file,
not a capture, a frame the fabric cannot carry, more files than hosts, a bad option)
raises ``ValueError`` with a one-line reason, which the command line prints and exits 2
on. See docs/fabric.md, section ``gse sim``.

Input file k feeds host k (host n is port ``n % H`` of leaf ``n // H``); hosts without
a file stay idle. The frames go in back-to-back from the first clock after the
fabric's configuration, each host starting a frame only while its leaf does not pause
it. Every frame that arrives at host n goes to ``DIR/host<n>.pcap`` (nanosecond pcap,
time = first beat's clock x ``--clock-ns``, clocks counted from the first clock a host
may send). The run ends ``--quiet-cycles`` after the last beat moved at any host port
once every input is sent, or at ``--max-cycles``.
"""

import json
import sys
import time
from pathlib import Path

__all__ = ["add_arguments", "run", "prepare_inputs", "summarise", "format_report"]


def add_arguments(sp):
    sp.add_argument(
        "--pcap-in", nargs="+", required=True, metavar="FILE", help="one capture per host port, host 0 first"
    )
    sp.add_argument("-o", "--output", required=True, metavar="DIR", help="where host<n>.pcap are written")
    sp.add_argument(
        "--map-macs",
        action="store_true",
        help="rewrite the captures' MACs onto the fabric's host MACs 02:00:00:00:00:nn",
    )
    sp.add_argument("--leaves", type=int, default=2, help="L (default 2)")
    sp.add_argument("--spines", type=int, default=2, help="S = uplinks per leaf (default 2)")
    sp.add_argument("--hosts", type=int, default=2, help="host ports per leaf H (default 2)")
    sp.add_argument("--lb", default="gse", help="gse or ecmp (default gse)")
    sp.add_argument("--delay", type=int, default=100, help="link delay in clocks (default 100)")
    sp.add_argument(
        "--max-cycles",
        type=int,
        default=2_000_000,
        metavar="N",
        help="clocks after configuration at most (default 2000000)",
    )
    sp.add_argument(
        "--quiet-cycles",
        type=int,
        default=20_000,
        metavar="N",
        help="end this many clocks after the last beat once all is sent (default 20000)",
    )
    sp.add_argument(
        "--clock-ns",
        type=float,
        default=6.4,
        metavar="NS",
        help="clock period for the output timestamps (default 6.4: 64 bits at 10 Gb/s)",
    )
    sp.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    sp.add_argument("--no-progress", action="store_true", help="no progress bar")


def _check_options(args):
    from .top import FabricShape

    if args.lb not in ("gse", "ecmp"):
        raise ValueError(f"--lb takes gse or ecmp, not {args.lb!r}")
    if not 1 <= args.delay <= 4096:
        raise ValueError("--delay must be 1..4096 clocks")
    if args.max_cycles < 1:
        raise ValueError("--max-cycles must be >= 1")
    if args.quiet_cycles < 1:
        raise ValueError("--quiet-cycles must be >= 1")
    if not args.clock_ns > 0:
        raise ValueError("--clock-ns must be > 0")
    shape = FabricShape(args.leaves, args.spines, args.hosts, args.delay)
    if len(args.pcap_in) > shape.n_hosts:
        raise ValueError(
            f"{len(args.pcap_in)} input captures for {shape.n_hosts} hosts "
            f"({shape.leaves} leaves x {shape.hosts} hosts): at most one per host"
        )
    out = Path(args.output)
    if out.exists() and not out.is_dir():
        raise ValueError(f"-o {out}: exists and is not a folder")
    return shape


def prepare_inputs(paths, n_hosts, *, map_macs=False, max_frame=None):
    """``({host: [frame]}, mac_map)`` from the captures ``paths`` (file k = host k)."""
    from .pcap_io import read_pcap
    from .pcap_run import MAX_FRAME

    frames = {k: read_pcap(p, max_frame or MAX_FRAME) for k, p in enumerate(paths)}
    mapping = {}
    if map_macs:
        from .pcap_io import map_macs as remap

        frames, mapping = remap(frames, n_hosts)
    return frames, mapping


def summarise(shape, lb, frames, mapping, result, checked, exp, build, clock_ns):
    """The run's figures as one dict (what ``--json`` prints)."""
    from .pcap_run import drop_counters

    hosts = []
    for n in range(shape.n_hosts):
        sent = result.sent.get(n, (0, 0, 0))
        c = checked[n]
        hosts.append(
            {
                "host": n,
                "leaf": n // shape.hosts,
                "port": n % shape.hosts,
                "frames_in": sent[0],
                "bytes_in": sent[1],
                "frames_not_sent": sent[2],
                "frames_out": c.frames,
                "bytes_out": c.bytes,
                "expected_out": c.expected,
                "delivered": c.delivered,
                "missing": c.missing,
                "unexpected": c.unexpected,
                "bad": c.bad,
                "reordered": c.reordered,
                "missing_from": {str(k): v for k, v in sorted(c.missing_from.items())},
            }
        )
    total = lambda key: sum(h[key] for h in hosts)  # noqa: E731
    drops = drop_counters(result.counters)
    return {
        "shape": shape.as_dict(),
        "lb": lb,
        "hosts": hosts,
        "frames_in": total("frames_in"),
        "bytes_in": total("bytes_in"),
        "frames_not_sent": total("frames_not_sent"),
        "frames_out": total("frames_out"),
        "bytes_out": total("bytes_out"),
        "expected_out": total("expected_out"),
        "delivered": total("delivered"),
        "missing": total("missing"),
        "unexpected": total("unexpected"),
        "bad": total("bad"),
        "reordered": total("reordered"),
        "not_addressed_to_a_host": exp.unknown_dst,
        "gse_ethertype_from_host": exp.spoofed,
        "switch_drops": sum(drops.values()),
        "switch_drops_by_counter": drops,
        "mac_map": mapping,
        "cycles": result.end,
        "clock_ns": clock_ns,
        "cycles_per_second": result.cycles_per_second,
        "run_seconds": result.seconds,
        "build_seconds": build.seconds,
        "build_cached": build.cached,
    }


def format_report(s, out_dir):
    """The per-host table and the summary lines."""
    rows = [
        (
            "host",
            "leaf:port",
            "MAC",
            "frames in",
            "bytes in",
            "frames out",
            "bytes out",
            "expected",
            "missing",
        )
    ]
    for h in s["hosts"]:
        rows.append(
            (
                str(h["host"]),
                f"{h['leaf']}:{h['port']}",
                f"02:00:00:00:00:{h['host']:02x}",
                str(h["frames_in"]),
                str(h["bytes_in"]),
                str(h["frames_out"]),
                str(h["bytes_out"]),
                str(h["expected_out"]),
                str(h["missing"]),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(c.rjust(w) if i >= 3 else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
        for r in rows
    ]
    us = s["cycles"] * s["clock_ns"] / 1000
    sh = s["shape"]
    lines += [
        "",
        f"fabric: {sh['L']} leaves x {sh['S']} spines x {sh['H']} hosts, {s['lb']}, link delay {sh['delay']}",
        f"sent {s['frames_in']} frames ({s['bytes_in']} bytes) in {s['cycles']} clocks "
        f"({us:.1f} us at {s['clock_ns']} ns)"
        + (f"; {s['frames_not_sent']} NOT SENT (--max-cycles reached)" if s["frames_not_sent"] else ""),
        f"delivered {s['delivered']} of {s['expected_out']} frames addressed to fabric hosts; "
        f"missing {s['missing']}, out of order within a flow {s['reordered']}, "
        f"unexpected {s['unexpected']}, bad {s['bad']}",
    ]
    lost = [
        f"host {src} -> host {h['host']}: {k}" for h in s["hosts"] for src, k in h["missing_from"].items()
    ]
    if lost:
        lines.append("missing frames by source -> destination: " + ", ".join(lost))
    if s["not_addressed_to_a_host"]:
        lines.append(
            f"not addressed to a fabric host: {s['not_addressed_to_a_host']} frames (destination MAC not "
            "02:00:00:00:00:nn, or a group address): dropped by the source leaf at its destination "
            "lookup (use --map-macs to rewrite the captures' MACs)"
        )
    if s["gse_ethertype_from_host"]:
        lines.append(
            f"GSE EtherType from a host: {s['gse_ethertype_from_host']} frames, "
            "dropped by the leaf as spoofed"
        )
    if s["switch_drops"]:
        by = ", ".join(f"{k} {v}" for k, v in s["switch_drops_by_counter"].items())
        lines.append(f"switch drop counters: {s['switch_drops']} ({by})")
    else:
        lines.append("switch drop counters: 0")
    if s["mac_map"]:
        lines.append("MAC map: " + ", ".join(f"{m} -> host {h}" for m, h in s["mac_map"].items()))
    build = "cached" if s["build_cached"] else f"built in {s['build_seconds']:.0f} s"
    lines.append(f"simulated {s['cycles']} clocks at {s['cycles_per_second']:,.0f} clocks/s; model {build}")
    lines.append(f"outputs: {out_dir}/host<n>.pcap (n = 0..{len(s['hosts']) - 1})")
    return "\n".join(lines)


class _Progress:
    def __init__(self, stream=sys.stderr):
        self.stream, self.last = stream, 0.0

    def __call__(self, cycle, total, cps):
        now = time.monotonic()
        if cycle < total and now - self.last < 0.5:
            return
        self.last = now
        self.stream.write(f"\r  sim: clock {cycle:>10,} (limit {total:,})  {cps:>9,.0f} clocks/s")
        self.stream.flush()


def run(args):
    from .pcap_check import compare, expected
    from .pcap_io import write_frames, write_pcap
    from .pcap_run import build_stream_fabric, run_frames

    shape = _check_options(args)
    frames, mapping = prepare_inputs(args.pcap_in, shape.n_hosts, map_macs=args.map_macs)
    out_dir = Path(args.output)
    work = out_dir / ".gse-sim"
    work.mkdir(parents=True, exist_ok=True)
    inputs = {}
    for n, fr in frames.items():
        inputs[n] = work / f"in{n}.bin"
        write_frames(inputs[n], fr)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    model = build_stream_fabric(shape, args.lb, log=log)
    progress = None if args.no_progress else _Progress()
    result = run_frames(
        model,
        shape,
        args.lb,
        inputs,
        work,
        max_cycles=args.max_cycles,
        quiet=args.quiet_cycles,
        progress=progress,
    )
    if progress:
        sys.stderr.write("\n")
    for n in range(shape.n_hosts):
        write_pcap(out_dir / f"host{n}.pcap", result.received.get(n, []), args.clock_ns)
    exp = expected(frames, shape.n_hosts)
    checked = compare(frames, exp, result.received)
    summary = summarise(shape, args.lb, frames, mapping, result, checked, exp, model, args.clock_ns)
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print(format_report(summary, out_dir))
    return 0
