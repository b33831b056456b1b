"""Time each stage of one GPU snapshot (:meth:`Solver.fields_later`) at 256³, host side and
device side, and say whether the host buffers are page-locked (GPU only)::

    python3 benchmarks/host_copy_probe.py
"""

from __future__ import annotations

import time

import cupy as cp

from thelma_py import registry
from thelma_py.host_copy import HostCopier
from thelma_py.solver import compose
from thelma_py.tools.bench_cases import geometry_for


def main() -> None:
    geometry = geometry_for("cavity", 256, 3)
    solver = compose("D3Q19", geometry, registry.create("compute", "lbm", nu=0.02),
                     device="cuda", precision="float32", check_every=0)
    solver.run(100)
    copier = HostCopier(solver.backend)
    rho, u = solver.engine.macroscopic()
    print("reserved", copier.reserve({"rho": rho, "u": u}, 2, interleave=("u",)))
    for round_ in range(4):
        solver.step(100)
        marks = [("start", time.perf_counter())]
        rho, u = solver.engine.macroscopic()
        marks.append(("macroscopic", time.perf_counter()))
        snapshot = copier._take(cp, {"rho": rho, "u": u}, ("u",))
        marks.append(("device snapshot", time.perf_counter()))
        layout = tuple((n, a.shape, str(a.dtype)) for n, a in snapshot.items())
        with copier._lock:
            free = copier._free.get(layout)
            host = free.pop() if free else copier._pinned(layout)
        marks.append(("host set", time.perf_counter()))
        ready = cp.cuda.get_current_stream().record()
        copier._stream.wait_event(ready)
        marks.append(("events", time.perf_counter()))
        for name, array in snapshot.items():
            cp.cuda.runtime.memcpyAsync(host[name].ctypes.data, array.data.ptr, array.nbytes,
                                        cp.cuda.runtime.memcpyDeviceToHost, copier._stream.ptr)
            marks.append((f"memcpyAsync {name}", time.perf_counter()))
        done = copier._stream.record()
        marks.append(("record", time.perf_counter()))
        done.synchronize()
        marks.append(("copy finished", time.perf_counter()))
        attrs = cp.cuda.runtime.pointerGetAttributes(host["rho"].ctypes.data)
        steps = " ".join(f"{name} {1e3 * (t - marks[k][1]):.2f}"
                         for k, (name, t) in enumerate(marks[1:]))
        print(f"round {round_}: {steps} ms; host memory type {attrs.type}")
        copier._give_back_to(layout)(host)


if __name__ == "__main__":
    main()
