"""Rough register-to-register path depths of a synthesized ECP5 netlist, without
place-and-route.

``python -m opengse.platforms.netlist_depth NETLIST.json [N] [--blocks DEPTH [--min NS]]``
reads the JSON netlist that ``synth_ecp5`` writes (a board build's ``<top>.json``, written minutes before
nextpnr starts; placement and routing of a leaf take far longer) and prints the ``N``
longest paths, one per end register, with the cells on the worst few. Each path runs
from a flip-flop, a block RAM's output or a DSP's output, through LUT4, PFUMX,
L6MUX21, CCU2C (carry chains) and distributed-RAM reads, to a flip-flop, a block
RAM's or a distributed RAM's inputs. Names are the flattened Amaranth hierarchy, so
a path that crosses parts shows it. With ``--blocks DEPTH`` it prints instead the
worst path of each (start block, end block) pair, a block being the first DEPTH
levels of the hierarchy (``leaf.leaf.host_in_0.cls`` is depth 4), down to ``--min``
model ns (default 7.0), with how many end cells each pair has above it: the list of
places to pipeline, a line each.

The delays are guesses (:data:`DELAYS`, nanoseconds, about a -8 part; ``ROUTE`` per
net that leaves a slice): the figures rank paths and show their depth; they are not
nextpnr's timing. Used on the ECPIX-5 leaf (docs/boards.md): the worst path counted
14.5 ns where nextpnr's placement estimate was 13.6 ns.
"""

import json
import re
import sys
from dataclasses import dataclass

__all__ = ["Path", "longest_paths", "block_pairs", "DELAYS", "ROUTE", "main"]

ROUTE = 0.6  #: ns per net between slices
#: ns: clock to output of path starts; LUT-level cell delays
DELAYS = {
    "ff_clk_to_q": 0.4,
    "bram_clk_to_out": 4.3,  # DP16KD without its output register
    "dsp_out": 1.0,
    "lut": 0.25,
    "mux_local": 0.15,  # PFUMX / L6MUX21 from the LUTs of its own slice
    "mux_select": 0.25,
    "carry": 0.06,  # CCU2C CIN -> COUT
    "carry_in_to_sum": 0.25,
    "carry_gen": 0.35,  # CCU2C A/B/C/D -> COUT
    "carry_sum": 0.3,
    "lutram_read": 0.5,  # TRELLIS_DPR16X4 RAD -> DO
    "setup_ff": 0.2,
    "setup_ram": 0.5,
}
_STARTS = {"TRELLIS_FF": "ff_clk_to_q", "DP16KD": "bram_clk_to_out", "MULT18X18D": "dsp_out"}
_ENDS = ("TRELLIS_FF", "DP16KD", "TRELLIS_DPR16X4", "MULT18X18D")


@dataclass
class Path:
    ns: float
    levels: int
    start: str  # the net leaving the start cell
    end: str  # the end cell
    port: str  # its input
    nets: list  # [(arrival ns, cell type, net)] from start to end


def _arc(cell_type, inp, out):
    """(cell delay, net delay before it) of ``inp`` -> ``out``, or None: no path."""
    d = DELAYS
    if cell_type == "LUT4":
        return d["lut"], ROUTE
    if cell_type in ("PFUMX", "L6MUX21"):
        local = inp in ("ALUT", "BLUT", "D0", "D1")
        return (d["mux_local"], 0.0) if local else (d["mux_select"], ROUTE)
    if cell_type == "CCU2C":
        if inp == "CIN":
            return (d["carry"], 0.0) if out == "COUT" else (d["carry_in_to_sum"], 0.0)
        return (d["carry_gen"], ROUTE) if out == "COUT" else (d["carry_sum"], ROUTE)
    if cell_type == "TRELLIS_DPR16X4":
        return (d["lutram_read"], ROUTE) if inp == "RAD" else None
    return None


