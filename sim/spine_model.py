"""Plain-Python reference of the GSF spine (rtl/tops/spine.py), from the brief's byte
table: what becomes of one frame arriving on a fabric port.

``SpineModel(ports, nodes)``: ``route(node, port)`` writes the forwarding table (a port
>= ``ports`` removes the route); ``forward(frame, bad=False)`` returns either
``("drop", reason)`` with reason one of ``runt``, ``ver``, ``type``, ``ttl``,
``not_gse``, ``no_route``, ``bad`` (tuser on the last beat), ``len`` (a DATA frame whose
``len`` + 18 is not its length: flagged by the parser, then dropped whole at the output
as ``bad``), or ``(out_port, control, frame_out)`` with ``frame_out`` the frame with its
``ttl`` (frame byte 23) one lower.
"""

__all__ = ["SpineModel", "GSE_ETHERTYPE", "CONTROL_TYPES"]

GSE_ETHERTYPE = 0x88B5
CONTROL_TYPES = (1, 2, 3)  # REQUEST, GRANT, PROBE
TAG_BYTES = 18


class SpineModel:
    def __init__(self, ports, nodes, ethertype=GSE_ETHERTYPE):
        self.ports, self.nodes, self.ethertype = ports, nodes, ethertype
        self.table = [None] * nodes

    def route(self, node, port):
        self.table[node] = port if port < self.ports else None

    def forward(self, frame, bad=False):
        f = bytes(frame)
        if len(f) < 14:
            return ("drop", "runt")
        if int.from_bytes(f[12:14], "big") != self.ethertype:
            return ("drop", "not_gse")
        if len(f) < 32:
            return ("drop", "runt")
        ver, typ = f[14] >> 4, f[14] & 0xF
        if ver != 1:
            return ("drop", "ver")
        if typ > 3:
            return ("drop", "type")
        if f[23] == 0:
            return ("drop", "ttl")
        node = int.from_bytes(f[20:22], "big")
        port = self.table[node] if node < self.nodes else None
        if port is None:
            return ("drop", "no_route")
        if bad:
            return ("drop", "bad")
        if typ == 0 and int.from_bytes(f[26:28], "big") + TAG_BYTES != len(f):
            return ("drop", "len")
        out = f[:23] + bytes([f[23] - 1]) + f[24:]
        return (port, typ in CONTROL_TYPES, out)
