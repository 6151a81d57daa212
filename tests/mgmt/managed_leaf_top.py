"""Test-only build of :class:`~opengse.rtl.tops.leaf.managed_leaf.ManagedLeaf`: a small
leaf (the Colorlight board leaf's sizes, 2 nodes, its buffers, but 1 host port x 2
uplinks, so that ``gsectl links`` shows one uplink up and one down; 64-bit unless
``data_width`` says otherwise) with the
management port of tests/mgmt (its key, an 8-clock UART bit) and, as on the boards,
its counters in the bank's CounterStore, for gsectl end to end
against a real leaf (cocotb_managed_leaf.py), in both modes (``lb`` 0 GSE, as the board
leaves; 1 ECMP). One build per mode (``build/sim/managed_leaf-...-lb<n>-...``).

``probe_interval`` is short so the looped-back PROBEs make the uplinks healthy within a
few thousand clocks.
"""

from dataclasses import replace

from opengse.platforms.boards.leaf_top import SIZES
from opengse.rtl.catalog import BlockSpec
from opengse.rtl.tops.leaf.managed_leaf import ManagedLeaf

from mgmt_top import TEST_KEY, TEST_MAC

DIVISOR = 8
UART_IDLE_LIMIT = 2000
ALLOWED_PORT = 0
PARAMS = {"lb": 1, "data_width": 64, "probe_interval": 64}


def managed_leaf(lb=1, data_width=64, probe_interval=64):
    # the Colorlight board leaf's sizes (platforms/boards/leaf_top.py), one place for both
    sz = replace(SIZES["colorlight-5a75b"], data_width=data_width, uplinks=2)
    return ManagedLeaf(
        sz.config(),
        ("gse", "ecmp")[lb],
        allowed_port=ALLOWED_PORT,
        key=TEST_KEY,
        max_records=8,
        divisor=DIVISOR,
        uart_idle_limit=UART_IDLE_LIMIT,
        mac=TEST_MAC,
        delay=16,
        host_store_bytes=sz.host_store_bytes,
        fab_store_bytes=sz.fab_store_bytes,
        max_frame_bytes=sz.max_frame_bytes,
        slot_bytes=sz.slot_bytes,
        n_req=sz.n_req,
        probe_interval=probe_interval,
        counter_store=True,  # as the board leaves: counters in the bank's CounterStore
    )


TOP = BlockSpec(
    name="managed_leaf",
    module="gse_managed_leaf",
    factory=managed_leaf,
    params=PARAMS,
    description="test-only: a 1 x 2 ManagedLeaf (GSELeaf + ManagementPort)",
)
