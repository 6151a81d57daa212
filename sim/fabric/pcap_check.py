"""What should arrive where, and how what did arrive compares (``gse sim``).

The fabric's destination tables hold host n's MAC ``02:00:00:00:00:nn`` (docs/fabric.md),
so a frame sent by any host is expected at host n when its destination MAC is host n's
and its EtherType is not the GSE EtherType (a host may not send tagged frames: the leaf
drops them as spoofed). Every other frame - an unknown or group (multicast, broadcast)
destination MAC - is dropped by the source leaf at its destination lookup.

:func:`expected` sorts the input frames by that rule; :func:`compare` matches each
host's arrivals against the frames addressed to it (by their bytes) and counts frames
delivered, missing, unexpected (not sent to that host, or altered on the way), bad
(closed with ``tuser``) and out of order within a flow. A flow is (source host, the
frame's flow key): for IPv4 and IPv6 the addresses, the protocol and, for TCP and UDP,
the ports; for anything else the MAC addresses and EtherType.
"""

import struct
from collections import defaultdict, deque
from dataclasses import dataclass, field

from .pcap_io import host_mac_bytes

__all__ = ["GSE_ETHERTYPE", "expected", "compare", "flow_key", "Expectation", "HostResult"]

GSE_ETHERTYPE = 0x88B5


def flow_key(frame):
    """The frame's flow: IP addresses, protocol and TCP/UDP ports where it has them."""
    etype = struct.unpack_from(">H", frame, 12)[0]
    off = 14
    while etype in (0x8100, 0x88A8) and len(frame) >= off + 4:  # VLAN tags
        etype = struct.unpack_from(">H", frame, off + 2)[0]
        off += 4
    if etype == 0x0800 and len(frame) >= off + 20:
        ihl = (frame[off] & 0x0F) * 4
        proto = frame[off + 9]
        key = ("ip4", frame[off + 12 : off + 16], frame[off + 16 : off + 20], proto)
        frag = struct.unpack_from(">H", frame, off + 6)[0] & 0x1FFF
        l4 = off + ihl
        if proto in (6, 17) and not frag and len(frame) >= l4 + 4:
            key += struct.unpack_from(">HH", frame, l4)
        return key
    if etype == 0x86DD and len(frame) >= off + 40:
        proto = frame[off + 6]
        key = ("ip6", frame[off + 8 : off + 24], frame[off + 24 : off + 40], proto)
        l4 = off + 40
        if proto in (6, 17) and len(frame) >= l4 + 4:
            key += struct.unpack_from(">HH", frame, l4)
        return key
    return ("eth", frame[0:6], frame[6:12], etype)


@dataclass
class Expectation:
    """``to_host[d]`` = ``[(src, index)]`` of frames addressed to host d, in each
    source's send order; ``unknown_dst`` / ``spoofed`` count the frames the leaves
    drop at the destination lookup."""

    to_host: dict = field(default_factory=dict)
    unknown_dst: int = 0
    spoofed: int = 0


def expected(frames_by_host, n_hosts):
    """Sort ``{src: [frame]}`` by destination (see the module doc)."""
    macs = {host_mac_bytes(n): n for n in range(n_hosts)}
    exp = Expectation({n: [] for n in range(n_hosts)})
    for src in sorted(frames_by_host):
        for i, fr in enumerate(frames_by_host[src]):
            dst = macs.get(fr[0:6])
            if dst is None:
                exp.unknown_dst += 1
            elif struct.unpack_from(">H", fr, 12)[0] == GSE_ETHERTYPE:
                exp.spoofed += 1
            else:
                exp.to_host[dst].append((src, i))
    return exp


@dataclass
class HostResult:
    """One host's arrivals against what was addressed to it."""

    expected: int = 0
    delivered: int = 0
    missing: int = 0
    unexpected: int = 0
    bad: int = 0
    reordered: int = 0
    frames: int = 0
    bytes: int = 0
    missing_from: dict = field(default_factory=dict)  # {source host: frames missing}


def compare(frames_by_host, exp, arrivals):
    """``{host: HostResult}`` for ``arrivals`` ``{host: [(first, last, flags, bytes)]}``.

    Each arrival is matched to the earliest not yet matched frame with the same bytes
    addressed to that host; a frame of a flow matched after a later frame of the same
    flow counts as reordered."""
    out = {}
    for d, wanted in exp.to_host.items():
        pool = defaultdict(deque)
        for src, i in wanted:
            pool[frames_by_host[src][i]].append((src, i))
        res = HostResult(expected=len(wanted))
        last_of_flow = {}
        for _first, _last, flags, data in arrivals.get(d, []):
            res.frames += 1
            res.bytes += len(data)
            if flags & 1:
                res.bad += 1
            if not pool.get(data):
                res.unexpected += 1
                continue
            src, i = pool[data].popleft()
            res.delivered += 1
            key = (src, flow_key(data))
            if key in last_of_flow and last_of_flow[key] > i:
                res.reordered += 1
            last_of_flow[key] = max(i, last_of_flow.get(key, -1))
        res.missing = res.expected - res.delivered
        for left in pool.values():
            for src, _i in left:
                res.missing_from[src] = res.missing_from.get(src, 0) + 1
        out[d] = res
    return out
