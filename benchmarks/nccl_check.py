"""NCCL smoke test, one rank per GPU: ``mpiexec -n 2 python3 -m mpi4py benchmarks/nccl_check.py``.

Each rank takes GPU (local rank mod device count), the ranks build a communicator through
:class:`thelma_py.parallel.NcclHaloExchange`'s start-up path (unique id broadcast over MPI) and
swap 1 MiB with their partner (0 <-> 1). Prints 'nccl ok' on rank 0, or what failed and the
diagnostics (versions, devices, NCCL_* variables) and exits 1.
"""

import sys

from mpi4py import MPI


def main() -> int:
    import cupy as cp

    from thelma_py.parallel import nccl_diagnostics, nccl_swap, select_device

    comm = MPI.COMM_WORLD
    try:
        from cupy.cuda import nccl
    except Exception as exc:
        if comm.rank == 0:
            print(f"NCCL FAILED: import cupy.cuda.nccl: {exc}\n{nccl_diagnostics()}")
        return 1
    if comm.size < 2:
        print(f"started {comm.size} rank(s): mpi4py does not see the launcher's ranks (is it "
              "built against this mpiexec's MPI?)")
        return 1
    device = select_device(comm)
    places = comm.gather((MPI.Get_processor_name(), device), root=0)
    uid, error = None, ""
    if comm.rank == 0:
        try:
            uid = nccl.get_unique_id()
        except Exception as exc:
            error = f"rank 0: ncclGetUniqueId: {type(exc).__name__}: {exc}"
    uid, error = comm.bcast((uid, error), root=0)  # every rank learns of a failure
    if error:
        if comm.rank == 0:
            print(f"NCCL FAILED: {error}\n{nccl_diagnostics()}")
        return 1
    try:
        nc = nccl.NcclCommunicator(comm.size, uid, comm.rank)
        partner = comm.rank ^ 1
        count = 1 << 18
        send = cp.full(count, comm.rank + 1, dtype=cp.float32)
        recv = cp.zeros(count, dtype=cp.float32)
        stream = cp.cuda.get_current_stream()
        if partner < comm.size:
            nccl_swap(nc, send, recv, partner, stream)
            stream.synchronize()
            if not bool((recv == partner + 1).all()):
                raise RuntimeError(f"rank {comm.rank} received wrong values from {partner}")
        nc.destroy()
        ok = True
        error = ""
    except Exception as exc:
        ok, error = False, f"rank {comm.rank}: {type(exc).__name__}: {exc}"
    results = comm.gather((ok, error), root=0)
    if comm.rank == 0:
        if all(r[0] for r in results):
            print(f"nccl ok: {comm.size} ranks on (host, GPU) {places}, NCCL {nccl.get_version()}")
            return 0
        for ok, error in results:
            if not ok:
                print(f"NCCL FAILED: {error}")
        print(nccl_diagnostics())
        return 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
