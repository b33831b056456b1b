"""The porous-medium case of ``thelma bench``: dense against sparse storage, per FLUID node.

A porous record (``case == "porous"``) holds, besides the usual fields, the measured fluid
fraction and the figures per fluid node: ``mlups`` counts fluid-node updates per second (what a
user gets, whatever the storage), ``memory_bytes_per_fluid_node`` divides what the engine holds
by the fluid nodes (a dense engine holds every box node). Traffic is counted where it happens:
a dense engine's solid nodes read their tag and stop, so both storages move their
``bytes_per_node`` per fluid node only (``bytes_per_fluid_node``), and ``bandwidth_GBs`` and
``fraction_of_copy`` are those bytes at the fluid-node rate. (The single-step LW-ACM also loads
the records of solid nodes: for it the figures are a lower bound.)
"""

from __future__ import annotations

import itertools
import math

from thelma_py.geometry.porous import random_spheres

SEED = 7
"""Sphere positions of the porous case (fixed: every run times the same medium)."""


def porous_geometry(size: int, dim: int, fluid_fraction: float):
    """The bench medium: random overlapping spheres of radius size/16 in a periodic box."""
    return random_spheres((size,) * dim, fluid_fraction, seed=SEED)


def per_fluid_node(record: dict, tags) -> dict:
    """Figures per fluid node for a porous bench record whose ``mlups`` counts the nodes the
    engine updates (see the module docstring)."""
    box = int(tags.fluid.size)
    fluid = int(tags.fluid.sum())
    scale = (fluid if record["storage"] == "sparse" else box) / fluid  # updated per fluid
    return {"fluid_nodes": fluid, "box_nodes": box, "fluid_fraction_measured": fluid / box,
            **{k: record[k] / scale for k in ("mlups", "mlups_min", "mlups_max",
                                              "bandwidth_GBs", "fraction_of_copy")},
            "bytes_per_fluid_node": record["bytes_per_node"],
            "memory_bytes_per_fluid_node": record["memory_bytes_per_node"] * scale}


LARGEST = (("dense", "pull"), ("dense", "aa"), ("sparse", "pull"), ("sparse", "aa"))
"""Schemes compared by ``--largest``: two buffers or one (in place), dense and sparse."""


def largest_estimates(per_node: dict[tuple[str, str], int], fluid_fraction: float,
                      budget_bytes: float) -> list[dict]:
    """Largest cubic porous domain per (storage, streaming) that fits in 95% of
    ``budget_bytes``, from the device bytes per box node (dense) or per fluid node (sparse).
    An estimate: building the tags and the neighbour table of ~10^9 nodes takes the host
    longer than a bench run should."""
    out = []
    for (storage, streaming), bytes_per_node in per_node.items():
        per_box = bytes_per_node * (fluid_fraction if storage == "sparse" else 1.0)
        n = int((0.95 * budget_bytes / per_box) ** (1 / 3))
        out.append({"case": "porous", "storage": storage, "streaming": streaming,
                    "fluid_fraction": fluid_fraction, "memory_bytes_per_node": bytes_per_node,
                    "size": n - n % 8, "budget_bytes": budget_bytes, "ran": False,
                    "estimate": True})
    return out


def largest_porous(backend, memory_limit: float | None = None, fluid_fraction: float = 0.3,
                   lattice_name: str = "D3Q19", precision: str = "float32") -> list[dict]:
    """``--largest`` for the porous case: dense against sparse, from each engine's own
    memory_bytes_per_node (engines built on a small medium)."""
    import numpy as np

    from thelma_py.lattice import lattice_by_name
    from thelma_py.modules.compute.lbm import Lbm

    lattice = lattice_by_name(lattice_name)
    tags = porous_geometry(32, lattice.d, fluid_fraction).evaluate(lattice)
    per_node = {}
    for storage, streaming in LARGEST:
        engine = Lbm(nu=0.02, storage=storage, streaming=streaming).create(
            lattice, tags, backend, np.dtype(precision))
        per_node[(storage, streaming)] = engine.memory_bytes_per_node
        del engine
    backend.xp.get_default_memory_pool().free_all_blocks()
    free, _ = backend.memory()
    budget = min(free, memory_limit) if memory_limit else free
    return largest_estimates(per_node, fluid_fraction, budget)


