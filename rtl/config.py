"""One configuration object for a GSE leaf: the sizes its blocks' signatures are cut from.

A block keeps its own constructor parameters (each is verified and exported alone);
a composed top builds its blocks from one :class:`GSEConfig` through the
``*_params()`` methods, so that the signatures of :mod:`opengse.rtl.interfaces` on
both sides of every ``wiring.connect`` come out the same width.
"""

from dataclasses import asdict, dataclass, fields

from .header.gse_header import CONTAINER_BYTES, CREDIT_UNIT_BYTES, GSE_ETHERTYPE

__all__ = ["GSEConfig"]


def _log2(n):
    return max(1, (n - 1).bit_length())


def _pow2(n):
    return n >= 1 and n & (n - 1) == 0


@dataclass(frozen=True)
class GSEConfig:
    """Sizes of one leaf (defaults: the reference fabric's leaf, brief section 2)."""

    data_width: int = 64  # stream width, bits
    host_ports: int = 4  # H
    uplinks: int = 4  # U
    nodes: int = 16  # leaves the fabric can address (sprayer seq table, reorder)
    queues: int = 64  # DGSQ contexts = VOQ queues (one id space)
    tenants: int = 16  # tenant accounting classes (VOQ, arbiter weights)
    credit_bits: int = 24  # release credit and release reports, bytes
    voq_buffer_bytes: int = 65536
    cell_bytes: int = 256
    egress_buffer_bytes: int = 65536
    container_bytes: int = CONTAINER_BYTES
    credit_unit: int = CREDIT_UNIT_BYTES
    # 16, not 8, so that max_inflight 8 leaves the reorder buffer its overrun skip
    # (skip_distance = max_inflight < window): with window 8 an uplink failure cost 262
    # drops (reorder window overflow while a lost container timed out), with 16 the 81
    # frames on the failed link only. It doubles the reorder slots (docs/leaf.md).
    reorder_window: int = 16
    # containers in flight per requester (the grant arbiter's max_inflight). One flow
    # runs at most max_inflight x container_bytes per grant-to-arrival round trip (about
    # 1900 clocks at the default delays): 2 caps it near 0.52 on the 2x2x2 fabric; with
    # least-loaded spraying 6 gave 0.942, 7 0.924, 8 0.949, 10 0.890, 12 0.884 (one seed
    # each; not monotonic: more in flight queues longer without filling the links)
    max_inflight: int = 8
    # the sprayers' uplink choice: 1 least-loaded (fewest bytes sent), 0 round-robin.
    # Least-loaded evens the flows: 0.942 against round-robin's 0.930 (docs/leaf.md)
    spray_policy: int = 1
    # GSE mode: a store-and-forward queue per (host port, uplink) in front of each
    # uplink's round-robin, bytes (0: none). With it the sprayers no longer avoid each
    # other's uplinks: two containers on one uplink fill their queues at line rate and
    # drain while the next containers take other uplinks, so the sprayers' byte balance
    # stays free and no uplink assignment is pinned. Without it `avoid` pins each
    # sprayer of a loaded leaf to one uplink, and with several source leaves the flows
    # into one leaf could sit on one spine: 4 x 2 x 2 inter-leaf 0.759 -> 0.962 (with
    # the control frames sent round the queues; docs/leaf.md, "Pinned uplinks"). It
    # stores whole frames, so the leaf requires it to hold its largest tagged frame
    # (max_frame_bytes + 18): 8192 dropped every 9000 B frame as oversize.
    uplink_queue_bytes: int = 16384
    ethertype: int = GSE_ETHERTYPE

    def __post_init__(self):
        for name in (
            "data_width",
            "queues",
            "tenants",
            "nodes",
            "cell_bytes",
            "credit_unit",
            "voq_buffer_bytes",
        ):
            if not _pow2(getattr(self, name)):
                raise ValueError(f"GSEConfig.{name} must be a power of two, not {getattr(self, name)!r}")
        # one uplink: a leaf cabled straight to another leaf (no spine); its containers
        # all take uplink 0, with seq numbers, reorder, DGSQ and PROBEs as with several
        if not 1 <= self.host_ports <= 16 or not 1 <= self.uplinks <= 16:
            raise ValueError("GSEConfig: host_ports must be 1..16 and uplinks 1..16")
        if not 1 <= self.max_inflight <= self.reorder_window:
            raise ValueError(
                "GSEConfig.max_inflight must be 1..reorder_window (a reorder window holds "
                f"the containers in flight of one source), not {self.max_inflight!r}"
            )
        if self.container_bytes % self.credit_unit:
            raise ValueError("GSEConfig.container_bytes must be a multiple of credit_unit")
        if self.spray_policy not in (0, 1):
            raise ValueError(
                "GSEConfig.spray_policy must be 0 (round-robin) or 1 (least-loaded), "
                f"not {self.spray_policy!r}"
            )
        beats = self.uplink_queue_bytes // (self.data_width // 8)
        if self.uplink_queue_bytes and (
            not _pow2(beats) or beats < 2 or self.uplink_queue_bytes % (self.data_width // 8)
        ):
            raise ValueError(
                "GSEConfig.uplink_queue_bytes must be 0 or a power of two of beats, not "
                f"{self.uplink_queue_bytes!r}"
            )
        if not 16 <= self.credit_bits <= 32:
            raise ValueError("GSEConfig.credit_bits must be 16..32")

    @classmethod
    def from_dict(cls, values):
        """A config from a mapping (a TOML table, say); an unknown key is an error that
        names it."""
        known = {f.name for f in fields(cls)}
        for key in values:
            if key not in known:
                raise ValueError(f"unknown configuration key {key!r}; known: " + ", ".join(sorted(known)))
        return cls(**values)

    def as_dict(self):
        return asdict(self)

    # ---- derived widths ---------------------------------------------------------------
    @property
    def queue_bits(self):
        return _log2(self.queues)

    @property
    def tenant_bits(self):
        return _log2(self.tenants)

    @property
    def voq_cells(self):
        return self.voq_buffer_bytes // self.cell_bytes

    # ---- block parameters -------------------------------------------------------------
    def manager_params(self):
        return {"n_ctx": self.queues, "container_bytes": self.container_bytes, "n_tenants": self.tenants}

    def voq_params(self):
        return {
            "data_width": self.data_width,
            "buffer_bytes": self.voq_buffer_bytes,
            "cell_bytes": self.cell_bytes,
            "queues": self.queues,
            "tenants": self.tenants,
            "credit_width": self.credit_bits,
            "credit_unit": self.credit_unit,
        }

    def sprayer_params(self):
        return {
            "data_width": self.data_width,
            "uplinks": self.uplinks,
            "nodes": self.nodes,
            "policy": self.spray_policy,
        }

    def arbiter_params(self):
        return {
            "buffer_credits": self.egress_buffer_bytes // self.credit_unit,
            "grant_credits": self.container_bytes // self.credit_unit,
            "max_inflight": self.max_inflight,
            "n_tenants": self.tenants,
        }

    def reorder_params(self):
        return {"data_width": self.data_width, "window": self.reorder_window}
