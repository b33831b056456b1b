"""Does 16-bit population storage move the sphere's drag at Re 10 000? The same small K17 run
(d = 12, U = 0.08, box 6 d × 4 d × 4 d, both faces characteristic, 4 + 8 d/U) on the CPU with
fp32, fp16s and fp16c populations (docs/validation/flows.md, section 3, session 20; about 17
minutes on two cores):

    python benchmarks/sphere_store_cpu.py OUT.json
"""

from __future__ import annotations

import json
import sys
import time
import warnings

from thelma_py.tools.flows import sphere_run


def main() -> None:
    warnings.simplefilter("ignore")  # τ near ½ and Ma 0.14: expected here
    out = {}
    for store in ("fp32", "fp16s", "fp16c"):
        start = time.perf_counter()
        r = sphere_run(10000, "cumulant-k17", d=12, u=0.08, transient=4, average=8,
                       device="cpu", length=6, width=4, upstream=2, inlet="characteristic",
                       outlet="characteristic", kick=0.2, store=store, stations=(1, 2, 3))
        out[store] = {"c_D": r["c_D"], "mlups": r["mlups"],
                      "seconds": time.perf_counter() - start,
                      "step": r["series"]["step"], "c_D_series": r["series"]["c_D"]}
        print(f"{store}: c_D {r['c_D']:.5f} over 4-12 d/U, {r['mlups']:.2f} MLUPS", flush=True)
    with open(sys.argv[1], "w") as file:
        json.dump(out, file, indent=1)


if __name__ == "__main__":
    main()
