"""``thelma bench``: MLUPS of CUDA kernels against the GPU's own measured copy bandwidth.

Each configuration is timed with CUDA events over several repeats of K steps after a warm-up,
and reported with the bytes one node update must move (2 Q × sizeof(real) for LBM), the
bandwidth this amounts to and its fraction of a large device-to-device copy measured in the same
run (bytes read + written). Results go to stdout as a table and to a JSON file with the device,
driver, CuPy version, commit and date.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import statistics
import sys
from pathlib import Path

import attrs
import numpy as np

from thelma_py import registry
from thelma_py.backend import gpu_available, gpu_unavailable_reason, select_backend
from thelma_py.geometry import domain
from thelma_py.lattice import lattice_by_name
from thelma_py.modules.compute.lbm.collisions.cumulant import K17
from thelma_py.tools.bench_cases import CASES, environment, geometry_for, save


@attrs.frozen
class BenchConfig:
    compute: str = "lbm"
    lattice: str = "D3Q19"
    collision: str = "bgk"
    precision: str = "float32"
    streaming: str = "pull"
    size: int = 256
    case: str = "periodic"
    block: int | None = None
    """Threads along x of an LBM block (None: the plug-in's default)."""
    min_blocks: int = 0
    streaming_stores: bool = False
    storage: str = "dense"
    fluid_fraction: float = attrs.field(default=0.3, converter=float)
    """Porous case only: the fluid fraction asked of the medium."""
    les: str = "none"
    """Subgrid model of the compute plug-in: "none" or a name of :mod:`thelma_py.subgrid`."""
    propagation: str = "direct"
    """LBM dense pull/push: how populations with c_x ≠ 0 cross threads (cuda_options)."""
    wall_launch: str = "fused"
    """LBM dense: wall tiles in the step kernel ('fused') or in their own ('split')."""
    moving_tiles: bool | None = None
    """LBM dense: moving-wall terms only in tiles that touch a moving wall (None: the
    plug-in's default)."""
    store: str = "fp32"
    """LBM population / single-step LW-ACM record storage: fp32, or 16 bits (fp16s, fp16c)
    with fp32 arithmetic."""
    rounding: str = "nearest"
    """lwacm-fused 16-bit records: rounded to nearest or stochastically."""
    staging: str | None = None
    """lwacm-fused 16-bit records: staged through registers or by cp.async ('async'); None:
    the plug-in's choice (cp.async for fp16s)."""
    wall_reads: str | None = None
    """LBM dense: populations across wall links re-read ('refetch') or read once from a
    selected address ('select'); None: the plug-in's default."""
    narrow: bool | None = None
    """LBM dense: 32-bit population indices (True) or 64-bit (False); None: the plug-in's
    default (32-bit where they fit)."""
    thread_rows: int | None = None
    """lwacm-fused, 3D: nodes per thread along y (None: the engine's choice)."""
    equilibrium_order: int = 2
    """LW-ACM (both schemes): 3 adds the third-order part of f^(e)
    (:attr:`.LwacmParameters.equilibrium_order`)."""

    @property
    def label(self) -> str:
        tuning = (f" m{self.min_blocks}" if self.min_blocks else "") + (
            " stcs" if self.streaming_stores else "") + (
            f" {self.storage}" if self.storage != "dense" else "") + (
            f" {self.fluid_fraction:.0%}" if self.case == "porous" else "") + (
            f" les={self.les}" if self.les != "none" else "") + (
            f" {self.propagation}" if self.propagation != "direct" else "") + (
            f" {self.wall_launch}" if self.wall_launch != "fused" else "") + (
            {None: "", True: " moving-tiles", False: " all-tiles"}[self.moving_tiles]) + (
            f" {self.store}" if self.store != "fp32" else "") + (
            " sr" if self.rounding == "stochastic" else "") + (
            f" {self.staging}" if self.staging else "") + (
            f" {self.wall_reads}" if self.wall_reads else "") + (
            {None: "", True: " narrow", False: " wide"}[self.narrow]) + (
            f" r{self.thread_rows}" if self.thread_rows else "") + (
            " cubic" if self.equilibrium_order == 3 else "")
        scheme = (f"{self.collision} {self.streaming}" if self.compute == "lbm"
                  else self.compute)
        return (f"{self.lattice} {scheme} {self.precision} "
                f"{self.case} {self.size}^{3 if self.lattice != 'D2Q9' else 2}"
                f"{f' b{self.block}' if self.block else ''}"
                f"{tuning}")


def copy_bandwidth(cp, nbytes: int = 4 << 30, repeats: int = 10) -> float:
    """Device-to-device copy bandwidth in bytes/s (read + written), median of ``repeats``."""
    src = cp.ones(nbytes // 4, dtype=cp.float32)
    dst = cp.empty_like(src)
    dst[...] = src  # warm-up
    times = []
    for _ in range(repeats):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        dst[...] = src
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    del src, dst
    cp.get_default_memory_pool().free_all_blocks()
    return 2 * nbytes / statistics.median(times)


@functools.lru_cache(maxsize=8)  # a default sweep visits 6 (case, size) pairs per lattice
def _tags(case: str, size: int, lattice_name: str, fluid_fraction: float = 0.3):
    lattice = lattice_by_name(lattice_name)
    geo = geometry_for(case, size, lattice.d, fluid_fraction)
    return geo, geo.evaluate(lattice)


NAMED_MODELS = {"k17": K17}
"""``--collision`` names that stand for a model with parameters."""


def compute_params(cfg: BenchConfig):
    """The compute plug-in of a configuration (ν = 0.02; the bench measures speed only)."""
    extra = {}
    if cfg.compute == "lbm":
        extra = {"collision": NAMED_MODELS.get(cfg.collision, cfg.collision),
                 "streaming": cfg.streaming, "storage": cfg.storage,
                 "store": cfg.store, "rounding": cfg.rounding,
                 "cuda_options": {"min_blocks": cfg.min_blocks,
                                  "streaming_stores": cfg.streaming_stores,
                                  "propagation": cfg.propagation,
                                  "wall_launch": cfg.wall_launch}}
        if cfg.moving_tiles is not None:
            extra["cuda_options"]["moving_tiles"] = cfg.moving_tiles
        if cfg.wall_reads is not None:
            extra["cuda_options"]["wall_reads"] = cfg.wall_reads
        if cfg.narrow is not None:
            extra["cuda_options"]["narrow"] = cfg.narrow
        if cfg.block is not None:
            extra["cuda_options"]["block"] = cfg.block
    if cfg.compute == "lwacm-fused" and cfg.store != "fp32":
        extra.update(store=cfg.store, rounding=cfg.rounding, staging=cfg.staging)
        if cfg.staging is None:
            del extra["staging"]
    if cfg.les != "none":
        extra["les"] = cfg.les
    if cfg.equilibrium_order != 2:
        extra["equilibrium_order"] = cfg.equilibrium_order
    return registry.create("compute", cfg.compute, nu=0.02, **extra)


def build_engine(cfg: BenchConfig, backend, uniform: bool = False):
    """The engine of ``cfg`` from a random state near rest (``uniform``: ρ = 1, u = 0 as
    broadcast views, for domains that leave no room for full-size initial fields)."""
    lattice = lattice_by_name(cfg.lattice)
    geo, tags = _tags(cfg.case, cfg.size, cfg.lattice, cfg.fluid_fraction)
    params = compute_params(cfg)
    dtype = np.dtype(cfg.precision)
    engine = params.create(lattice, tags, backend, dtype)
    # LW-ACM single step: its own bounds and nodes a thread, rebuilt once
    tune = {k: v for k, v in (("min_blocks", cfg.min_blocks), ("thread_rows", cfg.thread_rows))
            if v}
    if tune and hasattr(engine, "retune"):
        engine.retune(**tune)
    shape = tags.tags.shape
    if uniform:
        xp = backend.xp
        rho = xp.broadcast_to(xp.ones((), dtype=dtype), shape)
        engine.initialize(rho, [xp.broadcast_to(xp.zeros((), dtype=dtype), shape)] * lattice.d)
    else:
        rng = np.random.default_rng(1)
        rho = 1.0 + 0.01 * rng.standard_normal(shape)
        u = 0.02 * rng.standard_normal((lattice.d, *shape))
        engine.initialize(backend.to_device(rho.astype(dtype)),
                          backend.to_device(u.astype(dtype)))
    # the nodes the engine updates: sparse storage holds and updates the fluid nodes only
    return engine, int(tags.fluid.sum()) if cfg.storage == "sparse" else geo.node_count


def time_engine(cp, engine, nodes: int, target_seconds: float = 0.25, repeats: int = 7) -> dict:
    """Median and spread of MLUPS over ``repeats`` timed batches of K steps."""
    engine.step(4)  # compile, first touch, graph capture
    cp.cuda.Device().synchronize()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    engine.step(8)
    stop.record()
    stop.synchronize()
    per_step = cp.cuda.get_elapsed_time(start, stop) / 1e3 / 8
    steps = max(8, int(target_seconds / max(per_step, 1e-7)))
    steps += steps % 2
    mlups = []
    for _ in range(repeats):
        start.record()
        engine.step(steps)
        stop.record()
        stop.synchronize()
        seconds = cp.cuda.get_elapsed_time(start, stop) / 1e3
        mlups.append(nodes * steps / seconds / 1e6)
    if hasattr(engine, "all_finite"):  # checks the stored state: no fields to allocate
        finite = engine.all_finite()
    else:
        rho, _ = getattr(engine, "fluid_macroscopic", engine.macroscopic)()  # no dense copy
        finite = bool(cp.isfinite(rho).all())
    if not finite:
        raise RuntimeError("benchmark state went non-finite")
    return {"mlups": statistics.median(mlups), "mlups_min": min(mlups),
            "mlups_max": max(mlups), "steps_per_repeat": steps, "repeats": repeats}


def run_config(cp, backend, cfg: BenchConfig, copy_bw: float, uniform: bool = False) -> dict:
    engine, nodes = build_engine(cfg, backend, uniform)
    timing = time_engine(cp, engine, nodes)
    bytes_per_node = engine.traffic_bytes_per_node
    achieved = timing["mlups"] * 1e6 * bytes_per_node
    record = {**attrs.asdict(cfg), "block": getattr(engine, "block", cfg.block),
              "thread_rows": getattr(getattr(engine, "config", None), "thread_rows", None),
              "staging": getattr(getattr(engine, "config", None), "staging", cfg.staging),
              "nodes": nodes, **timing,
              "bytes_per_node": bytes_per_node,
              "memory_bytes_per_node": engine.memory_bytes_per_node,
              "bandwidth_GBs": achieved / 1e9, "fraction_of_copy": achieved / copy_bw}
    if cfg.case == "porous":
        from thelma_py.tools.bench_porous import per_fluid_node

        record.update(per_fluid_node(record, engine.tags))
    del engine
    cp.get_default_memory_pool().free_all_blocks()
    return record


def largest_cube(cp, backend, cfg: BenchConfig, memory_limit: float | None = None) -> dict:
    """The largest cubic domain of this configuration that fits in free memory, run for real."""
    lattice = lattice_by_name(cfg.lattice)
    probe = compute_params(cfg).create(
        lattice, domain.periodic_box((8,) * lattice.d).evaluate(lattice), backend,
        np.dtype(cfg.precision))
    per_node = probe.memory_bytes_per_node
    del probe
    cp.get_default_memory_pool().free_all_blocks()
    free, total = backend.memory()
    budget = min(free, memory_limit) if memory_limit else free
    n = int((0.95 * budget / per_node) ** (1 / 3))
    n -= n % 8
    record = {"compute": cfg.compute, "case": cfg.case, "streaming": cfg.streaming,
              "precision": cfg.precision, "store": cfg.store,
              "memory_bytes_per_node": per_node, "free_bytes": free, "total_bytes": total,
              "memory_limit_bytes": memory_limit, "size": n}
    try:
        result = run_config(cp, backend, attrs.evolve(cfg, size=n), 1.0, uniform=True)
        record.update(mlups=result["mlups"], ran=True)
    except Exception as error:  # report, do not hide: the figure is then an estimate only
        record.update(ran=False, error=f"{type(error).__name__}: {error}")
    return record


def markdown_table(payload: dict) -> str:
    """The results of one bench JSON file as a Markdown table (what BENCHMARKS.md shows)."""
    if "scaling" in payload:  # thelma bench --ranks
        from thelma_py.tools.bench_ranks import scaling_table

        return scaling_table(payload)
    copy = payload["copy_bandwidth_GBs"]
    lines = [f"Device: {payload['device']} (driver {payload['driver']}, CuPy {payload['cupy']}), "
             f"commit {payload['commit']}, {payload['date']}. Copy bandwidth measured in the same "
             f"run: {copy:.0f} GB/s (read + write).",
             "",
             "| compute | lattice | collision | precision | scheme | case | size | MLUPS "
             "(median) | min-max | B/node | GB/s | of copy | memory B/node |",
             "|---|---|---|---|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in payload["results"]:
        if "error" in r or r.get("case") == "porous":  # porous: own table, per fluid node
            continue
        lbm = r.get("compute", "lbm") == "lbm"
        lines.append(f"| {r.get('compute', 'lbm')} | {r['lattice']} | "
                     f"{r['collision'] if lbm else '-'}{_les(r)} | {_precision(r)} | "
                     f"{r['streaming'] if lbm else '-'}{_tuning(r)}"
                     f" | {r['case']} | {r['size']}³ | {r['mlups']:.0f} | {r['mlups_min']:.0f}-"
                     f"{r['mlups_max']:.0f} | {r['bytes_per_node']} | {r['bandwidth_GBs']:.0f} | "
                     f"{r['fraction_of_copy']:.1%} | {r['memory_bytes_per_node']} |")
    for r in [r for r in payload.get("largest", []) if r.get("case") != "porous"]:
        gb = r["size"] ** 3 * r["memory_bytes_per_node"] / 1e9
        ran = f"ran at {r['mlups']:.0f} MLUPS" if r.get("ran") else f"not run ({r.get('error')})"
        lines += ["", f"Largest D3Q19 {_precision(r)} {_scheme(r)} {r['case']} domain in "
                      f"{(r.get('memory_limit_bytes') or r['free_bytes']) / 1e9:.0f} GB: "
                      f"{r['size']}³ ({r['memory_bytes_per_node']} B/node, {gb:.1f} GB), {ran}."]
    from thelma_py.tools.bench_output import output_lines
    from thelma_py.tools.bench_porous import porous_section

    lines += output_lines(payload)
    return "\n".join(lines) + "\n" + porous_section(payload)


def _tuning(record: dict) -> str:
    """Launch settings away from the defaults (block 128, no streaming stores, no
    ``__launch_bounds__`` minimum, direct propagation), as in the console label: '' if none."""
    parts = []
    if record.get("block", 128) != 128 and record.get("compute", "lbm") == "lbm":
        parts.append(f"b{record['block']}")
    if record.get("streaming_stores"):
        parts.append("stcs")
    if record.get("min_blocks"):
        parts.append(f"min-blocks {record['min_blocks']}")
    if record.get("propagation", "direct") != "direct":
        parts.append(str(record["propagation"]))
    if (record.get("thread_rows") or 1) > 1:
        parts.append(f"{record['thread_rows']} nodes a thread")
    if record.get("equilibrium_order", 2) == 3:
        parts.append("cubic f^(e)")
    return "".join(f" {p}" for p in parts)


def _les(record: dict) -> str:
    """' + smagorinsky LES' for a record run with a subgrid model, '' otherwise."""
    les = record.get("les", "none")
    return "" if les == "none" else f" + {les} LES"


def _precision(record: dict) -> str:
    """'float32', or 'float32/fp16c' where populations are stored in 16 bits."""
    store = record.get("store", "fp32")
    sr = "-sr" if record.get("rounding") == "stochastic" else ""  # stochastic rounding
    sr += "-async" if record.get("staging") == "async" else ""  # cp.async staging
    return record["precision"] + ("" if store == "fp32" else f"/{store}{sr}")


def _scheme(record: dict) -> str:
    """'aa' for an LBM record, the plug-in name (lwacm-fused ...) otherwise."""
    compute = record.get("compute", "lbm")
    return record["streaming"] if compute == "lbm" else compute


def _ints(text: str) -> list[int]:
    return [int(v) for v in text.split(",") if v]


def _floats(text: str) -> list[float]:
    return [float(v) for v in text.split(",") if v]


def _words(text: str) -> list[str]:
    return [v.strip() for v in text.split(",") if v.strip()]


def _wanted(cfg: BenchConfig, first_fraction: float) -> bool:
    """Skip what a sweep would repeat or cannot run: fluid fractions of cases that are not
    porous, sparse storage outside LBM pull and AA, propagation variants outside LBM dense
    pull and push, split wall launches, moving tiles and wall reads outside LBM dense direct."""
    if cfg.case != "porous" and cfg.fluid_fraction != first_fraction:
        return False
    if cfg.propagation != "direct" and (cfg.compute != "lbm" or cfg.storage != "dense"
                                        or cfg.streaming == "aa"):
        return False
    if (cfg.wall_launch != "fused" or cfg.moving_tiles or cfg.wall_reads
            or cfg.narrow is not None) and (
            cfg.compute != "lbm" or cfg.storage != "dense" or cfg.propagation != "direct"):
        return False
    if cfg.store != "fp32" and (cfg.compute not in ("lbm", "lwacm-fused")
                                or cfg.precision != "float32"):
        return False  # 16-bit storage: LBM and single-step LW-ACM, fp32 arithmetic only
    if cfg.rounding != "nearest" and (cfg.store == "fp32" or cfg.compute not in (
            "lbm", "lwacm-fused") or (cfg.compute == "lbm" and (
                cfg.streaming != "pull" or cfg.storage != "dense"))):
        return False  # stochastic rounding: 16-bit records, or 16-bit dense pull LBM
    if cfg.staging and (cfg.compute != "lwacm-fused" or cfg.store == "fp32"
                        or (cfg.staging == "async" and cfg.store != "fp16s")):
        return False  # staging of 16-bit single-step LW-ACM records (async: fp16s only)
    if cfg.thread_rows and (cfg.compute != "lwacm-fused" or cfg.lattice == "D2Q9"):
        return False  # nodes per thread: the 3D single step only
    if cfg.equilibrium_order != 2 and (cfg.compute not in ("lwacm", "lwacm-fused")
                                       or cfg.case not in ("periodic", "cavity")):
        return False  # the third-order part: LW-ACM, without open faces or bodies
    return cfg.storage == "dense" or (cfg.compute == "lbm" and cfg.streaming != "push")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--compute", type=_words, default=["lbm"],
                        help="compute plug-ins, e.g. lbm,lwacm,lwacm-fused")
    parser.add_argument("--lattice", type=_words, default=["D3Q19"],
                        help="lattices to sweep, e.g. D3Q19,D3Q27")
    parser.add_argument("--collision", type=_words, default=["bgk", "mrt"],
                        help="lbm collision models to sweep: bgk,trt,mrt,regularized,recursive,"
                             "cumulant, k17 (D3Q27: the parametrized cumulant with its "
                             "limiter)")
    parser.add_argument("--les", type=_words, default=["none"],
                        help="subgrid models to sweep: none,smagorinsky (LBM, LW-ACM)")
    parser.add_argument("--precision", type=_words, default=["float32", "float64"],
                        help="precisions to sweep")
    parser.add_argument("--streaming", type=_words, default=["pull", "aa"],
                        help="lbm streaming schemes to sweep: pull,push,aa")
    parser.add_argument("--sizes", type=_ints, default=[128, 256, 384],
                        help="edge lengths of the cubic domains to sweep")
    parser.add_argument("--cases", type=_words, default=["periodic", "cavity"],
                        help=f"domains to sweep: {','.join(CASES)}")
    parser.add_argument("--block-sizes", type=_ints, default=[None],
                        help="LBM thread-block sizes along x to sweep, e.g. 32,64,128,256 "
                             "(default: the plug-in's, 256 for dense fp32 pull and AA, else 128)")
    parser.add_argument("--min-blocks", type=_ints, default=[0],
                        help="minimum blocks per SM for __launch_bounds__ (0: compiler)")
    parser.add_argument("--streaming-stores", type=_ints, default=[0],
                        help="0,1: sweep evict-first stores")
    parser.add_argument("--propagation", type=_words, default=["direct"],
                        help="LBM dense pull/push propagation variants to sweep, e.g. "
                             "direct,shared,shuffle")
    parser.add_argument("--wall-launch", type=_words, default=["fused"],
                        help="LBM dense wall-tile launches to sweep: fused,split")
    parser.add_argument("--moving-tiles", type=_ints, default=None,
                        help="LBM dense: 0,1 to compare moving-wall terms everywhere / only in "
                             "tiles that touch a moving wall (default: the plug-in's own choice, "
                             "on where it runs)")
    parser.add_argument("--wall-reads", type=_words, default=None,
                        help="LBM dense: refetch,select to compare how populations across wall "
                             "links are read (default: the plug-in's own choice)")
    parser.add_argument("--narrow", type=_ints, default=None,
                        help="LBM dense: 0,1 to compare 64-bit and 32-bit population indices "
                             "(default: the plug-in's own choice, 32-bit where they fit)")
    parser.add_argument("--storage", type=_words, default=["dense"],
                        help="lbm node storage: dense,sparse (sparse runs pull only)")
    parser.add_argument("--fluid-fraction", type=_floats, default=[0.1, 0.3, 0.6],
                        help="porous case: fluid fractions of the medium, e.g. 0.1,0.3,0.6")
    parser.add_argument("--store", type=_words, default=["fp32"],
                        help="lbm population / lwacm-fused record storage to sweep: "
                             "fp32,fp16s,fp16c (16-bit: float32 arithmetic)")
    parser.add_argument("--rounding", type=_words, default=["nearest"],
                        help="16-bit storage (lwacm-fused records, lbm dense pull "
                             "populations): nearest,stochastic to sweep")
    parser.add_argument("--staging", type=_words, default=[None],
                        help="lwacm-fused 16-bit records: registers,async to sweep (how a "
                             "plane reaches the shared ring; default: the plug-in's choice, "
                             "async for fp16s)")
    parser.add_argument("--thread-rows", type=_ints, default=None,
                        help="lwacm-fused, 3D: 1,2,4 to sweep the nodes a thread updates along y "
                             "(default: the engine's choice)")
    parser.add_argument("--equilibrium-order", type=_ints, default=[2],
                        help="lwacm, lwacm-fused: 2,3 to sweep the equilibrium's order (3: its "
                             "third-order part; periodic and cavity cases)")
    parser.add_argument("--largest", action="store_true",
                        help="also run the largest cube that fits (D3Q19 float32, in-place; "
                             "LBM and lwacm-fused once per --store)")
    parser.add_argument("--memory-limit-gb", type=float, default=None,
                        help="with --largest: size the domain for this much memory (e.g. 80; "
                             "default: the free device memory)")
    parser.add_argument("--output-every", type=int, default=0,
                        help="also time VTK output every N steps (cavity, --sizes; 0: off)")
    parser.add_argument("--output-steps", type=int, default=1000,
                        help="with --output-every: steps per timed run")
    parser.add_argument("--output-compression", type=_words, default=["zlib", "none"],
                        help="with --output-every: zlib,none")
    parser.add_argument("--json", type=Path, default=None,
                        help="write the results here (default: the table on stdout only)")
    parser.add_argument("--report", type=Path, default=None,
                        help="print a results JSON file as a Markdown table, no GPU needed "
                             "(default: run the benchmarks)")
    parser.add_argument("--ranks", action="store_true",
                        help="multi-GPU scaling under mpiexec, one rank per GPU (runs the first "
                             "--cases/--precision/--collision/--streaming entry; see "
                             "thelma_py.tools.bench_ranks)")
    parser.add_argument("--scaling", default="weak", choices=("weak", "strong"),
                        help="with --ranks: size^3 per GPU (weak) or in all (strong)")
    parser.add_argument("--size", type=int, default=384,
                        help="with --ranks: nodes per edge, size^3 per GPU (weak) or in all "
                             "(strong)")
    parser.add_argument("--target-seconds", type=float, default=0.3,
                        help="with --ranks: seconds per timed batch")


def run(args: argparse.Namespace) -> int:
    if args.report:
        print(markdown_table(json.loads(args.report.read_text())), end="")
        return 0
    if args.ranks:
        from thelma_py.tools.bench_ranks import scaling_run

        return scaling_run(args)
    if not gpu_available():  # the bench times CUDA kernels: no --device, no CPU fallback
        raise RuntimeError(f"thelma bench times CUDA kernels and needs a GPU, but "
                           f"{gpu_unavailable_reason()}; on the CPU, `thelma run CASE --device "
                           "cpu` prints the MLUPS of a case")
    backend = select_backend("cuda")
    cp = backend.xp
    env = environment(cp)
    copy_bw = copy_bandwidth(cp)
    print(f"device: {env['device']}  cupy {env['cupy']}  commit {env['commit']}  {env['date']}")
    print(f"copy bandwidth (read + write): {copy_bw / 1e9:.0f} GB/s")
    configs = [cfg for cfg in (BenchConfig(*values) for values in itertools.product(
        args.compute, args.lattice, args.collision, args.precision, args.streaming, args.sizes,
        args.cases, args.block_sizes, args.min_blocks, [bool(v) for v in args.streaming_stores],
        args.storage, args.fluid_fraction, args.les, args.propagation, args.wall_launch,
        [None] if args.moving_tiles is None else [bool(v) for v in args.moving_tiles],
        args.store, args.rounding, args.staging,
        [None] if args.wall_reads is None else args.wall_reads,
        [None] if args.narrow is None else [bool(v) for v in args.narrow],
        [None] if args.thread_rows is None else args.thread_rows, args.equilibrium_order))
        if _wanted(cfg, args.fluid_fraction[0])]
    records = []
    header = (f"{'configuration':<60} {'MLUPS':>9} {'spread':>13} {'B/node':>7} "
              f"{'GB/s':>7} {'of copy':>8} {'mem B/node':>10}")
    print(header)
    seen = set()
    for cfg in configs:
        if cfg.compute != "lbm":  # collision and streaming sweeps apply to LBM only
            key = attrs.evolve(cfg, collision="-", streaming="-")
            if key in seen:
                continue
            seen.add(key)
        try:
            record = run_config(cp, backend, cfg, copy_bw)
        except Exception as error:
            print(f"{cfg.label:<60} failed: {type(error).__name__}: {error}", file=sys.stderr)
            records.append({**attrs.asdict(cfg), "error": f"{type(error).__name__}: {error}"})
            continue
        records.append(record)
        save(args.json, {**env, "copy_bandwidth_GBs": copy_bw / 1e9, "results": records,
                         "largest": [], "partial": True})
        print(f"{cfg.label:<60} {record['mlups']:9.0f} "
              f"{record['mlups_min']:6.0f}-{record['mlups_max']:<6.0f} "
              f"{record['bytes_per_node']:7d} {record['bandwidth_GBs']:7.0f} "
              f"{record['fraction_of_copy']:8.1%} {record['memory_bytes_per_node']:10d}")
    largest = []
    if args.largest:
        limit = args.memory_limit_gb * 1e9 if args.memory_limit_gb else None
        for compute, store in itertools.product(args.compute, args.store):
            if compute not in ("lbm", "lwacm-fused") and store != "fp32":
                continue  # LBM in place (the smallest LBM footprint), once per storage
            cfg = BenchConfig(compute=compute, streaming="aa" if compute == "lbm" else "pull",
                              case="periodic", size=0, store=store)
            rec = largest_cube(cp, backend, cfg, limit)
            largest.append(rec)
            print(f"largest D3Q19 {_precision(rec)} {_scheme(rec)} periodic: {rec['size']}^3 "
                  f"({rec['memory_bytes_per_node']} B/node, "
                  f"{rec['size'] ** 3 * rec['memory_bytes_per_node'] / 1e9:.1f} GB) "
                  + (f"ran at {rec['mlups']:.0f} MLUPS" if rec.get("ran") else
                     f"not run: {rec.get('error')}"))
        if "porous" in args.cases:
            from thelma_py.tools.bench_porous import largest_porous

            largest += largest_porous(backend, limit)
    output = []
    for size, compression in itertools.product(
            args.sizes if args.output_every else [], args.output_compression):
        from thelma_py.tools.bench_output import output_cost

        output.append(output_cost(size, args.output_every, args.output_steps, compression))
        r = output[-1]
        print(f"VTK every {r['every']} steps, {size}^3, {compression}: "
              f"{r['mlups_with_output']:.0f} MLUPS against {r['mlups_plain']:.0f} without "
              f"(cost {r['cost']:.1%}; {r['file_bytes'] / 1e6:.0f} MB per file; the directory "
              f"takes {r['disk_write_GBs']:.1f} GB/s)")
        save(args.json, {**env, "copy_bandwidth_GBs": copy_bw / 1e9, "results": records,
                         "largest": largest, "output": output, "partial": True})
    save(args.json, {**env, "copy_bandwidth_GBs": copy_bw / 1e9, "results": records,
                     "largest": largest, "output": output})
    if args.json:
        print(f"wrote {args.json}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="thelma bench", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
