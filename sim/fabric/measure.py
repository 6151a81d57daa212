"""From a run's sampled counters to the fabric's figures.

The C++ main prints every counter every ``sample`` clocks; counters are 32-bit and
wrap, so :class:`Counters` unwraps them (a sample interval is far shorter than 2**32
clocks). The measured window starts ``warmup`` clocks after traffic started and ends
with the run; its two halves are measured too, so a report shows the figure is
stable.

Figures of one run (:func:`measure`):

* ``effective_throughput``: original-frame bytes the checkers counted in the window /
  (hosts x bytes per beat x window clocks): the host line capacity;
* ``halves``: the same over each half of the window; ``timeline``: per sample
  interval (throughput over time);
* ``overhead_limit`` (:mod:`.overhead`): from the data and control frames the host
  egress links, uplinks and downlinks carried in the window and the frames the
  checkers took (every figure counted at a frame's end, none per clock); never above 1;
* ``drops``: frames dropped anywhere in the switches (every ``drop`` counter of the
  leaves and spines) plus frames lost on failed links, over the whole run;
  ``refused_beats``: beats a link delivered to a receiver that was not ready (lost;
  a receiver breaking the always-ready contract, must be 0);
  ``drops_by_counter`` names the non-zero ones; the checkers' ``lost``,
  ``reordered``, ``corrupt`` and ``duplicate`` are beside them;
* latency ``p50``/``p99`` from the checkers' histograms (merged);
* ``pause_fraction``: per host, the fraction of window clocks its generator held a
  frame because of pause; ``control_share``: control beats / busy beats on the fabric
  links; ``downlink_util`` and ``uplink_util``: busy fraction of each fabric link;
* ``host_egress_util``: per host, the busy fraction of its leaf-to-host link (an
  incast's egress port);
* ``peak_voq`` / ``peak_reorder``: the largest sampled occupancy, where the leaf
  reports one; ``peak_voq_by_port``: the largest sampled VOQ occupancy (cells) of every
  leaf host port (``leaf<l>.h<p>``), which shows where queues grew.

:func:`tenant_figures` splits the delivered bytes by the sending host's tenant.
"""

import math
import re

from .overhead import TAG_BYTES, measured_limit

__all__ = ["Counters", "measure", "percentile_from_histogram", "tenant_figures"]


class Counters:
    """Unwrapped counter columns of a :class:`~.runner.RunOutput`."""

    def __init__(self, out, address_map):
        self.cycles = [c for c, _ in out.samples]
        self.names = out.names
        width = {s["name"]: s["width"] for s in address_map["stats"]}
        self.index = {n: i for i, n in enumerate(out.names)}
        self._cols = {}
        self._raw = out.samples
        self._width = width

    def is_counter(self, name):
        """A wrapping event counter: a ``stat_`` output of 32 bits or more that is not a
        level (cells, level, occupancy, free)."""
        return (
            ".stat_" in name
            and self._width.get(name, 32) >= 32
            and not re.search(r"(cells|level|occupancy|free)(_\d+)?$", name)
        )

    def has(self, name):
        return name in self.index

    def col(self, name, unwrap=True):
        """The values of ``name`` at every sample (counters unwrapped)."""
        key = (name, unwrap)
        if key not in self._cols:
            i = self.index[name]
            vals = [v[i] for _, v in self._raw]
            if unwrap and self.is_counter(name):
                span = 1 << self._width.get(name, 32)
                out, base, prev = [], 0, 0
                for x in vals:
                    # a wrap drops by more than half the span (a sample interval is far
                    # shorter than 2**31 events); a smaller drop is a counter that went
                    # down (a checker's lost count when a late frame arrives), not a wrap
                    if x < prev and prev - x > span // 2:
                        base += span
                    prev = x
                    out.append(base + x)
                vals = out
            self._cols[key] = vals
        return self._cols[key]

    def match(self, pattern):
        rx = re.compile(pattern)
        return [n for n in self.names if rx.fullmatch(n)]

    def at(self, name, i):
        return self.col(name)[i]

    def delta(self, name, i0, i1):
        c = self.col(name)
        return c[i1] - c[i0]


def percentile_from_histogram(bins, bin_width, q):
    """The q-quantile (0..1) of a latency histogram (``bins[k]`` counts latencies in
    ``[k*bin_width, (k+1)*bin_width)``, the last bin open-ended): the upper edge of the
    bin where the cumulative count reaches q (a conservative read)."""
    total = sum(bins)
    if total == 0:
        return None
    need, acc = q * total, 0
    for k, b in enumerate(bins):
        acc += b
        if acc >= need:
            return (k + 1) * bin_width
    return len(bins) * bin_width


def _sample_index(cycles, cycle):
    """Index of the first sample at or after ``cycle``."""
    for i, c in enumerate(cycles):
        if c >= cycle:
            return i
    return len(cycles) - 1


def _sum(cn, names, i0, i1):
    return sum(cn.delta(n, i0, i1) for n in names)


