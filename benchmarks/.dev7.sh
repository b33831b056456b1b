export THELMA_COMMIT=$(cat .commit)
. benchmarks/device_setup.sh
timeout 200 python3 -m thelma_py.tools.bench --collision bgk --precision float32 --streaming pull --sizes 256 --cases cavity,periodic --store fp32,fp16s --block-sizes 128,256 --json "$out/loop.json" | grep -v wrote | tail -n 9
