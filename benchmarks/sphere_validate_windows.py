"""How often one record of a sphere run would pass ``thelma validate``'s St check, on a CPU:

    python benchmarks/sphere_validate_windows.py RUN.json [--length 60] [--every 5]
        [--from 10] [--reference 0.215]

RUN.json: a ``flows sphere`` run with its probes (``benchmarks/data``; ``.gz`` is read too),
or the ``sphere_subcritical.json`` that ``thelma validate`` keeps beside its report. For
records of ``--length`` d/U that start every ``--every`` d/U from ``--from`` on, the shipped
measure (:func:`thelma_py.tools.flows.sphere_measures`: the peak of the rings' summed
side-to-side spectra at 2.5 d and beyond; the St of the validate check, whose record is
25–125 d/U) and its halves, St against ``--reference`` and the mean c_D, one line each, then
the share of records within 5 % (docs/validation/flows.md, section 3, session 27).
"""

from __future__ import annotations

import argparse

import numpy as np

from thelma_py.tools.flows import sphere_measures, sphere_records


def _until(columns: dict, last_step: float) -> dict:
    """The columns' samples up to ``last_step``."""
    arrays = {k: np.asarray(v, dtype=float) for k, v in columns.items()}
    keep = arrays["step"] <= last_step
    return {k: v[keep] for k, v in arrays.items()}


def window_measures(run: dict, start: float, end: float) -> dict:
    """The shipped measures over ``start``–``end`` d/U of ``run``."""
    d, u = run["d"], run["u"]
    return sphere_measures(_until(run["series"], end * d / u), _until(run["probes"], end * d / u),
                           d, u, start, run.get("options", {}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", help="a run's JSON (flows sphere output or sphere_subcritical.json)")
    parser.add_argument("--length", type=float, default=60.0, help="d/U of each record")
    parser.add_argument("--every", type=float, default=5.0, help="d/U between record starts")
    parser.add_argument("--from", dest="first", type=float, default=10.0,
                        help="d/U where the first record starts")
    parser.add_argument("--reference", type=float, default=0.215)
    args = parser.parse_args()
    run = sphere_records(args.run)[0]
    last = float(run["series"]["step"][-1]) * run["u"] / run["d"]
    errors = []
    for start in np.arange(args.first, last - args.length + 1e-9, args.every):
        m = window_measures(run, start, start + args.length)
        error = m["St"] / args.reference - 1
        errors.append(error)
        first, second = m["St_halves"]
        print(f"{start:6.1f}-{start + args.length:6.1f} d/U: St {m['St']:.3f} ({error:+6.1%}), "
              f"halves {first:.3f} {second:.3f}, c_D {m['c_D']:.3f}")
    inside = sum(abs(e) < 0.05 for e in errors)
    print(f"{inside} of {len(errors)} records of {args.length:g} d/U within 5 % of "
          f"{args.reference}")


if __name__ == "__main__":
    main()
