"""BENCHMARKS.md shows the newest benchmark data file, exactly as `thelma bench --report` does."""

from __future__ import annotations

import json
from pathlib import Path

from thelma_py.bench import markdown_table

ROOT = Path(__file__).resolve().parents[1]


def test_benchmarks_md_table_matches_newest_data_file():
    files = sorted((ROOT / "benchmarks" / "data").glob("*.json"))
    newest = max(files, key=lambda f: json.loads(f.read_text())["date"])
    text = (ROOT / "BENCHMARKS.md").read_text()
    table = text.split("<!-- table:begin -->\n", 1)[1].split("<!-- table:end -->", 1)[0]
    assert table == markdown_table(json.loads(newest.read_text()))
