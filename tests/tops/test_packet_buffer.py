"""PacketBuffer (rtl/tops/packet_buffer.py) with ``drop_full`` on Verilator: the leaf's
per-uplink admission queues (docs/leaf.md, "All-to-all"). The bench is
tests/tops/cocotb_packet_buffer.py."""

from opengse.rtl.catalog import BlockSpec
from opengse.rtl.tops.packet_buffer import PacketBuffer
from opengse.sim.runner import run_cocotb


def _drop_full_buffer(depth, data_width):
    return PacketBuffer(depth, data_width, drop_full=True)


#: test-only: a 64-beat buffer that drops what does not fit instead of back-pressuring
ADMISSION = BlockSpec(
    name="packet_buffer_drop_full",
    module="packet_buffer_drop_full",
    factory=_drop_full_buffer,
    params={"depth": 64, "data_width": 64},
)


def test_packet_buffer_drop_full():
    run_cocotb(ADMISSION, {"depth": 64, "data_width": 64}, "cocotb_packet_buffer")
