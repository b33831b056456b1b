"""Where a sphere run's wall time goes besides the stepping: the forces and wake probes of
:mod:`cases.sphere_wake`, timed apart from the steps, then a cProfile of the whole run.

    python benchmarks/sphere_sampling_profile.py [--d 32] [--u 0.08] [--store fp16s]
        [--steps 4000] [--scheme cumulant-k17]

Prints the build's time and profile, the stepping time alone (the same solver, plug-ins not
due), the time per sample of each plug-in, and the costliest calls of the run by cumulative
time. Session 21 found 92-135 s of a 204-396 s
sphere run outside the stepping (docs/validation/flows.md, section 3, session 21).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time
import warnings

from thelma_py.cases import sphere_wake
from thelma_py.tools import flows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=32)
    parser.add_argument("--u", type=float, default=0.08)
    parser.add_argument("--store", default="fp16s")
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--scheme", default="cumulant-k17")
    parser.add_argument("--reynolds", type=float, default=10000.0)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--top", type=int, default=25, help="profile lines to print")
    args = parser.parse_args()
    lattice, params = flows.SPHERE_SCHEMES[args.scheme]
    build = cProfile.Profile()
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        build.enable()
        solver = sphere_wake.build(d=args.d, reynolds=args.reynolds, u=args.u, lattice=lattice,
                                   device=args.device, precision="float32", store=args.store,
                                   inlet="characteristic", outlet="characteristic",
                                   kick=0.2, stations=(1, 2, 3, 5, 7, 9), **params)
        build.disable()
    print(f"build: {time.perf_counter() - start:.1f} s for {solver.node_count / 1e6:.1f} M nodes")
    _print_profile(build, args.top)
    solver.run(100)  # compile and warm up
    sync = solver.backend.synchronize
    every = max(1, round(args.d / (16 * args.u)))  # as sphere_wake.build
    start = time.perf_counter()
    solver.step(every * 20)  # steps alone, no plug-in
    sync()
    stepping = (time.perf_counter() - start) / (every * 20)
    for plugin in solver.results:
        start = time.perf_counter()
        for _ in range(10):
            plugin(solver)
        sync()
        print(f"{type(plugin).__name__}: {(time.perf_counter() - start) / 10 * 1e3:.1f} ms a "
              f"sample, every {every} steps ({stepping * every * 1e3:.1f} ms of steps)")
    print(f"stepping {stepping * 1e3:.2f} ms a step, {solver.node_count / stepping / 1e6:.0f} "
          f"MLUPS; nodes {solver.node_count / 1e6:.1f} M")
    profile = cProfile.Profile()
    start = time.perf_counter()
    profile.enable()
    solver.run(args.steps)
    profile.disable()
    wall = time.perf_counter() - start
    print(f"run({args.steps}): {wall:.2f} s wall, stepping alone would take "
          f"{stepping * args.steps:.2f} s")
    _print_profile(profile, args.top)


def _print_profile(profile: cProfile.Profile, top: int) -> None:
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(top)
    print(text.getvalue())


if __name__ == "__main__":
    main()
