"""Rewrite every generated table of BENCHMARKS.md from its data file (the blocks between
``<!-- table:begin FILE -->`` and ``<!-- table:end -->``), as ``thelma bench --report FILE``
prints it; tests/test_benchmarks_doc.py checks that they agree::

    python benchmarks/update_tables.py
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from thelma_py.tools.bench import markdown_table

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"(<!-- table:begin (\S+) -->\n)(.*?)(<!-- table:end -->)", re.S)


def main() -> None:
    path = ROOT / "BENCHMARKS.md"
    text = path.read_text()

    def fill(match: re.Match) -> str:
        table = markdown_table(json.loads((ROOT / match.group(2)).read_text()))
        return match.group(1) + table + match.group(4)

    path.write_text(BLOCK.sub(fill, text))


if __name__ == "__main__":
    main()
