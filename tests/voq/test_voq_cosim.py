"""The VOQ buffer in parts behaves as the single-``elaborate()`` buffer did, clock by clock.

tests/voq/voq_cosim.py co-simulates the buffer against ``rtl/`` of its
``GOLDEN_COMMIT`` on random traffic, comparing every shared output every clock. The
mutation tests prove the check can fail: each changes one part slightly (some only in
timing) and must be caught. Slow (Amaranth's simulator runs two buffers at a few
hundred clocks per second); they need the git history that holds the golden commit.
"""
import pytest

import voq_cosim
from opengse.sim.runner import BUILD_ROOT

#: Clocks of the identity runs (the brief asks for >= 50,000 on the test configuration).
CYCLES = {"small": 60000, "small64": 20000, "default": 20000}
#: Clocks a mutant gets before it counts as not caught.
MUTANT_CYCLES = 10000


def _golden():
    try:
        return voq_cosim.golden_voq_buffer(BUILD_ROOT)
    except FileNotFoundError as e:
        pytest.skip(f"needs commit {voq_cosim.GOLDEN_COMMIT} in the git history: {e}")


@pytest.mark.slow
@pytest.mark.parametrize("config", sorted(CYCLES))
def test_voq_cosim_identical(config):
    stats = voq_cosim.run(voq_cosim.CONFIGS[config], CYCLES[config], seed=1,
                          golden_cls=_golden())
    print(stats)
    # the traffic did exercise the buffer: packets through, releases, drops, resets
    assert stats["pkts_out"] > CYCLES[config] // 100, stats
    assert stats["releases"] > CYCLES[config] // 100, stats
    assert stats["resets"] >= 1, stats
    assert stats["drop_bad"] and stats["drop_full"] + stats["drop_dt"], stats


@pytest.mark.slow
@pytest.mark.parametrize("mutation", sorted(voq_cosim.MUTATIONS))
def test_voq_cosim_catches_mutation(mutation):
    with pytest.raises(voq_cosim.CosimError):
        voq_cosim.run(voq_cosim.CONFIGS["small"], MUTANT_CYCLES, seed=1,
                      new_cls=voq_cosim.mutant_voq_buffer(mutation), golden_cls=_golden())
