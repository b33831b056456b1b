#!/usr/bin/env bash
# One device call: install, then the named parts in order. On the device machine (repo root):
#   bash benchmarks/device_run.sh tests bench sweep lwacm largest porous output tgv ncu
# Results land in $OUT (JSON and logs); the commit they name: THELMA_COMMIT or .commit
# (device_setup.sh), else the tree's git HEAD.
# (vtk and matplotlib are not needed there: GPU tests, bench and the built-in VTK writer
# import neither.)
out=${OUT:-/tmp/thelma-out}
. "$(dirname "$0")/device_setup.sh"
bench="python3 -m thelma_py.tools.bench"
single="--collision bgk --precision float32 --streaming pull"

for part in "$@"; do
  echo "=== $part $(date +%T)"
  case $part in
    tests)  # GPU tests in GPU_SHARDS processes (6; kernel compilation is CPU-bound), at most
      # GPU_TEST_SECONDS (480) each, one combined log; the test ids are dealt out round robin,
      # so no process gets one large file alone; tests marked gpus(n) need n devices: required
      # here only where the machine has them (benchmarks/multi_gpu_run.sh runs them on two)
      shards=${GPU_SHARDS:-6}
      select="gpu"; [ "$(nvidia-smi -L | wc -l)" -ge 2 ] || select="gpu and not gpus"
      python3 -m pytest -q -m "$select" --collect-only -p no:cacheprovider tests 2>/dev/null \
        | grep "::" > "$out/gpu_ids.txt"; pids=()
      for shard in $(seq 0 $((shards - 1))); do
        awk -v s=$shard -v n=$shards 'NR % n == s' "$out/gpu_ids.txt" > "$out/gpu_ids_$shard.txt"
        THELMA_REQUIRE_GPU=1 timeout "${GPU_TEST_SECONDS:-480}" python3 -m pytest -q \
          -m "$select" -p no:cacheprovider $(cat "$out/gpu_ids_$shard.txt") \
          > "$out/gpu_tests_$shard.log" 2>&1 &
        pids+=($!)
      done
      status=0; for p in "${pids[@]}"; do wait "$p" || status=1; done
      for shard in $(seq 0 $((shards - 1))); do cat "$out/gpu_tests_$shard.log"; done \
        > "$out/gpu_tests.log"
      rm -f "$out"/gpu_tests_[0-9]*.log "$out"/gpu_ids*.txt
      grep -E "passed|failed|error|Error|FAILED" "$out/gpu_tests.log" | tail -n 40
      echo "gpu tests status $status";;
    bench)  # the default list of issue 3 (D3Q19 BGK/MRT, fp32/fp64, pull/aa, 128-384)
      timeout 400 $bench --json "$out/bench.json" | tee "$out/bench.log" | tail -n 52;;
    sweep)  # block sizes on the closed and periodic boxes, 256^3 fp32
      timeout 150 $bench $single --streaming pull,aa --sizes 256 --cases periodic,cavity \
        --block-sizes 32,64,128,256 --json "$out/sweep.json" | tail -n 17;;
    aamin)  # in-place scheme with __launch_bounds__ min-blocks 8 (at most 64 registers)
      timeout 100 $bench $single --streaming aa --sizes 256,384 --cases periodic,cavity \
        --min-blocks 0,8 --json "$out/aamin.json" | tail -n 9;;
    cumulant)  # the cumulant models on D3Q27, plain and K17 (parametrized, limiter 0.01),
      # fp32 and 16-bit populations (NOTES run 63)
      timeout 400 $bench --lattice D3Q27 --collision cumulant,k17 --precision float32 \
        --store fp32,fp16s --sizes 256 --cases periodic,cavity \
        --json "$out/bench_cumulant.json" | tail -n 10;;
    lwacm)  # LW-ACM against LBM in one run
      timeout 150 $bench $single --compute lbm,lwacm,lwacm-fused --sizes 256 \
        --cases periodic,cavity --json "$out/lwacm.json" | tail -n 14;;
    largest)
      timeout 150 $bench $single --compute lbm,lwacm-fused --streaming aa --sizes 64 \
        --cases periodic --largest \
        --json "$out/largest.json" | tail -n 4;;
    largestfused)  # single-step LW-ACM, the largest cube in the free memory (1304^3 on an H100:
      # its 2.2e9 node tags take ~25 GB and about two minutes on the host since commit 16eef75)
      timeout 500 $bench $single --compute lwacm-fused --sizes 64 --cases periodic --largest \
        --json "$out/largest_fused.json" | tail -n 4;;
    outnone)  # VTK every 100 steps at 256^3, raw files into the temporary directory (issue 6)
      timeout 150 $bench $single --sizes 256 --cases cavity --output-every 100 \
        --output-compression none --output-steps 2000 --json "$out/output.json" | tail -n 6;;
    outzlib)  # the same with zlib compression
      timeout 150 $bench $single --sizes 256 --cases cavity --output-every 100 \
        --output-compression zlib --output-steps 2000 --json "$out/output_zlib.json" | tail -n 6;;
    tgvfused)  # 3D Taylor-Green, Re 1600, the single-step LW-ACM only
      timeout 200 python3 benchmarks/tgv3d_gpu.py --sizes 128,256 --schemes lwacm-fused \
        --out "$out/tgv3d_fused.json" | tail -n 8;;
    cavity3d)  # both LW-ACM schemes against LBM MRT, 3D cavity Re 100 on 64^3 (issue 4)
      THELMA_REQUIRE_GPU=1 timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider \
        tests/test_gpu_lwacm.py -k 3d_cavity 2>&1 | tail -n 3
      timeout 200 python3 -m thelma_py validate --device cuda --only cavity3d \
        --out "$out/validation_cavity3d" | tail -n 3;;
    porous)  # sparse against dense storage (issue 9)
      timeout 240 $bench $single --streaming pull,aa --cases porous --sizes 256 --storage dense,sparse \
        --fluid-fraction 0.1,0.3,0.6 --json "$out/porous.json" | tail -n 16;;
    output)  # VTK every 100 steps at 256^3 (issue 6)
      timeout 200 $bench $single --sizes 256 --cases cavity --output-every 100 \
        --output-compression zlib,none --json "$out/output.json" | tail -n 6;;
    tgvmrt)  # the same for LBM MRT only
      timeout 120 python3 benchmarks/tgv3d_gpu.py --sizes 128,256 --schemes lbm-mrt \
        --out "$out/tgv3d_mrt.json";;
    tgv)  # 3D Taylor-Green, Re 1600, every scheme, 128^3 and 256^3
      timeout 300 python3 benchmarks/tgv3d_gpu.py --sizes 128,256 --out "$out/tgv3d.json";;
    statcost)  # what a statistics sample costs, by the one kernel and by array operations
      timeout 200 python3 benchmarks/statistics_cost.py --paths kernel,arrays,populations \
        --json "$out/statistics_cost.json";;
    ncu)  # hardware counters of the closed-box step and the fused LW-ACM step
      for c in "lbm cavity" "lwacm-fused cavity"; do set -- $c
        timeout 120 ncu --clock-control none -k regex:step --launch-skip 6 --launch-count 1 \
          --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
          --section Occupancy --section LaunchStats \
          python3 benchmarks/profile_kernel.py --compute "$1" --case "$2" --size 256 \
          > "$out/ncu_$1.txt" 2>&1
        grep -E "Duration|DRAM Throughput|Achieved Occupancy|Registers Per|Shared Memory Config|Block Limit" \
          "$out/ncu_$1.txt" | head -12
      done;;
    outtests)  # GPU tests of the output path (host copies, VTK, run management)
      gpu_tests gpu_tests_output 200 5 tests/test_gpu_run_management.py tests/test_vtk.py;;
    lwtests)  # GPU tests of the LW-ACM engines only (CUDA against NumPy)
      gpu_tests gpu_tests_lwacm 300 15 tests/test_gpu_lwacm.py;;
    chunks)  # single-step LW-ACM: block rows and planes per marching block (256^3)
      timeout 200 python3 benchmarks/fused_tuning.py --size 256 --cases cavity,periodic \
        --rows 4,8,12 --chunks 4,8,16,32 --out "$out/fused_tuning.json";;
    obstacles)  # open boundaries and a body against the periodic box (issue 5)
      timeout 120 $bench $single --sizes 256 --cases periodic,obstacles \
        --json "$out/obstacles.json" | tail -n 6;;
    diag)  # where writing one 256^3 snapshot spends its time (issue 6)
      timeout 200 python3 benchmarks/output_diag.py --pipeline --out "$out/output_diag.json" | tail -n 40;;
    outshm)  # VTK every 100 steps, files in /dev/shm (what the pipeline costs without a disk)
      TMPDIR=/dev/shm timeout 120 $bench $single --sizes 256 --cases cavity --output-every 100 \
        --output-compression none --output-steps 3000 --json "$out/output_shm.json" | tail -n 6;;
    st)  # Schaefer-Turek 2D-1 at n = 10, 20, 40 and 2D-2 (issue 5)
      timeout 300 python3 -m thelma_py validate --device cuda --size small \
        --only schaefer-turek schaefer-turek-2d2 --out "$out/validation" | tail -n 5;;
    sphere)  # flow past a sphere, d = 20 nodes, Re 20
      timeout 120 python3 -m thelma_py run cases/sphere.py --device cuda --set d=20 \
        --steps 20000 --quiet | tail -n 8;;
    *) echo "unknown part $part";;
  esac
done
echo "=== done $(date +%T)"
