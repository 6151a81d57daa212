"""Quality gates an integrator runs on an export, per block (one export each):

* it is self-contained for Verilator: a plain ``verilator --lint-only`` (default
  warnings) given only the export's files — the module's ``.v`` and the ``.vlt`` waiver
  file its manifest names — prints no warning;
* it compiles and elaborates in a second simulator, Icarus Verilog (Debian package
  ``iverilog``; ``make install`` installs it where it can, and without it this part is
  skipped with that message).
"""
import json
import shutil
import subprocess

import pytest

from opengse.platforms.export import write_export
from opengse.platforms.tools import tool_env
from opengse.rtl.catalog import blocks

NAMES = sorted({spec.name for spec in blocks().values()})
ICARUS = shutil.which("iverilog")


@pytest.mark.parametrize("name", NAMES)
def test_export_gates(name, tmp_path):
    tool_env()
    spec = blocks()[name]
    params = dict(spec.params)
    v_path, j_path = write_export(spec.build(**params), spec.module, params, tmp_path,
                                  description=spec.description,
                                  keep_modules=spec.kept_modules(**params))
    waivers = tmp_path / json.loads(j_path.read_text())["verilator_waivers"]
    assert waivers.exists(), "the manifest names a waiver file that was not written"
    proc = subprocess.run(["verilator", "--lint-only", "--top-module", spec.module,
                           str(waivers), str(v_path)],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "%Warning" not in out, out[-4000:]

    if ICARUS is None:
        pytest.skip("Icarus Verilog (Debian package iverilog) is not installed: "
                    "the Verilator gate passed, the Icarus gate was not run")
    vvp = tmp_path / "a.vvp"
    proc = subprocess.run([ICARUS, "-g2005", "-s", spec.module, "-o", str(vvp), str(v_path)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"iverilog failed on {spec.module}:\n" \
                                 + (proc.stdout + proc.stderr)[-4000:]
    run = subprocess.run(["vvp", "-n", str(vvp)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
