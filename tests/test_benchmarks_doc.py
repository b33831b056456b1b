"""BENCHMARKS.md shows its data files exactly as `thelma bench --report` prints them, and it
shows the newest benchmark data file."""

from __future__ import annotations

import json
import re
from pathlib import Path

from thelma_py.tools.bench import markdown_table

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"<!-- table:begin (\S+) -->\n(.*?)<!-- table:end -->", re.S)


def test_benchmarks_md_tables_match_their_data_files():
    text = (ROOT / "BENCHMARKS.md").read_text()
    blocks = BLOCK.findall(text)
    assert blocks, "BENCHMARKS.md has no generated table"
    for name, table in blocks:
        assert table == markdown_table(json.loads((ROOT / name).read_text())), name
    bench_files = [f for f in (ROOT / "benchmarks" / "data").glob("*.json")
                   if "results" in json.loads(f.read_text())]
    newest = max(bench_files, key=lambda f: json.loads(f.read_text())["date"])
    assert newest.relative_to(ROOT).as_posix() in {name for name, _ in blocks}
