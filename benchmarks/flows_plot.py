"""Figures and tables of the turbulent validation runs (benchmarks/device_flows.sh) for
docs/validation/flows.md, on a CPU with matplotlib:

    python benchmarks/flows_plot.py OUT_DIR [--docs docs/validation]

Reads flows_tgv.json (and flows_tgv_nosgs.json), flows_channel.json, flows_sphere3700.json,
flows_sphere10000.json (those present), writes flows_tgv.png, flows_channel.png and
flows_sphere.png and prints the Markdown tables of the page.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from thelma_py.cases.channel import load_mkm
from thelma_py.cases.reference import load_tgv_reference


def _load(folder: Path, name: str) -> list[dict]:
    path = folder / f"flows_{name}.json"
    return json.loads(path.read_text())["runs"] if path.is_file() else []


def tgv(runs: list[dict], docs: Path, plt) -> None:
    ok = [r for r in runs if "error" not in r]
    print("| scheme | size | peak −dE/dt | at t* | vs DNS | ran to t* | diverged at | MLUPS |")
    print("|---|---|---:|---:|---:|---:|---|---:|")
    for r in runs:
        if "error" in r:
            print(f"| {r['scheme']} | {r['n']}³ | — | — | — | — | not built: {r['error']} | — |")
            continue
        print(f"| {r['scheme']} | {r['n']}³ | {r['peak']:.5f} | {r['peak_time']:.2f} | "
              f"{r['peak_error']:+.3f} | {r['t'][-1]:.1f} | {r['diverged_at']} | "
              f"{r['mlups']:.0f} |")
    sizes = sorted({r["n"] for r in ok})
    if not sizes:
        return
    ref = load_tgv_reference()
    fig, axes = plt.subplots(1, len(sizes), figsize=(4.5 * len(sizes), 4), squeeze=False)
    for ax, n in zip(axes[0], sizes, strict=True):
        ax.plot(ref["t"], ref["minus_dEk_dt"], "k-", lw=2, label="spectral DNS 512³")
        for r in (r for r in ok if r["n"] == n and r.get("diverged_at") is None):
            ax.plot(r["t"], r["minus_dEk_dt"], label=r["scheme"])
        ax.set(title=f"{n}³", xlabel="t* = t V0 / L", ylabel="−dE/dt", xlim=(0, 20),
               ylim=(0, 0.016))
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(docs / "flows_tgv.png", dpi=90)


def channel(runs: list[dict], docs: Path, plt) -> None:
    mkm = load_mkm()
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 4))
    ax.semilogx(mkm["y_plus"][1:], mkm["U_plus"][1:], "k-", lw=2, label="MKM 1999")
    ax.semilogx(mkm["y_plus"][1:], mkm["y_plus"][1:], "k:", lw=1)
    print("| scheme | u_τ | h | nodes | Re_τ measured | U⁺ error y⁺ < 30 | y⁺ ≥ 30 | steps | "
          "MLUPS |")
    print("|---|---:|---|---|---:|---:|---:|---:|---:|")
    for r in runs:
        if "re_tau" not in r:
            print(f"| {r['scheme']} | {r.get('u_tau_input')} | — | — | "
                  f"{r.get('error') or r.get('diverged_at')} | | | | |")
            continue
        e = r["U_plus_error"]
        print(f"| {r['scheme']} | {r['u_tau_input']:g} | {r['h']} | "
              f"{'×'.join(map(str, r['shape']))} | "
              f"{r['re_tau']:.1f} | {e['below']:.3f} | {e['above']:.3f} | {r['steps']} | "
              f"{r['mlups']:.0f} |")
        label = f"{r['scheme']}, h = {r['h']}, u_τ = {r['u_tau_input']:g}"
        ax.semilogx(r["y_plus"], r["U_plus"], "o", ms=3, label=label)
        history = np.asarray(r["history"])
        bx.plot(history[:, 0], history[:, 1], label=label)
    ax.set(xlabel="y⁺", ylabel="U⁺", ylim=(0, 25))
    ax.legend()
    bx.axhline(180, color="k", lw=1)
    bx.set(xlabel="t u_τ / h", ylabel="Re_τ (instantaneous plane mean)")
    bx.legend()
    fig.tight_layout()
    fig.savefig(docs / "flows_channel.png", dpi=90)


def sphere(runs: list[dict], docs: Path, plt) -> None:
    ok = [r for r in runs if "error" not in r]
    print("| Re | scheme | d | c_D | ref | St | ref | T averaged (d/U) | MLUPS | wall s | "
          "diverged at (d/U) |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in runs:
        if "error" in r:
            print(f"| {r['reynolds']:g} | {r['scheme']} | not built: {r['error']} |||||||")
            continue
        ref = r["reference"] or {}
        print(f"| {r['reynolds']:g} | {r['scheme']} | {r['d']} | {r['c_D']:.3f} | "
              f"{ref.get('c_D')} | {r['St']:.3f} ± {r['resolution'] / 2:.3f} | {ref.get('St')} "
              f"| {r['convective_times']:.0f} | {r['mlups']:.0f} | {r['wall_seconds']:.0f} | "
              f"{r.get('diverged_at')} |")
    if not ok:
        return
    fig, axes = plt.subplots(1, len(ok), figsize=(5 * len(ok), 4), squeeze=False)
    for ax, r in zip(axes[0], ok, strict=True):
        s = r["series"]
        t = np.asarray(s["step"]) * r["u"] / r["d"]
        ax.plot(t, s["c_D"], label="c_D")
        ax.plot(t, s["c_y"], label="c_y", lw=0.7)
        ax.plot(t, s["c_z"], label="c_z", lw=0.7)
        ax.set(title=f"Re = {r['reynolds']:g}, {r['scheme']}", xlabel="t U / d", ylim=(-0.5, 1))
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(docs / "flows_sphere.png", dpi=90)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--docs", type=Path, default=Path("docs/validation"))
    args = parser.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if runs := _load(args.folder, "tgv") + _load(args.folder, "tgv_nosgs"):
        tgv(runs, args.docs, plt)
    channels = sorted(args.folder.glob("flows_channel*.json"))  # device_channel.sh: one a variant
    if runs := [r for path in channels for r in json.loads(path.read_text())["runs"]]:
        channel(runs, args.docs, plt)
    if runs := _load(args.folder, "sphere3700") + _load(args.folder, "sphere10000"):
        sphere(runs, args.docs, plt)


if __name__ == "__main__":
    main()
