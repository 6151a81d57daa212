"""The fabric benchmark's pieces that need no model: the overhead arithmetic, the
percentile read, the run configuration's checks, and `gse fabric`'s bad options."""

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
    # 16 hosts, 16 uplinks: 1000 beats of 8 B carrying 7500 B per link -> 0.9375
    limit, per = measured_limit(
        {"up": (16, 16000, 120000), "host": (16, 15100, 120000), "idle": (4, 0, 0)}, 16
    )
    assert per["up"] == pytest.approx(120000 / 128000)
    assert limit == per["up"] and per["idle"] == float("inf")


def test_measured_limit_leaves_out_probes_of_loaded_links():
    # 2 hosts, 2 uplinks of 10000 busy beats, 80 of them PROBEs sent in idle intervals:
    # a link kept loaded sends none, so the limit is taken over 9920 beats
    classes = {"up": (2, 20000, 150000), "host": (2, 19000, 150000)}
    limit, per = measured_limit(classes, 2, probe_beats={"up": 160})
    assert per["up"] == pytest.approx(150000 / (19840 * 8))
    assert limit == per["up"] and per["host"] == pytest.approx(150000 / (19000 * 8))
    assert measured_limit(classes, 2)[1]["up"] == pytest.approx(150000 / (20000 * 8))


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
