"""The DGSQ grant arbiter of one egress port (brief section 4), in parts.

:class:`GrantArbiter` (grant_arbiter.py) is the top; docs/dgsq.md describes each part:

* ``pick.py`` (:class:`~.pick.Pick`): stages A, B, C1, C2, one decision per clock;
* ``credit.py`` (:class:`~.credit.CreditGate`): outstanding credit against the egress room;
* ``grant_lane.py``, ``engine_lane.py``: the two read-modify-write lanes of the slot words;
* ``slot_store.py`` (:class:`~.slot_store.SlotStore`): two RAM banks and a live-value table;
* ``slot_flags.py``, ``cam.py``, ``lease.py``: per-slot flip-flops (flags, keys, ages);
* ``engine.py`` (:class:`~.engine.Engine`): accept -> CAM compare -> target -> enter;
* ``arrivals.py``: the arrival accumulator; ``grant_output.py``: the GRANT FIFO;
* ``occupancy.py``: the lanes' stages as slot sets (masks);
* ``weights.py``: the weight table; ``records.py``, ``bits.py``: layouts and helpers.
"""

from ...catalog import BlockSpec
from .grant_arbiter import GrantArbiter
from .records import (
    N_CLASSES,
    SEQ_BITS,
    arrival_layout,
    cfg_layout,
    grant_layout,
    request_layout,
    slot_layout,
)

__all__ = [
    "GrantArbiter",
    "request_layout",
    "arrival_layout",
    "grant_layout",
    "cfg_layout",
    "slot_layout",
    "N_CLASSES",
    "SEQ_BITS",
    "EXPORTS",
]

EXPORTS = [
    BlockSpec(
        name="grant_arbiter",
        module="gse_grant_arbiter",
        factory=GrantArbiter,
        params={
            "n_req": 64,
            "buffer_credits": 1024,
            "grant_credits": 64,
            "max_inflight": 2,
            "n_tenants": 16,
            "lease_cycles": 8192,
        },
        description="GSE DGSQ grant arbiter of one egress port: strict priority across "
        "traffic classes, weighted round-robin per tenant, credit-bounded grants",
        keep_modules=lambda **p: {
            "slot_store.ram_g": "gse_grant_slot_ram_g",
            "slot_store.ram_e": "gse_grant_slot_ram_e",
        },
        aliases=("dgsq",),
    )
]
