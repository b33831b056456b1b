"""What a sample of the ``statistics`` results plug-in costs a GPU run, measured.

    python benchmarks/statistics_cost.py [--size 256] [--steps 400] [--json OUT.json]
        [--paths kernel,arrays,populations] [--cases NAME,...]

Each case runs through a Solver (fp32 arithmetic) without results plug-ins and with
``statistics`` sampling every ``every`` steps, timed after a warm-up; a sample costs the
difference over the samples, given in ms and in steps of the same run. Cases (a periodic box):
D3Q19 LBM BGK fp32, D3Q27 cumulant K17 with 16-bit populations (the sphere's set-up), and
D3Q19 BGK with 16-bit populations in place (AA: the samples alternate between the layouts
after even and odd steps) and pushed; the last two also in a closed box with a moving lid.
``--paths``, in the same process: ``kernel``, what a run takes (the sums in one kernel,
``statistics_kernel.py``; the fields of 16-bit states by ``fields16``);
``arrays``, the sums by CuPy array operations (what pieces past 2^31 nodes take, and every
sample before session 24); ``populations``, the fields of 16-bit states summed a population
at a time (what pull took before session 23, AA and push before session 24, and their cavity
cases, past a moving lid, before session 27; states of 2^31 nodes or more still take it).
``--cases``: a subset of the cases, by name.
"""

from __future__ import annotations

import argparse
import contextlib
import json

from thelma_py import registry
from thelma_py.modules.compute.lbm import cuda as lbm_cuda
from thelma_py.modules.results import statistics as statistics_plugin
from thelma_py.solver import compose
from thelma_py.tools.bench_cases import geometry_for
from thelma_py.tools.bench_output import _timed_run
from thelma_py.tools.flows import K17

CASES = {  # lattice, compute options, every, box (bench_cases.geometry_for)
    "D3Q19 lbm bgk fp32": ("D3Q19", {"collision": "bgk"}, 1, "periodic"),
    "D3Q27 cumulant-k17 fp16s": ("D3Q27", {"collision": K17, "store": "fp16s"}, 1, "periodic"),
    "D3Q19 lbm bgk fp16s aa": ("D3Q19", {"collision": "bgk", "store": "fp16s",
                                         "streaming": "aa"}, 1, "periodic"),
    "D3Q19 lbm bgk fp16s push": ("D3Q19", {"collision": "bgk", "store": "fp16s",
                                           "streaming": "push"}, 1, "periodic"),
    "D3Q19 lbm bgk fp16s aa cavity": ("D3Q19", {"collision": "bgk", "store": "fp16s",
                                                "streaming": "aa"}, 1, "cavity"),
    "D3Q19 lbm bgk fp16s push cavity": ("D3Q19", {"collision": "bgk", "store": "fp16s",
                                                  "streaming": "push"}, 1, "cavity"),
}
"""The cavity's lid moves: its push and odd AA samples take Ladd's term off at the lid's links
(the streamed fields kernel past moving walls, session 27; before, a population at a time)."""


@contextlib.contextmanager
def path_taken(path: str):
    """The patches of ``path`` (see the module docstring), undone on leaving."""
    saved = statistics_plugin.MAX_SAMPLE_NODES, lbm_cuda.MAX_FIELDS_NODES
    if path == "arrays":
        statistics_plugin.MAX_SAMPLE_NODES = 0
    elif path == "populations":
        lbm_cuda.MAX_FIELDS_NODES = 0
    try:
        yield
    finally:
        statistics_plugin.MAX_SAMPLE_NODES, lbm_cuda.MAX_FIELDS_NODES = saved


def solver(lattice: str, options: dict, size: int, results: list, box: str = "periodic"):
    compute = registry.create("compute", "lbm", nu=0.001, **options)
    return compose(lattice, geometry_for(box, size, 3), compute, results=results,
                   device="cuda", precision="float32", check_every=0)


def measure(size: int, steps: int, paths: tuple[str, ...] = ("kernel",),
            cases: tuple[str, ...] = tuple(CASES)) -> list[dict]:
    rows = []
    for name in cases:
        lattice, options, every, box = CASES[name]
        plain = _timed_run(solver(lattice, options, size, [], box), steps)
        for path in paths:
            if path == "populations" and "store" not in options:
                continue  # fp32 engines keep ρ and u
            with path_taken(path):
                sampler = registry.create("results", "statistics", every=every)
                sampled = _timed_run(solver(lattice, options, size, [sampler], box), steps)
            step_ms, sample_ms = 1e3 * plain / steps, 1e3 * (sampled - plain) / (steps / every)
            rows.append({"case": name, "path": path, "size": size, "steps": steps,
                         "every": every, "step_ms": step_ms, "sample_ms": sample_ms,
                         "sample_in_steps": sample_ms / step_ms,
                         "mlups": size ** 3 * steps / plain / 1e6})
            print(f"{name}, {size}^3, by {path}: a step {step_ms:.3f} ms "
                  f"({rows[-1]['mlups']:,.0f} MLUPS), a sample {sample_ms:.3f} ms = "
                  f"{sample_ms / step_ms:.2f} steps")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--paths", default="kernel",
                        help="any of kernel, arrays, populations (comma-separated)")
    parser.add_argument("--cases", help="a comma-separated subset of: " + ", ".join(CASES))
    args = parser.parse_args()
    paths = tuple(args.paths.split(","))
    if not set(paths) <= {"kernel", "arrays", "populations"}:
        parser.error(f"--paths takes kernel, arrays, populations; got {args.paths!r}")
    cases = tuple(args.cases.split(",")) if args.cases else tuple(CASES)
    if not set(cases) <= set(CASES):
        parser.error(f"--cases takes {', '.join(CASES)}; got {args.cases!r}")
    rows = measure(args.size, args.steps, paths, cases)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=1)


if __name__ == "__main__":
    main()
