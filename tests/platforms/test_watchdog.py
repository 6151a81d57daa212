"""No test can hang: a stuck DUT fails within its limit, with a message naming what
the test waited for (issue 18 item 4).

* cocotb: bounded waits (``opengse.sim.cocotb_util``, ``opengse.sim.valid_ready``) and
  the runner's simulated-time limit on every cocotb test;
* pytest: pytest-timeout's per-test limit (``timeout`` in ``pyproject.toml``).
"""

import inspect
import subprocess
import sys
import textwrap

import pytest

from opengse.sim import runner
from opengse.sim.runner import run_cocotb

TAGGER = ("tagger", {"data_width": 64}, "cocotb_watchdog")


def test_free_flowing_control():
    """The same bench with tready free passes: the stuck cases below fail because of
    the stall, not because of the bench."""
    assert run_cocotb(*TAGGER, testcase="free_flowing") == 1


def test_stuck_tready_bounded_recv_names_the_frame():
    with pytest.raises(
        AssertionError,
        match="cocotb test cocotb_watchdog.stuck_bounded_recv failed: "
        "WaitTimeout: waited 2000 clocks for frame 1 on m_axis",
    ):
        run_cocotb(*TAGGER, testcase="stuck_bounded_recv")


def test_stuck_tready_within_names_what_it_waited_for():
    with pytest.raises(
        AssertionError,
        match="stuck_within failed: WaitTimeout: waited 500 clocks for the tagged frame on m_axis",
    ):
        run_cocotb(*TAGGER, testcase="stuck_within")


def test_stuck_tready_unbounded_recv_hits_the_sim_time_limit():
    """A plain ``await sink.recv()`` with tready held low: the simulated-time limit
    (here 0.05 ms = 5000 clocks) ends it, and the failure names the test."""
    with pytest.raises(
        AssertionError,
        match=r"cocotb test cocotb_watchdog\.stuck_unbounded_recv "
        r"ran past its simulated-time limit \(0\.05 ms",
    ):
        run_cocotb(*TAGGER, testcase="stuck_unbounded_recv", sim_time_limit_ms=0.05)


def test_never_sent_frame_names_the_port():
    with pytest.raises(
        AssertionError,
        match=r"never_sent failed: WaitTimeout: waited 1000 clocks "
        r"for s_hdr to take 2 more item\(s\) \(0 taken so far\)",
    ):
        run_cocotb(*TAGGER, testcase="never_sent")


def test_limit_entry_points_match_cocotb():
    """The runner adds its entry point to cocotb's default start-up list; that list is
    cocotb's own (if a cocotb upgrade changes it, this fails instead of the runner
    silently skipping a cocotb start-up step)."""
    from pygpi import entry

    source = inspect.getsource(entry.load_entry)
    defaults = [*runner._COCOTB_ENTRY_POINTS, runner._REGRESSION_ENTRY_POINT]
    positions = [source.index(f'"{name}"') for name in defaults]
    assert positions == sorted(positions)


def test_bad_limit_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("OPENGSE_SIM_TIME_LIMIT_MS", "soon")
    with pytest.raises(ValueError, match="OPENGSE_SIM_TIME_LIMIT_MS='soon' is not a number"):
        runner._limit_ms(None)


def test_pytest_has_a_per_test_time_limit(pytestconfig):
    assert float(pytestconfig.getini("timeout")) >= 600


def test_pytest_timeout_fails_a_stuck_test_by_name(tmp_path):
    """A pytest test that never returns is failed by pytest-timeout, by name, and the
    run goes on to the next test."""
    (tmp_path / "test_stuck.py").write_text(
        textwrap.dedent("""
        import time

        def test_sleeps_forever():
            time.sleep(60)

        def test_after():
            pass
    """)
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-o",
            "addopts=",
            "--timeout=2",
            "-q",
            "test_stuck.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "Timeout (>2.0s) from pytest-timeout" in out, out
    assert "FAILED test_stuck.py::test_sleeps_forever" in out, out
    assert "1 failed, 1 passed" in out, out
