export THELMA_COMMIT=$(cat .commit)
. benchmarks/device_setup.sh
b="timeout 150 python3 -m thelma_py.tools.bench --collision bgk --precision float32 --sizes 256 --store fp16s"
$b --streaming pull --cases cavity --wall-launch fused,split --wall-reads refetch,select --json "$out/w3_pull_cavity.json" | tail -n 4
$b --streaming pull --cases periodic --block-sizes 128,256 --min-blocks 0,12 --wall-reads select --json "$out/w3_pull_periodic.json" | tail -n 4
$b --streaming aa --cases periodic --block-sizes 128,256 --min-blocks 0,6,8 --wall-reads select --json "$out/w3_aa_periodic.json" | tail -n 6
$b --streaming aa --cases cavity --wall-launch fused,split --wall-reads refetch,select --json "$out/w3_aa_cavity.json" | tail -n 4
cd "$out" && tar czf w3.tgz w3_*.json && rm w3_*.json
