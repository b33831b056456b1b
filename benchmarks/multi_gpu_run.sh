#!/usr/bin/env bash
# One device call on the 2-GPU machine (kind nvidia-h200-x2), from the repo root:
#   bash benchmarks/multi_gpu_run.sh
# Installs the package, checks NCCL, runs the multi-GPU correctness tests (2 GPUs over NCCL,
# 2 ranks sharing one GPU, bit for bit against one GPU) and the single-GPU pull tests, then the
# weak (384^3 per GPU) and strong (512^3) scaling benches. Logs, JSON and the Markdown reports
# go to $OUT (default /tmp/thelma-out). About 4-5 minutes; each stage has its own time limit.
set -o pipefail
export PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=${OUT:-/tmp/thelma-out}; mkdir -p "$out"
stage() { echo; echo "=== $* ($(date -u +%H:%M:%S))" | tee -a "$out/summary.log"; }
status=0

stage install
python3 -m pip install -q --no-build-isolation --no-deps -e . >"$out/install.log" 2>&1 \
  || { cat "$out/install.log"; echo "install failed"; exit 1; }
nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id,memory.used --format=csv \
  | tee "$out/gpus.csv"
nvidia-smi topo -m 2>&1 | tee "$out/topo.txt" | head -n 8
python3 - <<'EOF' 2>&1 | tee "$out/env.txt"
import cupy, mpi4py
from mpi4py import MPI
print("cupy", cupy.__version__, "| devices", cupy.cuda.runtime.getDeviceCount())
try:
    from cupy.cuda import nccl
    print("nccl", nccl.get_version())
except Exception as exc:
    print("cupy.cuda.nccl unusable:", type(exc).__name__, exc)
print("mpi4py", mpi4py.__version__, "|", MPI.Get_library_version().splitlines()[0])
EOF

PY=$(command -v python3)  # absolute: Open MPI may start another python3 from its own PATH
MPIEXEC=$(command -v mpiexec || command -v mpirun)
if [ -z "$MPIEXEC" ]; then echo "no mpiexec/mpirun on PATH"; exit 1; fi
flags=()
if "$MPIEXEC" --version 2>&1 | grep -qiE "open mpi|openrte"; then
  flags=(--allow-run-as-root)
fi
echo "launcher: $MPIEXEC ${flags[*]}" | tee -a "$out/summary.log"

stage "NCCL check (2 ranks, one GPU each)"
timeout -k 5 60 "$MPIEXEC" "${flags[@]}" -n 2 "$PY" -m mpi4py benchmarks/nccl_check.py 2>&1 \
  | tee "$out/nccl_check.log"
nccl_rc=$?
if [ $nccl_rc -ne 0 ]; then
  status=1
  echo "!!! NCCL check failed (rc $nccl_rc): see $out/nccl_check.log. Retrying with NCCL_DEBUG=INFO" \
    | tee -a "$out/summary.log"
  NCCL_DEBUG=INFO timeout -k 5 45 "$MPIEXEC" "${flags[@]}" -n 2 "$PY" -m mpi4py \
    benchmarks/nccl_check.py >"$out/nccl_debug.log" 2>&1
  tail -n 40 "$out/nccl_debug.log"
  echo "!!! benches below exchange through the host (THELMA_HALO=mpi)" | tee -a "$out/summary.log"
  export THELMA_HALO=mpi
fi

stage "GPU tests: multi-GPU (tests/test_gpu_parallel.py) and single-GPU pull (tests/test_gpu_lbm.py -k pull)"
THELMA_REQUIRE_GPU=1 timeout -k 5 200 python3 -m pytest -q -p no:cacheprovider -rA \
  tests/test_gpu_parallel.py 2>&1 | tee "$out/gpu_parallel_tests.log" | tail -n 40 \
  || status=1
if [ -z "${SKIP_PULL_TESTS:-}" ]; then
  THELMA_REQUIRE_GPU=1 timeout -k 5 80 python3 -m pytest -q -p no:cacheprovider \
    tests/test_gpu_lbm.py -k pull 2>&1 | tee "$out/gpu_lbm_pull_tests.log" | tail -n 15 \
    || status=1
fi

# scaling runs as "compute scaling size time-limit"; SCALING_RUNS overrides the list
runs=${SCALING_RUNS:-"lbm:weak:384:110 lbm:strong:512:140"}
for run in $runs; do
  IFS=: read -r compute scaling size limit <<< "$run"
  stage "scaling bench: $compute $scaling, size $size"
  name="${compute}_${scaling}"
  timeout -k 5 "$limit" "$MPIEXEC" "${flags[@]}" -n 2 "$PY" -m mpi4py -m thelma_py.tools.bench \
    --ranks --compute "$compute" --scaling "$scaling" --size "$size" --cases periodic \
    --precision float32 --collision bgk --streaming pull --json "$out/scaling_$name.json" 2>&1 \
    | tee "$out/scaling_$name.log" || status=1
  if [ -f "$out/scaling_$name.json" ]; then
    python3 -m thelma_py.tools.bench --report "$out/scaling_$name.json" | tee -a "$out/scaling_report.md"
  fi
done

stage "done (status $status)"
# the device tool returns at most 8 files: keep the JSON and the report, fold the logs into one
for f in "$out"/*.log "$out"/*.txt "$out"/*.csv; do
  [ -f "$f" ] && { echo "##### $(basename "$f")"; cat "$f"; } >> /tmp/multi_gpu_all.log
done
rm -f "$out"/*.log "$out"/*.txt "$out"/*.csv; mv /tmp/multi_gpu_all.log "$out/all.log"
grep -hE "passed|failed|error|identical|different|efficiency|nccl ok|FAILED" \
  "$out/all.log" 2>/dev/null | tail -n 40
exit $status
