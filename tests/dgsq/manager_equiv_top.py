"""Test-only top: the DGSQ manager of a reference commit and today's, side by side.

Both managers get the same inputs every clock; every output of today's (``ready`` of
the inputs, ``valid`` and every payload field of the outputs, ``ctx_used``, every
counter) is compared with the reference's, every clock, payloads included while not
valid. ``mismatch`` is 1 in a clock where any differs; ``neq`` has one bit per compared
output, in the order of :func:`compared_names`. The top's other ports are today's
manager's (its outputs are today's), so a bench written for the manager drives it.

The reference is the gateware tree (``rtl/``) at :data:`REFERENCE_COMMIT`, extracted
with ``git archive`` into a package of its own. Fields renamed since (:data:`RENAMES`,
none at today's reference) are compared under their old names; fields that are new
have no counterpart and are checked by the bench.

``mutation`` (a parameter; 0 = none) builds today's manager from a copy of today's tree
with one deliberate change of :data:`MUTATIONS` applied, to show the check catches a
change.
"""

import hashlib
import importlib
import inspect
import io
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from amaranth.hdl import Cat, Module
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

import opengse.rtl
from opengse.rtl.catalog import BlockSpec
from opengse.rtl.dgsq.manager import EXPORTS as MANAGER_EXPORTS

__all__ = [
    "DGSQManagerEquiv",
    "SPEC",
    "REFERENCE_COMMIT",
    "MUTATIONS",
    "compared_names",
    "reference_available",
]

#: The gateware tree the manager is compared with. It was 2713851 (main before the
#: manager was cut into parts, which the check proved cycle-equal); the manager then
#: changed by design (bfd6b2b: one GRANT, one container also with several GRANTs in one
#: release; 19bf2a2: a REQUEST may go out while a release is out), so the reference
#: moved to 796effb, the manager after both.
REFERENCE_COMMIT = "796effb5fc3f0f186a1275e00f05fb308f82a713"

#: Today's output -> the reference's (``port.field``) it must equal, for fields renamed
#: since the reference. None since 796effb. (Against 2713851 they were ``m_pkt.queue`` <-
#: ``qid``, ``m_rel.credit`` <- ``bytes``, and ``m_rel.dst_node`` <- ``m_req.dst_node``.)
RENAMES = {}

#: Deliberate changes, by number: (file under rtl/, text, replacement). Each would pass
#: the functional tests (the manager still works) but changes behaviour in time.
MUTATIONS = {
    # The timer sweep's slot every 64 clocks instead of 32.
    1: ("dgsq/manager/request_scheduler.py", "sweep_cnt = Signal(5)", "sweep_cnt = Signal(6)")
}

_REPO = Path(__file__).resolve().parents[2]
_BUILD = Path("build") / "equiv"


def _git(*args):
    return subprocess.run(["git", "-C", str(_REPO), *args], check=True, capture_output=True)


def reference_available():
    """``None`` if the reference commit can be read, else why not."""
    try:
        _git("cat-file", "-e", f"{REFERENCE_COMMIT}^{{commit}}")
    except (OSError, subprocess.CalledProcessError):
        return f"commit {REFERENCE_COMMIT[:12]} not in a git checkout at {_REPO}"
    return None


