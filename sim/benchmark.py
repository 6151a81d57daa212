"""Shared pieces of ``gse bench``: implement a block on ECP5, and judge figures
against their targets.

A block's bench function (:data:`opengse.sim.benches.BENCHES`) is called as
``bench(seeds=(1, 2, 3), pnr=True)`` and returns a dict of figures; with
``pnr=False`` it skips synthesis and place-and-route (the regression's smoke test
and quick looks), and the ECP5 figures are ``None``.

Verdicts (:func:`verdict`): a bench's ``note`` says "meets the targets" only when
every target figure was measured and met. A figure that was not measured (``None``:
``--no-pnr``, a place-and-route timeout) or was measured on fewer seeds than asked
makes it "targets not verified: ..."; a miss makes it "misses the targets: ...".
``meets_targets`` is ``True``, ``False`` (a miss) or ``None`` (nothing missed, but
not everything measured).
"""

import os as _os

from .runner import BUILD_ROOT

__all__ = [
    "implement_block",
    "no_pnr_figures",
    "Target",
    "fmax_target",
    "verdict",
    "FMAX_TARGET_MHZ",
    "LINE_RATE",
]

#: The brief's targets: every block on ECP5 at 64 bits, and 1 beat per clock for
#: every frame size of 60 B and more with no back-pressure.
FMAX_TARGET_MHZ = 156.25
LINE_RATE = 1.0


def implement_block(block, params=None, *, seeds=(1, 2, 3)):
    """Export ``block`` and implement it out-of-context on ECP5; return its figures.

    Each place-and-route run is bounded by ``OPENGSE_PNR_TIMEOUT`` seconds if set
    (``gse --pnr-timeout``): a seed that does not finish is listed in ``fmax_timeouts``."""
    from opengse.platforms.ecp5 import implement
    from opengse.rtl.catalog import get_block, resolve_params
    from opengse.platforms.export import write_export

    spec = get_block(block)
    params = resolve_params(spec, params or {})
    tag = "-".join(f"{k}{v}" for k, v in sorted(params.items()))[:80]
    workdir = BUILD_ROOT / "bench" / f"{spec.name}-{tag}"
    v_path, _ = write_export(
        spec.build(**params),
        spec.module,
        params,
        workdir,
        description=spec.description,
        keep_modules=spec.kept_modules(**params),
    )
    timeout = int(_os.environ.get("OPENGSE_PNR_TIMEOUT", "0")) or None
    figures = implement(v_path, spec.module, workdir / "ecp5", seeds=seeds, timeout=timeout)
    figures["seeds"] = list(seeds)
    figures["module"] = spec.module
    figures["params"] = params
    return figures


def no_pnr_figures():
    """The ECP5 figures of a bench run with ``pnr=False``: none measured."""
    return {
        "fmax_mhz": None,
        "luts": None,
        "ffs": None,
        "brams": None,
        "pnr": "place-and-route skipped: --no-pnr",
    }


class Target:
    """One target figure: ``label`` (as printed), the ``value`` measured (``None``: not
    measured), the ``target`` and whether the value must be at ``least`` or at most
    the target; ``why`` says why a value is missing or incomplete (e.g. which seeds
    timed out)."""

    def __init__(self, label, value, target, least=True, why=None):
        self.label, self.value, self.target, self.least, self.why = label, value, target, least, why

    def met(self):
        if self.value is None:
            return None
        return self.value >= self.target if self.least else self.value <= self.target


def fmax_target(label, figures, target=FMAX_TARGET_MHZ):
    """The Fmax :class:`Target` of ``implement_block`` (or :func:`no_pnr_figures`)
    ``figures``: not measured without place-and-route or when every seed timed out;
    incomplete when some seeds timed out (their median is not the median of the
    seeds asked for)."""
    fmax = figures.get("fmax_mhz")
    timeouts = figures.get("fmax_timeouts") or []
    if fmax is None:
        why = (
            f"place-and-route timed out on seeds {', '.join(map(str, timeouts))}"
            if timeouts
            else figures.get("pnr", "no place-and-route figures")
        )
        return Target(label, None, target, why=why)
    if timeouts:
        done = ", ".join(map(str, [s for s in figures.get("seeds", []) if s not in timeouts])) or "?"
        return Target(
            label,
            fmax,
            target,
            why=f"median of seeds {done} only: seeds {', '.join(map(str, timeouts))} timed out",
        )
    return Target(label, fmax, target)


def verdict(targets):
    """``(note, meets_targets)`` for a list of :class:`Target`."""
    misses, unverified = [], []
    for t in targets:
        met = t.met()
        if met is False:
            cmp = "<" if t.least else ">"
            misses.append(f"{t.label} {t.value:g} {cmp} {t.target:g}")
        elif met is None:
            unverified.append(f"{t.label} not measured ({t.why})" if t.why else f"{t.label} not measured")
        elif t.why:
            unverified.append(f"{t.label} {t.value:g} from an incomplete run ({t.why})")
    if misses:
        return "misses the targets: " + "; ".join(misses + unverified), False
    if unverified:
        return "targets not verified: " + "; ".join(unverified), None
    return "meets the targets", True
