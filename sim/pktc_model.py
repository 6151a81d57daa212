"""Reference models of PKTC (packet container) spraying and reordering, plain Python.

Written from the brief (sections 3 and 4), independently of the gateware: the
header is packed here with ``struct`` from the brief's byte table.

* :func:`pack_gse` / :func:`unpack_gse`: the 18-byte GSE v1 header.
* :func:`tagged_frame`: a GSE-tagged DATA frame of a given original length.
* :class:`SprayerModel`: what the sprayer must stamp into each packet (FIRST/LAST,
  per-destination container ``seq``, ``len``, ``dgsq``, ``ttl``) and which uplink
  round-robin picks; :func:`check_containers_whole` and :func:`spray_balance`.
* :class:`ReorderChecker`: per-source delivery properties of a reorder buffer's
  output (whole containers, strictly increasing ``seq``, no duplicates, contents
  intact, exactly the expected set).
* :class:`ReorderWindowModel`: the reorder buffer's container-level decisions for one
  source in arrival order (window, duplicates, orphans, the timeout skip and the
  ``skip_distance`` overrun skip): what is delivered, skipped and counted.
* :class:`FabricModel`: the emulated fabric between the sprayer and the reorder
  buffer: per-link base delay, per-container jitter, FIFO per link, random loss of
  whole containers, and a link that fails at a given time (everything on it in
  flight or sent later is lost).
"""

import random
import struct
from collections import defaultdict

__all__ = [
    "GSE_ETHERTYPE",
    "DATA",
    "PROBE",
    "FIRST",
    "LAST",
    "CE",
    "pack_gse",
    "unpack_gse",
    "tagged_frame",
    "frame_fields",
    "SprayerModel",
    "check_containers_whole",
    "spray_balance",
    "ReorderChecker",
    "ReorderWindowModel",
    "FabricModel",
]

GSE_ETHERTYPE = 0x88B5
DATA, REQUEST, GRANT, PROBE = 0, 1, 2, 3
FIRST, LAST, CE = 0x01, 0x02, 0x04
_HDR = struct.Struct(">BBHHHBBHHHH")  # brief section 3, 18 bytes


def pack_gse(
    ver=1,
    type=DATA,
    flags=0,
    tc=0,
    tenant=0,
    src_node=0,
    dst_node=0,
    port=0,
    ttl=64,
    seq=0,
    len=0,
    dgsq=0,
    next_type=0,
):
    return _HDR.pack(
        (ver << 4) | type,
        flags,
        (tc << 13) | tenant,
        src_node,
        dst_node,
        port,
        ttl,
        seq,
        len,
        dgsq,
        next_type,
    )


def unpack_gse(b):
    vt, flags, tct, src, dst, port, ttl, seq, ln, dgsq, nt = _HDR.unpack(bytes(b[:18]))
    return {
        "ver": vt >> 4,
        "type": vt & 15,
        "flags": flags,
        "tc": tct >> 13,
        "tenant": tct & 0xFFF,
        "src_node": src,
        "dst_node": dst,
        "port": port,
        "ttl": ttl,
        "seq": seq,
        "len": ln,
        "dgsq": dgsq,
        "next_type": nt,
    }


def frame_fields(frame):
    """GSE header fields of a tagged frame (bytes 14..31)."""
    return unpack_gse(bytes(frame)[14:32])


def tagged_frame(orig_len, rng=None, ethertype=GSE_ETHERTYPE, **fields):
    """A tagged DATA frame whose original frame is ``orig_len`` bytes (>= 14)."""
    rng = rng or random
    payload = bytes(rng.getrandbits(8) for _ in range(orig_len - 14))
    da = bytes([0x02, 0, 0, 0, 0, fields.get("dst_node", 0) & 0xFF])
    sa = bytes([0x02, 0, 0, 0, 1, fields.get("src_node", 0) & 0xFF])
    fields.setdefault("len", orig_len)
    fields.setdefault("next_type", 0x0800)
    return da + sa + ethertype.to_bytes(2, "big") + pack_gse(**fields) + payload


class SprayerModel:
    """Expected header stamps and round-robin uplink choice of the container sprayer.

    ``containers`` are fed in order with :meth:`container`; each call returns the
    expected header fields per packet and the uplink round-robin would choose for
    a static healthy set."""

    def __init__(self, uplinks, nodes=65536):
        self.uplinks, self.nodes = uplinks, nodes
        self.seq = defaultdict(int)  # per dst_node
        self.last_pick = 0

    def rr_pick(self, healthy):
        for k in range(1, self.uplinks + 1):
            cand = (self.last_pick + k) % self.uplinks
            if healthy >> cand & 1:
                self.last_pick = cand
                return cand
        return None

    def container(self, dst_node, dgsq, ttl, lens, in_flags=None):
        """Expected fields of each packet of a container of original lengths ``lens``."""
        key = dst_node % self.nodes  # the seq table has `nodes` entries
        seq = self.seq[key]
        self.seq[key] = (seq + 1) & 0xFFFF
        out = []
        for k, ln in enumerate(lens):
            flags = (FIRST if k == 0 else 0) | (LAST if k == len(lens) - 1 else 0)
            if in_flags is not None:
                flags |= in_flags[k] & CE
            out.append({"flags": flags, "seq": seq, "len": ln, "dgsq": dgsq, "ttl": ttl})
        return out


