"""The fabric benchmark's pieces that need no model: the overhead arithmetic, the
percentile read, the run configuration's checks, and `gse fabric`'s bad options."""

import math
import subprocess
import sys
from pathlib import Path

import pytest

from opengse.sim.fabric.config import RunConfig, parse_fail_uplink
from opengse.sim.fabric.measure import percentile_from_histogram
from opengse.sim.fabric.overhead import analytic_limit, measured_limit
from opengse.sim.fabric.runner import merge_verilog
from opengse.sim.fabric.top import FabricShape

GSE = [str(Path(sys.executable).parent / "gse")]


@pytest.mark.parametrize(
    "frame, kwargs, issue",
    [
        # issue 14 item 7: PROBEs always + a REQUEST per container
        (1500, {}, 0.951),
        (9000, {}, 0.968),
        # PROBEs only on links without data
        (1500, {"probe_interval": None}, 0.958),
        (9000, {"probe_interval": None}, 0.975),
        # and REQUESTs only when the backlog report must change
        (1500, {"probe_interval": None, "requests_per_container": 0}, 0.972),
        (9000, {"probe_interval": None, "requests_per_container": 0}, 0.982),
    ],
)
def test_analytic_limit_matches_item_7(frame, kwargs, issue):
    assert analytic_limit(frame, **kwargs) == pytest.approx(issue, abs=0.0015)


def test_tag_and_rounding_alone():
    # "At 64 bits a 1500 B frame is 188 beats and its tagged form 190 ... 1.3 %; at 9000 B 0.3 %"
    only = {"grants": False, "requests_per_container": 0, "probe_interval": None}
    assert 1 - analytic_limit(1500, **only) == pytest.approx(0.013, abs=0.0005)
    assert 1 - analytic_limit(9000, **only) == pytest.approx(0.003, abs=0.0005)


def test_measured_limit_is_the_tightest_link_class():
    # 16 hosts, 16 uplinks; 1000 frames of 1500 B delivered: the uplinks carried them
    # tagged (190 beats) with 500 control frames (8 beats): 1500 / (8 x 194) = 0.9665
    limit, per = measured_limit(
        {"up": (16, 1000, 500, 18), "host": (16, 1000, 0, 0), "idle": (4, 0, 0, 18)}, 16, (1000, 1500000)
    )
    assert per["up"] == pytest.approx(1500 / (8 * (190 + 8 * 0.5)))
    assert per["host"] == pytest.approx(1500 / (8 * 188))
    assert limit == per["up"] and per["idle"] == float("inf")


def test_measured_limit_matches_a_perfect_scheduler():
    # what analytic_limit computes from the policy, measured from the frames the policy
    # sends: PROBEs off loaded links, one GRANT per 4 KB and a REQUEST per container
    for frame in (1500, 9000):
        n = 1000
        containers = n * frame / max(4096, frame)
        ctl = round(n * frame / 4096 + containers)
        cls = {"up": (4, n, ctl, 18), "dn": (4, n, ctl, 18), "host": (4, n, 0, 0)}
        limit, _ = measured_limit(cls, 4, (n, n * frame))
        ref = analytic_limit(frame, probe_interval=None)
        assert limit == pytest.approx(ref, abs=2e-4)


def test_measured_limit_is_never_above_1():
    # 9000 B is 1125 beats exactly: the host links cost nothing, and counting at frame
    # ends cannot lift the limit above 1 (the per-clock beat count read 1.0006 once)
    limit, per = measured_limit({"host": (4, 410, 0, 0), "up": (4, 412, 0, 18)}, 4, (410, 410 * 9000))
    assert per["host"] == 1.0 and limit == per["up"] == pytest.approx(9000 / (8 * 1128))
    # more links than hosts can carry more than the hosts take: still at most 1
    limit, per = measured_limit({"up": (8, 100, 10, 18)}, 4, (100, 100 * 1500))
    assert per["up"] > 1 and limit == 1.0
    # a class cannot carry a frame twice: its share of the frames is at most 1
    _, per = measured_limit({"up": (4, 105, 0, 18)}, 4, (100, 100 * 9000))
    assert per["up"] == pytest.approx(9000 / (8 * 1128))


def test_measured_limit_over_part_of_the_traffic_and_a_mix():
    # half the frames stay on their leaf: the uplinks could carry twice the load
    _, per = measured_limit({"up": (4, 50, 0, 18)}, 4, (100, 100 * 1500))
    assert per["up"] == pytest.approx(2 * 1500 / (8 * 190))
    # a mix of sizes (mean 777.5 B): the mean's beats plus half a beat of rounding
    _, per = measured_limit({"host": (4, 2, 0, 0)}, 4, (2, 1555))
    assert per["host"] == pytest.approx(777.5 / (8 * (777.5 / 8 + 7 / 16)))
    assert math.isnan(measured_limit({"host": (4, 0, 0, 0)}, 4, (0, 0))[0])


def test_percentile_reads_the_bin_upper_edge():
    bins = [0, 50, 40, 9, 1]
    assert percentile_from_histogram(bins, 10, 0.5) == 20
    assert percentile_from_histogram(bins, 10, 0.99) == 40
    assert percentile_from_histogram([0, 0], 10, 0.5) is None


def test_merge_keeps_a_shared_module_once():
    a = "module m(a);\n  input a;\nendmodule\nmodule top(x);\nendmodule\n"
    b = "module m(a);\n  input a;\nendmodule\nmodule leaf(y);\nendmodule\n"
    merged = merge_verilog([a, b])
    assert merged.count("module m(") == 1 and "module leaf(" in merged and "module top(" in merged
    with pytest.raises(ValueError, match="differs"):
        merge_verilog([a, "module m(b);\nendmodule\n"])


def test_run_config_checks():
    shape = FabricShape()
    assert parse_fail_uplink("1:2@300").cycle == 300
    for bad in ("1:2", "a:b@c", "1@2", "-1:0@5"):
        with pytest.raises(ValueError, match="fail-uplink"):
            parse_fail_uplink(bad)
    with pytest.raises(ValueError, match="uplinks 0..3"):
        RunConfig(fail_uplinks=[parse_fail_uplink("0:4@10")]).check(shape)
    with pytest.raises(ValueError, match="warm-up"):
        RunConfig(cycles=1000, warmup=1000).check(shape)
    with pytest.raises(ValueError, match="frame-bytes"):
        RunConfig(frame_bytes=59).check(shape)


@pytest.mark.parametrize(
    "args",
    [
        ["--lb", "pfc"],
        ["--pattern", "nosuch"],
        ["--cycles", "ten"],
        ["--frame-bytes", "20"],
        ["--fail-uplink", "1-2@5"],
        ["--fail-uplink", "9:0@5"],
        ["--control-loss", "1.5"],
        ["--hash-seeds", "0"],
        ["--leaves", "1"],
        ["--jobs", "0"],
        ["--from-json", "saved.json"],
        ["--write-doc", "--record", "x"],
    ],
)
def test_bad_options_exit_2_with_one_line(args, tmp_path):
    proc = subprocess.run(GSE + ["fabric", *args], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gse: error:"), proc.stderr
