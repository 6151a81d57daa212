"""The header, VOQ and reorder benches on a second simulator: the exported Verilog
run under Icarus Verilog (cocotb's ``icarus`` runner) with the same cocotb tests and
reference models as on Verilator. Skipped, saying why, where ``iverilog`` is not
installed (Debian package ``iverilog``; ``make icarus`` installs it where it can).

Each runs one cocotb test of its bench, the one with the most traffic (random
back-pressure, malformed frames where the block has them): Icarus is several times
slower than Verilator, and the bench's other tests run on Verilator. Any other bench,
or the whole of one, runs on Icarus with ``OPENGSE_SIM=icarus`` in the environment
(sim/runner.py)."""

import shutil
import sys
from pathlib import Path

import pytest

from opengse.sim.runner import run_cocotb

pytestmark = pytest.mark.skipif(
    shutil.which("iverilog") is None or shutil.which("vvp") is None,
    reason="Icarus Verilog is not installed (Debian package iverilog; `make icarus`)",
)

#: The VOQ bench's small buffer (tests/voq/test_voq.py SMALL).
VOQ_SMALL = dict(
    data_width=64,
    buffer_bytes=4096,
    cell_bytes=64,
    queues=8,
    tenants=4,
    queue_limit_cells=32,
    tenant_reserved_cells=4,
    tenant_limit_cells=40,
    alpha_log2=2,
    credit_width=16,
    credit_unit=1,
)

#: The header benches' 64-bit builds (test_header_uvm.py's, the soaks').
PARSER, TAGGER = {"data_width": 64, "strip": 1}, {"data_width": 64}

#: The reorder bench's configuration (tests/pktc/test_pktc.py REORDER).
REORDER = {"data_width": 64, "sources": 4, "window": 8, "slot_bytes": 1024, "timeout": 3000}


@pytest.mark.parametrize(
    "block,params,module,testcase",
    [
        pytest.param("parser", PARSER, "cocotb_parser", "test_parse_backpressure", id="parser"),
        pytest.param("tagger", TAGGER, "cocotb_tagger", "test_backpressure_and_malformed", id="tagger"),
        pytest.param("voq", VOQ_SMALL, "cocotb_voq", "test_concurrent_backpressure", id="voq"),
        pytest.param("reorder", REORDER, "cocotb_reorder", "test_random_mix_backpressure", id="reorder"),
    ],
)
def test_bench_on_icarus(block, params, module, testcase):
    # The cocotb modules live beside their own tests, found by name on sys.path.
    folder = str(Path(__file__).resolve().parents[1] / {"voq": "voq", "reorder": "pktc"}.get(block, "header"))
    if folder not in sys.path:
        sys.path.insert(0, folder)
    assert run_cocotb(block, params, module, testcase=testcase, simulator="icarus") >= 1
