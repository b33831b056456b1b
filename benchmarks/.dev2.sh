export THELMA_COMMIT=$(cat .commit)
. benchmarks/device_setup.sh
timeout 300 python3 -m thelma_py.tools.bench --collision bgk --precision float32 --streaming pull,aa --sizes 256 --cases periodic,cavity --store fp32,fp16s --wall-reads refetch,select --json "$out/wall_reads.json" | tail -n 18
THELMA_REQUIRE_GPU=1 timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_wall_launch.py tests/test_store16.py -x 2>&1 | tail -n 4
