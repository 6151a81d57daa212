"""Reference model of the ECMP baseline's uplink choice (rtl/pktc/ecmp_selector.py),
written from docs/ecmp.md in plain Python: frame bytes in, uplink index out.

The CRC is computed bit by bit here (no table, nothing shared with the gateware), and
``tests/pktc`` checks it against zlib's ``crc32`` once.
"""

__all__ = ["flow_key", "crc32_reflected", "ecmp_hash", "ecmp_uplink", "GSE_ETHERTYPE"]

GSE_ETHERTYPE = 0x88B5
_POLY = 0x04C11DB7  # CRC-32 (IEEE 802.3), normal form; reflected below


def _reflect(value, bits):
    return int(f"{value:0{bits}b}"[::-1], 2)


def crc32_reflected(data, start):
    """CRC-32 of ``data``, LSB-first bit order, register started at ``start``, no final
    inversion."""
    poly = _reflect(_POLY, 32)
    crc = start & 0xFFFFFFFF
    for byte in data:
        for j in range(8):
            bit = (byte >> j) & 1
            feedback = (crc ^ bit) & 1
            crc >>= 1
            if feedback:
                crc ^= poly
    return crc


def flow_key(frame, ethertype=GSE_ETHERTYPE):
    """``(key bytes, is_ip)``: (src IP, dst IP, proto, sport, dport) of IPv4 inside a GSE
    tag (ports 0 unless UDP/TCP and not a fragment), else (DA, SA, 0). Bytes beyond the
    frame count as 0; an IPv4 key needs the frame to reach byte 55."""
    b = bytes(frame) + bytes(max(0, 56 - len(frame)))
    ip = (
        len(frame) >= 56
        and int.from_bytes(b[12:14], "big") == ethertype
        and int.from_bytes(b[30:32], "big") == 0x0800
        and b[32] == 0x45
    )
    if not ip:
        return b[0:12] + b"\0", False
    proto = b[41]
    fragment = (b[38] & 0x3F) or b[39]
    ports = b[52:56] if proto in (6, 17) and not fragment else bytes(4)
    return b[44:48] + b[48:52] + bytes([proto]) + ports, True


def ecmp_hash(frame, seed, ethertype=GSE_ETHERTYPE):
    key, _ = flow_key(frame, ethertype)
    return crc32_reflected(key, seed)


def ecmp_uplink(frame, seed, healthy, uplinks, ethertype=GSE_ETHERTYPE):
    """The uplink a frame takes with ``healthy`` (bit mask), or None (none healthy)."""
    up = [u for u in range(uplinks) if (healthy >> u) & 1]
    if not up:
        return None
    return up[(ecmp_hash(frame, seed, ethertype) & 0xFFFF) % len(up)]


def _tagged_udp(src, dst, sport, dport=4791):
    """The key-relevant bytes of a tagged host frame (fabric-spec section 4): hosts n have
    MAC 02:00:00:00:00:nn and IPv4 10.0.0.n; the rest of the headers is zero."""
    mac = lambda n: bytes([2, 0, 0, 0, 0, n])  # noqa: E731
    gse = bytes(16) + (0x0800).to_bytes(2, "big")
    ip = bytes([0x45, 0, 0, 0, 0, 0, 0, 0, 64, 17, 0, 0]) + bytes([10, 0, 0, src, 10, 0, 0, dst])
    udp = sport.to_bytes(2, "big") + dport.to_bytes(2, "big") + bytes(4)
    return mac(dst) + mac(src) + GSE_ETHERTYPE.to_bytes(2, "big") + gse + ip + udp + bytes(18)


def uplinks_used(seed, drawn_ports, leaves=4, hosts=4, uplinks=4):
    """For the inter-leaf permutation host n -> n + hosts: per source leaf, how many of its
    uplinks its ``hosts`` flows land on. ``drawn_ports``: each flow's UDP source port drawn
    from ``seed`` (as the generator does), else all 49152 (only the CRC start varies)."""
    import random

    rng = random.Random(seed)
    n = leaves * hosts
    used = []
    for leaf in range(leaves):
        ups = set()
        for src in range(leaf * hosts, (leaf + 1) * hosts):
            sport = rng.randrange(49152, 65536) if drawn_ports else 49152
            frame = _tagged_udp(src, (src + hosts) % n, sport)
            ups.add(ecmp_uplink(frame, seed, (1 << uplinks) - 1, uplinks))
        used.append(len(ups))
    return used


if __name__ == "__main__":  # python -m opengse.sim.ecmp_model: the table of docs/ecmp.md
    for drawn in (False, True):
        print("source ports", "drawn per flow from the seed" if drawn else "fixed (49152)")
        for seed in range(1, 9):
            print(f"  seed {seed}: uplinks used per leaf {uplinks_used(seed, drawn)}")
