#!/usr/bin/env bash
# Device run of the image plug-in (issue #20), about 3 minutes on an H100:
#   bash benchmarks/device_images.sh            # from the repository root
# GPU tests of the plug-in (GPU pixels = CPU pixels, fp32 and fp64), then
# benchmarks/device_images.py (costs at 256^3, the 1024^3 3D view time, sample PNGs).
# Results: $OUT/images.json, $OUT/gpu_image_tests.log, PNG files under $OUT.
. "$(dirname "$0")/device_setup.sh"
export OUT="$out"
THELMA_REQUIRE_GPU=1 timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider \
  tests/test_image.py > "$out/gpu_image_tests.log" 2>&1
tail -n 5 "$out/gpu_image_tests.log"
timeout 420 python3 benchmarks/device_images.py cost samples view
