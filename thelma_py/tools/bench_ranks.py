"""``thelma bench --ranks``: multi-GPU scaling against a one-GPU run of the same invocation.

Run under MPI, one rank per GPU::

    mpiexec -n 2 python -m thelma_py.tools.bench --ranks --scaling weak --size 384 --json weak.json
    mpiexec -n 2 python -m thelma_py.tools.bench --ranks --scaling strong --size 512 \
        --json strong.json

Weak scaling keeps size³ nodes per GPU (the domain grows along the cut axis, z); strong scaling
splits one size³ domain. Rank 0 first times the one-GPU reference (size³, same case), then all
ranks time the distributed run with the exchange overlapped, the same without overlap, and the
exchange alone. The model beside it (after Obrecht et al., multi-GPU TheLMA): the bytes that
cross each cut face per step (populations with c_z = ±1 × face nodes × sizeof(real), both
directions) over the link bandwidth, plus the link latency, both measured here with NCCL
send/recv pairs, against the one-GPU update time of a rank's share of the nodes.
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np

SCALINGS = ("weak", "strong")


def _timed_steps(cp, comm, engine, steps: int, repeats: int) -> list[float]:
    """Seconds per step of ``repeats`` batches, each the slowest rank's (events, then max)."""
    times = []
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(repeats):
        cp.cuda.Device().synchronize()
        if comm is not None:
            comm.Barrier()
        start.record()
        engine.step(steps)
        stop.record()
        stop.synchronize()
        seconds = cp.cuda.get_elapsed_time(start, stop) / 1e3 / steps
        times.append(comm.allreduce(seconds, op=_max()) if comm is not None else seconds)
    return times


def _max():
    from mpi4py import MPI

    return MPI.MAX


def _steps_for(cp, comm, engine, target_seconds: float) -> int:
    engine.step(4)  # compile, first touch
    per_step = statistics.median(_timed_steps(cp, comm, engine, 4, 2))
    steps = max(8, int(target_seconds / max(per_step, 1e-7)))
    return steps + steps % 2


CASES = ("periodic", "cavity")


COMPUTES = ("lbm", "lwacm", "lwacm-fused")


def build(shape, case: str, precision: str, collision: str, streaming: str, comm,
          compute: str = "lbm"):
    """A Solver of the bench case on the GPU (checks off: only the engine is timed)."""
    import thelma_py as tp
    from thelma_py.geometry import domain

    if case == "periodic":
        geo = domain.periodic_box(shape)
    elif case == "cavity":
        geo = domain.cavity(shape, (0.05, 0.0, 0.0), lid_face="+z")
    else:
        raise SystemExit(f"--cases {case}: the scaling bench runs {' or '.join(CASES)}")
    if compute == "lbm":
        plugin = tp.plugin("compute", "lbm", nu=0.02, collision=collision, streaming=streaming)
    elif compute in COMPUTES:
        plugin = tp.plugin("compute", compute, nu=0.02)
    else:
        raise SystemExit(f"--compute {compute}: the scaling bench runs {', '.join(COMPUTES)}")
    return tp.compose("D3Q19", geo, plugin, device="cuda", precision=precision,
                      check_every=0, comm=comm)


def link_model(cp, exchange, nbytes: int, repeats: int = 20) -> dict | None:
    """NCCL send/recv pairs with the partner rank (0↔1, 2↔3, ...): seconds for a small and a
    ``nbytes`` message each way; latency and bandwidth of the line through both. None for a
    transport other than NCCL."""
    from thelma_py.parallel import nccl_swap

    comm = getattr(exchange, "comm", None)
    if comm is None:
        return None
    cart = exchange.box.cart
    partner = cart.rank ^ 1
    sizes = (4096, max(nbytes, 1 << 20))
    seconds = []
    for size in sizes:
        count = size // 4
        send, recv = cp.zeros(count, np.float32), cp.empty(count, np.float32)
        stream = cp.cuda.get_current_stream()
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        best = []
        for _ in range(repeats):
            cp.cuda.Device().synchronize()
            cart.Barrier()
            start.record()
            if partner < cart.size:
                nccl_swap(comm, send, recv, partner, stream)
            stop.record()
            stop.synchronize()
            best.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
        seconds.append(cart.allreduce(statistics.median(best), op=_max()))
    (s0, t0), (s1, t1) = zip(sizes, seconds, strict=True)
    bandwidth = (s1 - s0) / max(t1 - t0, 1e-9)
    return {"latency_s": max(t0 - s0 / bandwidth, 0.0), "bandwidth_Bps": bandwidth,
            "message_bytes": s1, "message_s": t1}


