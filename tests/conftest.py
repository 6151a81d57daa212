import json
import resource
import sys
import time
from pathlib import Path

import pytest

# cocotb modules and test-only compositions live beside the tests.
sys.path.insert(0, str(Path(__file__).resolve().parent))

#: {test node id: seconds} of the regression's longest tests (tests/durations.json).
LONGEST = json.loads((Path(__file__).resolve().parent / "durations.json").read_text())["seconds"]


def pytest_collection_modifyitems(session, config, items):
    """Longest tests first (their measured seconds in tests/durations.json), the rest
    after them, interleaved by test folder (``tests/<subsystem>``): the first test of
    every folder, then the second of every folder, and so on. Under pytest-xdist
    (``-n``, with ``--maxschedchunk 1`` from pyproject.toml, so a worker is handed one
    test at a time) a long test then never starts last and runs on while the other
    worker sits idle, and the tests of one folder, which often share one Verilator
    build, are not handed to both workers at once (the second would wait on the
    first's build lock); every worker sorts the same way, as xdist requires."""
    order = {id(item): i for i, item in enumerate(items)}
    folders = {}
    rank = {}
    for item in items:
        folder = item.nodeid.split("::", 1)[0].rsplit("/", 1)[0]
        folders.setdefault(folder, [])
        rank[id(item)] = (len(folders[folder]), list(folders).index(folder))
        folders[folder].append(item)
    items.sort(key=lambda item: (-LONGEST.get(item.nodeid, 0), rank[id(item)], order[id(item)]))


def _cpu_seconds():
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """One ``test`` line per test in ``build/sim/timings.jsonl``: its whole CPU, this
    process's and its children's (the exports, builds and runs add their own lines), so
    ``python -m opengse.sim.timings`` ranks every test, not only the cocotb ones."""
    from opengse.sim.runner import record_timing

    wall = time.monotonic()
    own, kids = _cpu_seconds()
    yield
    own2, kids2 = _cpu_seconds()
    record_timing(
        {
            "test": item.nodeid,
            "block": "",
            "dir": "",
            "phase": "test",
            "wall": round(time.monotonic() - wall, 2),
            "cpu": round(own2 - own, 2),
            "child_cpu": round(kids2 - kids, 2),
        }
    )
