"""The ECP5 flow's report reading, on hand-made Yosys and nextpnr reports: the
critical-register summary, and resource counts that are never guessed."""

import pytest

from opengse.platforms.ecp5 import ReportError, critical_registers, late_registers, resources, stat_cells


def _end(cell, worst, port="DI", event="posedge clk"):
    return {"cell": cell, "port": port, "event": event, "delay": [worst / 2, worst]}


def test_critical_registers_groups_bits_and_orders():
    report = {
        "detailed_net_timings": [
            {"net": "a", "endpoints": [_end("core.any_q_TRELLIS_FF_Q", 6.4)]},
            {
                "net": "b",
                "endpoints": [
                    _end("core.mask_TRELLIS_FF_Q_3", 6.1),
                    _end("core.mask_TRELLIS_FF_Q_17", 6.0, "CE"),
                    _end("core.mask_TRELLIS_FF_Q_40", 5.2),
                ],
            },
            {"net": "c", "endpoints": [_end("core.$signal$12_TRELLIS_FF_Q_1", 6.2)]},
            {"net": "d", "endpoints": [_end("ram_DP16KD", 3.0, "ADA4")]},
            {"net": "e", "endpoints": [{"cell": "core.slots_used_TRELLIS_FF_Q", "port": "DI", "delay": 5.5}]},
        ]
    }
    rows = critical_registers(report, top=3)
    assert rows == ["any_q: 6.40 ns (1)", "$signal$12: 6.20 ns (1)", "mask: 6.10 ns (2)"]


def test_critical_registers_single_values():
    report = {
        "detailed_net_timings": [
            {"net": "e", "endpoints": [{"cell": "core.slots_used_TRELLIS_FF_Q", "port": "DI", "delay": 5.5}]}
        ]
    }
    assert critical_registers(report) == ["slots_used: 5.50 ns (1)"]


def test_critical_registers_empty_report():
    assert critical_registers({}) == []


# ---- resource counts: a cell type missing from a report is an error, not 0 --------------


def _util(**used):
    base = {"TRELLIS_COMB": 20, "TRELLIS_FF": 8, "DP16KD": 0, "MULT18X18D": 0}
    base.update(used)
    return {k: {"available": 1000, "used": v} for k, v in base.items()}


def test_resources_all_counted():
    cells = {"LUT4": 120, "CCU2C": 9, "TRELLIS_FF": 80, "DP16KD": 3}
    assert resources(cells, _util(TRELLIS_FF=80, DP16KD=3)) == {
        "luts": 120,
        "carry_cells": 9,
        "ffs": 80,
        "brams": 3,
    }


def test_resources_absent_bram_confirmed_zero_by_nextpnr():
    assert resources({"LUT4": 5, "TRELLIS_FF": 8}, _util())["brams"] == 0


def test_resources_absent_bram_that_nextpnr_used_is_an_error():
    with pytest.raises(ReportError, match="Yosys counted no DP16KD cells but nextpnr used 2"):
        resources({"LUT4": 5, "TRELLIS_FF": 8}, _util(DP16KD=2))


def test_resources_type_in_neither_report_is_an_error():
    util = _util()
    del util["DP16KD"]
    with pytest.raises(ReportError, match="DP16KD is neither in Yosys' counts nor in nextpnr"):
        resources({"LUT4": 5, "TRELLIS_FF": 8}, util)


def test_resources_without_lut4_is_an_error():
    with pytest.raises(ReportError, match="no LUT4 cells"):
        resources({"TRELLIS_FF": 8, "DP16KD": 1}, _util(DP16KD=1))


def test_resources_unconfirmed_without_a_routed_seed_is_not_measured():
    fig = resources({"LUT4": 5, "TRELLIS_FF": 8}, None)
    assert fig["brams"] is None and fig["ffs"] == 8 and fig["carry_cells"] is None


def test_stat_without_cell_counts_is_an_error():
    with pytest.raises(ReportError, match="has no cell counts"):
        stat_cells({"design": {"num_cells": 12}, "modules": {"\\top": {"num_cells": 12}}})


def test_stat_sums_modules_when_no_design_section():
    doc = {
        "modules": {
            "\\a": {"num_cells_by_type": {"LUT4": 2, "TRELLIS_FF": 1}},
            "\\b": {"num_cells_by_type": {"LUT4": 3}},
        }
    }
    assert stat_cells(doc) == {"LUT4": 5, "TRELLIS_FF": 1}


def test_late_registers_of_one_clock():
    """Inputs later than the period, grouped by register, only of the clock named."""
    core, rx = "posedge $glbnet$clk", "posedge $glbnet$rx0_clk"
    report = {
        "detailed_net_timings": [
            {"net": "a", "endpoints": [_end("leaf.info_TRELLIS_FF_Q_3", 11.5, event=core)]},
            {"net": "b", "endpoints": [_end("leaf.info_TRELLIS_FF_Q_4", 8.2, event=core)]},
            {"net": "c", "endpoints": [_end("leaf.info_TRELLIS_FF_Q_5", 7.9, event=core)]},
            {"net": "d", "endpoints": [_end("bank.rd_TRELLIS_FF_Q", 9.0, "CE", event=core)]},
            {"net": "e", "endpoints": [_end("mac.beat_TRELLIS_FF_Q", 12.0, event=rx)]},
            {"net": "f", "endpoints": [_end("ok_TRELLIS_FF_Q", 7.0, event=core)]},
        ]
    }
    count, rows = late_registers(report, "$glbnet$clk", 8.0)
    assert count == 3
    assert rows == [("leaf.info", 11.5, 2), ("bank.rd", 9.0, 1)]
    assert late_registers(report, "$glbnet$rx0_clk", 8.0) == (1, [("mac.beat", 12.0, 1)])
    assert late_registers(report, "$glbnet$clk", 12.0) == (0, [])
