"""The traffic of a fabric run: patterns, the generators' configuration, the checkers'.

A pattern is, for every host, its generator's destination table: flow ``i`` goes to
host ``table[i]``. ``flows_per_dst`` flows (queue pairs) per destination, each with its
own UDP source port drawn by the generator from its seed. The tables depend on the
pattern only (a random pattern uses its own fixed seed), never on the hash seed, so
both modes and every ECMP seed carry the same traffic.

Patterns (issue 14 item 5), for N = L x H hosts, host n on leaf ``n // H``:

* ``permutation``: a random permutation with no fixed point (seed 1);
* ``inter-leaf``: a random permutation in which every host sends to a host of another
  leaf, so all traffic crosses the fabric (the headline case);
* ``leaf-shift``: host (l, p) sends to host (l + 1 mod L, p);
* ``all-to-all``: every host has a flow to every other host, frames in turn;
* ``ring``: ring all-reduce, each host sends to the next of a ring ordered (leaf 0
  port 0, leaf 1 port 0, ..., leaf L-1 port 0, leaf 0 port 1, ...) so every hop
  crosses leaves;
* ``incast``: 8 hosts (N - 1 if fewer) send to host 0, the others are idle (8:1);
* ``uniform``: every frame to a host drawn uniformly among the others (the
  generator's random flow choice over a table of every other host).

The counters the measurement reads are named in :data:`ROLES`.
"""

import random

from opengse.rtl.tb.traffic_gen import RATE_ONE, dst_write_layout

__all__ = [
    "pattern_tables",
    "generator_writes",
    "readouts",
    "ROLES",
    "GEN_FLOWS",
    "CHECKER_PARAMS",
    "ENABLE_AT",
]

#: Flows a generator's table holds (``TrafficGenerator(max_flows=...)``).
GEN_FLOWS = 64
#: The checkers' latency histogram: 1024 bins of 32 clocks (0 .. 32767 clocks).
CHECKER_PARAMS = {"bins": 1024, "bin_shift": 5}
#: Generator configuration writes start here (after the generators' table clear).
GEN_WRITES_AT = 256
#: Traffic starts no earlier than this: the checkers clear their flow state and
#: histogram after reset in max(sources x flows, bins) clocks, and a frame that arrives
#: before is not checked (counted foreign). 16 x 64 = 1024 for the reference fabric.
ENABLE_AT = 4096
INCAST_SOURCES = 8

#: Counter names of the generator, checker and leaf that :func:`.measure.measure` reads.
ROLES = {
    "chk_bytes": "stat_good_bytes",
    "chk_lost": "stat_lost",
    "chk_reordered": "stat_reordered",
    "chk_corrupt": "stat_corrupt",
    "chk_duplicate": "stat_duplicate",
    "chk_foreign": "stat_foreign",
    "chk_bad": "stat_bad",
    "chk_hist_bin": 1 << CHECKER_PARAMS["bin_shift"],
    "gen_paused": "stat_paused",
    # the leaf (config_ports) does not bring its VOQ or reorder occupancy out: not measured
    "leaf_voq": None,
    "leaf_reorder": None,
}


def _derangement(n, rng, ok):
    """A random permutation p of range(n) with ok(i, p[i]) for every i."""
    for _ in range(10000):
        p = list(range(n))
        rng.shuffle(p)
        if all(ok(i, p[i]) for i in range(n)):
            return p
    raise ValueError("no permutation found for this pattern and shape")


def pattern_tables(pattern, shape, flows_per_dst=1):
    """``(tables, random)``: per host, its destination table (a list, empty: idle), and
    whether flows are drawn at random per frame."""
    N, H, L = shape.n_hosts, shape.hosts, shape.leaves
    rng = random.Random(1)
    leaf = [n // H for n in range(N)]
    rand = False
    if pattern == "permutation":
        dst = _derangement(N, rng, lambda i, j: i != j)
        dests = [[d] for d in dst]
    elif pattern == "inter-leaf":
        dst = _derangement(N, rng, lambda i, j: leaf[i] != leaf[j])
        dests = [[d] for d in dst]
    elif pattern == "leaf-shift":
        dests = [[((n // H + 1) % L) * H + n % H] for n in range(N)]
    elif pattern == "all-to-all":
        dests = [[(n + k) % N for k in range(1, N)] for n in range(N)]
    elif pattern == "ring":
        order = [l * H + p for p in range(H) for l in range(L)]
        nxt = {order[k]: order[(k + 1) % N] for k in range(N)}
        dests = [[nxt[n]] for n in range(N)]
    elif pattern == "incast":
        k = min(INCAST_SOURCES, N - 1)
        dests = [[0] if n >= N - k else [] for n in range(N)]
    elif pattern == "uniform":
        dests = [[d for d in range(N) if d != n] for n in range(N)]
        rand = True
    else:
        raise ValueError(f"unknown pattern {pattern!r}")
    tables = [[d for d in ds for _ in range(flows_per_dst)] for ds in dests]
    for t in tables:
        if len(t) > GEN_FLOWS:
            raise ValueError(f"{len(t)} flows per host: the generators hold {GEN_FLOWS}")
    return tables, rand


def _gen_seed(hash_seed, host):
    x = (hash_seed * 0x9E3779B1 + (host + 1) * 0x85EBCA77) & 0xFFFFFFFF
    x ^= x >> 15
    x = (x * 0x2C1B3C6D) & 0xFFFFFFFF
    x ^= x >> 12
    return x or 1


def generator_writes(w, shape, run):
    """Configure every generator and checker (:class:`~.config.Writes` ``w``); the
    generators' ``enable`` last, all in one clock each."""
    tables, rand = pattern_tables(run.pattern, shape, run.flows_per_dst)
    layout = dst_write_layout(GEN_FLOWS)
    at = GEN_WRITES_AT
    for n in range(shape.n_hosts):
        w.put(f"chk{n}.host", n, at)
        g = f"gen{n}"
        for i, d in enumerate(tables[n]):
            w.put_struct(f"{g}.s_dst", layout, {"index": i, "dst": d}, at)
        w.put(f"{g}.host", n, at)
        w.put(f"{g}.frame_min", run.frame_bytes, at)
        w.put(f"{g}.frame_max", run.frame_bytes, at)
        w.put(f"{g}.rate", min(RATE_ONE, int(round(run.rate * RATE_ONE))), at)
        w.put(f"{g}.flows", len(tables[n]), at)
        w.put(f"{g}.random", int(rand), at)
        w.put(f"{g}.tenant", n % run.tenants, at)
        w.put(f"{g}.tc", 0, at)
        w.put(f"{g}.seed", _gen_seed(run.hash_seed, n), at)
    enable_at = max(ENABLE_AT, shape.nodes * GEN_FLOWS, CHECKER_PARAMS["bins"])
    for n in range(shape.n_hosts):
        if tables[n]:
            w.put(f"gen{n}.enable", 1, enable_at)


def readouts(address_map, shape):
    """The run file's read-out line: every checker's latency histogram."""
    stats = [s["name"] for s in address_map["stats"]]
    addr = {c["name"]: c["addr"] for c in address_map["config"]}
    pairs = []
    for n in range(shape.n_hosts):
        pairs += [addr[f"chk{n}.hist_addr"], stats.index(f"chk{n}.hist_data")]
    return f"r {CHECKER_PARAMS['bins']} " + " ".join(map(str, pairs)) + "\n"