def check_containers_whole(frames_per_uplink):
    """Every container (by (src, dst, seq)) on exactly one uplink, frames FIRST..LAST in a row.

    ``frames_per_uplink``: list per uplink of received frames (bytes). Returns
    ``{(src, dst, seq): (uplink, [frames])}``."""
    seen = {}
    for up, frames in enumerate(frames_per_uplink):
        cur = None
        for fr in frames:
            f = frame_fields(fr)
            if f["type"] != DATA:
                continue
            key = (f["src_node"], f["dst_node"], f["seq"])
            if f["flags"] & FIRST:
                assert cur is None, f"uplink {up}: container {key} starts inside {cur}"
                assert key not in seen, f"container {key} sent twice (uplinks {seen[key][0]}, {up})"
                cur = key
                seen[key] = (up, [])
            assert cur == key, f"uplink {up}: frame of {key} inside container {cur}"
            seen[key][1].append(fr)
            if f["flags"] & LAST:
                cur = None
        assert cur is None, f"uplink {up}: container {cur} never ended"
    return seen


def spray_balance(frames_per_uplink, healthy_mask=None):
    """max - min data bytes per uplink (over the uplinks in ``healthy_mask``)."""
    totals = []
    for up, frames in enumerate(frames_per_uplink):
        if healthy_mask is not None and not healthy_mask >> up & 1:
            continue
        totals.append(sum(len(fr) for fr in frames if frame_fields(fr)["type"] == DATA))
    return max(totals) - min(totals), totals


class ReorderChecker:
    """Checks a reorder buffer's output stream, frame by frame.

    ``expected[src]`` is the list of ``(seq, [frames])`` that must come out for that
    source, in this order (everything sent whole and intact, minus what was lost)."""

    def __init__(self):
        self.expected = defaultdict(list)
        self.got = defaultdict(list)  # src -> list of (seq, [frames])
        self._cur = None
        self.errors = []

    def expect(self, src, seq, frames):
        self.expected[src].append((seq, [bytes(f) for f in frames]))

    def frame(self, fr):
        fr = bytes(fr)
        if len(fr) < 32:
            self.errors.append(f"a {len(fr)}-byte frame came out")
            return
        f = frame_fields(fr)
        src, seq = f["src_node"], f["seq"]
        if self._cur is None:
            if not f["flags"] & FIRST:
                self.errors.append(f"frame of {src}/{seq} without FIRST outside a container")
                return
            self._cur = (src, seq, [])
        elif (src, seq) != self._cur[:2]:
            self.errors.append(f"frame of {src}/{seq} inside container {self._cur[:2]}")
            return
        self._cur[2].append(fr)
        if f["flags"] & LAST:
            s, q, frames = self._cur
            self._cur = None
            prev = self.got[s][-1][0] if self.got[s] else None
            if prev is not None and ((q - prev) & 0xFFFF) >= 0x8000 or prev == q:
                self.errors.append(f"source {s}: seq {q} after {prev} (order or duplicate)")
            self.got[s].append((q, frames))

    def delivered(self, src):
        return len(self.got[src])

    def check(self):
        errs = list(self.errors)
        if self._cur is not None:
            errs.append(f"container {self._cur[:2]} incomplete at the end")
        for src in set(self.expected) | set(self.got):
            exp = sorted(self.expected[src], key=lambda c: c[0])
            got = self.got[src]
            eseq = [q for q, _ in exp]
            gseq = [q for q, _ in got]
            if eseq != gseq:
                missing = sorted(set(eseq) - set(gseq))
                extra = sorted(set(gseq) - set(eseq))
                errs.append(
                    f"source {src}: delivered {len(gseq)} containers, expected {len(eseq)}; "
                    f"missing {missing[:10]} extra {extra[:10]}; first diff at "
                    f"{next((i for i, (a, b) in enumerate(zip(eseq, gseq)) if a != b), None)}"
                )
                continue
            for (q, ef), (_q, gf) in zip(exp, got):
                if ef != gf:
                    errs.append(f"source {src}: container {q} contents differ")
                    break
        return errs


