"""The ingest manifest: which source files (and how much of each) already landed.

One parquet file per ingest call under ``<lake>/_manifest/run_id=<run>/``.
Entries are keyed by the source's absolute path (plus a selector such as an
``--iterations`` filter); an entry records the file's size, the SHA-1 of the
bytes consumed so far and how many lines they held, so that a file that grew
(a live run appending) lands only its new complete lines.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from obs.ingest._parquet import partition_dir, write_table
from obs.ingest.schema import MANIFEST, MANIFEST_SCHEMA


@dataclass(frozen=True)
class ManifestEntry:
    source_file: str
    table_name: str
    size_bytes: int
    content_sha1: str
    bytes_consumed: int
    lines_consumed: int
    rows_landed: int
    rows_rejected: int
    ingested_at: datetime


def read_manifest(lake: Path, run_id: str) -> dict[str, ManifestEntry]:
    """The latest entry for every source key of ``run_id`` (empty when none)."""
    folder = partition_dir(lake, MANIFEST, run_id)
    files = sorted(folder.glob("*.parquet")) if folder.is_dir() else []
    latest: dict[str, ManifestEntry] = {}
    for file in files:
        for row in pq.read_table(file, schema=MANIFEST_SCHEMA).to_pylist():
            entry = ManifestEntry(**row)
            known = latest.get(entry.source_file)
            if known is None or entry.bytes_consumed >= known.bytes_consumed:
                latest[entry.source_file] = entry
    return latest


def append_manifest(lake: Path, run_id: str, entries: list[ManifestEntry]) -> None:
    """Record ``entries`` as one new manifest file (atomic)."""
    if not entries:
        return
    columns = {name: [getattr(e, name) for e in entries] for name in MANIFEST_SCHEMA.names}
    table = pa.Table.from_pydict(columns, schema=MANIFEST_SCHEMA)
    final = partition_dir(lake, MANIFEST, run_id) / f"{uuid.uuid4().hex}.parquet"
    write_table(table, final)
