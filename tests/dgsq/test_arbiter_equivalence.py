"""Old against new: the GrantArbiter as it was before its split into parts, co-simulated
with today's on identical random traffic, every output compared every clock.

The reference is ``rtl/dgsq/arbiter.py`` (one ``elaborate()``) at :data:`REFERENCE`, the
last commit before the split, read with ``git show`` together with the three modules it
imports (catalog, GSE header constants, VOQRam), loaded as a package of its own
(``gse_reference``). Both are exported through the project's flow
(:mod:`opengse.platforms.export`): the reference as ``gse_grant_arbiter_ref`` (its slot
memories ``gse_grant_slot_ram_g_ref`` / ``_e_ref``), today's as the product's
``gse_grant_arbiter`` with its kept memories, and joined in a generated Verilog top
``gse_arbiter_equiv`` that feeds both the same inputs and sets one ``mismatch`` bit per
output port (payloads compared whether valid or not). Verilator builds it with every
register and memory word starting at 0 (``--x-initial 0``: the two copies of an
undefined memory start alike); cocotb (``cocotb_arbiter_equivalence``) drives REQUESTs,
arrivals (split into packets, late, lost, overrun, for unknown queues), weight writes,
egress room and random back-pressure on ``m_grant``, and fails at the first clock with
a mismatch, naming the outputs and both values.

``mutate`` builds today's arbiter with one deliberate change (:data:`MUTATIONS`), to
show that the check catches one. Slow tests (``-m slow``); as a command::

    .venv/bin/python tests/dgsq/test_arbiter_equivalence.py --n-req 64 --cycles 50000
    .venv/bin/python tests/dgsq/test_arbiter_equivalence.py --mutate round_robin
"""

import argparse
import importlib.util
import json
import subprocess
import sys
import types
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest

from opengse.platforms.export import export_verilog, port_map
from opengse.platforms.tools import tool_env
from opengse.rtl.dgsq import arbiter as arbiter_pkg
from opengse.sim.runner import BUILD_ROOT

#: The last commit with the one-piece arbiter (rtl/dgsq/arbiter.py).
REFERENCE = "27138512f5f1689a30d4a436f8082f8d80fb66f6"
REPO = Path(__file__).resolve().parents[2]
#: Reference module -> path at REFERENCE (what rtl/dgsq/arbiter.py imports, and itself).
REFERENCE_FILES = {
    "rtl.catalog": "rtl/catalog.py",
    "rtl.header.gse_header": "rtl/header/gse_header.py",
    "rtl.lib.sram": "rtl/lib/sram.py",
    "rtl.dgsq.arbiter": "rtl/dgsq/arbiter.py",
}
TOP = "gse_arbiter_equiv"
BUILD_ARGS = ("--output-split", "0", "--output-split-cfuncs", "0", "-CFLAGS", "-O1")

#: Parameters of the co-simulation: small grants and a short lease, so that the egress
#: room, lost containers and lease write-offs all come up within 50 000 clocks.
PARAMS = {"buffer_credits": 512, "grant_credits": 16, "max_inflight": 2, "n_tenants": 4, "lease_cycles": 512}


