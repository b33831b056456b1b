"""Device run of the image plug-in (issue #20): what images cost a GPU run, how long a 3D view
takes at 1024³, and sample pictures. Writes images.json and PNG files into $OUT (./out).

    python3 benchmarks/device_images.py [cost] [view] [samples]   # about 3 minutes, H100

Parts: (1) 256³ cavity, D3Q19 BGK fp32 pull and the single-step LW-ACM (lwacm-fused) fp32:
MLUPS without output, with a 1920x1080 speed slice every 100 steps, with a 3D view (Q
iso-surface coloured by speed) every 100 steps (3000 steps, the PNG files encoded on writer
threads meanwhile; the tail until the last file is written is recorded apart);
(2) 1024³ single-step LW-ACM cavity: seconds per 3D view (volume, march, total); (3) samples:
cavity slices and 3D views. Plot nothing here: the PNG files are the pictures.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import thelma_py as tp
from thelma_py import registry
from thelma_py.solver import compose
from thelma_py.tools.bench_cases import geometry_for

OUT = Path(os.environ.get("OUT", "out"))
PICTURES = Path(os.environ.get("THELMA_IMAGES_DIR", OUT))
"""Where the cost runs write their PNG files (many: keep them out of $OUT on the device)."""
DRY = os.environ.get("THELMA_IMAGES_DRY") == "1"
"""A CPU check of this script: tiny sizes on NumPy (THELMA_IMAGES_DRY=1)."""
DEVICE = "cpu" if DRY else "cuda"
EVERY, STEPS, WARM = (10, 20, 10) if DRY else (100, 3000, 100)
SIZES = {"cost": 24, "view": 32, "sphere": 6, "cavity": 24} if DRY else \
    {"cost": 256, "view": 1024, "sphere": 32, "cavity": 256}
SAMPLE_STEPS = 40 if DRY else 3000
RESULTS: dict = {"cost": [], "view_1024": None, "samples": []}


def save() -> None:
    machine = {}
    if not DRY:
        from thelma_py.backend import select_backend
        from thelma_py.tools.bench_cases import environment

        machine = environment(select_backend("cuda").xp)
    (OUT / "images.json").write_text(json.dumps({**machine, **RESULTS}, indent=1))


def compute(scheme: str):
    if scheme == "lbm":
        return registry.create("compute", "lbm", nu=0.02, collision="bgk", streaming="pull")
    return registry.create("compute", scheme, nu=0.02)


def timed(solver, steps: int, writer=None) -> tuple[float, float]:
    """Seconds of ``steps`` steps (images rendered, copied and queued for the writer threads;
    the device synchronised), and the seconds after that until the last PNG is written (the
    tail a long run pays once, not per image)."""
    solver.run(WARM)
    if writer is not None:
        writer.flush()
    solver.backend.synchronize()
    start = time.perf_counter()
    solver.run(steps)
    solver.backend.synchronize()
    seconds = time.perf_counter() - start
    if writer is not None:
        writer.flush()
    return seconds, time.perf_counter() - start - seconds


def cost(scheme: str) -> None:
    size = SIZES["cost"]
    geometry = geometry_for("cavity", size, 3)
    runs = {"none": None,
            "slice": dict(field="speed", axis="y"),
            "3d": dict(view="3d", field="q_criterion", colour_field="speed")}
    record = {"scheme": scheme, "size": size, "every": EVERY, "steps": STEPS}
    for label, options in runs.items():
        writer = None if options is None else tp.plugin(
            "results", "image", path=PICTURES / f"cost_{scheme}_{label}", every=EVERY, **options)
        solver = compose("D3Q19", geometry, compute(scheme), results=[writer] if writer else [],
                         device=DEVICE, precision="float32", check_every=0)
        seconds, tail = timed(solver, STEPS, writer)
        record[f"mlups_{label}"] = size**3 * STEPS / seconds / 1e6
        record[f"drain_s_{label}"] = tail
        del solver
    for label in ("slice", "3d"):
        record[f"cost_{label}"] = 1 - record[f"mlups_{label}"] / record["mlups_none"]
    RESULTS["cost"].append(record)
    save()
    print(f"{scheme} {size}^3: {record['mlups_none']:.0f} MLUPS plain, slice every {EVERY}: "
          f"{record['cost_slice']:.2%}, 3D view every {EVERY}: {record['cost_3d']:.2%}",
          flush=True)


def view_1024(repeats: int = 5) -> None:
    size = SIZES["view"]
    import cupy

    from thelma_py.modules.results.image_raymarch import march
    from thelma_py.modules.results.image_volume import volume_kernel

    start = time.perf_counter()
    solver = compose("D3Q19", geometry_for("cavity", size, 3), compute("lwacm-fused"),
                     device=DEVICE, precision="float32", check_every=0)
    build = time.perf_counter() - start
    solver.run(EVERY)
    writer = tp.plugin("results", "image", path=OUT / "view_1024", view="3d",
                       field="q_criterion", colour_field="speed", background=False)
    writer.start(solver)
    writer(solver)  # first call: rays, solid volume, kernels compiled
    sync = solver.backend.synchronize
    times = {"total": [], "volume": [], "march": []}
    rho, u = solver.engine.macroscopic()
    stride = max(1, -(-size // 256))
    for _ in range(repeats):
        sync()
        t0 = time.perf_counter()
        writer.render_view(solver)
        sync()
        t1 = time.perf_counter()
        value = volume_kernel(cupy, "q_criterion", rho, u, solver.tags.periodic, stride)
        sync()
        t2 = time.perf_counter()
        eye, directions, _ = next(v for k, v in writer._cache.items() if k[0] == "rays")
        solid = writer._cache["solid"]
        march(value, solid, 0.25 * cupy.where(solid, -cupy.inf, value).max(), eye, directions)
        sync()
        t3 = time.perf_counter()
        times["total"].append(t1 - t0)
        times["volume"].append(t2 - t1)
        times["march"].append(t3 - t2)
    RESULTS["view_1024"] = {"size": size, "build_s": build, "stride": stride,
                            **{f"{k}_ms": 1e3 * min(v) for k, v in times.items()}}
    save()
    print(f"{size}^3 lwacm-fused 3D view 1920x1080: {1e3 * min(times['total']):.0f} ms "
          f"(Q volume {1e3 * min(times['volume']):.0f} ms, march "
          f"{1e3 * min(times['march']):.0f} ms; build {build:.0f} s)", flush=True)


def samples() -> None:
    """Cavity pictures (the README's come from `thelma run --image`, see README.md)."""
    out = OUT / "samples"
    geometry = geometry_for("cavity", SIZES["cavity"], 3)
    cavity_steps = SAMPLE_STEPS
    cavity = [tp.plugin("results", "image", path=out, every=cavity_steps, field="speed",
                        axis="y", prefix="cavity_speed_y"),
              tp.plugin("results", "image", path=out, every=cavity_steps, view="3d",
                        field="speed", iso=0.01, prefix="cavity_speed_3d")]
    solver = compose("D3Q19", geometry, compute("lbm"), results=cavity, device=DEVICE,
                     precision="float32")
    solver.run(cavity_steps)
    solver.finish()
    RESULTS["samples"] = sorted(p.name for p in out.glob("*.png"))
    save()
    print("samples:", ", ".join(RESULTS["samples"]), flush=True)


def attempt(part, *args) -> None:
    """Run one part; a failure is recorded and printed, and the next part still runs."""
    try:
        part(*args)
    except Exception as error:  # noqa: BLE001 (one device call: keep what the others measure)
        RESULTS.setdefault("errors", []).append(f"{part.__name__}{args}: {error!r}")
        save()
        print(f"FAILED {part.__name__}{args}: {error!r}", flush=True)


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    parts = sys.argv[1:] or ["cost", "view", "samples"]
    if "cost" in parts:
        attempt(cost, "lbm")
        attempt(cost, "lwacm-fused")
    if "samples" in parts:
        attempt(samples)
    if "view" in parts:  # last: building the 1024^3 run takes the longest
        attempt(view_1024)
