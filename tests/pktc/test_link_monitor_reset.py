"""Link monitor: spurious probe_rx and random resets (a short interval, for speed)."""

from opengse.sim.runner import run_cocotb


def test_link_monitor_spurious_and_resets():
    run_cocotb(
        "link_monitor",
        {"data_width": 64, "links": 4, "interval": 64, "miss_limit": 2, "rejoin": 2},
        "cocotb_link_monitor_reset",
        cxx_opt="-O0",
    )
