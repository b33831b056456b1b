"""The single step's LES speed with variants of its strain rule, in one process (GPU).

    python benchmarks/lwacm_les_variants.py [--json FILE] [--lattices D3Q19,D3Q27]
        [--variants shipped,no-share,share-xy,sum,no-divergence]

For each variant, :mod:`lwacm_les_speed` (plain against LES as shipped, fp32 periodic 256³)
with :class:`rule.StrainRate` changed in this process before the kernels are generated:

* ``shipped``: the rule as it was at 84ec3a5 (mixed derivatives from inner differences,
  shared along y, on every lattice: :func:`rule.lends_differences` forced true; since NOTES
  run 58 the rule lends them on D3Q27 only);
* ``no-share``: the same, each node forming all its own inner differences;
* ``share-xy``: the xz and yz planes take z as their outer axis, only xy is shared;
* ``sum``: the four face diagonals summed in link order, no lending (the rule of 9688336,
  and since run 58 the shipped rule on D3Q19: :func:`rule.lends_differences` false);
* ``no-divergence``: the shipped rule without its divergence-form term (:meth:`StrainRate.add`
  and :meth:`StrainRate.add_eddy_momentum` no-ops: κ_t from |S| stays; ∇|S| and the momentum
  term ρ (∇ν_t · (∇u + ∇uᵀ) + ∇ν_t ∇·u) go). Its viscous term ν_t (∇²u + ∇∇·u) does not
  conserve momentum where ν_t varies: not a model on offer, a measure of what the divergence
  form costs against the issue's bar (LES within 10 % of the plain MLUPS). Run 57 measured it
  (data ``..._9688336_lwacm_les_bound_*.json``, then with a script of its own).

The variants round alike to within the order of their sums (but the last); speed only.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import lwacm_les_speed

from thelma_py.modules.compute.lwacm import rule

SHIPPED = (rule.plane_axes, rule.lends_differences, rule.StrainRate.share,
           rule.StrainRate.add, rule.StrainRate.add_eddy_momentum)


def _restore(lend: bool = True) -> None:
    rule.plane_axes, rule.lends_differences = SHIPPED[0], SHIPPED[1]
    rule.StrainRate.share, rule.StrainRate.add, rule.StrainRate.add_eddy_momentum = SHIPPED[2:]
    if lend:
        rule.lends_differences = lambda lattice: True


def _no_share() -> None:
    rule.StrainRate.share = lambda self, side, neighbour: None


def _share_xy() -> None:
    rule.plane_axes = lambda b, c: ((c, b) if (b, c) == (0, 1) else (b, c))


def _sum() -> None:
    rule.lends_differences = lambda lattice: False


def _no_divergence() -> None:
    rule.StrainRate.add = lambda self, i, u: None
    rule.StrainRate.add_eddy_momentum = lambda self, j, rho, c_s: list(j)


VARIANTS = {"shipped": lambda: None, "no-share": _no_share, "share-xy": _share_xy,
            "sum": _sum, "no-divergence": _no_divergence}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--lattices", default="D3Q19,D3Q27")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    args = parser.parse_args(argv)
    for name in args.variants.split(","):
        _restore(lend=name != "no-divergence")  # that one: the rule as shipped, less the term
        VARIANTS[name]()
        for lattice in args.lattices.split(","):
            print(f"--- {name}", flush=True)
            out = [] if args.json is None else [
                "--json", str(args.json.with_name(f"{args.json.stem}_{name}_{lattice}.json"))]
            lwacm_les_speed.main([*out, "--only", f"{lattice}:float32:periodic:plain,les"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
