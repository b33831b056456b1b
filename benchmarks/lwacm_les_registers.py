"""ptxas registers and spills of the single-step LW-ACM kernel, with and without LES (sm_90).

    python benchmarks/lwacm_les_registers.py [--json FILE]

One line per configuration (lattice, precision, moving walls, les): registers, spill stores and
loads in bytes, as ``nvcc -arch=sm_90 --resource-usage`` reports them (needs nvcc, no GPU).
``--min-blocks N`` builds every kernel with ``__launch_bounds__(threads, N)`` (0: as shipped,
i.e. none for the plain kernel and ``LES_MIN_BLOCKS`` for LES; 1: registers left to ptxas).
Spill bytes are static sizes of the spill instructions, not traffic: where they sit (staging
or the node update) needs the SASS (nvdisasm).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from thelma_py.lattice import D3Q19, D3Q27
from thelma_py.modules.compute.lwacm.kernels import LwacmKernelConfig, generate
from thelma_py.subgrid import Smagorinsky


def usage(source: str) -> dict:
    """Registers and spill bytes of the kernel in ``source`` (nvcc sm_90)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "k.cu"
        path.write_text(source)
        done = subprocess.run([shutil.which("nvcc"), "-arch=sm_90", "--cubin", "-std=c++17",
                               "--resource-usage", "-o", str(Path(folder) / "k.cubin"),
                               str(path)], capture_output=True, text=True, timeout=600)
    text = done.stdout + done.stderr
    if done.returncode:
        raise RuntimeError(text)
    regs = int(re.search(r"Used (\d+) registers", text).group(1))
    stores = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", text)
    spill = (int(stores.group(1)), int(stores.group(2))) if stores else (0, 0)
    return {"registers": regs, "spill_stores": spill[0], "spill_loads": spill[1]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--lattices", default="D3Q19,D3Q27")
    parser.add_argument("--reals", default="float,double")
    parser.add_argument("--min-blocks", type=int, default=0)
    args = parser.parse_args(argv)
    lattices = {"D3Q19": D3Q19, "D3Q27": D3Q27}
    rows = []
    for name in args.lattices.split(","):
        for real in args.reals.split(","):
            for moving in (False, True):
                for les in (None, Smagorinsky()):
                    cfg = LwacmKernelConfig(lattice=lattices[name], real=real, scheme="fused",
                                            moving_walls=moving, les=les,
                                            min_blocks=args.min_blocks)
                    row = {"lattice": name, "real": real, "moving_walls": moving,
                           "les": les is not None, **usage(generate(cfg))}
                    rows.append(row)
                    print(f"{name} {real:6} moving={int(moving)} les={int(les is not None)}: "
                          f"{row['registers']} registers, spills {row['spill_stores']}/"
                          f"{row['spill_loads']} B", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
