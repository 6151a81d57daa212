"""Parser soak (opengse.sim.soak): >= 1e4 hostile frames in the default regression,
>= 1e5 under -m slow; OPENGSE_SOAK_N overrides both."""

import pytest

from opengse.sim.runner import run_cocotb
from opengse.sim.soak import soak_count, soak_env, soak_time_limit_ms


def _run(data_width, strip, n):
    run_cocotb(
        "parser",
        {"data_width": data_width, "strip": strip},
        "cocotb_parser_soak",
        testcase="test_parser_soak",
        extra_env=soak_env(n),
        sim_time_limit_ms=soak_time_limit_ms(n, 60),
    )


def test_parser_soak():
    """Default regression: strip=1 only (about 40 s of CPU at 1e4 frames)."""
    _run(64, 1, soak_count())


@pytest.mark.slow
@pytest.mark.timeout(14400)  # 1e5 inputs: about 10x the 1e4 run, which took up to 540 s at load 12
@pytest.mark.parametrize("strip", [0, 1])
def test_parser_soak_slow(strip):
    _run(64, strip, soak_count(slow=True))


def test_stuck_consumer_fails_naming_the_port():
    """A DUT that stops (m_axis_tready held low) fails the soak within its watchdog
    limit, with a message naming the port and what was waited for; not a hang."""
    with pytest.raises(AssertionError) as err:
        run_cocotb(
            "parser",
            {"data_width": 64, "strip": 1},
            "cocotb_parser_soak",
            testcase="test_parser_soak_stuck",
            sim_time_limit_ms=5,
        )
    first = str(err.value).splitlines()[0]
    assert "WaitTimeout" in first and "no beat produced on m_axis for 2000 clocks" in first, first


def test_soak_header_matches_scapy():
    """The soak's fast GSE header builder writes the bytes scapy's GSE layer does."""
    import random

    from opengse.sim.gse_scapy import GSE
    from opengse.sim.soak import HostileFrames, gse_header

    gen = HostileFrames(random.Random(5), 8)
    for _ in range(200):
        f = gen.gse_fields(len=gen.rng.randrange(65536), next_type=gen.rng.randrange(65536))
        f["ver"] = gen.rng.randrange(16)
        f["type"] = gen.rng.randrange(16)
        assert gse_header(**f) == bytes(GSE(**f)), f
