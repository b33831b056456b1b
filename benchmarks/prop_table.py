"""Markdown tables of ``benchmarks/device_prop.py``'s JSON, laid out like Mawson & Revell (2014)
Tables 1–2 (rows: block size, columns: domain size), with their Kepler numbers beside::

    python3 benchmarks/prop_table.py out/prop.json > prop.md

Kepler numbers (fp32 D3Q19 pull, direct misaligned reads, lid-driven cavity): their Tables 1–2,
MLUPS, and as a fraction of the bandwidth they measured (K5000M 64.96 GB/s, K20c 157.89 GB/s)
at 152 B per node. Their propagation microbenchmark (Figs. 11–12): direct reads beat shared
memory by 7.6% (K5000M) / 17.6% (K20c) and shuffles by 4.7% / 17.1%.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

KEPLER = {  # device: (bandwidth GB/s, {size: {block: MLUPS}})
    "K5000M": (64.96, {128: {32: 344.9, 64: 413.47, 128: 415.15, 256: 416.27},
                       256: {32: 358.02, 64: 412.17, 128: 413.01, 256: 414.47}}),
    "K20c": (157.89, {128: {32: 725.22, 64: 979.22, 128: 981.79, 256: 990.39},
                      256: {32: 739.12, 64: 991.28, 128: 990.23, 256: 1020.59}}),
}
KEPLER_LOSS = {"K5000M": {"shared": 7.6, "shuffle": 4.7}, "K20c": {"shared": 17.6, "shuffle": 17.1}}
"""How much slower than direct misaligned reads each variant was (%, Figs. 11–12)."""
VARIANTS = ("direct", "shared", "shuffle")


def _cell(record: dict | None) -> str:
    if record is None:
        return "–"
    if "error" in record:
        return "failed"
    return f"{record['mlups']:,.0f} ({record['fraction_of_copy']:.1%})"


def _find(records, **keys) -> dict | None:
    for r in records:
        if all(r.get(k) == v for k, v in keys.items()):
            return r
    return None


def propagation_tables(records: list[dict]) -> str:
    rows = [r for r in records if r.get("part") == "propagation"]
    out = []
    for scheme in ("pull", "push"):
        for precision in ("float32", "float64"):
            mine = [r for r in rows if r["streaming"] == scheme and r["precision"] == precision
                    and r.get("wall_launch", "fused") == "fused"]
            if not mine:
                continue
            sizes = sorted({r["size"] for r in mine})
            blocks = sorted({r["block"] for r in mine})
            head = [f"{n}³ {v}" for n in sizes for v in VARIANTS]
            kepler = scheme == "pull" and precision == "float32"
            if kepler:
                head += [f"{d} {n}³ direct" for d in KEPLER for n in (128, 256)]
            out += [f"**D3Q19 BGK {scheme} {precision}, periodic: MLUPS (fraction of copy)**", "",
                    "| block | " + " | ".join(head) + " |",
                    "|---:|" + "---:|" * len(head)]
            for b in blocks:
                cells = [_cell(_find(mine, size=n, propagation=v, block=b))
                         for n in sizes for v in VARIANTS]
                if kepler:
                    for bw, table in KEPLER.values():
                        for n in (128, 256):
                            m = table[n].get(b)
                            cells.append(f"{m:,.0f} ({m * 152e6 / (bw * 1e9):.1%})" if m else "–")
                out.append(f"| {b} | " + " | ".join(cells) + " |")
            out.append("")
    return "\n".join(out)


def summary(records: list[dict]) -> str:
    """Best block per (scheme, precision, size, variant) and each variant against direct."""
    rows = [r for r in records if r.get("part") == "propagation" and "mlups" in r]
    lines = ["| scheme | precision | size | direct | shared | shuffle | shared vs direct | "
             "shuffle vs direct |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    keys = sorted({(r["streaming"], r["precision"], r["size"]) for r in rows})
    for scheme, precision, size in keys:
        best = {}
        for v in VARIANTS:
            some = [r for r in rows if (r["streaming"], r["precision"], r["size"],
                                        r["propagation"]) == (scheme, precision, size, v)]
            best[v] = max(some, key=lambda r: r["mlups"]) if some else None
        cells = [f"{best[v]['mlups']:,.0f} b{best[v]['block']}" if best[v] else "–"
                 for v in VARIANTS]
        ratios = [f"{best[v]['mlups'] / best['direct']['mlups'] - 1:+.1%}"
                  if best[v] and best["direct"] else "–" for v in ("shared", "shuffle")]
        lines.append(f"| {scheme} | {precision} | {size}³ | " + " | ".join(cells + ratios) + " |")
    lines += ["", "Kepler (Mawson & Revell Figs. 11–12, offset-by-one reads): " + "; ".join(
        f"{d}: shared {-v['shared']:+.1f}%, shuffle {-v['shuffle']:+.1f}%"
        for d, v in KEPLER_LOSS.items())]
    return "\n".join(lines)


def closed_box(records: list[dict]) -> str:
    rows = [r for r in records if r.get("part") == "closed"]
    lines = ["| scheme | case | block | propagation | wall launch | moving tiles | MLUPS | "
             "of copy |", "|---|---|---:|---|---|---|---:|---:|"]
    for r in rows:
        value = (f"{r['mlups']:,.0f} | {r['fraction_of_copy']:.1%}" if "mlups" in r
                 else f"{r.get('error', '')} | –")
        lines.append(f"| {r['streaming']} | {r['case']} | {r['block']} | {r['propagation']} | "
                     f"{r.get('wall_launch', 'fused')} | "
                     f"{'yes' if r.get('moving_tiles') else 'no'} | {value} |")
    return "\n".join(lines)


def report(payload: dict) -> str:
    records = payload["results"]
    head = (f"Device: {payload['device']} (CuPy {payload['cupy']}), commit {payload['commit']}, "
            f"{payload['date']}; copy bandwidth {payload['copy_bandwidth_GBs']:.0f} GB/s.")
    skipped = payload.get("skipped") or []
    tail = f"\n\nSkipped (time budget): {len(skipped)} configurations." if skipped else ""
    return "\n\n".join([head, "### Closed box (D3Q19 BGK fp32 256³)", closed_box(records),
                        "### Propagation variants", propagation_tables(records),
                        "### Best block per variant", summary(records)]) + tail + "\n"


if __name__ == "__main__":
    print(report(json.loads(Path(sys.argv[1]).read_text())), end="")
