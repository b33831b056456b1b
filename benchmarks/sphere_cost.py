"""Where a sphere run's time goes on a GPU, measured: the same box stepped as a periodic box,
with its open faces, with the sphere and its force history, and as the case runs (with the
wake probes).

    python benchmarks/sphere_cost.py [--d 48] [--box 10,5,3] [--steps 400] [--json OUT.json]
        [--device cuda]

The sphere of ``cases/sphere_wake.py`` at Re 10 000 (K17, 16-bit populations, U = 0.1, both
faces characteristic: the set-up of docs/validation/flows.md, section 3), in a box of
``--box`` = length, width, upstream in d. Each variant runs through a Solver as the case does,
timed after a warm-up (:func:`thelma_py.tools.bench_output._timed_run`); MLUPS count every
node of the box, and each variant's cost is its time over the periodic box's.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import thelma_py as tp
from thelma_py.cases import sphere_wake
from thelma_py.modules.compute.lbm.collisions.cumulant import K17
from thelma_py.tools.bench_output import _timed_run

SETUP = {"reynolds": 10_000.0, "u": 0.1, "collision": K17, "lattice": "D3Q27",
         "store": "fp16s", "inlet": "characteristic", "outlet": "characteristic",
         "precision": "float32"}
"""The case as the Re 10 000 runs of flows.md take it."""


def _box(d: int, length: float, width: float, open_faces: bool, device: str) -> tp.Solver:
    """The case's box without the sphere: periodic, or with its two characteristic faces."""
    shape = (round(length * d), round(width * d), round(width * d))
    geometry = tp.geometry.Geometry(shape, periodic=(not open_faces, True, True))
    if open_faces:
        velocity = (SETUP["u"], 0.0, 0.0)
        geometry.inlet("-x", velocity=velocity, kind="characteristic")
        geometry.inlet("+x", velocity=velocity, kind="characteristic")
    compute = tp.plugin("compute", "lbm", nu=SETUP["u"] * d / SETUP["reynolds"],
                        collision=K17, store=SETUP["store"])
    init = tp.plugin("init", "equilibrium", rho=1.0, u=(SETUP["u"], 0.0, 0.0))
    return tp.compose(SETUP["lattice"], geometry, compute, init=init, device=device,
                      precision=SETUP["precision"])


def variants(d: int, length: float, width: float, upstream: float, device: str) -> dict:
    """Name -> a function building that variant's solver."""
    case = {"d": d, "length": length, "width": width, "upstream": upstream, "device": device,
            **SETUP}
    return {
        "periodic box": lambda: _box(d, length, width, False, device),
        "open faces": lambda: _box(d, length, width, True, device),
        "sphere and forces": lambda: sphere_wake.build(**case, probes=False),
        "as run (with probes)": lambda: sphere_wake.build(**case),
    }


def measure(d: int, box: tuple[float, float, float], steps: int,
            device: str = "cuda") -> list[dict]:
    rows, base = [], None
    for name, build in variants(d, *box, device).items():
        solver = build()
        nodes = solver.tags.tags.size
        seconds = _timed_run(solver, steps)
        base = base or seconds
        rows.append({"variant": name, "d": d, "box": list(box), "nodes": int(nodes),
                     "steps": steps, "step_ms": 1e3 * seconds / steps,
                     "mlups": nodes * steps / seconds / 1e6, "of_periodic": base / seconds})
        print(f"{name:<22} {rows[-1]['step_ms']:7.3f} ms a step, {rows[-1]['mlups']:8,.0f} "
              f"MLUPS, {rows[-1]['of_periodic']:.3f} of the periodic box's rate", flush=True)
        del solver
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=48)
    parser.add_argument("--box", default="10,5,3", help="length, width, upstream in d")
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--device", default="cuda", help="cuda, or cpu for a smoke run")
    args = parser.parse_args(argv)
    box = tuple(float(v) for v in args.box.split(","))
    rows = measure(args.d, box, args.steps, args.device)
    if args.json:
        import cupy

        from thelma_py.tools.bench_cases import environment, save

        save(args.json, {**environment(cupy), "variants": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