def longest_paths(netlist, top=None, count=20):
    """The ``count`` longest paths of ``netlist`` (a parsed Yosys JSON), one per end
    cell, longest first."""
    mods = netlist["modules"]
    if top is None:
        tops = [n for n, mod in mods.items() if int(mod.get("attributes", {}).get("top", 0) or 0)]
        top = tops[0] if tops else next(iter(mods))
    mod = mods[top]
    cells = mod["cells"]
    driver = {}
    for name, c in cells.items():
        dirs = c.get("port_directions", {})
        for p, bits in c["connections"].items():
            if dirs.get(p) == "output":
                for b in bits:
                    if isinstance(b, int):
                        driver[b] = (name, p)
    names = {}
    for n, net in mod["netnames"].items():
        for i, b in enumerate(net["bits"]):
            if isinstance(b, int) and (b not in names or n.count("$") < names[b][0].count("$")):
                names[b] = (n, i)
    arrival = {}  # bit -> (ns, previous bit, driving cell)

    def arrive(bit):
        stack, visiting = [bit], set()
        while stack:
            b = stack[-1]
            if b in arrival:
                stack.pop()
                continue
            if b not in driver:
                arrival[b] = (0.0, None, None)
                stack.pop()
                continue
            name, out = driver[b]
            c = cells[name]
            if c["type"] not in ("LUT4", "PFUMX", "L6MUX21", "CCU2C", "TRELLIS_DPR16X4"):
                arrival[b] = (DELAYS[_STARTS.get(c["type"], "ff_clk_to_q")], None, name)
                stack.pop()
                continue
            ins = []
            for inp, bits in c["connections"].items():
                arc = _arc(c["type"], inp, out) if c["port_directions"].get(inp) == "input" else None
                if arc is not None:
                    ins += [(ib, arc) for ib in bits if isinstance(ib, int)]
            pending = [ib for ib, _ in ins if ib not in arrival and ib not in visiting]
            if pending and b not in visiting:
                visiting.add(b)
                stack.extend(pending)
                continue
            best, prev = 0.0, None  # an input still open is on a loop: taken as 0
            for ib, (cell_ns, route_ns) in ins:
                a = (arrival[ib][0] if ib in arrival else 0.0) + route_ns + cell_ns
                if a > best:
                    best, prev = a, ib
            arrival[b] = (best, prev, name)
            visiting.discard(b)
            stack.pop()

    def net(b):
        n = names.get(b)
        return f"{n[0]}[{n[1]}]" if n else str(b)

    ends = []
    for name, c in cells.items():
        if c["type"] not in _ENDS:
            continue
        setup = DELAYS["setup_ff"] if c["type"] == "TRELLIS_FF" else DELAYS["setup_ram"]
        for p, bits in c["connections"].items():
            if c["port_directions"].get(p) != "input" or p.startswith(("CLK", "WCK")) or p == "RAD":
                continue
            for b in bits:
                if isinstance(b, int) and b in driver:
                    arrive(b)
                    a = arrival[b][0]
                    ends.append((a + ROUTE + setup, name, p, b))
    ends.sort(key=lambda e: -e[0])
    out, seen = [], set()
    for ns, name, port, b in ends:
        if name in seen:
            continue
        seen.add(name)
        nets, x = [], b
        while x is not None and x in arrival and arrival[x][2] is not None:
            a, prev, cell = arrival[x]
            nets.append((a, cells[cell]["type"] if cell else "-", net(x)))
            x = prev
        nets.reverse()
        out.append(Path(ns, len(nets) - 1, nets[0][2] if nets else net(b), name, port, nets))
        if len(out) >= count:
            break
    return out


def _block(name, depth):
    """``name``'s first ``depth`` hierarchy levels, without the suffixes synthesis adds
    (``_TRELLIS_FF_Q``, ``_LUT4_Z``, a bit index, ``$signal``)."""
    name = re.sub(r"(_TRELLIS|_LUT4|_PFUMX|_L6MUX|_CCU2C|\[|\$).*", "", name)
    return ".".join(name.split(".")[:depth])


def block_pairs(paths, depth, min_ns=7.0):
    """The worst of ``paths`` (longest first, as :func:`longest_paths` gives them) per
    (start block, end block) pair at or above ``min_ns``: ``[(path, ends)]``, longest
    first, ``ends`` the number of end cells of the pair at or above ``min_ns``."""
    pairs = {}
    for p in paths:
        if p.ns < min_ns:
            break
        key = (_block(p.start, depth), _block(p.end, depth))
        if key in pairs:
            pairs[key][1] += 1
        else:
            pairs[key] = [p, 1]
    return [(p, n) for p, n in pairs.values()]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args, opts = [], {}
    it = iter(argv)
    for a in it:
        if a in ("--blocks", "--min"):
            value = next(it, None)
            try:
                opts[a] = (int if a == "--blocks" else float)(value)
            except (TypeError, ValueError):
                print(f"netlist_depth: {a} needs a number, not {value!r}", file=sys.stderr)
                return 2
        else:
            args.append(a)
    if not args:
        print(__doc__.splitlines()[3].strip(), file=sys.stderr)
        return 2
    try:
        with open(args[0]) as f:
            netlist = json.load(f)
    except (OSError, ValueError) as exc:
        print(f"netlist_depth: cannot read {args[0]}: {exc}", file=sys.stderr)
        return 2
    if "--blocks" in opts:
        paths = longest_paths(netlist, count=1 << 30)
        for p, n in block_pairs(paths, opts["--blocks"], opts.get("--min", 7.0)):
            print(f"{p.ns:6.2f} ns {p.levels:3d} levels {n:5d} ends  {p.start}  ->  {p.end}.{p.port}")
        return 0
    paths = longest_paths(netlist, count=int(args[1]) if len(args) > 1 else 20)
    for i, p in enumerate(paths):
        print(f"{p.ns:6.2f} ns {p.levels:3d} levels  {p.start}  ->  {p.end}.{p.port}")
        if i < 5:
            for a, kind, name in p.nets:
                print(f"          {a:6.2f} {kind:16} {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
