export THELMA_COMMIT=$(cat .commit)
. benchmarks/device_setup.sh
timeout 200 python3 -m thelma_py.tools.bench --collision bgk --precision float32 --streaming pull,aa --sizes 256 --cases periodic,cavity --store fp32,fp16s --json "$out/defaults.json" | grep -v wrote | tail -n 9
timeout 100 python3 -m thelma_py.tools.bench --collision bgk --precision float64 --streaming aa --sizes 256 --cases periodic --wall-reads refetch,select --json "$out/aa64.json" | grep -v wrote | tail -n 2
timeout 100 python3 -m thelma_py.tools.bench --collision bgk --precision float32 --streaming pull --sizes 256 --cases periodic,cavity --store fp16s --block-sizes 256 --json "$out/b256.json" | grep -v wrote | tail -n 2