def _crossover(points: list[tuple[float, float]]) -> float | None:
    """Fluid fraction where ratio (sparse / dense, higher is better for sparse) falls through
    1, by linear interpolation between measured fractions; None if it never does."""
    points = sorted(points)
    for (x0, r0), (x1, r1) in zip(points, points[1:], strict=False):
        if r0 >= 1.0 > r1:
            return x0 + (x1 - x0) * (r0 - 1.0) / (r0 - r1)
    return None


def porous_section(payload: dict) -> str:
    """Markdown: dense against sparse per fluid fraction, and where sparse starts to pay."""
    rows = [r for r in payload["results"] if r.get("case") == "porous" and "error" not in r]
    largest = [r for r in payload.get("largest", []) if r.get("case") == "porous"]
    if not rows and not largest:
        return ""
    copy = payload["copy_bandwidth_GBs"]
    lines = ["", "Porous medium (random overlapping spheres, periodic box): MLUPS and bytes "
             "counted per FLUID node (a dense engine's solid nodes read their tag and stop); "
             f"of copy: those bytes at that rate against the copy bandwidth ({copy:.0f} GB/s).",
             "",
             "| lattice | collision | precision | size | fluid | scheme | MLUPS (fluid) | "
             "B moved / fluid node | of copy | memory B / fluid node |",
             "|---|---|---|---|---:|---|---:|---:|---:|---:|"]
    key = ("lattice", "collision", "precision", "size")
    for r in sorted(rows, key=lambda r: (*[r[k] for k in key], r["fluid_fraction"],
                                          _scheme(r))):
        lines.append(f"| {r['lattice']} | {r['collision']} | {r['precision']} | {r['size']}³ | "
                     f"{r['fluid_fraction_measured']:.0%} | {_scheme(r)} | {r['mlups']:.0f} | "
                     f"{r['bytes_per_node']:.0f} | "
                     f"{r['mlups'] * r['bytes_per_node'] / 1e3 / copy:.1%} | "
                     f"{r['memory_bytes_per_fluid_node']:.0f} |")
    groups: dict = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in key), {}).setdefault(
            r["fluid_fraction_measured"], {})[_scheme(r)] = r
    for group, by_fraction in sorted(groups.items()):
        schemes = sorted({k for v in by_fraction.values() for k in v})
        for sparse, dense in itertools.product(
                [k for k in schemes if k.startswith("sparse")],
                [k for k in schemes if k.startswith("dense")]):
            pairs = [(phi, v[sparse], v[dense]) for phi, v in by_fraction.items()
                     if sparse in v and dense in v]
            if not pairs:
                continue
            speed = [(phi, sp["mlups"] / de["mlups"]) for phi, sp, de in pairs]
            _, s0, d0 = pairs[0]
            # sparse holds M_s per fluid node, dense M_d per box node: pays below M_d / M_s
            memory_pays = d0["memory_bytes_per_node"] / s0["memory_bytes_per_fluid_node"]
            lines += ["", f"{' '.join(map(str, group[:3]))} {group[3]}³, {sparse} against "
                      f"{dense}: " + _speed_sentence(speed)
                      + f" Sparse needs less memory below {memory_pays:.0%} fluid "
                      f"({s0['memory_bytes_per_fluid_node']:.0f} B per fluid node against "
                      f"{d0['memory_bytes_per_node']:.0f} B per box node)."]
    for r in largest:
        per = "fluid" if r["storage"] == "sparse" else "box"
        lines += ["", f"Largest porous domain ({r['fluid_fraction']:.0%} fluid) in "
                      f"{r['budget_bytes'] / 1e9:.0f} GB, {r['storage']} {r['streaming']}: "
                      f"{r['size']}³ ({r['memory_bytes_per_node']} B per {per} node; "
                      "estimate, not run)."]
    return "\n".join(lines) + "\n"


def _scheme(record: dict) -> str:
    """'dense pull', 'dense aa', 'sparse pull' (records without storage are dense)."""
    return f"{record.get('storage', 'dense')} {record['streaming']}"


def _speed_sentence(speed: list[tuple[float, float]]) -> str:
    text = ", ".join(f"{ratio:.2f}x at {phi:.0%}" for phi, ratio in sorted(speed))
    cross = _crossover(speed)
    if all(r >= 1.0 for _, r in speed):
        verdict = f"sparse is faster per fluid node at every measured fraction (up to " \
                  f"{max(p for p, _ in speed):.0%})."
    elif cross is not None and not math.isnan(cross):
        verdict = f"sparse is faster per fluid node below about {cross:.0%} fluid."
    else:
        verdict = "dense is faster per fluid node at every measured fraction."
    return f"sparse/dense MLUPS {text}; {verdict}"