def scaling_run(args: argparse.Namespace) -> int:
    """One scaling measurement (``args.scaling``: weak or strong) on all ranks of the launch."""
    import cupy as cp
    from mpi4py import MPI

    from thelma_py import parallel
    from thelma_py.tools.bench_cases import environment, save

    comm = MPI.COMM_WORLD
    scaling, size = args.scaling, args.size
    if scaling not in SCALINGS:
        raise SystemExit(f"--scaling {scaling!r}: choose one of {', '.join(SCALINGS)}")
    case, precision = args.cases[0], args.precision[0]
    collision, streaming = args.collision[0], args.streaming[0]
    compute = args.compute[0]
    if streaming != "pull":
        raise SystemExit(f"--streaming {streaming}: distributed GPU runs use pull")
    ranks = comm.size
    if ranks < 2:
        raise SystemExit("thelma bench --ranks runs under mpiexec with at least 2 ranks (one per "
                         "GPU); this process sees 1 (is mpi4py built against this mpiexec's "
                         "MPI?)")
    device = parallel.select_device(comm)
    env = environment(cp)
    devices = comm.gather(f"{env['device']} (GPU {device})", root=0)
    say = print if comm.rank == 0 else (lambda *a, **k: None)
    shape = (size, size, size * ranks) if scaling == "weak" else (size, size, size)
    scheme = f"{collision} {streaming}" if compute == "lbm" else compute
    say(f"{scaling} scaling, {ranks} ranks on {devices}: D3Q19 {scheme} {precision} "
        f"{case}, global {shape}, reference {size}^3 on one GPU")

    # 1. the one-GPU reference, on rank 0 while the others wait
    reference = None
    if comm.rank == 0:
        solver = build((size,) * 3, case, precision, collision, streaming, MPI.COMM_SELF,
                       compute)
        steps = _steps_for(cp, None, solver.engine, args.target_seconds)
        reference = statistics.median(_timed_steps(cp, None, solver.engine, steps, 5))
        del solver
        cp.get_default_memory_pool().free_all_blocks()
        say(f"one GPU: {size ** 3 / reference / 1e6:.0f} MLUPS ({reference * 1e3:.3f} ms/step)")
    reference = comm.bcast(reference, root=0)

    # 2. distributed: overlapped, serial, exchange alone
    solver = build(shape, case, precision, collision, streaming, comm, compute)
    engine, box = solver.engine, solver.rank_box
    steps = _steps_for(cp, comm, engine, args.target_seconds)
    step_overlap = statistics.median(_timed_steps(cp, comm, engine, steps, 5))
    engine.overlap = False
    step_serial = statistics.median(_timed_steps(cp, comm, engine, steps, 5))
    engine.overlap = True
    src = engine.engine.halo_arrays()[0]

    class ExchangeOnly:
        def step(self, n):
            stream = cp.cuda.get_current_stream()
            for _ in range(n):
                engine.exchange.exchange(src, stream)
    exchange_time = statistics.median(_timed_steps(cp, comm, ExchangeOnly(), 20, 5))

    # 3. the model
    nodes = int(np.prod(shape))
    owned = int(np.prod(box.shape))
    itemsize = np.dtype(precision).itemsize
    face_nodes = box.shape[0] * box.shape[1]
    faces = sum(1 for t in engine.exchange.plan if t.to >= 0)  # one outgoing message each
    if engine.fields:  # whole node records cross (single-step LW-ACM)
        per_node = src.size // int(np.prod(engine.engine.shape))
        per_face = 2 * per_node * face_nodes * itemsize
    else:
        per_face = parallel.halo_bytes(solver.lattice, face_nodes, itemsize)
    sent = faces * per_face // 2  # bytes this rank sends per step
    link = link_model(cp, engine.exchange, sent)
    engine.exchange.close()
    update = reference * owned / size ** 3  # one-GPU update time of this rank's share
    if link is not None:
        model_exchange = link["latency_s"] + sent / link["bandwidth_Bps"]
    else:
        model_exchange = exchange_time
    mlups_total = nodes / step_overlap / 1e6
    mlups_reference = size ** 3 / reference / 1e6
    record = {
        "scaling": scaling, "ranks": ranks, "dims": list(box.decomposition.dims),
        "compute": compute, "case": case, "lattice": "D3Q19", "collision": collision,
        "precision": precision, "streaming": streaming, "size": size, "global_shape": list(shape),
        "halo": type(engine.exchange).name, "devices": devices,
        "mlups_total": mlups_total, "mlups_per_gpu": mlups_total / ranks,
        "mlups_reference": mlups_reference,
        "efficiency": mlups_total / (ranks * mlups_reference),
        "efficiency_serial": nodes / step_serial / 1e6 / (ranks * mlups_reference),
        "step_ms": step_overlap * 1e3, "step_serial_ms": step_serial * 1e3,
        "exchange_ms": exchange_time * 1e3, "reference_step_ms": reference * 1e3,
        "halo_bytes_per_face": per_face, "faces": faces, "sent_bytes_per_step": sent,
        "link_bandwidth_GBs": link["bandwidth_Bps"] / 1e9 if link else None,
        "link_latency_us": link["latency_s"] * 1e6 if link else None,
        "model_update_ms": update * 1e3, "model_exchange_ms": model_exchange * 1e3,
        "predicted_efficiency_serial": update / (update + model_exchange),
        "predicted_efficiency_overlap": update / max(update, model_exchange),
    }
    if comm.rank == 0:
        print(scaling_text(record))
        if args.json:
            save(args.json, {**env, "ranks": ranks, "scaling": [record]})
            print(f"wrote {args.json}")
    return 0


