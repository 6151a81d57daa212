"""Random Ethernet frames for tests and benchmarks, built with scapy."""

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

__all__ = ["SIZE_CLASSES", "random_frame", "frame_sizes", "random_tag_fields"]

#: Frame sizes (bytes, no FCS) that exercise every beat alignment and size class.
SIZE_CLASSES = (
    60,
    61,
    62,
    63,
    64,
    65,
    66,
    71,
    72,
    127,
    128,
    129,
    256,
    511,
    512,
    513,
    1000,
    1500,
    1514,
    1518,
    2048,
    4000,
    4096,
    8192,
    9000,
    9018,
)


def frame_sizes(rng, count, max_size=9018, big_share=0.1):
    """``count`` sizes: every size class up to ``max_size`` first, then random ones,
    mostly small, ``big_share`` of them large."""
    classes = [s for s in SIZE_CLASSES if s <= max_size]
    sizes = list(classes[:count])
    while len(sizes) < count:
        if rng.random() < big_share:
            sizes.append(rng.randint(1500, max_size))
        else:
            sizes.append(rng.randint(60, min(600, max_size)))
    rng.shuffle(sizes)
    return sizes


def random_frame(rng, size, ethertype=None):
    """A frame of exactly ``size`` bytes (>= 14): IPv4/UDP when it fits, else raw."""
    dst = "02:%02x:%02x:%02x:%02x:%02x" % tuple(rng.randrange(256) for _ in range(5))
    src = "02:%02x:%02x:%02x:%02x:%02x" % tuple(rng.randrange(256) for _ in range(5))
    if ethertype is None and size >= 14 + 28:
        pkt = (
            Ether(dst=dst, src=src)
            / IP(src="10.0.0.%d" % rng.randrange(1, 255), dst="10.0.1.%d" % rng.randrange(1, 255))
            / UDP(sport=rng.randrange(1024, 65535), dport=4791)
        )
        pad = size - len(pkt)
        pkt = pkt / Raw(bytes(rng.randrange(256) for _ in range(pad)))
    else:
        et = ethertype if ethertype is not None else rng.choice([0x0800, 0x86DD, 0x0806, 0x8915])
        pkt = Ether(dst=dst, src=src, type=et) / Raw(
            bytes(rng.randrange(256) for _ in range(max(0, size - 14)))
        )
    raw = bytes(pkt)[:size]
    assert len(raw) == size
    return raw


def random_tag_fields(rng, frame_len, types=(0, 0, 0, 1, 2, 3), flag_bits=3):
    """Random header fields for the tagger's side channel (``len`` = ``frame_len``),
    ``type`` drawn from ``types``; for control frames e.g. ``types=(1, 2)``,
    ``flag_bits=8``."""
    r = rng
    return {
        "type": r.choice(types),
        "flags": r.randrange(1 << flag_bits),
        "tc": r.randrange(8),
        "tenant": r.randrange(4096),
        "src_node": r.randrange(65536),
        "dst_node": r.randrange(65536),
        "port": r.randrange(256),
        "ttl": r.randrange(1, 256),
        "seq": r.randrange(65536),
        "len": frame_len,
        "dgsq": r.randrange(65536),
    }
