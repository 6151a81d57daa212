"""Which benchmark measures which block: ``gse bench BLOCK`` and ``gse run`` look here.

A bench is called as ``bench(seeds=(1, 2, 3), pnr=True)`` and returns a dict of
figures (:mod:`opengse.sim.benchmark`). The gateware knows nothing of its benches;
this table is the one place that joins a catalog name to its bench.
"""

import importlib

__all__ = ["BENCHES", "bench_for"]

#: catalog block name -> (module of opengse.sim, function, positional arguments).
#: Blocks that share a bench (the PKTC pair, the two DGSQ blocks) share one entry.
BENCHES = {
    "tagger": ("bench_header", "bench", ("tagger",)),
    "parser": ("bench_header", "bench", ("parser",)),
    "voq": ("bench_voq", "bench", ()),
    "grant_arbiter": ("bench_dgsq", "bench", ()),
    "dgsq_manager": ("bench_dgsq", "bench", ()),
    "sprayer": ("bench_pktc", "bench", ()),
    "reorder": ("bench_pktc", "bench", ()),
    "traffic_gen": ("bench_tb", "bench", ("traffic_gen",)),
    "traffic_check": ("bench_tb", "bench", ("traffic_check",)),
    "fabric_link": ("bench_tb", "bench", ("fabric_link",)),
    "leaf": ("bench_leaf", "bench", ()),
}


def bench_for(block_name):
    """``(key, callable(seeds, pnr))`` for a block, or ``None`` when it has no bench.
    Blocks with the same key share one bench run."""
    entry = BENCHES.get(block_name)
    if entry is None:
        return None
    module, func, args = entry
    fn = getattr(importlib.import_module(f"opengse.sim.{module}"), func)
    return (module, func, args), (lambda seeds=(1, 2, 3), pnr=True: fn(*args, seeds=seeds, pnr=pnr))
