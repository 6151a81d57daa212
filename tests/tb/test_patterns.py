"""sim/patterns.py: every pattern's tables have the property that names it (plain Python)."""

import pytest

from opengse.sim.patterns import PATTERNS, leaf_of, pattern_tables

SHAPES = [(4, 4), (2, 8), (8, 2), (3, 5)]


def dst_sets(tables):
    return [sorted(set(t.table)) for t in tables]


@pytest.mark.parametrize("leaves,hosts", SHAPES)
def test_permutations(leaves, hosts):
    n = leaves * hosts
    for name in ("permutation", "inter_leaf", "leaf_shift", "ring"):
        for seed in range(5):
            tables = pattern_tables(name, leaves, hosts, seed=seed, flows_per_dst=3)
            dsts = [t.table[0] for t in tables]
            assert sorted(dsts) == list(range(n)), f"{name}: not a permutation: {dsts}"
            assert all(len(t.table) == 3 and len(set(t.table)) == 1 for t in tables)
            assert all(d != h for h, d in enumerate(dsts)), f"{name}: a host sends to itself"
            if name != "permutation":
                assert all(leaf_of(d, hosts) != leaf_of(h, hosts) for h, d in enumerate(dsts)), (
                    f"{name}: a flow stays on its leaf: {dsts}"
                )


def test_ring_is_one_cycle():
    tables = pattern_tables("ring", 4, 4)
    h, seen = 0, set()
    while h not in seen:
        seen.add(h)
        h = tables[h].table[0]
    assert len(seen) == 16 and h == 0


def test_random_permutations_differ_by_seed():
    a = [t.table for t in pattern_tables("inter_leaf", 4, 4, seed=1)]
    b = [t.table for t in pattern_tables("inter_leaf", 4, 4, seed=2)]
    assert a != b


def test_all_to_all_and_uniform():
    for name in ("all_to_all", "uniform"):
        tables = pattern_tables(name, 4, 4)
        for h, t in enumerate(tables):
            assert sorted(t.table) == [d for d in range(16) if d != h]
            assert t.random == (name == "uniform")
    # in turn, each host's round starts at a different destination
    assert len({t.table[0] for t in pattern_tables("all_to_all", 4, 4)}) == 16


def test_incast():
    tables = pattern_tables("incast", 4, 4, incast=8)
    senders = [t.host for t in tables if t.enabled]
    assert len(senders) == 8 and all(t.table == [0] for t in tables if t.enabled)
    assert all(leaf_of(h, 4) != 0 for h in senders), "senders should be on other leaves first"


@pytest.mark.parametrize(
    "args,match",
    [
        (("nope",), "unknown pattern"),
        (("inter_leaf", 1, 4), "two leaves"),
        (("incast", 2, 2), "incast needs"),
        (("leaf_shift", 4, 4), None),
    ],
)
def test_bad_arguments(args, match):
    kwargs = {"shift": 4} if args[0] == "leaf_shift" else {}
    with pytest.raises(ValueError, match=match or "leaf_shift"):
        pattern_tables(*args, **kwargs)


def test_every_pattern_builds():
    for name in PATTERNS:
        assert len(pattern_tables(name, 4, 4)) == 16


def test_hist_percentile():
    from opengse.sim.traffic_model import hist_percentile

    hist = [0] * 8
    hist[2], hist[5], hist[7] = 50, 49, 1
    assert hist_percentile(hist, 4, 0.5) == 3 << 4  # the 50th of 100 is in bin 2
    assert hist_percentile(hist, 4, 0.99) == 6 << 4
    assert hist_percentile(hist, 4, 1.0) == 7 << 4  # overflow bin: its lower edge
    assert hist_percentile([0] * 8, 4, 0.5) is None
