"""Link monitor, PROBEs only on idle links: a busy link is not probed and stays up, an
idle one is probed every interval, a link whose frames stop is probed again and goes
down if dead (a short interval, for speed)."""

from opengse.sim.runner import run_cocotb


def test_link_monitor_idle_only():
    run_cocotb(
        "link_monitor",
        {"data_width": 64, "links": 5, "interval": 64, "miss_limit": 2, "rejoin": 2, "idle_only": True},
        "cocotb_link_monitor_idle",
        cxx_opt="-O0",
    )
