import json
import sys
from pathlib import Path

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
