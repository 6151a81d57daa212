"""Run cocotb tests on Verilator against an exported block, from pytest.

:func:`run_cocotb` exports the block through :mod:`opengse.rtl.catalog` (the same
Verilog ``gse export`` writes), builds it once per parameter set in its own
directory under ``build/sim`` (cached: Verilator skips identical inputs, make is
incremental), and runs one cocotb test module against it. It is safe under
``pytest -n auto``: a file lock serialises the export and build of each
directory, and every test run gets its own run directory and results file.

Waveforms: set ``WAVES=1`` (``dump.vcd`` lands in the run directory).
Parameters reach the cocotb module as JSON in ``OPENGSE_PARAMS``; read them
with :func:`test_params`.
"""
import fcntl
import hashlib
import json
import os
import uuid
from contextlib import contextmanager
from pathlib import Path

from opengse.platforms.tools import tool_env

__all__ = ["BUILD_ROOT", "tool_env", "build_block", "run_cocotb", "test_params"]

#: Where builds go: ``$OPENGSE_BUILD_DIR``, else ``build/`` in the working directory (an
#: installed package has no checkout to build in).
BUILD_ROOT = Path(os.environ.get("OPENGSE_BUILD_DIR", Path.cwd() / "build")).resolve()


@contextmanager
def _locked(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _param_dir(block, params, waves):
    key = json.dumps(params, sort_keys=True)
    tag = "-".join(f"{k}{v}" for k, v in sorted(params.items()))[:80]
    digest = hashlib.sha1(key.encode()).hexdigest()[:8]
    return BUILD_ROOT / "sim" / f"{block}-{tag}-{digest}{'-waves' if waves else ''}"


def build_block(block, params=None, *, waves=False, build_args=()):
    """Export and Verilator-build ``block`` (a catalog name, or a :class:`BlockSpec` for
    test-only compositions); return ``(runner, build_dir, module, params)``."""
    from cocotb_tools.runner import get_runner
    from opengse.rtl.catalog import BlockSpec, get_block, resolve_params
    from opengse.platforms.export import write_export

    tool_env()
    spec = block if isinstance(block, BlockSpec) else get_block(block)
    params = resolve_params(spec, params or {})
    build_dir = _param_dir(spec.name, params, waves)
    with _locked(build_dir.with_suffix(".lock")):
        v_path, _ = write_export(spec.build(**params), spec.module, params, build_dir / "rtl",
                                 description=spec.description,
                                 keep_modules=spec.kept_modules(**params))
        runner = get_runner("verilator")
        runner.build(
            sources=[v_path],
            hdl_toplevel=spec.module,
            build_dir=build_dir,
            build_args=["-Wno-fatal", "-Wno-lint", "-Wno-style", "--x-assign", "unique",
                        "--x-initial", "unique", *build_args]
            + (["--trace-structs"] if waves else []),   # VCD: FST needs lz4 headers
            waves=waves,
            log_file=build_dir / "build.log",
        )
    return runner, build_dir, spec.module, params


def run_cocotb(block, params=None, test_module=None, *, testcase=None, seed=None,
               extra_env=None, build_args=()):
    """Build ``block`` with ``params`` and run cocotb ``test_module`` on it.

    Raises ``AssertionError`` when a test fails or none ran."""
    from cocotb_tools.check_results import get_results

    waves = os.environ.get("WAVES", "") not in ("", "0")
    runner, build_dir, module, params = build_block(block, params, waves=waves,
                                                    build_args=build_args)
    run_dir = build_dir / "runs" / f"{test_module}-{uuid.uuid4().hex[:8]}"
    run_dir.mkdir(parents=True)
    env = {
        "OPENGSE_PARAMS": json.dumps(params),
        # cocotb modules are found on this process's sys.path (cocotb's runner passes
        # it on): pytest puts each test folder there, the benches are in opengse.sim.
    }
    env.update(extra_env or {})
    try:
        xml = _run_test(runner,
            test_module=test_module,
            hdl_toplevel=module,
            testcase=testcase,
            seed=seed,
            build_dir=build_dir,
            test_dir=run_dir,
            results_xml=str(run_dir / "results.xml"),
            extra_env=env,
            waves=waves,
            log_file=run_dir / "sim.log",
        )
    except SystemExit:      # the runner exits when a test fails; report it as a failure
        xml = run_dir / "results.xml"
    total, failed = get_results(Path(xml)) if Path(xml).exists() else (0, 0)
    log = run_dir / "sim.log"
    if total == 0 or failed:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-80:]) if log.exists() else ""
        raise AssertionError(f"{failed} of {total} cocotb tests failed (0 ran counts as a failure); "
                             f"log: {log}\n{tail}")
    return total


def _run_test(runner, **kwargs):
    return runner.test(**kwargs)


def test_params():
    """Inside a cocotb test: the block parameters this run was built with."""
    return json.loads(os.environ.get("OPENGSE_PARAMS", "{}"))


test_params.__test__ = False   # not a pytest test
