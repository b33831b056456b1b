"""Render and hash the CUDA source of every generated kernel over a representative matrix.

The proof that a refactoring changed no kernel: record the hashes before, compare after.

    python benchmarks/dump_kernels.py --write before.txt      # one "sha256  label" line each
    python benchmarks/dump_kernels.py --check before.txt      # exit 1 on any difference
    python benchmarks/dump_kernels.py --sources DIR           # the sources themselves

The matrix: LBM dense and sparse (D2Q9, D3Q19, D3Q27; fp32, fp64; bgk, trt, mrt; pull, push,
aa; walls at rest or moving; with and without a body force; open boundaries of every kind,
interpolated bodies; tuning options), and both LW-ACM schemes (rows and ``min_blocks`` of the
single-step block); ``--les`` adds both LW-ACM schemes with Smagorinsky LES, ``--models`` the
regularized, recursive and cumulant models (K17 too), LBM LES and 16-bit storage. Only public entry
points are used (``Lbm.kernel_source`` and
:func:`thelma_py.modules.compute.lwacm.kernels.generate`), so the script runs on any version.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import sys
from collections.abc import Iterator
from pathlib import Path

from thelma_py.lattice import D2Q9, D3Q19, D3Q27
from thelma_py.modules.compute.lbm import Lbm
from thelma_py.modules.compute.lwacm.kernels import LwacmKernelConfig, generate

LATTICES = (D2Q9, D3Q19, D3Q27)
PRECISIONS = ("float32", "float64")


def _open_sets(lattice, scheme: str) -> dict[str, tuple]:
    """Open-boundary sets to render: none, local rules, and (not AA) copy rules with an edge."""
    local = (("VELOCITY", "-x"), ("PRESSURE", "+x"), ("EQUILIBRIUM_VELOCITY", "-y"),
             ("EQUILIBRIUM_PRESSURE", "+y"))
    sets = {"none": (), "local": local}
    if scheme != "aa":
        edge = "-y+z" if lattice.d == 3 else "-x+y"
        sets["copy"] = (("VELOCITY", "-x"), ("OUTFLOW", "+x"), ("FREE_SLIP", "-y"),
                        ("FREE_SLIP", edge))
    return sets


def _force(lattice, on: bool):
    return (1e-5, -2e-5, 3e-5)[: lattice.d] if on else None


def lbm_sources() -> Iterator[tuple[str, str]]:
    """(label, source) of dense and sparse LBM configurations."""
    options = ({}, {"block": 256, "min_blocks": 8, "streaming_stores": True})
    for lattice, precision, collision in itertools.product(LATTICES, PRECISIONS,
                                                           ("bgk", "trt", "mrt")):
        if collision == "mrt" and lattice.mrt is None:
            continue
        for storage, scheme in (("dense", "pull"), ("dense", "push"), ("dense", "aa"),
                                ("sparse", "pull"), ("sparse", "aa")):
            open_sets = _open_sets(lattice, scheme)
            for moving, force, open_set, curved, opt in itertools.product(
                    (True, False), (False, True), open_sets, (False, True), range(len(options))):
                opened = open_sets[open_set]
                if curved and scheme != "pull":
                    continue
                if storage == "sparse" and scheme == "aa" and (opened or curved):
                    continue
                if opt and (opened or curved or force):  # tuning: one per plain variant
                    continue
                model = collision if collision != "mrt" else {
                    "name": "mrt", "odd": "magic" if force else "published"}
                params = Lbm(nu=0.05, collision=model, streaming=scheme, storage=storage,
                             force=_force(lattice, force), cuda_options=options[opt])
                label = (f"lbm/{storage}/{lattice.name}/{precision}/{collision}/{scheme}/"
                         f"moving={int(moving)}/force={int(force)}/open={open_set}/"
                         f"curved={int(curved)}/opt={opt}")
                yield label, params.kernel_source(lattice, precision, moving_walls=moving,
                                                  boundaries=opened, interpolated=curved)


MODELS = {"regularized": "regularized", "recursive": "recursive", "cumulant": "cumulant",
          "cumulant-rates": {"name": "cumulant", "omega_3": 0.9, "omega_4": 1.1,
                             "omega_5": 1.2, "limiter": 0.01},
          "k17": {"name": "cumulant", "parametrized": True, "limiter": 0.01}}
"""The collision models beside BGK, TRT and MRT (``--models``), by label."""


def model_sources() -> Iterator[tuple[str, str]]:
    """(label, source) of the other collision models, Smagorinsky LES on LBM and 16-bit
    storage: dense pull and AA, sparse pull, walls at rest or moving, fp32 arithmetic."""
    for label, model in MODELS.items():
        lattices = (D3Q27,) if "cumulant" in label or label == "k17" else (D2Q9, D3Q19, D3Q27)
        for lattice, les, store in itertools.product(lattices, (None, "smagorinsky"),
                                                     ("fp32", "fp16s")):
            for storage, scheme, moving in itertools.product(
                    ("dense", "sparse"), ("pull", "aa"), (False, True)):
                if storage == "sparse" and scheme == "aa":
                    continue
                params = Lbm(nu=0.01, collision=model, les=les, streaming=scheme,
                             storage=storage, store=store)
                yield (f"lbm-model/{label}/{lattice.name}/les={les}/{store}/{storage}/{scheme}/"
                       f"moving={int(moving)}",
                       params.kernel_source(lattice, "float32", moving_walls=moving))


def lwacm_sources() -> Iterator[tuple[str, str]]:
    """(label, source) of two-step and single-step LW-ACM configurations."""
    for lattice, real, moving, force in itertools.product(
            LATTICES, ("float", "double"), (True, False), (False, True)):
        tuning = [(0, 0)] + ([(4, 0), (12, 0), (8, 4)] if not force else [])
        for scheme in ("two-step", "fused"):
            for rows, min_blocks in (tuning if scheme == "fused" else [(0, 0)]):
                cfg = LwacmKernelConfig(lattice=lattice, real=real, scheme=scheme,
                                        force=_force(lattice, force), moving_walls=moving,
                                        rows=rows, min_blocks=min_blocks)
                label = (f"lwacm/{scheme}/{lattice.name}/{real}/moving={int(moving)}/"
                         f"force={int(force)}/rows={rows}/min_blocks={min_blocks}")
                yield label, generate(cfg)


def lwacm_les_sources() -> Iterator[tuple[str, str]]:
    """(label, source) of both LW-ACM schemes with Smagorinsky LES: one and several nodes a
    thread, records of ρ and of ρ − 1, walls at rest or moving."""
    from thelma_py.subgrid import Smagorinsky

    les = Smagorinsky(c_s=0.16)
    for lattice, real, moving in itertools.product(LATTICES, ("float", "double"), (True, False)):
        variants = [("two-step", 1, False)] + [
            ("fused", rows, shifted) for rows in ((1, 2, 4) if lattice.d == 3 else (1,))
            for shifted in (False, True)]
        for scheme, thread_rows, shifted in variants:
            try:  # several nodes a thread in 32 x 4 blocks, as the engine takes them
                cfg = LwacmKernelConfig(lattice=lattice, real=real, scheme=scheme, les=les,
                                        moving_walls=moving, thread_rows=thread_rows,
                                        rows=4 if thread_rows > 1 else 0, shifted=shifted)
            except ValueError:  # a ring larger than a block's shared memory
                continue
            label = (f"lwacm-les/{scheme}/{lattice.name}/{real}/moving={int(moving)}/"
                     f"thread_rows={thread_rows}/shifted={int(shifted)}")
            yield label, generate(cfg)


def sources(les: bool = False, models: bool = False) -> Iterator[tuple[str, str]]:
    yield from lbm_sources()
    yield from lwacm_sources()
    if les:
        yield from lwacm_les_sources()
    if models:
        yield from model_sources()


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, help="write 'sha256  label' lines to this file")
    parser.add_argument("--check", type=Path, help="compare with a file --write made")
    parser.add_argument("--sources", type=Path, help="write each source into this folder")
    parser.add_argument("--les", action="store_true",
                        help="also the LW-ACM kernels with Smagorinsky LES")
    parser.add_argument("--models", action="store_true",
                        help="also the other collision models, LBM LES and 16-bit storage")
    args = parser.parse_args(argv)
    lines, labels = [], set()
    for label, text in sources(args.les, args.models):
        if label in labels:
            raise AssertionError(f"two configurations are labelled {label}")
        labels.add(label)
        lines.append(f"{digest(text)}  {label}")
        if args.sources:
            path = args.sources / (label.replace("/", "__") + ".cu")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if args.write:
        args.write.write_text("\n".join(lines) + "\n")
    if not args.check:
        if not args.write:
            print("\n".join(lines))
        print(f"{len(lines)} sources, all together {digest(chr(10).join(lines))}",
              file=sys.stderr)
        return 0
    expected = dict(reversed(line.split("  ", 1)) for line in args.check.read_text().splitlines())
    got = dict(reversed(line.split("  ", 1)) for line in lines)
    differ = sorted(k for k in expected.keys() & got.keys() if expected[k] != got[k])
    missing, extra = sorted(expected.keys() - got.keys()), sorted(got.keys() - expected.keys())
    for name, keys in (("differ", differ), ("missing", missing), ("new", extra)):
        for key in keys:
            print(f"{name}: {key}")
    same = len(expected.keys() & got.keys()) - len(differ)
    print(f"{same} of {len(expected)} sources identical; {len(differ)} differ, "
          f"{len(missing)} missing, {len(extra)} new")
    return 1 if differ or missing or extra else 0


if __name__ == "__main__":
    sys.exit(main())