class ReorderWindowModel:
    """One source's window of a reorder buffer, container by container (no timing).

    Frames are given in the order the buffer decides them (:meth:`frame`); the
    rules (docs/pktc.md, "ReorderBuffer"): d = ``seq`` - next due (mod 2**16); d >=
    2**15 is a duplicate, W <= d < 2**15 out of window; a FIRST frame claims a free
    slot, a later frame of an open container is appended, a FIRST for a claimed slot
    or any frame of a closed container is a duplicate, a non-FIRST for a free slot an
    orphan. Complete heads are delivered in order. With ``skip_distance`` D > 0, a
    FIRST frame in the window with d >= D skips the head at once when the head is
    missing or partial (not closed): counted in ``lost`` and ``lost_overrun``; one
    skip per such frame, never a chain. :meth:`timeout` is the timer's expiry: the
    head is skipped, and the next ones while their slots are empty (nothing of them
    stored) and a later container is stored. ``delivered`` lists the seqs released,
    ``stats`` the counters of this source.
    """

    def __init__(self, window, skip_distance=0, start=0):
        self.W, self.D = window, skip_distance
        self.exp = start
        self.slots = {}  # seq -> "open" | "closed"
        self.delivered = []
        self.stats = defaultdict(int)

    def _dist(self, seq):
        return (seq - self.exp) & 0xFFFF

    def _drain(self):
        while self.slots.get(self.exp) == "closed":
            del self.slots[self.exp]
            self.delivered.append(self.exp)
            self.exp = (self.exp + 1) & 0xFFFF

    def _skip(self, reason):
        self.slots.pop(self.exp, None)
        self.stats["lost"] += 1
        if reason == "overrun":
            self.stats["lost_overrun"] += 1
        self.exp = (self.exp + 1) & 0xFFFF
        self._drain()

    def frame(self, seq, first, last):
        self.stats["frames_in"] += 1
        d = self._dist(seq)
        if d >= 0x8000:
            self.stats["drop_dup"] += 1
            return "dup"
        if d >= self.W:
            self.stats["drop_window"] += 1
            return "window"
        state = self.slots.get(seq)
        if state is None and not first:
            self.stats["drop_orphan"] += 1
            fate = "orphan"
        elif state == "closed" or (state == "open" and first):
            self.stats["drop_dup"] += 1
            fate = "dup"
        else:
            self.slots[seq] = "closed" if last else "open"
            fate = "stored"
        if self.D and first and d >= self.D and self.slots.get(self.exp) != "closed":
            self._skip("overrun")
        self._drain()
        return fate

    def timeout(self):
        """The timer expired: skip the head, then every next head whose slot is empty
        while something later is stored."""
        if not self.slots or self.slots.get(self.exp) == "closed":
            return
        self._skip("timeout")
        while self.slots and self.exp not in self.slots:
            self._skip("timeout")


class FabricModel:
    """Emulated fabric: per-link delay + jitter (FIFO per link), loss, a failing link.

    Times are in clocks. :meth:`send` is called when a frame has fully left the
    sprayer on ``link``; it returns the arrival time at the reorder buffer, or None
    when the frame is lost. Loss is decided per container (all its frames), at its
    FIRST frame; a failed link loses every frame sent at or after the failure
    time, and frames still in flight on it at that time."""

    def __init__(
        self, links, rng, base_delay=(50, 120, 200, 300), jitter=150, loss=0.0, fail_link=None, fail_time=None
    ):
        self.links, self.rng = links, rng
        self.base = [base_delay[i % len(base_delay)] for i in range(links)]
        self.jitter, self.loss = jitter, loss
        self.fail_link, self.fail_time = fail_link, fail_time
        self.last_arrival = [0] * links
        self.cont_jitter = {}
        self.cont_lost = {}
        self.lost_containers = set()  # (src, seq) of containers with any frame lost
        self.in_flight = []  # (arrival, link, key)

    def failed(self, link, now):
        return link == self.fail_link and self.fail_time is not None and now >= self.fail_time

    def send(self, link, now, frame):
        f = frame_fields(frame)
        key = (f["src_node"], f["seq"])
        if f["flags"] & FIRST:
            self.cont_jitter[key] = self.rng.randint(0, self.jitter)
            self.cont_lost[key] = self.rng.random() < self.loss
        if self.cont_lost.get(key) or self.failed(link, now):
            self.lost_containers.add(key)
            return None
        t = max(now + self.base[link] + self.cont_jitter.get(key, 0), self.last_arrival[link] + 1)
        self.last_arrival[link] = t
        if self.fail_link == link and self.fail_time is not None and t >= self.fail_time:
            # still on the wire when the link fails
            self.lost_containers.add(key)
            return None
        return t