def _import_tree(package, fill):
    """Import ``package`` from build/equiv/<package>/, written by ``fill(dir)`` once."""
    root = (_BUILD / package).resolve()
    if not (root / package / "__init__.py").exists():
        tmp = root.with_suffix(".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        fill(tmp / package)
        shutil.rmtree(root, ignore_errors=True)
        tmp.rename(root)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return importlib.import_module(f"{package}.dgsq.manager")


def _reference_module():
    def fill(dest):
        tar = _git("archive", "--format=tar", REFERENCE_COMMIT, "rtl").stdout
        with tarfile.open(fileobj=io.BytesIO(tar)) as t:
            t.extractall(dest.parent, filter="data")
        (dest.parent / "rtl").rename(dest)

    return _import_tree(f"gse_ref_{REFERENCE_COMMIT[:12]}", fill)


def _mutant_module(k):
    """Today's tree with mutation ``k``, in a package named after the tree's contents
    (so a changed tree is copied anew)."""
    path, text, repl = MUTATIONS[k]
    tree = Path(opengse.rtl.__file__).parent
    digest = hashlib.sha1()
    for f in sorted(tree.rglob("*.py")):
        digest.update(str(f.relative_to(tree)).encode() + b"\0" + f.read_bytes())

    def fill(dest):
        shutil.copytree(tree, dest, ignore=shutil.ignore_patterns("__pycache__"))
        f = dest / path
        src = f.read_text()
        if src.count(text) != 1:
            raise RuntimeError(f"mutation {k}: {text!r} not found once in rtl/{path}")
        f.write_text(src.replace(text, repl))

    return _import_tree(f"gse_mutant_{k}_{digest.hexdigest()[:12]}", fill)


def _leaves(sig, obj):
    """``{"port.field": (flow, value)}`` of every leaf signal of a component."""
    out = {}
    for path, member, value in sig.flatten(obj):
        name = ".".join(p for p in path if p != "payload")
        if isinstance(value, data.View):
            for field, _ in data.Layout.cast(value.shape()):
                out[f"{name}.{field}"] = (member.flow, value[field])
        else:
            out[name] = (member.flow, value)
    return out


def _reference_params(params):
    """The parameters the reference's constructor knows (a parameter added after the
    reference commit is left out)."""
    known = inspect.signature(_reference_module().DGSQManager).parameters
    return {k: v for k, v in params.items() if k in known}


def _compared(dut, ref):
    ref_out = {n for n, (flow, _) in _leaves(ref.signature, ref).items() if flow == Out}
    return [
        n
        for n, (flow, _) in _leaves(dut.signature, dut).items()
        if flow == Out and RENAMES.get(n, n) in ref_out
    ]


def compared_names(params):
    """The compared outputs (today's names), in the order of ``neq``'s bits: every output
    of today's manager that the reference has too (under its old name)."""
    params = {k: v for k, v in params.items() if k != "mutation"}
    dut = MANAGER_EXPORTS[0].factory(**params)
    ref = _reference_module().DGSQManager(**_reference_params(params))
    dut._MustUse__silence = ref._MustUse__silence = True  # only their signatures
    return _compared(dut, ref)


class DGSQManagerEquiv(wiring.Component):
    def __init__(self, mutation=0, **params):
        self.params = params
        if mutation:
            self.dut = _mutant_module(mutation).DGSQManager(**params)
        else:
            self.dut = MANAGER_EXPORTS[0].factory(**params)
        self.ref = _reference_module().DGSQManager(**_reference_params(params))
        self.names = _compared(self.dut, self.ref)
        super().__init__({**self.dut.signature.members, "mismatch": Out(1), "neq": Out(len(self.names))})

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = self.dut
        m.submodules.ref = self.ref
        top = _leaves(self.signature, self)
        dut = _leaves(self.dut.signature, self.dut)
        ref = _leaves(self.ref.signature, self.ref)
        for name, (flow, value) in top.items():
            if name in ("mismatch", "neq"):
                continue
            if flow == In:
                m.d.comb += dut[name][1].eq(value)
                old = RENAMES.get(name, name)
                if old in ref:
                    m.d.comb += ref[old][1].eq(value)
            else:
                m.d.comb += value.eq(dut[name][1])
        for name, (flow, value) in ref.items():
            assert flow == Out or name in {RENAMES.get(n, n) for n in top}, (
                f"reference input {name} has no counterpart"
            )
        m.d.comb += self.neq.eq(Cat(dut[n][1] != ref[RENAMES.get(n, n)][1] for n in self.names))
        m.d.comb += self.mismatch.eq(self.neq.any())
        return m


SPEC = BlockSpec(
    name="dgsq_manager_equiv",
    module="gse_dgsq_manager_equiv",
    factory=DGSQManagerEquiv,
    params={**MANAGER_EXPORTS[0].params, "mutation": 0},
    description="test only: today's DGSQ manager against the reference commit's",
)
