"""The parse ceiling: a plain pyarrow JSON parse of every dump, nothing else.

python bench/ceiling.py DUMPS_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow.json as pj


def main() -> None:
    rows = 0
    for path in sorted(Path(sys.argv[1]).glob("*.jsonl")):
        rows += pj.read_json(path).num_rows
    print(rows)


if __name__ == "__main__":
    main()
