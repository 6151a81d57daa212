"""Shared pieces of ``gse bench``: implement a block on ECP5, and time streams.

A block's bench function (:data:`opengse.sim.benches.BENCHES`) is called as
``bench(seeds=(1, 2, 3), pnr=True)`` and returns a dict of figures; with
``pnr=False`` it skips synthesis and place-and-route (the regression's smoke test
and quick looks), and the ECP5 figures are ``None``.
"""
from pathlib import Path

from .runner import BUILD_ROOT

__all__ = ["implement_block", "no_pnr_figures"]


import os as _os


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
    v_path, _ = write_export(spec.build(**params), spec.module, params, workdir,
                             description=spec.description,
                             keep_modules=spec.kept_modules(**params))
    timeout = int(_os.environ.get("OPENGSE_PNR_TIMEOUT", "0")) or None
    figures = implement(v_path, spec.module, workdir / "ecp5", seeds=seeds, timeout=timeout)
    figures["module"] = spec.module
    figures["params"] = params
    return figures


def no_pnr_figures():
    return {"fmax_mhz": None, "luts": None, "ffs": None, "brams": None}
