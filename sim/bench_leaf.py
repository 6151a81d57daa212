"""``gse bench leaf``: the GSE leaf (rtl/tops/leaf/) on ECP5 LFE5UM5G-85F-8.

The reference fabric's leaf (4 host ports, 4 uplinks, 64-bit, 16 nodes, 64 KB VOQ and
egress buffers, reorder windows of 8 x 8 KB per source, stores sized for a 100-clock
link) needs far more block RAM than the device has, mostly in its reorder buffers
(16 sources x window x slot per host port). :func:`bench` therefore:

1. estimates the DP16KD count of each candidate configuration of :data:`CANDIDATES`
   from its memories (every ``amaranth.lib.memory.Memory`` of the elaborated design,
   mapped onto the DP16KD shapes 16384x1 .. 512x36, one copy per read port; memories of
   at most 32 words or 1024 bits go to LUTs/flip-flops), and
2. places and routes the first candidate that fits (the catalog's ``leaf``: a 4 x 4,
   64-bit leaf) with the project's flow (:func:`~opengse.sim.benchmark.implement_block`,
   nextpnr seeds 1-3, median Fmax), against the device totals.

The DP16KD estimate is only a first filter: LUT4s decide too (the blocks' own figures,
README, add up to about 25 000 LUT4 per host port at the reference sizes), and nextpnr
reports what the implemented candidate really uses.

Figures: ``candidates`` (name, parameters, estimated DP16KD, fits), ``implemented``
(the parameters placed and routed), ``fmax_mhz`` / ``fmax_seeds_mhz``, ``luts``,
``ffs``, ``brams`` with ``device_luts``, ``device_ffs``, ``device_brams``.
"""

from amaranth.hdl import Fragment, Shape
from amaranth.lib.memory import Memory

__all__ = ["bench", "memories", "dp16kd_estimate", "CANDIDATES", "DEVICE_TOTALS"]

#: LFE5UM5G-85F: LUT4s, flip-flops, DP16KD block RAMs.
DEVICE_TOTALS = {"luts": 83640, "ffs": 83640, "brams": 208}

_DP16KD_SHAPES = ((1, 16384), (2, 8192), (4, 4096), (9, 2048), (18, 1024), (36, 512))

#: From the reference fabric's leaf down to the catalog default (``gse export leaf``).
_REFERENCE = {
    "host_ports": 4,
    "uplinks": 4,
    "nodes": 16,
    "queues": 64,
    "voq_buffer_bytes": 65536,
    "egress_buffer_bytes": 65536,
    "reorder_window": 8,
    "container_bytes": 4096,
    "slot_bytes": 16384,
    "max_frame_bytes": 9216,
    "delay": 100,
    "host_store_bytes": 32768,
    "fab_store_bytes": 32768,
    "n_req": 64,
}
CANDIDATES = (
    ("4 x 4, fabric reference (9 KB frames, 64 KB buffers, 16 nodes)", _REFERENCE),
    ("4 x 4, catalog buffers (1.5 KB frames, 16 KB VOQ, 8 nodes)", {"host_ports": 4, "uplinks": 4}),
    ("2 x 2, catalog default", {}),
)


def memories(component):
    """``[(path, width, depth, read ports)]`` of every memory of ``component``."""
    out = []

    def walk(frag, path):
        for o in getattr(frag, "origins", None) or ():
            if isinstance(o, Memory):
                out.append((path, Shape.cast(o.shape).width, o.depth, len(o.read_ports)))
        for sub, name, *_ in frag.subfragments:
            walk(sub, f"{path}.{name}" if path else str(name))

    walk(Fragment.get(component, None), "")
    return out


def dp16kd_estimate(mems):
    """DP16KD blocks for ``mems`` (see the module docstring)."""
    total = 0
    for _path, width, depth, reads in mems:
        if depth <= 32 or width * depth <= 1024:
            continue
        best = min(-(-width // w) * -(-depth // d) for w, d in _DP16KD_SHAPES)
        total += best * max(1, reads)
    return total


def bench(seeds=(1, 2, 3), pnr=True):
    from opengse.rtl.catalog import get_block, resolve_params
    from opengse.sim.benchmark import implement_block, no_pnr_figures

    spec = get_block("leaf")
    figures = {"target_fmax_mhz": 156.25, "device": "LFE5UM5G-85F-8", "candidates": []}
    figures.update({f"device_{k}": v for k, v in DEVICE_TOTALS.items()})
    chosen = None
    for name, over in CANDIDATES:
        params = resolve_params(spec, over)
        component = spec.build(**params)
        brams = dp16kd_estimate(memories(component))
        fits = brams <= DEVICE_TOTALS["brams"]
        figures["candidates"].append({"name": name, "params": params, "dp16kd_estimate": brams, "fits": fits})
        if fits and chosen is None:
            chosen = over
    if chosen is None:
        raise RuntimeError("no leaf candidate fits LFE5UM5G-85F by the DP16KD estimate")
    figures["implemented"] = resolve_params(spec, chosen)
    if pnr:
        figures.update(implement_block("leaf", chosen, seeds=seeds))
    else:
        figures.update(no_pnr_figures())
    return figures