def scaling_text(r: dict) -> str:
    """Measurement and model of one scaling record, as printed by the bench."""
    link = (f"{r['link_bandwidth_GBs']:.0f} GB/s, {r['link_latency_us']:.1f} µs latency"
            if r["link_bandwidth_GBs"] else "not measured (no NCCL): exchange time used")
    return "\n".join([
        f"{r.get('compute', 'lbm')} {r['scaling']} scaling on {r['ranks']} ranks "
        f"({'x'.join(map(str, r['dims']))}, halo "
        f"over {r['halo']}): {r['mlups_total']:.0f} MLUPS total, {r['mlups_per_gpu']:.0f} per "
        f"GPU, one GPU {r['mlups_reference']:.0f}: efficiency {r['efficiency']:.1%} "
        f"(without overlap {r['efficiency_serial']:.1%})",
        f"  step {r['step_ms']:.3f} ms overlapped, {r['step_serial_ms']:.3f} ms serial; "
        f"exchange alone {r['exchange_ms']:.3f} ms",
        f"  model: {r['faces']} face message(s) per way of {r['halo_bytes_per_face'] / 2e6:.2f} "
        f"MB ({r['halo_bytes_per_face'] / 1e6:.2f} MB per face both ways); link {link}; "
        f"exchange {r['model_exchange_ms']:.3f} ms against update "
        f"{r['model_update_ms']:.3f} ms: predicted efficiency "
        f"{r['predicted_efficiency_serial']:.1%} serial, "
        f"{r['predicted_efficiency_overlap']:.1%} overlapped"])


def scaling_table(payload: dict) -> str:
    """A scaling JSON file (``"scaling"`` records) as a Markdown table."""
    lines = [f"Devices: {', '.join(payload['scaling'][0]['devices'])} (driver "
             f"{payload['driver']}, CuPy {payload['cupy']}), commit {payload['commit']}, "
             f"{payload['date']}, {payload['ranks']} ranks.",
             "",
             "| compute | scaling | case | precision | global | ranks | halo | MLUPS total | "
             "MLUPS/GPU | "
             "one GPU | efficiency | no overlap | exchange ms | step ms | halo MB/face | "
             "link GB/s | model: overlap | model: serial |",
             "|---|---|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in payload["scaling"]:
        bw = f"{r['link_bandwidth_GBs']:.0f}" if r["link_bandwidth_GBs"] else "-"
        lines.append(
            f"| {r.get('compute', 'lbm')} | {r['scaling']} | {r['case']} | {r['precision']} | "
            f"{'×'.join(map(str, r['global_shape']))} | {r['ranks']} | {r['halo']} | "
            f"{r['mlups_total']:.0f} | {r['mlups_per_gpu']:.0f} | {r['mlups_reference']:.0f} | "
            f"{r['efficiency']:.1%} | {r['efficiency_serial']:.1%} | {r['exchange_ms']:.3f} | "
            f"{r['step_ms']:.3f} | {r['halo_bytes_per_face'] / 1e6:.2f} | {bw} | "
            f"{r['predicted_efficiency_overlap']:.1%} | {r['predicted_efficiency_serial']:.1%} |")
    return "\n".join(lines) + "\n"
