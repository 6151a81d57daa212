"""Reference model of the traffic generator and checker frames (rtl/tb/), in plain Python.

What a :class:`~opengse.rtl.tb.traffic_gen.TrafficGenerator` with a given configuration
sends: the sequence of (flow, destination, seq, size) it picks, and every byte of each
frame, built with scapy (Ethernet II / IPv4 / UDP to port 4791, RoCEv2's) from the
frame format below (the gateware's contract, from rtl/tb/traffic_gen.py's docstring,
re-implemented here without importing the RTL). The send timestamp is the one field
the model cannot know (it is the clock the frame went out), so :func:`frame_bytes` takes it as an argument and
:func:`parse_frame` reads it back.

The frame format (byte map, big-endian fields, check word, filler) is the table in
rtl/tb/traffic_gen.py's docstring; this module is written from that table.
"""

from dataclasses import dataclass, field

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

__all__ = [
    "HEADER_BYTES",
    "MIN_FRAME",
    "MAX_FRAME",
    "ROCE_PORT",
    "CHECK_KEY",
    "GenConfig",
    "xorshift32",
    "udp_sport",
    "clamp_sizes",
    "generator_frames",
    "frame_bytes",
    "parse_frame",
    "check_word",
    "CheckerModel",
    "hist_percentile",
]

HEADER_BYTES = 60  # DA .. check: the fixed part; filler follows
MIN_FRAME, MAX_FRAME = 60, 9000
ROCE_PORT = 4791
CHECK_KEY = 0xA55A
SEED_ZERO = 0x6D2B79F5  # the xorshift state used when the seed is 0 (a fixed point)
M32 = 0xFFFFFFFF


@dataclass
class GenConfig:
    """A generator's configuration (its input ports)."""

    host: int
    table: list  # flow -> destination host (the dst table; flows = len(table))
    frame_min: int = 1500
    frame_max: int = None  # None: = frame_min (fixed size)
    random: bool = False  # False: flows in turn; True: a flow per frame by LFSR
    tenant: int = 0
    tc: int = 0
    seed: int = 1
    flows: int = None  # None: len(table)
    extra: dict = field(default_factory=dict)

    @property
    def n_flows(self):
        return len(self.table) if self.flows is None else self.flows


def xorshift32(x):
    """The generator's random number generator, one step."""
    x ^= (x << 13) & M32
    x ^= x >> 17
    x ^= (x << 5) & M32
    return x


def udp_sport(seed, host, flow):
    """UDP source port of (host, flow) for a seed: a non-linear (add-shift-xor) mix, so
    that a seed moves every flow's port differently, as RoCEv2 NICs draw one per queue
    pair; always in 49152..65535."""
    k = ((host & 0xFF) << 8) | (flow & 0xFF)
    x = (seed ^ (k << 16) ^ k) & M32
    x = (x + (x << 10)) & M32
    x ^= x >> 6
    x = (x + (x << 3)) & M32
    x ^= x >> 11
    x = (x + (x << 15)) & M32
    return 0xC000 | ((x >> 16) & 0x3FFF)


def clamp_sizes(frame_min, frame_max):
    """The size range the generator really uses: both ends clamped to 60..9000, an empty
    range (max < min) taken as min only."""
    lo = min(max(frame_min, MIN_FRAME), MAX_FRAME)
    hi = lo if frame_max is None else min(max(frame_max, MIN_FRAME), MAX_FRAME)
    return lo, max(hi, lo)


def generator_frames(cfg, count):
    """The first ``count`` frames of a generator: a list of dicts ``flow, dst, seq,
    size``, in the order it sends them (independent of timing, pause and rate)."""
    flows = cfg.n_flows
    if flows <= 0:
        return []
    lo, hi = clamp_sizes(cfg.frame_min, cfg.frame_max)
    span = hi - lo + 1
    r = cfg.seed & M32 or SEED_ZERO
    seqs = [0] * flows
    out, rr = [], 0
    for _ in range(count):
        if cfg.random:
            f = ((r >> 16) * flows) >> 16
        else:
            f = rr
            rr = 0 if rr + 1 >= flows else rr + 1
        size = lo + (((r & 0xFFFF) * span) >> 16)
        r = xorshift32(r)
        out.append({"flow": f, "dst": cfg.table[f] & 0xFF, "seq": seqs[f], "size": size})
        seqs[f] = (seqs[f] + 1) & M32
    return out


def check_word(src, flow, seq, ts, tenant_word, dst, length):
    """The 16-bit check of bytes 58-59."""
    c = CHECK_KEY ^ length
    for w in (src, flow, seq >> 16, seq, ts >> 16, ts, tenant_word, dst):
        c ^= w & 0xFFFF
    return c


def frame_bytes(cfg, frame, ts):
    """Bytes (no FCS) of one generator frame (a dict of :func:`generator_frames`) sent at
    clock ``ts``, built with scapy."""
    src, dst, seq, size = cfg.host & 0xFF, frame["dst"], frame["seq"], frame["size"]
    tenant_word = ((cfg.tc & 7) << 13) | (cfg.tenant & 0xFFF)
    fields = b"".join(
        v.to_bytes(n, "big")
        for v, n in (
            (src, 2),
            (frame["flow"], 2),
            (seq, 4),
            (ts & M32, 4),
            (tenant_word, 2),
            (dst, 2),
            (check_word(src, frame["flow"], seq, ts & M32, tenant_word, dst, size), 2),
        )
    )
    filler = bytes((i + seq) & 0xFF for i in range(HEADER_BYTES, size))
    pkt = (
        Ether(dst=f"02:00:00:00:00:{dst:02x}", src=f"02:00:00:00:00:{src:02x}", type=0x0800)
        / IP(src=f"10.0.0.{src}", dst=f"10.0.0.{dst}", tos=(cfg.tc & 7) << 5, id=0, flags="DF", ttl=64)
        / UDP(sport=udp_sport(cfg.seed, src, frame["flow"]), dport=ROCE_PORT, chksum=0)
        / Raw(fields + filler)
    )
    raw = bytes(pkt)
    assert len(raw) == size, (len(raw), size)
    return raw


