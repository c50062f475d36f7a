"""The ingest floor: a plain pyarrow JSON parse plus a parquet write of every dump.

What landing a dump costs at the least: parse it (as bench/ceiling.py does)
and write it as one zstd parquet file (the lake's codec), nothing else: no
schema, no dedup, no manifest. Files go to OUT_DIR, which the caller removes.

    python bench/floor.py DUMPS_DIR OUT_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow.json as pj
import pyarrow.parquet as pq


def main() -> None:
    folder, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    rows = 0
    for path in sorted(folder.glob("*.jsonl")):
        table = pj.read_json(path)
        pq.write_table(table, out / f"{path.stem}.parquet", compression="zstd")
        rows += table.num_rows
    print(rows)


if __name__ == "__main__":
    main()
