"""Reference model of the GSE parser, on scapy's dissection of the brief's byte table."""

from .gse_scapy import GSE, GSE_ETHERTYPE, untag

__all__ = ["parse_reference", "HDR_FIELDS"]

HDR_FIELDS = (
    "ver",
    "type",
    "flags",
    "tc",
    "tenant",
    "src_node",
    "dst_node",
    "port",
    "ttl",
    "seq",
    "len",
    "dgsq",
    "next_type",
)


def parse_reference(raw, bad=False, strip=True, ethertype=GSE_ETHERTYPE):
    """What the parser must do with ``raw`` (``bad``: marked bad by the MAC).

    Returns ``("drop", reason)`` or ``("pass", out_bytes, header_dict, error_flag,
    reasons)`` where reasons is a set of counted flags ("len", "frame")."""
    raw = bytes(raw)
    if len(raw) < 14:
        return ("drop", "runt")
    eth_type = int.from_bytes(raw[12:14], "big")
    hdr = {f: 0 for f in HDR_FIELDS}
    hdr.update(
        gse=0,
        eth_dst=int.from_bytes(raw[0:6], "big"),
        eth_src=int.from_bytes(raw[6:12], "big"),
        eth_type=eth_type,
    )
    if eth_type != ethertype:
        return ("pass", raw, hdr, bad, {"frame"} if bad else set(), "other")
    if len(raw) < 32:
        return ("drop", "runt")
    gse = GSE(raw[14:32])
    if gse.ver != 1:
        return ("drop", "ver")
    if gse.type > 3:
        return ("drop", "type")
    if gse.ttl == 0:
        return ("drop", "ttl")
    for f in HDR_FIELDS:
        hdr[f] = int(getattr(gse, f))
    hdr["gse"] = 1
    len_err = gse.type == 0 and gse.len + 18 != len(raw)
    reasons = set()
    if len_err:
        reasons.add("len")
    if bad:
        reasons.add("frame")
    out = untag(raw) if strip else raw
    return ("pass", out, hdr, bool(len_err or bad), reasons, "frames")
