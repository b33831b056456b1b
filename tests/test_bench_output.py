"""``thelma bench --output-every``: the timing harness on the CPU and its Markdown lines."""

from __future__ import annotations

from thelma_py.tools.bench import markdown_table
from thelma_py.tools.bench_output import output_cost


def test_output_cost_writes_the_files_it_counts_and_renders(tmp_path):
    record = output_cost(size=10, every=5, steps=20, compression="none", directory=tmp_path,
                         device="cpu")
    files = sorted(tmp_path.glob("*.vti"))
    assert record["files"] == 4 and len(files) >= 4  # warm-up steps write files too
    assert record["file_bytes"] == files[-1].stat().st_size > 10 ** 3 * 17
    assert record["mlups_plain"] > 0 and record["mlups_with_output"] > 0
    assert record["cost"] == 1 - record["mlups_with_output"] / record["mlups_plain"]
    payload = {"device": "cpu", "driver": "-", "cupy": "-", "commit": "x", "date": "d",
               "copy_bandwidth_GBs": 1.0, "results": [], "output": [record]}
    table = markdown_table(payload)
    assert record["disk_write_GBs"] > 0
    assert "| 10³ | 5 | rho,u,kind | none |" in table
