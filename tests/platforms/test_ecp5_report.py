"""The ECP5 flow's critical-register summary, on a hand-made nextpnr report."""
from opengse.platforms.ecp5 import critical_registers


def _end(cell, worst, port="DI"):
    return {"cell": cell, "port": port, "event": "posedge clk", "delay": [worst / 2, worst]}


def test_critical_registers_groups_bits_and_orders():
    report = {"detailed_net_timings": [
        {"net": "a", "endpoints": [_end("core.any_q_TRELLIS_FF_Q", 6.4)]},
        {"net": "b", "endpoints": [_end("core.mask_TRELLIS_FF_Q_3", 6.1),
                                   _end("core.mask_TRELLIS_FF_Q_17", 6.0, "CE"),
                                   _end("core.mask_TRELLIS_FF_Q_40", 5.2)]},
        {"net": "c", "endpoints": [_end("core.$signal$12_TRELLIS_FF_Q_1", 6.2)]},
        {"net": "d", "endpoints": [_end("ram_DP16KD", 3.0, "ADA4")]},
        {"net": "e", "endpoints": [{"cell": "core.slots_used_TRELLIS_FF_Q", "port": "DI",
                                    "delay": 5.5}]},
    ]}
    rows = critical_registers(report, top=3)
    assert rows == ["any_q: 6.40 ns (1)", "$signal$12: 6.20 ns (1)", "mask: 6.10 ns (2)"]


def test_critical_registers_single_values():
    report = {"detailed_net_timings": [
        {"net": "e", "endpoints": [{"cell": "core.slots_used_TRELLIS_FF_Q", "port": "DI",
                                    "delay": 5.5}]}]}
    assert critical_registers(report) == ["slots_used: 5.50 ns (1)"]


def test_critical_registers_empty_report():
    assert critical_registers({}) == []
