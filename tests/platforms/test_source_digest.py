"""The cocotb builds' export cache (sim/runner.py ``_source_digest``): a test-only top's
own folder is part of the digest, so editing it re-exports (it once hashed the folder of
``BlockSpec.build``, rtl/catalog.py, and a changed top kept its stale Verilog)."""

import importlib.util

from opengse.rtl.catalog import BlockSpec
from opengse.sim.runner import _source_digest


def _spec(path):
    loader = importlib.util.spec_from_file_location("digest_top", path)
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    return BlockSpec(name="digest_top", module="digest_top", factory=module.top, params={})


def test_a_test_tops_folder_is_in_the_digest(tmp_path):
    top = tmp_path / "top_a.py"
    top.write_text("def top():\n    return None\n")
    before = _source_digest(_spec(top), {})
    assert _source_digest(_spec(top), {}) == before  # nothing changed: the cache holds
    (tmp_path / "helper.py").write_text("UPLINKS = 2\n")  # a file beside it
    assert _source_digest(_spec(top), {}) != before
