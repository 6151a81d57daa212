"""The properties can fail: a weakened assumption or a bound one clock too tight gives a
counterexample (so the passing runs are not vacuous by construction)."""

import pytest

from opengse.sim.formal import prove
from opengse.sim.formal.link_monitor import PROBE_BOUND, LinkMonitorBound
from opengse.sim.formal.parser import ParserNeverStalls
from opengse.sim.formal.registry import inputs_of
from opengse.sim.formal.tagging import TaggerLength
from opengse.sim.runner import BUILD_ROOT


def _refuted(top, depth, name, mode="bmc"):
    res = prove(
        top,
        ports=inputs_of(top.dut),
        depth=depth,
        mode=mode,
        check=False,
        workdir=BUILD_ROOT / "formal" / f"refuted-{name}",
        engine="smtbmc yices",
    )
    assert res.status == "FAIL", f"{name}: expected a counterexample, got {res.status}\n{res.tail()}"
    assert list(res.workdir.rglob("*.vcd")), "no counterexample trace written"


def test_parser_runts_can_stall():
    """Without the frame-size assumption: two back-to-back one-beat runts cost a clock."""
    _refuted(ParserNeverStalls(min_bytes=1), 8, "parser_runts")


@pytest.mark.parametrize(
    "kw,name",
    [(dict(probe_bound=PROBE_BOUND - 1), "probe_bound_minus_1"), (dict(down_delay=1), "link_down_1_clock")],
)
def test_link_monitor_bounds_are_tight(kw, name):
    _refuted(LinkMonitorBound(**kw), PROBE_BOUND + 30, f"link_monitor_{name}")


def test_tagger_length_check_can_fail():
    """The same wrapper expecting 17 bytes more finds the first tagged frame."""
    _refuted(TaggerLength(grow=17), 10, "tagger_grow_17")


def test_skid_occupancy_bound_is_tight():
    """The skid buffer does hold two beats: a wrapper allowing one finds the stall."""
    from opengse.sim.formal.stream_blocks import SkidInOrder

    _refuted(SkidInOrder(max_held=1), 6, "skid_max_held_1")


def test_container_framing_meta_can_withdraw():
    """The output rule on ``m_meta`` too: a descriptor on offer is withdrawn when the
    head release's report says it was empty (docs/formal.md, Things the properties
    found)."""
    from opengse.sim.formal.stream_blocks import OutputRules, _container_framing

    _refuted(OutputRules(_container_framing), 6, "container_framing_meta")
