"""What the single step's LES would cost without its divergence-form term (GPU, a bound only).

    python benchmarks/lwacm_les_bound.py [--json FILE] [--lattices D3Q19,D3Q27]

Runs :mod:`lwacm_les_speed` (plain against LES as shipped, fp32 periodic 256³) with
:meth:`rule.StrainRate.add` and :meth:`rule.StrainRate.add_eddy_momentum` replaced by no-ops in
this process: the node's κ_t from |S| stays, the mixed derivatives, ∇|S| and the momentum term
ρ (∇ν_t · (∇u + ∇uᵀ) + ∇ν_t ∇·u) go. The viscous term is then ν_t (∇²u + ∇∇·u), which does not
conserve momentum where ν_t varies: not a model the engine offers, a measure of what the
divergence form costs against the issue's bar (LES within 10 % of the plain MLUPS).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import lwacm_les_speed

from thelma_py.modules.compute.lwacm import rule


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--lattices", default="D3Q19,D3Q27")
    args = parser.parse_args(argv)
    rule.StrainRate.add = lambda self, i, u: None
    rule.StrainRate.add_eddy_momentum = lambda self, j, rho, c_s: list(j)
    for lattice in args.lattices.split(","):
        out = [] if args.json is None else [
            "--json", str(args.json.with_name(f"{args.json.stem}_{lattice}.json"))]
        lwacm_les_speed.main([*out, "--only", f"{lattice}:float32:periodic:plain,les"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
