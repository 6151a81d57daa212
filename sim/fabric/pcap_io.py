"""Frames between pcap files and the fabric C++ main's frame files (``gse sim``).

The C++ main (``sim/fabric/main.cpp``, a top with ``hosts="stream"``) reads one *input
frame file* per host and writes one *arrival file* per host:

* input frame file: per frame, ``u32`` length (little-endian), then the frame's bytes
  (DA .. end of payload, no FCS: what a capture holds);
* arrival file: per frame received, ``u64`` first-beat cycle, ``u64`` last-beat cycle,
  ``u32`` length, ``u32`` flags (bit 0: ``tuser`` set on the last beat, a frame closed
  as bad), then the bytes.

:func:`read_pcap` takes an Ethernet capture (pcap or pcapng, as scapy reads them) and
refuses with a :class:`PcapError` (one line) what the fabric cannot carry: a file that
is missing or not a capture, a link type other than Ethernet, a frame cut by the
capture's snap length, a frame shorter than 14 bytes or longer than the leaf's largest
frame. :func:`write_pcap` writes arrivals as a nanosecond pcap: a frame's timestamp is
its first beat's clock (counted from the clock hosts may start sending) times
``clock_ns``. :func:`map_macs` rewrites the captures' MAC addresses onto the fabric's
host MACs ``02:00:00:00:00:nn``.
"""

import struct
from collections import Counter
from pathlib import Path

__all__ = [
    "PcapError",
    "read_pcap",
    "write_pcap",
    "write_frames",
    "read_frames",
    "read_arrivals",
    "write_arrivals",
    "map_macs",
    "host_mac_bytes",
    "mac_text",
    "MIN_FRAME",
    "LINKTYPE_ETHERNET",
]

LINKTYPE_ETHERNET = 1
#: The leaf drops frames shorter than a MAC header (docs/leaf.md: runts).
MIN_FRAME = 14
_ARRIVAL = struct.Struct("<QQII")


class PcapError(ValueError):
    """A capture the fabric cannot take; the message is one line naming the file."""


def host_mac_bytes(n):
    """Host n's MAC on the wire: ``02:00:00:00:00:nn``."""
    return bytes([0x02, 0, 0, 0, 0, n & 0xFF])


def mac_text(mac):
    return ":".join(f"{b:02x}" for b in mac)


def read_pcap(path, max_frame):
    """The frames of the Ethernet capture ``path`` as ``bytes``, in file order."""
    from scapy.error import Scapy_Exception
    from scapy.utils import RawPcapReader

    path = Path(path)
    if not path.exists():
        raise PcapError(f"{path}: no such file")
    if not path.is_file():
        raise PcapError(f"{path}: not a file")
    frames = []
    try:
        reader = RawPcapReader(str(path))
    except (Scapy_Exception, EOFError, OSError, struct.error) as exc:
        raise PcapError(f"{path}: not a pcap or pcapng capture ({_first_line(exc)})") from None
    try:
        linktype = getattr(reader, "linktype", LINKTYPE_ETHERNET)
        if linktype != LINKTYPE_ETHERNET:
            raise PcapError(f"{path}: link type {linktype}, not Ethernet (1)")
        records = iter(reader)
        while True:
            try:
                data, meta = next(records)
            except (StopIteration, EOFError):
                break
            except (Scapy_Exception, struct.error, ValueError, OSError) as exc:
                raise PcapError(f"{path}: frame {len(frames)}: damaged record ({_first_line(exc)})") from None
            k = len(frames)
            lt = getattr(meta, "linktype", LINKTYPE_ETHERNET)
            if lt != LINKTYPE_ETHERNET:
                raise PcapError(f"{path}: frame {k}: link type {lt}, not Ethernet (1)")
            wirelen = getattr(meta, "wirelen", None)
            if wirelen is not None and wirelen > len(data):
                raise PcapError(
                    f"{path}: frame {k}: captured {len(data)} of {wirelen} bytes "
                    "(cut by the snap length, or the file is truncated)"
                )
            if len(data) < MIN_FRAME:
                raise PcapError(f"{path}: frame {k}: {len(data)} bytes, shorter than a MAC header (14)")
            if len(data) > max_frame:
                raise PcapError(
                    f"{path}: frame {k}: {len(data)} bytes, "
                    f"longer than this fabric's largest frame ({max_frame})"
                )
            frames.append(bytes(data))
    finally:
        reader.close()
    return frames


