"""Run one bench configuration for a few steps, for a profiler to watch (GPU only).

Usage on the device machine, for example::

    ncu --clock-control none -k regex:lbm_step --launch-skip 6 --launch-count 1 \\
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \\
        python3 benchmarks/profile_kernel.py --case cavity --size 256

Every option of :class:`thelma_py.tools.bench.BenchConfig` can be given (``--collision mrt``,
``--streaming aa``, ``--precision float64``, ``--block 256`` ...).
"""

from __future__ import annotations

import argparse

import attrs

from thelma_py.backend import select_backend
from thelma_py.tools.bench import BenchConfig, build_engine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for field in attrs.fields(BenchConfig):
        kind = int if field.type in ("int", int) else str
        if field.type in ("bool", bool):
            kind = int
        parser.add_argument(f"--{field.name.replace('_', '-')}", type=kind, default=field.default)
    parser.add_argument("--steps", type=int, default=12)
    args = vars(parser.parse_args())
    steps = args.pop("steps")
    config = BenchConfig(**args)
    backend = select_backend("gpu")
    engine, nodes = build_engine(config, backend)
    engine.step(steps)
    backend.synchronize()
    print(f"{config.label}: {steps} steps on {nodes} nodes done")


if __name__ == "__main__":
    main()