def _load_reference():
    """The reference arbiter module (``gse_reference.rtl.dgsq.arbiter``)."""
    name = "gse_reference.rtl.dgsq.arbiter"
    if name in sys.modules:
        return sys.modules[name]
    for pkg in (
        "gse_reference",
        "gse_reference.rtl",
        "gse_reference.rtl.dgsq",
        "gse_reference.rtl.header",
        "gse_reference.rtl.lib",
    ):
        mod = types.ModuleType(pkg)
        mod.__path__ = []
        sys.modules[pkg] = mod
    for mod_name, path in REFERENCE_FILES.items():
        try:
            source = subprocess.run(
                ["git", "-C", str(REPO), "show", f"{REFERENCE}:{path}"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        except (OSError, subprocess.CalledProcessError) as e:
            raise RuntimeError(
                f"cannot read {path} at {REFERENCE[:7]} (needs the git history of the checkout): {e}"
            ) from None
        full = f"gse_reference.{mod_name}"
        spec = importlib.util.spec_from_loader(full, loader=None, origin=f"{REFERENCE[:7]}:{path}")
        mod = importlib.util.module_from_spec(spec)
        mod.__package__ = full.rpartition(".")[0]
        sys.modules[full] = mod
        exec(compile(source, f"{REFERENCE[:7]}:{path}", "exec"), mod.__dict__)
    return sys.modules[name]


def _mutate_round_robin():
    # The pick ignores its round-robin pointer: always the lowest candidate slot.
    from opengse.rtl.dgsq.arbiter import bits, pick

    return pick, "rr_first", lambda above, all_: bits.onehot_first(all_)


def _mutate_lease_age():
    # Leases run out a quarter earlier (age 3 of 4 ticks).
    from opengse.rtl.dgsq.arbiter import lease

    return lease, "AGE_MAX", 3


#: Deliberate changes of today's arbiter (module, attribute, replacement).
MUTATIONS = {"round_robin": _mutate_round_robin, "lease_age": _mutate_lease_age}


@contextmanager
def _mutated(name):
    if name is None:
        yield
        return
    module, attr, value = MUTATIONS[name]()
    old = getattr(module, attr)
    setattr(module, attr, value)
    try:
        yield
    finally:
        setattr(module, attr, old)


def _wrapper(ports):
    """Verilog of the top joining ``gse_grant_arbiter_ref`` and ``gse_grant_arbiter``."""
    ins = [(n, len(v)) for n, (v, d) in ports.items() if d.name == "Input"]
    outs = [(n, len(v)) for n, (v, d) in ports.items() if d.name == "Output"]

    def decl(kind, n, w):
        return f"    {kind} {'' if w == 1 else f'[{w - 1}:0] '}{n}"

    lines = [f"module {TOP} ("]
    body = [decl("input", "clk", 1), decl("input", "rst", 1)]
    body += [decl("input", n, w) for n, w in ins]
    body += [decl("output", n, w) for n, w in outs]
    body += [decl("output", f"ref_{n}", w) for n, w in outs]
    body += [decl("output", "mismatch", len(outs))]
    lines.append(",\n".join(body) + "\n);")
    for inst, pre in (("gse_grant_arbiter_ref", "ref_"), ("gse_grant_arbiter", "")):
        conns = [".clk(clk)", ".rst(rst)"] + [f".{n}({n})" for n, _ in ins]
        conns += [f".{n}({pre}{n})" for n, _ in outs]
        lines.append(f"  {inst} {'u_ref' if pre else 'u_new'} (\n    " + ",\n    ".join(conns) + "\n  );")
    # mismatch[k]: output k differs (k in the order of OUTPUTS, bit 0 first).
    lines.append("  assign mismatch = {" + ", ".join(f"({n} != ref_{n})" for n, _ in reversed(outs)) + "};")
    lines.append("endmodule")
    return "\n".join(lines) + "\n", [n for n, _ in outs]


def build(n_req, mutate=None):
    """Export both arbiters and the joining top, Verilator-build them; return
    ``(runner, build_dir, params)``."""
    from cocotb_tools.runner import get_runner

    tool_env()
    params = {"n_req": n_req, **PARAMS}
    build_dir = BUILD_ROOT / "sim" / f"arbiter_equiv-n{n_req}-{mutate or 'none'}"
    rtl = build_dir / "rtl"
    rtl.mkdir(parents=True, exist_ok=True)
    ref = _load_reference()
    ref_v = export_verilog(
        ref.GrantArbiter(**params),
        "gse_grant_arbiter_ref",
        keep_modules={"ram_g": "gse_grant_slot_ram_g_ref", "ram_e": "gse_grant_slot_ram_e_ref"},
    )
    spec = arbiter_pkg.EXPORTS[0]
    with _mutated(mutate):
        new = spec.build(**params)
        new_v = export_verilog(new, spec.module, keep_modules=spec.kept_modules(**params))
    wrapper, outputs = _wrapper(port_map(new)[0])
    sources = []
    for name, text in (("ref.v", ref_v), ("new.v", new_v), (f"{TOP}.v", wrapper)):
        path = rtl / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        sources.append(path)
    runner = get_runner("verilator")
    runner.build(
        sources=sources,
        hdl_toplevel=TOP,
        build_dir=build_dir,
        build_args=[
            "-Wno-fatal",
            "-Wno-lint",
            "-Wno-style",
            "--x-assign",
            "0",
            "--x-initial",
            "0",
            *BUILD_ARGS,
        ],
        log_file=build_dir / "build.log",
    )
    return runner, build_dir, {**params, "outputs": outputs}


def cosimulate(n_req, cycles, seed=1, mutate=None):
    """Build and run; raises ``AssertionError`` (with the log tail) on a mismatch."""
    from cocotb_tools.check_results import get_results

    runner, build_dir, params = build(n_req, mutate)
    run_dir = build_dir / "runs" / uuid.uuid4().hex[:8]
    run_dir.mkdir(parents=True)
    env = {"OPENGSE_PARAMS": json.dumps(params), "EQUIV_CYCLES": str(cycles)}
    xml = run_dir / "results.xml"
    try:
        runner.test(
            test_module="cocotb_arbiter_equivalence",
            hdl_toplevel=TOP,
            seed=seed,
            build_dir=build_dir,
            test_dir=run_dir,
            results_xml=str(xml),
            extra_env=env,
            log_file=run_dir / "sim.log",
        )
    except SystemExit:
        pass
    total, failed = get_results(xml) if xml.exists() else (0, 0)
    log = run_dir / "sim.log"
    text = log.read_text(errors="replace") if log.exists() else ""
    if total == 0 or failed:
        tail = "\n".join(text.splitlines()[-40:])
        raise AssertionError(f"co-simulation failed (log {log}):\n{tail}")
    return text


@pytest.mark.slow
@pytest.mark.parametrize("n_req", [16, 64])
def test_split_arbiter_equals_reference(n_req):
    cosimulate(n_req, cycles=50_000)


@pytest.mark.slow
@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_equivalence_catches_a_mutation(mutation):
    with pytest.raises(AssertionError, match="outputs differ"):
        cosimulate(16, cycles=50_000, mutate=mutation)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-req", type=int, default=64)
    ap.add_argument("--cycles", type=int, default=50_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mutate", choices=sorted(MUTATIONS))
    args = ap.parse_args(argv)
    try:
        log = cosimulate(args.n_req, args.cycles, args.seed, args.mutate)
    except AssertionError as e:
        print(e)
        return 1
    print("\n".join(line for line in log.splitlines() if "EQUIV" in line))
    return 0


if __name__ == "__main__":
    sys.exit(main())
