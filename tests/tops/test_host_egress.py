"""HostEgress (rtl/tops/leaf/host_egress.py) in GSE mode on Verilator: DATA from two
uplinks through the cut-through admission queues, the reorder buffer, untag and the
egress FIFO to the host. The bench is tests/tops/cocotb_host_egress.py."""

import pytest

from opengse.rtl.catalog import BlockSpec
from opengse.rtl.config import GSEConfig
from opengse.rtl.tops.leaf.host_egress import HostEgress
from opengse.sim.runner import run_cocotb


def _host_egress(egress_buffer_bytes, reorder_timeout):
    cfg = GSEConfig(host_ports=2, uplinks=2, nodes=4, egress_buffer_bytes=egress_buffer_bytes)
    return HostEgress(cfg, port=0, reorder_timeout=reorder_timeout)


#: test-only: host port 0 of a 2 x 2 leaf, an 8 KB egress FIFO (and admission queues)
HOST_EGRESS = BlockSpec(
    name="host_egress",
    module="host_egress",
    factory=_host_egress,
    params={"egress_buffer_bytes": 8192, "reorder_timeout": 512},
)


@pytest.mark.timeout(1800)
def test_host_egress_cut_through():
    run_cocotb(HOST_EGRESS, {"egress_buffer_bytes": 8192, "reorder_timeout": 512}, "cocotb_host_egress")