def _first_line(exc):
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def write_frames(path, frames):
    """An input frame file for the C++ main."""
    with open(path, "wb") as f:
        for fr in frames:
            f.write(struct.pack("<I", len(fr)))
            f.write(fr)


def read_frames(path):
    """The frames of an input frame file (the inverse of :func:`write_frames`)."""
    data, out, i = Path(path).read_bytes(), [], 0
    while i < len(data):
        if i + 4 > len(data):
            raise ValueError(f"{path}: truncated length at byte {i}")
        (n,) = struct.unpack_from("<I", data, i)
        i += 4
        if i + n > len(data):
            raise ValueError(f"{path}: truncated frame at byte {i}")
        out.append(data[i : i + n])
        i += n
    return out


def write_arrivals(path, arrivals):
    """An arrival file from ``[(first_cycle, last_cycle, flags, bytes)]`` (the C++
    main writes these; tests use this to make one)."""
    with open(path, "wb") as f:
        for first, last, flags, data in arrivals:
            f.write(_ARRIVAL.pack(first, last, len(data), flags))
            f.write(data)


def read_arrivals(path):
    """``[(first_cycle, last_cycle, flags, bytes)]`` of an arrival file (none if the
    file does not exist: the host received nothing and the main wrote nothing)."""
    path = Path(path)
    if not path.exists():
        return []
    data, out, i = path.read_bytes(), [], 0
    while i < len(data):
        if i + _ARRIVAL.size > len(data):
            raise ValueError(f"{path}: truncated record header at byte {i}")
        first, last, n, flags = _ARRIVAL.unpack_from(data, i)
        i += _ARRIVAL.size
        if i + n > len(data):
            raise ValueError(f"{path}: truncated frame at byte {i}")
        out.append((first, last, flags, data[i : i + n]))
        i += n
    return out


def write_pcap(path, arrivals, clock_ns):
    """A nanosecond Ethernet pcap of ``[(first_cycle, last_cycle, flags, bytes)]``:
    each frame stamped ``first_cycle x clock_ns`` (cycles from the start of traffic)."""
    from scapy.utils import RawPcapWriter

    w = RawPcapWriter(str(path), linktype=LINKTYPE_ETHERNET, nano=True, snaplen=65535)
    try:
        w.write_header(None)  # before the first frame; an empty capture is still a pcap
        for first, _last, _flags, data in arrivals:
            ns = int(round(first * clock_ns))
            w.write_packet(data, sec=ns // 1_000_000_000, usec=ns % 1_000_000_000, wirelen=len(data))
    finally:
        w.close()


def map_macs(frames_by_host, n_hosts):
    """Rewrite captured MACs onto the fabric's host MACs. ``frames_by_host`` is
    ``{host: [frame]}``; returns ``(new frames_by_host, {old MAC: host})``.

    1. Each input file's most frequent unicast source MAC is its own host's: the file
       fed to host n maps its sender onto host n (unless that MAC is already mapped).
    2. Every other distinct unicast destination MAC, in order of first appearance
       (hosts in order, frames in order), takes the lowest host not yet used.

    Destination and source MACs are both rewritten where mapped; group (multicast,
    broadcast) addresses are left as they are, and the leaf drops those frames (no
    destination-table entry). More distinct MACs than hosts is a :class:`PcapError`.
    """
    mapping = {}
    for n in sorted(frames_by_host):
        srcs = Counter(fr[6:12] for fr in frames_by_host[n] if not fr[6] & 1)
        if srcs:
            mac = srcs.most_common(1)[0][0]
            if mac not in mapping and n not in mapping.values():
                mapping[mac] = n
    free = iter([n for n in range(n_hosts) if n not in mapping.values()])
    for n in sorted(frames_by_host):
        for fr in frames_by_host[n]:
            dst = fr[0:6]
            if dst[0] & 1 or dst in mapping:
                continue
            host = next(free, None)
            if host is None:
                raise PcapError(
                    f"--map-macs: the captures address more than {n_hosts} distinct unicast MACs "
                    f"(the fabric has {n_hosts} hosts)"
                )
            mapping[dst] = host
    new = {mac: host_mac_bytes(h) for mac, h in mapping.items()}
    out = {}
    for n, frames in frames_by_host.items():
        out[n] = [new.get(fr[0:6], fr[0:6]) + new.get(fr[6:12], fr[6:12]) + fr[12:] for fr in frames]
    return out, {mac_text(m): h for m, h in mapping.items()}
