export THELMA_COMMIT=$(cat .commit)
. benchmarks/device_setup.sh
timeout 200 python3 -m thelma_py.tools.bench --collision bgk --precision float32 --streaming pull,aa --sizes 256 --cases periodic,cavity --store fp32,fp16s --json "$out/facetags.json" | grep -v wrote | tail -n 9
timeout 100 python3 -m thelma_py.tools.bench --collision bgk --precision float32 --streaming pull,aa --sizes 256 --cases cavity --store fp32,fp16s --wall-reads refetch,select --json "$out/facetags_reads.json" | grep -v wrote | tail -n 9
for k in 1 2 3; do case $k in 1) files="tests/test_gpu_lbm.py tests/test_wall_launch.py";; 2) files="tests/test_gpu_boundaries.py tests/test_propagation.py";; 3) files="tests/test_store16.py tests/test_gpu_parallel.py tests/test_gpu_sparse.py";; esac
(THELMA_REQUIRE_GPU=1 timeout 260 python3 -m pytest -q -m gpu -p no:cacheprovider $files > $out/t$k.log 2>&1; echo "t$k status $?" >> $out/t$k.log) & done
wait
for f in $out/t?.log; do grep -E "passed|failed|FAILED|Error" $f | tail -n 5; tail -n 1 $f; done
