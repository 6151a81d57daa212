"""The management port exports as readable Verilog that lints clean (verilator -Wall with
the repo's waivers), and its parameters are checked."""

import re

import pytest

from opengse.platforms.export import write_export
from opengse.platforms.lint import lint
from opengse.rtl.mgmt.frame_responder import FrameResponder
from opengse.rtl.mgmt.management_port import MGMT_COUNTERS, ManagementPort
from opengse.rtl.mgmt.uart_rx import UARTReceiver


def _warnings(out):
    return [line for line in out.splitlines() if line.startswith("%Warning")]


#: The one kind of warning -Wall still gives (the leaf's too, issue 17): Yosys keeps the
#: whole-payload wire of a stream between two sub-components as an alias while the logic
#: reads the fields' own nets, so the alias's bits look unused.
PAYLOAD_ALIAS = re.compile(r"%Warning-UNUSEDSIGNAL: .*Bits of signal are not used: 'core\.[\w.]+__payload'")


def test_management_port_lints_clean(tmp_path):
    v_path, j_path = write_export(ManagementPort(), "gse_mgmt_port", {}, tmp_path)
    ok, out = lint([v_path], "gse_mgmt_port")
    others = [w for w in _warnings(out) if not PAYLOAD_ALIAS.match(w)]
    assert not others, out
    text = v_path.read_text()
    for port in ["s_axis_tdata", "m_axis_tlast", "uart_rx", "uart_tx", "m_axil_awaddr", "m_axil_rready"]:
        assert port in text, port
    for name in MGMT_COUNTERS:
        assert f"stat_{name}" in text, name


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: FrameResponder(max_records=0), "max_records"),
        (lambda: FrameResponder(max_records=256), "max_records"),
        (lambda: FrameResponder(key=1 << 64), "key"),
        (lambda: FrameResponder(allowed_port=2, port_bits=1), "allowed_port"),
        (lambda: FrameResponder(data_width=48), "data_width"),
        (lambda: FrameResponder(mac=0x01_00_5E_00_00_01), "unicast"),
        (lambda: UARTReceiver(2), "divisor"),
        (lambda: ManagementPort(addr_width=2), "addr_width"),
    ],
)
def test_bad_parameters(make, words):
    with pytest.raises(ValueError, match=words):
        make()
