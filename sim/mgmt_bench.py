"""The management port's benchmark: ECP5 figures (Fmax, LUT4, FF, DP16KD) of
``ManagementPort`` at its defaults, out of context, with the project's flow
(:func:`opengse.platforms.ecp5.implement`).

    python -m opengse.sim.mgmt_bench [--seeds 1,2,3] [--json]
"""

import argparse
import json

from opengse.platforms.ecp5 import implement
from opengse.platforms.export import write_export
from opengse.rtl.mgmt.management_port import ManagementPort
from opengse.sim.runner import BUILD_ROOT

MODULE = "gse_mgmt_port"


def main(argv=None):
    p = argparse.ArgumentParser(prog="mgmt_bench", description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    seeds = tuple(int(s) for s in args.seeds.split(","))
    workdir = BUILD_ROOT / "bench" / "mgmt_port"
    v_path, _ = write_export(ManagementPort(), MODULE, {}, workdir)
    figures = implement(v_path, MODULE, workdir / "ecp5", seeds=seeds)
    figures["seeds"] = list(seeds)
    if args.json:
        print(json.dumps(figures, indent=2, default=str))
    else:
        for key in ("fmax_mhz", "fmax_seeds", "lut4", "ff", "dp16kd"):
            if key in figures:
                print(f"{key:12} {figures[key]}")
        for key, value in figures.items():
            if key not in ("fmax_mhz", "fmax_seeds", "lut4", "ff", "dp16kd", "critical"):
                print(f"{key:12} {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
