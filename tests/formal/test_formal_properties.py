"""The fast formal properties of the registry pass (the regression's share of
``gse formal``; the slow ones run with ``gse formal --all``)."""

import pytest

from opengse.sim.properties import PROPERTIES, run_property
from opengse.sim.runner import BUILD_ROOT

FAST = sorted(n for n, p in PROPERTIES.items() if p.fast)


@pytest.mark.parametrize("name", FAST)
def test_property_passes(name):
    prop = PROPERTIES[name]
    res = run_property(prop, BUILD_ROOT / "formal" / f"test-{name}", timeout=600)
    assert res.passed, f"{name}: {res.status} after {res.seconds:.0f} s, see {res.workdir}\n{res.tail()}"


@pytest.mark.slow
@pytest.mark.timeout(3600)  # the arbiter's BMC took 493 s here, the reorder buffer's 306 s
@pytest.mark.parametrize("name", sorted(n for n, p in PROPERTIES.items() if not p.fast))
def test_slow_property_passes(name):
    prop = PROPERTIES[name]
    res = run_property(prop, BUILD_ROOT / "formal" / f"test-{name}", timeout=3000)
    assert res.passed, f"{name}: {res.status} after {res.seconds:.0f} s, see {res.workdir}\n{res.tail()}"
