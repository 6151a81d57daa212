"""platforms/netlist_depth.py on a hand-made synth_ecp5-style netlist: the longest
register-to-register path is found and ranked first, carry chains and LUT-RAM reads
count, a LUT-RAM's write data does not pass to its read data, a loop does not hang."""

from opengse.platforms.netlist_depth import DELAYS, ROUTE, block_pairs, longest_paths

FF = {"CLK": "input", "DI": "input", "Q": "output"}
LUT = {"A": "input", "B": "input", "C": "input", "D": "input", "Z": "output"}
RAM = {"DI": "input", "RAD": "input", "WAD": "input", "WRE": "input", "WCK": "input", "DO": "output"}


def _cell(kind, dirs, **conn):
    return {"type": kind, "port_directions": dirs, "connections": {p: b for p, b in conn.items()}}


def _netlist(cells, nets):
    return {
        "modules": {
            "top": {
                "attributes": {"top": "00000000000000000000000000000001"},
                "cells": cells,
                "netnames": {n: {"bits": [b]} for n, b in nets.items()},
            }
        }
    }


def test_longest_path_ranked_first_with_its_levels():
    cells = {
        "a": _cell("TRELLIS_FF", FF, CLK=[1], DI=[9], Q=[2]),
        "l1": _cell("LUT4", LUT, A=[2], B=["0"], C=["0"], D=["0"], Z=[3]),
        "l2": _cell("LUT4", LUT, A=[3], B=[2], C=["0"], D=["0"], Z=[4]),
        "b": _cell("TRELLIS_FF", FF, CLK=[1], DI=[4], Q=[5]),
        "l3": _cell("LUT4", LUT, A=[5], B=["0"], C=["0"], D=["0"], Z=[6]),
        "c": _cell("TRELLIS_FF", FF, CLK=[1], DI=[6], Q=[9]),
        # a LUT RAM read at b's output: RAD -> DO is a path, DI (from l1) -> DO is not
        "ram": _cell("TRELLIS_DPR16X4", RAM, DI=[3], RAD=[5], WAD=[2], WRE=[2], WCK=[1], DO=[7]),
        "d": _cell("TRELLIS_FF", FF, CLK=[1], DI=[7], Q=[8]),
    }
    nets = {"a_q": 2, "x": 3, "y": 4, "b_q": 5, "z": 6, "ram_do": 7}
    paths = longest_paths(_netlist(cells, nets), count=10)
    assert [p.end for p in paths][0] == "b"
    first = paths[0]
    assert first.levels == 2 and first.start == "a_q[0]"
    lut = DELAYS["ff_clk_to_q"] + 2 * (ROUTE + DELAYS["lut"]) + ROUTE + DELAYS["setup_ff"]
    assert abs(first.ns - lut) < 1e-9
    by_end = {p.end: p for p in paths}
    assert by_end["c"].levels == 1 and by_end["c"].ns < first.ns
    assert by_end["d"].levels == 1  # b_q -> RAD -> DO -> d, not a_q -> l1 -> DI -> DO -> d
    assert [kind for _, kind, _ in by_end["d"].nets] == ["TRELLIS_FF", "TRELLIS_DPR16X4"]


def test_combinational_loop_ends():
    cells = {
        "a": _cell("TRELLIS_FF", FF, CLK=[1], DI=[4], Q=[2]),
        "l1": _cell("LUT4", LUT, A=[2], B=[4], C=["0"], D=["0"], Z=[3]),
        "l2": _cell("LUT4", LUT, A=[3], B=["0"], C=["0"], D=["0"], Z=[4]),
    }
    paths = longest_paths(_netlist(cells, {"q": 2, "x": 3, "y": 4}))
    assert paths and paths[0].end == "a" and paths[0].levels >= 2


def test_block_pairs_keep_the_worst_path_of_each_pair():
    cells = {
        "u.a.r": _cell("TRELLIS_FF", FF, CLK=[1], DI=["0"], Q=[2]),
        "u.a.l1": _cell("LUT4", LUT, A=[2], B=["0"], C=["0"], D=["0"], Z=[3]),
        "u.a.l2": _cell("LUT4", LUT, A=[3], B=["0"], C=["0"], D=["0"], Z=[4]),
        "u.b.deep": _cell("TRELLIS_FF", FF, CLK=[1], DI=[4], Q=[5]),
        "u.b.shallow": _cell("TRELLIS_FF", FF, CLK=[1], DI=[3], Q=[6]),
        "u.c.x": _cell("TRELLIS_FF", FF, CLK=[1], DI=[3], Q=[7]),
    }
    nets = {"u.a.r_q": 2, "u.a.x_LUT4_Z": 3, "u.a.y": 4}
    paths = longest_paths(_netlist(cells, nets), count=100)
    pairs = block_pairs(paths, depth=2, min_ns=0.0)
    # u.a -> u.b: two end cells, the two-LUT one kept; u.a -> u.c: one
    assert [(p.end, n) for p, n in pairs] == [("u.b.deep", 2), ("u.c.x", 1)]
    assert pairs[0][0].levels == 2
    # a threshold above the one-LUT paths leaves the deep one alone
    assert [(p.end, n) for p, n in block_pairs(paths, 2, min_ns=pairs[1][0].ns + 0.01)] == [("u.b.deep", 1)]