def parse_frame(raw):
    """The generator fields of a frame (scapy dissection), or ``None`` when it is not an
    IPv4/UDP frame to port 4791 of at least 60 bytes. Adds ``check_ok`` and
    ``filler_ok``."""
    if len(raw) < HEADER_BYTES:
        return None
    pkt = Ether(raw)
    if IP not in pkt or UDP not in pkt or pkt[UDP].dport != ROCE_PORT:
        return None
    body = bytes(pkt[UDP].payload)
    g = lambda a, n: int.from_bytes(body[a : a + n], "big")  # noqa: E731
    out = {
        "src": g(0, 2),
        "flow": g(2, 2),
        "seq": g(4, 4),
        "ts": g(8, 4),
        "tenant_word": g(12, 2),
        "dst": g(14, 2),
        "check": g(16, 2),
        "sport": pkt[UDP].sport,
        "ip_src": pkt[IP].src,
        "ip_dst": pkt[IP].dst,
        "tos": pkt[IP].tos,
        "size": len(raw),
    }
    out["check_ok"] = out["check"] == check_word(
        out["src"], out["flow"], out["seq"], out["ts"], out["tenant_word"], out["dst"], len(raw)
    )
    out["filler_ok"] = all(raw[i] == (i + out["seq"]) & 0xFF for i in range(HEADER_BYTES, len(raw)))
    return out


#: Seqs behind a flow's newest that the checker remembers.
CHECK_WINDOW = 32


class CheckerModel:
    """What a TrafficChecker counts for a sequence of received frames (plain Python, from
    its contract: one outcome per frame, a flow's state = the next expected seq and the
    set of seqs received among the :data:`CHECK_WINDOW` before it)."""

    def __init__(self, host, sources=16, flows=64, tenants=16, bins=128, bin_shift=5):
        self.host, self.sources, self.flows = host, sources, flows
        self.tenants, self.bins, self.bin_shift = tenants, bins, bin_shift
        self.state = {}  # (src, flow) -> [next, set of recent seqs]
        self.c = dict.fromkeys(
            "frames bytes good_frames good_bytes lost reordered duplicate late corrupt bad "
            "foreign lat_sum lat_max".split(),
            0,
        )
        self.tenant_bytes = [0] * tenants
        self.hist = [0] * bins

    def receive(self, raw, bad=False, arrival=None):
        """One frame (bytes as received, ``bad`` = tuser set on its last beat, ``arrival`` =
        the clock its first beat arrived); returns its outcome."""
        c = self.c
        c["frames"] += 1
        c["bytes"] += len(raw)
        if bad:
            c["bad"] += 1
            return "bad"
        p = parse_frame(raw) if len(raw) >= HEADER_BYTES else None
        mine = (
            p is not None
            and raw[:6] == bytes([2, 0, 0, 0, 0, self.host])
            and raw[14] == 0x45
            and p["dst"] == self.host
            and p["src"] < self.sources
            and p["flow"] < self.flows
        )
        if not mine:
            c["foreign"] += 1
            return "foreign"
        if not (p["check_ok"] and p["filler_ok"]):
            c["corrupt"] += 1
            return "corrupt"
        fresh = [0, {-k & M32 for k in range(1, CHECK_WINDOW + 1)}]  # as after the reset sweep
        nxt, recent = self.state.setdefault((p["src"], p["flow"]), fresh)
        seq = p["seq"]
        d = (seq - nxt) & M32
        if d < 1 << 31:  # in order, or after a gap
            c["lost"] += d
            recent.add(seq)
            recent = {s for s in recent if (seq - s) & M32 < CHECK_WINDOW}
            self.state[(p["src"], p["flow"])] = [(seq + 1) & M32, recent]
            outcome = "good"
        elif (nxt - 1 - seq) & M32 >= CHECK_WINDOW:
            c["late"] += 1
            return "late"
        elif seq in recent:
            c["duplicate"] += 1
            return "duplicate"
        else:
            recent.add(seq)
            c["reordered"] += 1
            c["lost"] -= 1
            outcome = "good"
        c["good_frames"] += 1
        c["good_bytes"] += len(raw)
        self.tenant_bytes[(p["tenant_word"] & 0xFFF) % self.tenants] += len(raw)
        if arrival is not None:
            lat = (arrival - p["ts"]) & M32
            c["lat_sum"] += lat
            c["lat_max"] = max(c["lat_max"], lat)
            self.hist[min(lat >> self.bin_shift, self.bins - 1)] += 1
        return outcome


def hist_percentile(hist, bin_shift, q):
    """The latency (clocks) at quantile ``q`` (0..1) of a checker's histogram (bin
    counts, ``2**bin_shift`` clocks each): the upper edge of the bin the ``q``-th frame
    falls in, ``None`` for an empty histogram. A quantile in the last bin (the overflow)
    is only known to be at least its lower edge; that edge is returned."""
    total = sum(hist)
    if not total:
        return None
    need, acc = q * total, 0
    for b, count in enumerate(hist):
        acc += count
        if acc >= need and count:
            return (b << bin_shift) if b == len(hist) - 1 else ((b + 1) << bin_shift)
    return (len(hist) - 1) << bin_shift
