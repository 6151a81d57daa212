"""Test-only build of :class:`~opengse.rtl.tops.leaf.managed_leaf.ManagedLeaf`: a small
leaf (1 host port x 2 uplinks, 4 nodes, the board leaves' buffer sizes) with the
management port of tests/mgmt (its key, an 8-clock UART bit), for gsectl end to end
against a real leaf (cocotb_managed_leaf.py), in both modes (``lb`` 0 GSE, as the board
leaves; 1 ECMP). One build per mode (``build/sim/managed_leaf-...-lb<n>-...``).

``probe_interval`` is short so the looped-back PROBEs make the uplinks healthy within a
few thousand clocks.
"""

from opengse.rtl.catalog import BlockSpec
from opengse.rtl.config import GSEConfig
from opengse.rtl.tops.leaf.managed_leaf import ManagedLeaf

from mgmt_top import TEST_KEY, TEST_MAC

DIVISOR = 8
UART_IDLE_LIMIT = 2000
ALLOWED_PORT = 0
PARAMS = {"lb": 1, "data_width": 64, "probe_interval": 64}


def managed_leaf(lb=1, data_width=64, probe_interval=64):
    cfg = GSEConfig(
        data_width=data_width,
        host_ports=1,
        uplinks=2,
        nodes=4,
        queues=8,
        tenants=2,
        voq_buffer_bytes=8192,
        egress_buffer_bytes=4096,
        container_bytes=2048,
        reorder_window=2,
        max_inflight=2,
        uplink_queue_bytes=0,
    )
    return ManagedLeaf(
        cfg,
        ("gse", "ecmp")[lb],
        allowed_port=ALLOWED_PORT,
        key=TEST_KEY,
        max_records=8,
        divisor=DIVISOR,
        uart_idle_limit=UART_IDLE_LIMIT,
        mac=TEST_MAC,
        delay=16,
        host_store_bytes=4096,
        fab_store_bytes=4096,
        max_frame_bytes=1536,
        slot_bytes=4096,
        n_req=8,
        probe_interval=probe_interval,
    )


TOP = BlockSpec(
    name="managed_leaf",
    module="gse_managed_leaf",
    factory=managed_leaf,
    params=PARAMS,
    description="test-only: a 1 x 2 ManagedLeaf (GSELeaf + ManagementPort)",
)
