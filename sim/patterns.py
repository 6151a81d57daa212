"""Traffic patterns of issue 14 item 5 as traffic generator tables.

A fabric of ``leaves`` leaves with ``hosts_per_leaf`` host ports each has ``N = leaves *
hosts_per_leaf`` hosts; host port ``p`` of leaf ``l`` is host (node) ``l * H + p``.
:func:`pattern_tables` turns a pattern name and that shape into one :class:`HostTraffic`
per host: the destination table (flow -> destination host) to write into its
:class:`~opengse.rtl.tb.traffic_gen.TrafficGenerator`, whether flows are picked in turn
or at random, and whether the host sends at all. Every destination gets
``flows_per_dst`` flows (queue pairs), each with its own UDP source port.

Patterns (:data:`PATTERNS`):

``permutation``   a random permutation, nobody sends to itself;
``inter_leaf``    a random permutation in which every host sends to a host on another
                  leaf, so all traffic crosses the fabric (the headline case);
``leaf_shift``    host ``(l, p)`` sends to ``(l + shift, p)``;
``all_to_all``    every host sends to every other host, one frame each in turn (each
                  host starts its round at the next host, so destinations are spread);
``ring``          ring all-reduce: each host sends to its successor in a ring ordered
                  port-major, ``(0,0) (1,0) .. (L-1,0) (0,1) ..``, so every hop crosses
                  leaves;
``incast``        ``incast`` senders (default 8, on other leaves first) send to host 0;
                  the other hosts are idle;
``uniform``       every frame to a destination drawn uniformly among the other hosts.
"""

import random
from dataclasses import dataclass

__all__ = ["PATTERNS", "HostTraffic", "pattern_tables", "host_of", "leaf_of"]

PATTERNS = ("permutation", "inter_leaf", "leaf_shift", "all_to_all", "ring", "incast", "uniform")


@dataclass
class HostTraffic:
    host: int
    table: list  # flow -> destination host; empty: the host does not send
    random: bool = False  # False: flows in turn; True: a flow per frame at random

    @property
    def enabled(self):
        return bool(self.table)


def host_of(leaf, port, hosts_per_leaf):
    return leaf * hosts_per_leaf + port


def leaf_of(host, hosts_per_leaf):
    return host // hosts_per_leaf


def _derangement(rng, n, ok):
    """A random permutation ``d`` of ``range(n)`` with ``ok(i, d[i])`` for every ``i``
    (rejection sampling), or ``None``."""
    for _ in range(20000):
        d = list(range(n))
        rng.shuffle(d)
        if all(ok(i, j) for i, j in enumerate(d)):
            return d
    return None


def pattern_tables(pattern, leaves=4, hosts_per_leaf=4, *, seed=1, flows_per_dst=1, shift=1, incast=8):
    """One :class:`HostTraffic` per host (index = host id) for ``pattern``."""
    L, H = leaves, hosts_per_leaf
    n = L * H
    if pattern not in PATTERNS:
        raise ValueError(f"unknown pattern {pattern!r}; known: {', '.join(PATTERNS)}")
    if L < 1 or H < 1 or n < 2:
        raise ValueError("a fabric needs at least two hosts")
    if n > 256:
        raise ValueError("at most 256 hosts (one byte of host id)")
    if flows_per_dst < 1:
        raise ValueError("flows_per_dst must be at least 1")
    rng = random.Random(seed)
    dsts = [[] for _ in range(n)]
    rand = False
    if pattern == "permutation":
        d = _derangement(rng, n, lambda i, j: i != j)
        dsts = [[d[h]] for h in range(n)]
    elif pattern == "inter_leaf":
        if L < 2:
            raise ValueError("inter_leaf needs at least two leaves")
        d = _derangement(rng, n, lambda i, j: leaf_of(i, H) != leaf_of(j, H))
        if d is None:  # a leaf derangement with a port permutation per leaf always works
            lp = _derangement(rng, L, lambda i, j: i != j)
            ports = [rng.sample(range(H), H) for _ in range(L)]
            d = [host_of(lp[leaf_of(h, H)], ports[leaf_of(h, H)][h % H], H) for h in range(n)]
        dsts = [[d[h]] for h in range(n)]
    elif pattern == "leaf_shift":
        if L < 2 or shift % L == 0:
            raise ValueError(
                "leaf_shift needs at least two leaves and a shift that is not a multiple of them"
            )
        dsts = [[host_of((leaf_of(h, H) + shift) % L, h % H, H)] for h in range(n)]
    elif pattern == "all_to_all":
        dsts = [[(h + k) % n for k in range(1, n)] for h in range(n)]
    elif pattern == "ring":
        order = [host_of(l, p, H) for p in range(H) for l in range(L)]
        nxt = {order[i]: order[(i + 1) % n] for i in range(n)}
        dsts = [[nxt[h]] for h in range(n)]
    elif pattern == "incast":
        if not 1 <= incast < n:
            raise ValueError(f"incast needs 1..{n - 1} senders")
        others = sorted(range(1, n), key=lambda h: (leaf_of(h, H) == 0, h))
        for h in others[:incast]:
            dsts[h] = [0]
    elif pattern == "uniform":
        dsts = [[j for j in range(n) if j != h] for h in range(n)]
        rand = True
    out = []
    for h in range(n):
        table = [d for d in dsts[h] for _ in range(flows_per_dst)]
        if len(table) > 256:
            raise ValueError(f"host {h}: {len(table)} flows, more than a generator holds (256)")
        out.append(HostTraffic(h, table, rand))
    return out
