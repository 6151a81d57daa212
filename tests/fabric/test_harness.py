"""The fabric's run-time interface through its C++ main: configuration writes reach a
black-boxed unit (a spine's route table), its outputs are sampled, a stream write that
finds the stream busy is counted."""

from harness_top import make_top

from opengse.rtl.tops.spine import route_layout
from opengse.sim.fabric.config import Writes
from opengse.sim.fabric.runner import build_model, run_model


def test_route_written_and_read_back(tmp_path):
    model = build_model("harness", {"ports": 2}, make_top)
    w = Writes(model.address_map)
    layout = route_layout(2, 4)
    w.put_struct("sp.s_route", layout, {"node": 1, "port": 1})
    w.put_struct("sp.s_route", layout, {"node": 3, "port": 0}, cycle=5)
    w.put("sp.route_rd_node", 1, cycle=2)
    w.put("sp.route_rd_node", 2, cycle=12)  # never written: no route (port 2)
    w.put("sp.route_rd_node", 3, cycle=22)
    out = run_model(model, "cycles 40\nsample 10\nreset 4\n" + w.text(), tmp_path)
    assert [v for _, v in out.column("sp.route_rd_port")] == [1, 2, 0, 0]
    assert [v for _, v in out.column("harness.cfg_lost")] == [0, 0, 0, 0]
    assert [c for c, _ in out.samples] == [10, 20, 30, 40]
    assert out.cycles_per_second > 0


def test_unknown_item_and_too_wide_value_are_refused():
    import pytest

    model = build_model("harness", {"ports": 2}, make_top)
    w = Writes(model.address_map)
    with pytest.raises(KeyError, match="no configuration item"):
        w.put("sp.nosuch", 1)
    with pytest.raises(ValueError, match="does not fit 2 bits"):
        w.put("sp.route_rd_node", 4)
