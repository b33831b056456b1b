"""The porous case of thelma bench: configurations, per-fluid-node figures, the report."""

from __future__ import annotations

import attrs
import numpy as np

from thelma_py.backend import select_backend
from thelma_py.tools.bench import BenchConfig, _wanted, build_engine, markdown_table
from thelma_py.tools.bench_porous import largest_estimates, per_fluid_node


def test_sparse_engine_counts_fluid_nodes():
    cfg = BenchConfig(lattice="D2Q9", precision="float64", case="porous", size=32,
                      storage="sparse", fluid_fraction=0.3)
    engine, nodes = build_engine(cfg, select_backend("cpu"))
    assert nodes == engine.domain.count == int(engine.tags.fluid.sum())
    assert 0.25 < nodes / 32**2 < 0.35
    _, box = build_engine(attrs.evolve(cfg, storage="dense"), select_backend("cpu"))
    assert box == 32**2
    assert "porous" in cfg.label and "sparse" in cfg.label


def test_per_fluid_node_figures():
    engine, _ = build_engine(BenchConfig(case="porous", size=32, fluid_fraction="0.3"),
                             select_backend("cpu"))
    fluid = int(engine.tags.fluid.sum())
    # 1000 MLUPS over the box at 152 B per updated node would be 152 GB/s: 1.52 of a 100 GB/s copy
    record = {"storage": "dense", "mlups": 1000.0, "mlups_min": 900.0, "mlups_max": 1100.0,
              "bytes_per_node": 152, "memory_bytes_per_node": 172, "bandwidth_GBs": 152.0,
              "fraction_of_copy": 1.52}
    out = per_fluid_node(record, engine.tags)
    phi = fluid / 32**3
    assert np.isclose(out["mlups"], 1000.0 * phi)  # a dense step visits every box node
    assert np.isclose(out["memory_bytes_per_fluid_node"], 172 / phi)
    # its solid nodes read their tag and stop: 152 B per fluid node, not per box node
    assert out["bytes_per_fluid_node"] == 152
    assert np.isclose(out["fraction_of_copy"], 1.52 * phi) and out["fraction_of_copy"] < 1
    assert np.isclose(out["bandwidth_GBs"], out["mlups"] * 1e6 * 152 / 1e9)
    sparse = per_fluid_node({**record, "storage": "sparse", "bytes_per_node": 224,
                             "bandwidth_GBs": 224.0, "fraction_of_copy": 2.24}, engine.tags)
    assert sparse["mlups"] == 1000.0 and sparse["bytes_per_fluid_node"] == 224
    assert sparse["fraction_of_copy"] == 2.24


def test_sweeps_skip_what_they_would_repeat():
    assert _wanted(BenchConfig(case="porous", storage="sparse", fluid_fraction=0.6), 0.1)
    assert not _wanted(BenchConfig(case="cavity", fluid_fraction=0.6), 0.1)
    assert _wanted(BenchConfig(case="porous", storage="sparse", streaming="aa"), 0.3)
    assert not _wanted(BenchConfig(case="porous", storage="sparse", streaming="push"), 0.3)
    assert not _wanted(BenchConfig(compute="lwacm", case="porous", storage="sparse"), 0.3)


def test_largest_sparse_domain_at_30_percent_is_larger():
    rows = largest_estimates({("dense", "pull"): 172, ("dense", "aa"): 96,
                              ("sparse", "pull"): 244}, 0.3, 80e9)
    size = {(r["storage"], r["streaming"]): r["size"] for r in rows}
    assert size[("sparse", "pull")] > size[("dense", "aa")] > size[("dense", "pull")]
    assert all(r["size"] % 8 == 0 for r in rows)


def _record(storage, phi, mlups, memory):
    return {"compute": "lbm", "lattice": "D3Q19", "collision": "bgk", "precision": "float32",
            "streaming": "pull", "size": 256, "case": "porous", "block": 128, "min_blocks": 0,
            "streaming_stores": False, "storage": storage, "fluid_fraction": phi,
            "fluid_fraction_measured": phi, "mlups": mlups, "mlups_min": mlups,
            "mlups_max": mlups, "bytes_per_node": 224 if storage == "sparse" else 152,
            "bandwidth_GBs": 1.0, "fraction_of_copy": 0.8, "memory_bytes_per_node": memory,
            "bytes_per_fluid_node": 224.0 if storage == "sparse" else 152.0,
            "memory_bytes_per_fluid_node": memory if storage == "sparse" else memory / phi,
            "nodes": 1, "steps_per_repeat": 8, "repeats": 7}


def test_report_says_where_sparse_starts_to_pay():
    results = []
    for phi, dense, sparse in ((0.1, 2000, 9000), (0.3, 6000, 9000), (0.6, 12000, 9000)):
        results += [_record("dense", phi, dense, 172), _record("sparse", phi, sparse, 244)]
    payload = {"device": "GPU", "driver": 1, "cupy": "x", "commit": "c", "date": "d",
               "copy_bandwidth_GBs": 3000.0, "results": results,
               "largest": largest_estimates({("dense", "pull"): 172, ("sparse", "pull"): 244},
                                            0.3, 80e9)}
    text = markdown_table(payload)
    assert "MLUPS (fluid)" in text
    # speed ratio 1.5 at 30 %, 0.75 at 60 %: crosses 1 at 30 + 30 * 0.5 / 0.75 = 50 %
    assert "sparse is faster per fluid node below about 50% fluid" in text
    assert "Sparse needs less memory below 70% fluid" in text  # 172 / 244
    assert "Largest porous domain (30% fluid) in 80 GB, sparse pull" in text
