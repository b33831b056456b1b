"""ptxas registers, spills and SASS instruction counts of the 16-bit single-step LW-ACM kernels
(D3Q19 fp32 arithmetic, sm_90): store x rounding x staging x fixed/moving walls, fp32 beside.

    python benchmarks/rec16_registers.py [--json FILE]

Needs nvcc, no GPU; the SASS counts need nvdisasm (on PATH or ``$NVDISASM``; else left
out). ``sass`` counts every instruction of the kernel (all paths);
``conversions`` the F2F/HADD2.F32 of fp16s decodes and encodes, ``hash_imul`` the IMADs of the
stochastic hash (counted by opcode over the whole kernel: a proxy, not a path's cost).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from thelma_py.lattice import D3Q19
from thelma_py.modules.compute.lwacm.kernels import LwacmKernelConfig, generate


def usage(source: str) -> dict:
    """Registers, spill bytes, shared bytes and opcode counts of the kernel (nvcc sm_90)."""
    with tempfile.TemporaryDirectory() as folder:
        path, cubin = Path(folder) / "k.cu", Path(folder) / "k.cubin"
        path.write_text(source)
        done = subprocess.run([shutil.which("nvcc"), "-arch=sm_90", "--cubin", "-std=c++17",
                               "--resource-usage", "-o", str(cubin), str(path)],
                              capture_output=True, text=True, timeout=600)
        text = done.stdout + done.stderr
        if done.returncode:
            raise RuntimeError(text)
        disasm = os.environ.get("NVDISASM") or shutil.which("nvdisasm")
        sass = subprocess.run([disasm, str(cubin)], capture_output=True, text=True,
                              timeout=600).stdout if disasm else ""
    ops = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", sass)
    regs = int(re.search(r"Used (\d+) registers", text).group(1))
    spill = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", text)
    smem = re.search(r"(\d+) bytes smem", text)
    return {"registers": regs, "spill_stores": int(spill.group(1)) if spill else 0,
            "spill_loads": int(spill.group(2)) if spill else 0,
            "shared_bytes": int(smem.group(1)) if smem else 0, "sass": len(ops),
            "conversions": sum(op.startswith(("F2F", "HADD2.F32")) for op in ops),
            "lds": sum(op.startswith("LDS") for op in ops),
            "ldgsts": sum(op.startswith("LDGSTS") for op in ops),
            "hash_imul": sum(op.startswith("IMAD") and not op.startswith("IMAD.MOV")
                             for op in ops)}


def configs():
    yield {"store": "fp32", "rounding": "nearest", "staging": "registers"}
    for store in ("fp16s", "fp16c"):
        for rounding in ("nearest", "stochastic"):
            for staging in ("registers", "async"):
                yield {"store": store, "rounding": rounding, "staging": staging}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    rows = []
    for options in configs():
        for moving in (False, True):
            cfg = LwacmKernelConfig(lattice=D3Q19, real="float", scheme="fused",
                                    moving_walls=moving, **options)
            row = {**options, "moving_walls": moving, **usage(generate(cfg))}
            rows.append(row)
            print(f"{row['store']:5} {row['rounding']:10} {row['staging']:9} moving={int(moving)}:"
                  f" {row['registers']} regs, spills {row['spill_stores']}/{row['spill_loads']}"
                  f" B, smem {row['shared_bytes']} B, SASS {row['sass']}, LDS {row['lds']},"
                  f" LDGSTS {row['ldgsts']}, cvt {row['conversions']},"
                  f" IMAD {row['hash_imul']}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