def measure(cn, shape, start, warmup, roles, *, histogram=None, bytes_per_beat=8):
    """Figures of one run (see the module doc). ``start``: the clock traffic started;
    ``roles``: the counter names of the generator/checker/leaf (:data:`ROLES`)."""
    N, L, S, W = shape.n_hosts, shape.leaves, shape.spines, bytes_per_beat
    i0 = _sample_index(cn.cycles, start + warmup)
    i1 = len(cn.cycles) - 1
    if i1 <= i0 + 1:
        raise ValueError("the measured window holds fewer than two sample intervals: run longer")
    im = (i0 + i1) // 2
    rx_bytes = [f"chk{n}.{roles['chk_bytes']}" for n in range(N)]
    clocks = cn.cycles[i1] - cn.cycles[i0]

    def eff(a, b):
        return _sum(cn, rx_bytes, a, b) / (N * W * (cn.cycles[b] - cn.cycles[a]))

    out = {
        "window_start": cn.cycles[i0] - start,
        "window_clocks": clocks,
        "effective_throughput": eff(i0, i1),
        "halves": [eff(i0, im), eff(im, i1)],
        "per_host": [cn.delta(b, i0, i1) / (W * clocks) for b in rx_bytes],
        "timeline": [
            (cn.cycles[k + 1] - start, eff(k, k + 1))
            for k in range(len(cn.cycles) - 1)
            if cn.cycles[k] >= start
        ],
    }
    # the checkers' bytes per tenant (``stat_tenant_bytes_<t>``), in host-line units
    tenant_cols = sorted({int(m.rsplit("_", 1)[1]) for m in cn.match(r"chk\d+\.stat_tenant_bytes_\d+")})
    out["tenant_delivered"] = [
        sum(
            cn.delta(f"chk{n}.stat_tenant_bytes_{t}", i0, i1)
            for n in range(N)
            if cn.has(f"chk{n}.stat_tenant_bytes_{t}")
        )
        / (W * clocks)
        for t in tenant_cols
    ] or None
    host_dn = [f"host_dn{n}.stat_beats" for n in range(N)]
    out["host_egress_util"] = [cn.delta(b, i0, i1) / clocks if cn.has(b) else None for b in host_dn]
    # -- links: utilisation and the overhead limit
    dn = {(u, l): f"fab_dn{u}_{l}.stat_beats" for u in range(S) for l in range(L)}
    up = {(l, u): f"fab_up{l}_{u}.stat_beats" for l in range(L) for u in range(S)}
    dn = {k: v for k, v in dn.items() if cn.has(v)}
    up = {k: v for k, v in up.items() if cn.has(v)}
    host = [f"host_dn{n}.stat_beats" for n in range(N) if cn.has(f"host_dn{n}.stat_beats")]
    out["downlink_util"] = {f"spine{u}->leaf{l}": cn.delta(n, i0, i1) / clocks for (u, l), n in dn.items()}
    out["uplink_util"] = {f"leaf{l}->spine{u}": cn.delta(n, i0, i1) / clocks for (l, u), n in up.items()}
    delivered = _sum(cn, rx_bytes, i0, i1)
    # -- the overhead limit, from frame counts only (each counted at a frame's end)
    rx_frames = [f"chk{n}.{roles.get('chk_frames', 'stat_good_frames')}" for n in range(N)]
    rx_frames = [n for n in rx_frames if cn.has(n)]
    # PROBEs sent up each uplink come back down the same link (the spine returns them)
    ctl_w = -(-60 // W)
    sent = cn.match(r"leaf\d+\.lm_stat_probes_sent_\d+")
    rcvd = cn.match(r"leaf\d+\.lm_stat_probes_rcvd_\d+")
    probes = {"uplinks": _sum(cn, sent, i0, i1), "downlinks": _sum(cn, rcvd, i0, i1)}
    out["probe_beats"] = {k: v * ctl_w for k, v in probes.items()}
    # control frames down the spines' outputs (PROBEs included); every REQUEST and GRANT
    # went up one uplink to get there
    ctl = [f"spine{u}.stat_ctl_out_{l}" for u in range(S) for l in range(L)]
    ctl_frames = _sum(cn, [c for c in ctl if cn.has(c)], i0, i1)
    req_grant = max(0, ctl_frames - probes["downlinks"])

    def frames(names):
        return _sum(cn, [n.replace("stat_beats", "stat_frames") for n in names], i0, i1)

    classes = {
        "host_links": (len(host), frames(host), 0, 0),
        "uplinks": (
            len(up),
            max(0, frames(up.values()) - req_grant - probes["uplinks"]),
            req_grant,
            TAG_BYTES,
        ),
        "downlinks": (len(dn), max(0, frames(dn.values()) - ctl_frames), req_grant, TAG_BYTES),
    }
    out["overhead_limit"], out["limit_by_links"] = measured_limit(
        classes, N, (_sum(cn, rx_frames, i0, i1), delivered), W
    )
    ctl_beats = ctl_frames * ctl_w
    busy = _sum(cn, dn.values(), i0, i1)
    out["control_share"] = ctl_beats / busy if busy else 0.0
    # -- drops over the whole run
    last = len(cn.cycles) - 1
    drops = {}
    for name in (
        cn.match(r"(leaf|spine)\d+\..*drop.*")
        + cn.match(r"leaf\d+\..*stat_lost")  # reorder: containers skipped as lost
        + cn.match(r"(fab|host)_(up|dn)[\d_]+\.stat_frames_lost")
    ):
        v = cn.at(name, last)
        if v:
            drops[name] = v
    out["drops"] = sum(drops.values())
    out["drops_by_counter"] = drops
    # A receiver that was not ready when a link delivered a beat broke the link contract:
    # that beat is gone. Counted apart (beats, not frames); must stay 0.
    refused = {
        n: cn.at(n, last) for n in cn.match(r"(fab|host)_(up|dn)[\d_]+\.stat_refused") if cn.at(n, last)
    }
    out["refused_beats"] = sum(refused.values())
    out["drops_by_counter"].update(refused)
    spoiled = sum(cn.at(n, last) for n in cn.match(r"loss_(up|dn)[\d_]+\.stat_spoiled"))
    out["control_frames_spoiled"] = spoiled
    for key in ("lost", "reordered", "corrupt", "duplicate", "foreign", "bad"):
        role = roles.get(f"chk_{key}")
        names = [f"chk{n}.{role}" for n in range(N)] if role else []
        out[key] = sum(cn.at(n, last) for n in names if cn.has(n)) if names else None
    # -- latency
    # the checkers' histograms, merged (whole run: warm-up included)
    width = roles.get("chk_hist_bin", 1)
    if histogram and sum(histogram):
        out["p50_latency_cycles"] = percentile_from_histogram(histogram, width, 0.5)
        out["p99_latency_cycles"] = percentile_from_histogram(histogram, width, 0.99)
        out["latency_overflow"] = histogram[-1]
    else:
        out["p50_latency_cycles"] = out["p99_latency_cycles"] = out["latency_overflow"] = None
    # -- pause, occupancy
    paused = roles.get("gen_paused")
    if paused and cn.has(f"gen0.{paused}"):
        out["pause_fraction"] = [cn.delta(f"gen{n}.{paused}", i0, i1) / clocks for n in range(N)]
    else:
        out["pause_fraction"] = None
    for key, rx in (("peak_voq", roles.get("leaf_voq")), ("peak_reorder", roles.get("leaf_reorder"))):
        names = cn.match(rx) if rx else []
        out[key] = max((max(cn.col(n, unwrap=False)) for n in names), default=None)
        if key == "peak_voq":
            by_port = {}
            for n in names:
                port = re.match(r"(leaf\d+\.h\d+)", n)
                k = port.group(1) if port else n
                by_port[k] = max(by_port.get(k, 0), max(cn.col(n, unwrap=False)))
            out["peak_voq_by_port"] = by_port or None
    out["stable"] = abs(out["halves"][0] - out["halves"][1])
    return out


def tenant_figures(per_host, tables, tenants, tenant_delivered=None):
    """Per tenant ``t`` (a host's tenant is ``host % tenants``, as the run configures
    the leaves' ports and the generators): ``throughput``, the bytes delivered from its
    hosts over their line capacity (``per_host`` is each receiver's delivered share of
    its line), ``share`` of all delivered bytes, and ``fair_share``, its hosts' share
    of the sending hosts. ``tables[n]``: host n's destinations (empty: idle).
    ``tenant_delivered[t]``: the checkers' own bytes of tenant t (host-line units),
    used when given; otherwise each receiver's bytes go to its senders' tenant, and the
    result is ``None`` when a receiver gets frames from several tenants. ``None`` too
    when nothing was sent."""
    if tenant_delivered is not None and len(tenant_delivered) >= tenants:
        delivered = list(tenant_delivered[:tenants])
    else:
        senders = {}
        for n, dests in enumerate(tables):
            for d in set(dests):
                senders.setdefault(d, set()).add(n % tenants)
        delivered = [0.0] * tenants
        for d, share in enumerate(per_host):
            if not share:
                continue
            src = senders.get(d, set())
            if len(src) != 1:
                return None
            delivered[src.pop()] += share
    active = [n for n, dests in enumerate(tables) if dests]
    total = sum(delivered)
    if not active or not total:
        return None
    out = []
    for t in range(tenants):
        hosts = sum(1 for n in active if n % tenants == t)
        out.append(
            {
                "tenant": t,
                "hosts": hosts,
                "throughput": delivered[t] / hosts if hosts else None,
                "share": delivered[t] / total,
                "fair_share": hosts / len(active),
            }
        )
    return out


def mean(values):
    vals = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return sum(vals) / len(vals) if vals else None
