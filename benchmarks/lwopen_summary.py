"""Summary of benchmarks/device_lwopen.sh: the issue #18 bars from its JSON files.

    python benchmarks/lwopen_summary.py OUT      (writes OUT/lwopen_summary.json, prints it)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def bench_bars(*paths: Path) -> dict:
    if not paths[0].exists():
        return {"error": f"{paths[0]} missing"}
    rows = [r for path in paths if path.exists()
            for r in json.loads(path.read_text()).get("results", []) if "mlups" in r]
    out = {f"{r['compute']} {r.get('streaming', '')} {r['case']} mb{r.get('min_blocks', 0)}"
           .replace("  ", " "): round(r["mlups"]) for r in rows}
    best = {}
    for r in rows:
        key = (r["compute"], r["case"])
        best[key] = max(best.get(key, 0.0), r["mlups"])
    fused = best.get(("lwacm-fused", "slip-obstacles"))
    if fused:
        periodic = best.get(("lwacm-fused", "periodic"))
        lbm = best.get(("lbm", "slip-obstacles"))
        out["fused slip-obstacles / fused periodic (bar >= 0.9)"] = (
            periodic and round(fused / periodic, 3))
        out["fused slip-obstacles / best lbm slip-obstacles (bar >= 3)"] = (
            lbm and round(fused / lbm, 3))
    return out


def st_bars(path: Path) -> dict:
    if not path.exists():
        return {"error": f"{path} missing"}
    runs = json.loads(path.read_text())["runs"]
    out = {}
    base = {r["interpolated"]: r for r in runs if r["compute"] == "lbm"}
    for r in runs:
        key = f"{r['compute']}{' interpolated' if r['interpolated'] else ''}"
        out[key] = {m: round(r[m], 5) for m in ("c_D", "c_L", "dp")}
        out[key].update(steps=r["steps"], steady=r["steady"], mlups=round(r["mlups"]))
        for flag, name in ((False, "staircase"), (True, "interpolated")):
            if r["compute"] != "lbm" and flag in base:
                out[key][f"vs lbm {name} %"] = {
                    m: round(100 * (r[m] / base[flag][m] - 1), 3) for m in ("c_D", "c_L", "dp")}
    return out


def main() -> None:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "out")
    summary = {"bench": bench_bars(folder / "bench_lwopen.json",
                                   folder / "bench_lwopen_mb4.json"),
               "schaefer_turek": st_bars(folder / "st_lwopen.json")}
    (folder / "lwopen_summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
