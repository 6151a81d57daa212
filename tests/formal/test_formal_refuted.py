"""The properties can fail: a weakened assumption or a bound one clock too tight gives a
counterexample (so the passing runs are not vacuous by construction)."""

import pytest

from opengse.sim.formal import prove
from opengse.sim.formal.link_monitor import PROBE_BOUND, LinkMonitorBound
from opengse.sim.formal.parser import ParserNeverStalls
from opengse.sim.formal.registry import inputs_of
from opengse.sim.formal.tagging import TaggerLength
from opengse.sim.runner import BUILD_ROOT


def _refuted(top, depth, name, mode="bmc", extra_ports=()):
    res = prove(
        top,
        ports=inputs_of(top.dut) + list(extra_ports),
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
    """With every input free the output rule on ``m_meta`` fails: a descriptor on offer
    is withdrawn when the head release's report says it was empty. The VOQ buffer and
    the manager never produce that order (sim/formal/container_framing.py), so the
    rule holds in context (``container_framing_meta_in_context``)."""
    from opengse.sim.formal.stream_blocks import OutputRules, _container_framing

    _refuted(OutputRules(_container_framing), 6, "container_framing_meta")


def test_container_framing_needs_the_manager_rule():
    """In context but with two releases of one queue out at once (the manager never
    does it) the withdrawal comes back: the in-context property rests on that rule."""
    from opengse.sim.formal.container_framing import FramingInContext

    top = FramingInContext(manager_rule=False)
    _refuted(top, 6, "container_framing_two_per_queue", extra_ports=[top.will_be_empty])


def test_pause_fifo_headroom_is_tight():
    """One beat more than the headroom while paused overflows the store."""
    from opengse.sim.formal.pause_fifo import HEADROOM, FifoHeadroom

    _refuted(FifoHeadroom(headroom=HEADROOM + 1), 12, "pause_fifo_headroom_plus_1")


def test_pause_gate_lets_an_offered_beat_go():
    """A first beat offered before pause rose is not withdrawn (AXI): a wrapper claiming
    the gate holds every first beat while paused is refuted."""
    from opengse.sim.formal.pause_gate import GateRules

    _refuted(GateRules(strict=True), 6, "pause_gate_strict")


def test_control_demux_routes_by_type():
    """A wrapper expecting PROBEs (type 3) on m_req finds them dropped."""
    from opengse.sim.formal.control_demux import DemuxRoutes

    _refuted(DemuxRoutes(req_type=3), 3, "control_demux_probe_as_request")


def test_fabric_link_delay_is_exact():
    """A wrapper expecting the beats of a 2-clock link one clock early finds them late."""
    from opengse.sim.formal.link import LinkWire

    _refuted(LinkWire(delay=2, lag=1), 4, "fabric_link_lag_1")


def test_traffic_check_outcome_comes_late():
    """A wrapper expecting every outcome 4 clocks after the last frame finds it later."""
    from opengse.sim.formal.traffic_check import CheckerCounts

    _refuted(CheckerCounts(quiet=4), 16, "traffic_check_quiet_4")


def test_traffic_gen_frame_runs_credit_below_zero():
    """Without one frame's slack the window bound fails: a frame started on a
    non-negative credit goes out whole."""
    from opengse.sim.formal.traffic_gen import GenRate

    top = GenRate(slack_beats=0)
    _refuted(top, 16, "traffic_gen_no_slack", extra_ports=[top.mark])


def test_mac_tx_gap_claim_is_tight():
    """After an underrun the framer leaves 13 idle clocks: a wrapper claiming 14 finds
    the next frame's start (so the IFG check can fail; the 12 after a whole frame takes
    a deeper run, mac_tx_gap_and_length's cover check)."""
    from opengse.sim.formal.mac import TxWire

    _refuted(TxWire(min_gap=14, check_bytes=False), 30, "mac_tx_gap_14")


def test_leaf_dest_lookup_lowest_entry_wins():
    """A wrapper expecting the highest matching entry to answer finds the lowest does."""
    from opengse.sim.formal.leaf import LookupFirstMatch

    _refuted(LookupFirstMatch(highest=True), 6, "leaf_dest_lookup_highest")
