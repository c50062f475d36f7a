"""Lake paths and crash-safe writes: write to a hidden temporary name, then rename."""

from __future__ import annotations

import hashlib
import os
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


def partition_dir(lake: Path, table: str, run_id: str) -> Path:
    """The Hive partition folder of one run in one lake table."""
    return lake / table / f"run_id={run_id}"


def temporary_path(final: Path) -> Path:
    """A hidden sibling of ``final`` that no ``*.parquet`` glob matches (folder created)."""
    final.parent.mkdir(parents=True, exist_ok=True)
    return final.with_name(f".{final.name}.{uuid.uuid4().hex[:8]}.tmp")


def publish(temporary: Path, final: Path) -> None:
    """Atomically move a fully written file into place (same file system)."""
    final.parent.mkdir(parents=True, exist_ok=True)
    os.replace(temporary, final)


def write_table(table: pa.Table, final: Path) -> None:
    """Write ``table`` to ``final`` so that readers see all of it or nothing."""
    final.parent.mkdir(parents=True, exist_ok=True)
    temporary = temporary_path(final)
    try:
        pq.write_table(table, temporary, compression="zstd")
        publish(temporary, final)
    finally:
        temporary.unlink(missing_ok=True)


def part_name(source: Path, first_line: int, selector: str = "") -> str:
    """A deterministic file name for the rows of ``source`` from ``first_line`` on.

    Re-landing the same rows after a crash overwrites the same name instead of
    adding a duplicate file.
    """
    key = f"{source.resolve()}|{selector}".encode()
    digest = hashlib.sha1(key).hexdigest()[:10]
    stem = source.name.split(".")[0] or "part"
    return f"{stem}-{digest}-L{first_line}.parquet"
