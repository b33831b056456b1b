export THELMA_COMMIT=$(cat .commit)
. benchmarks/device_setup.sh
timeout 330 python3 -m thelma_py.tools.bench --collision bgk --precision float32 --streaming pull,aa --sizes 256 --cases periodic,cavity --store fp32,fp16s --wall-reads refetch,select --json "$out/facetags2.json" | grep -v wrote | tail -n 17
