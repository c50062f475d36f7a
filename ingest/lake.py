"""The lake on disk: run ids, locks, crash-safe publishing, the manifest and debris.

Layout: ``<lake>/<table>/run_id=<run>/ingested_at=<t>/part.parquet``. A part is
written under ``<lake>/_staging/`` and published by renaming its folder into
place, so a reader sees all of a part or nothing. ``t`` is the moment of that
rename (UTC, microseconds, strictly increasing within a run): parts become
visible in the order of their ``ingested_at``, which is what lets incremental
models pick up every part published after a build read the lake.

One ingest at a time writes a run (an exclusive lock per run); the manifest
lists every part it published, so the next ingest removes any part, staging
folder or manifest file that a killed ingest left behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from obs.core.identity import RUN_ID_RULE, is_run_id
from obs.core.lake_layout import TIME_FOLDER, format_time, parse_time, run_folder, time_folder
from obs.ingest.errors import IngestError
from obs.ingest.schema import (
    MANIFEST,
    MANIFEST_TABLE,
)

STAGING = "_staging"
LOCKS = "_locks"


def check_run_id(run_id: str, *, origin: str = "--run") -> str:
    """``run_id`` when it is a valid run id, else an IngestError saying how to fix it."""
    if not is_run_id(run_id):
        shown = run_id if len(run_id) <= 40 else run_id[:40] + "..."
        raise IngestError(f"{origin} {shown!r} is not a valid run id: {RUN_ID_RULE}")
    return run_id


def partition_dir(lake: Path, table: str, run_id: str) -> Path:
    """The Hive partition folder of one run in one lake table."""
    folder = lake / table / run_folder(check_run_id(run_id))
    # Run ids cannot hold a separator, so this only guards against a lake
    # path that itself misleads (a symlinked table folder, say).
    if os.path.commonpath([lake.resolve(), folder.resolve()]) != str(lake.resolve()):
        raise IngestError(f"{folder}: outside the lake {lake}; refusing to write there")
    return folder


def utc_now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


# --------------------------------------------------------------------------- locks


@contextlib.contextmanager
def run_lock(lake: Path, run_id: str) -> Iterator[None]:
    """Hold the run's ingest lock (other ingests of the run wait; builds never do)."""
    folder = lake / LOCKS
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{check_run_id(run_id)}.lock"
    with path.open("a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


# --------------------------------------------------------------------------- staging


class Staging:
    """Parts written for one run and not yet published (a folder under _staging)."""

    def __init__(self, lake: Path, run_id: str) -> None:
        self.lake = lake
        self.run_id = run_id
        self.root = lake / STAGING / f"{run_id}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
        self.root.mkdir(parents=True, exist_ok=True)

    def discard(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


class Clock:
    """Publish times of one run: wall-clock UTC, strictly increasing."""

    def __init__(self, last: datetime | None) -> None:
        self.last = last

    def next(self) -> datetime:
        now = utc_now()
        if self.last is not None and now <= self.last:
            now = self.last + timedelta(microseconds=1)
        self.last = now
        return now


def publish(lake: Path, table: str, run_id: str, staged: Path, clock: Clock) -> str:
    """Move a staged part into ``<table>/run_id=<run>/ingested_at=<t>/``; its lake path."""
    target_root = partition_dir(lake, table, run_id)
    target_root.mkdir(parents=True, exist_ok=True)
    while True:
        moment = clock.next()
        target = target_root / time_folder(moment)
        try:
            # rename() of a folder onto a missing name is atomic; it fails
            # (rather than merging) when the name exists.
            os.rename(staged.parent, target)
        except OSError:
            if target.exists():
                continue
            raise
        return str((target / staged.name).relative_to(lake))


# --------------------------------------------------------------------------- manifest


@dataclass
class ManifestEntry:
    table_name: str
    source_file: str
    size_bytes: int
    mtime_ns: int
    content_hash: str
    bytes_consumed: int
    lines_consumed: int
    rows_landed: int
    rows_rejected: int
    claimed_iteration: int | None
    iteration_min: int | None
    iteration_max: int | None
    parts: list[str]
    status: str
    recorded_at: datetime


def read_part(path: Path, schema: pa.Schema) -> pa.Table:
    """A parquet file as a table of ``schema``.

    Read as one file: ``pq.read_table`` with a schema goes through
    pyarrow.dataset, whose import alone costs a live ingest about 0.2 s.
    A file of another shape (an older layout) is read through it still.
    """
    table = pq.ParquetFile(path).read()
    if table.schema.equals(schema, check_metadata=False):
        return table
    return pq.read_table(path, schema=schema)


def read_manifest(lake: Path, run_id: str) -> list[ManifestEntry]:
    """Every manifest entry of the run, oldest first."""
    folder = partition_dir(lake, MANIFEST, run_id)
    if not folder.is_dir():
        return []
    entries: list[ManifestEntry] = []
    seen: set[tuple[object, ...]] = set()
    for file in sorted(folder.glob("*.parquet")):
        table = read_part(file, MANIFEST_TABLE.schema)
        for row in table.to_pylist():
            # A compaction killed between its write and its deletes repeats entries.
            key = (row["source_file"], row["bytes_consumed"], row["recorded_at"], *row["parts"])
            if key not in seen:
                seen.add(key)
                entries.append(ManifestEntry(**row))
    entries.sort(key=lambda e: e.recorded_at)
    return entries


def compact_manifest(lake: Path, run_id: str, most: int = 32) -> None:
    """Merge a run's manifest files into one once there are more than ``most``.

    Call with the run lock held. The merged file is written before the old
    ones are removed, so a kill in between only repeats entries (read once).
    """
    folder = partition_dir(lake, MANIFEST, run_id)
    files = sorted(folder.glob("*.parquet")) if folder.is_dir() else []
    if len(files) <= most:
        return
    write_manifest(lake, run_id, read_manifest(lake, run_id))
    for file in files:  # listed before the merged file was written
        file.unlink(missing_ok=True)


def write_manifest(lake: Path, run_id: str, entries: list[ManifestEntry]) -> Path | None:
    """Record ``entries`` as one new manifest file (atomic rename); its path."""
    if not entries:
        return None
    schema = MANIFEST_TABLE.schema
    names = [f.name for f in fields(ManifestEntry)]
    columns = [_column([getattr(e, n) for e in entries], schema.field(n).type) for n in names]
    table = pa.Table.from_arrays(columns, schema=schema)
    folder = partition_dir(lake, MANIFEST, run_id)
    folder.mkdir(parents=True, exist_ok=True)
    stamp = format_time(entries[-1].recorded_at)
    final = folder / f"{stamp}-{uuid.uuid4().hex[:8]}.parquet"
    temporary = folder / f".{final.name}.tmp"
    pq.write_table(table, temporary)
    os.replace(temporary, final)
    return final


_EPOCH = datetime(1970, 1, 1)
_MICROSECOND = timedelta(microseconds=1)


def _column(values: list[Any], kind: pa.DataType) -> pa.Array:
    """A manifest column, built from buffers.

    ``pa.array()`` first looks for pandas values, importing pandas (0.3 s) in
    an ingest that needs none: the manifest is written after every file.
    """
    count = len(values)
    valid = [value is not None for value in values]
    bitmap = None if all(valid) else pa.py_buffer(np.packbits(valid, bitorder="little"))
    if pa.types.is_int64(kind) or kind == pa.timestamp("us"):
        numbers = [
            0 if v is None else (v - _EPOCH) // _MICROSECOND if isinstance(v, datetime) else v
            for v in values
        ]
        data = pa.py_buffer(np.array(numbers, dtype=np.int64))
        return pa.Array.from_buffers(kind, count, [bitmap, data])
    if pa.types.is_string(kind):
        texts = [str(v).encode("utf-8") if v is not None else b"" for v in values]
        return pa.Array.from_buffers(kind, count, [bitmap, *_offsets_and_data(texts)])
    if pa.types.is_list(kind) and pa.types.is_string(kind.value_type):
        lengths = [len(v) if v is not None else 0 for v in values]
        offsets = np.zeros(count + 1, dtype=np.int32)
        np.cumsum(lengths, out=offsets[1:])
        child = _column([item for v in values if v is not None for item in v], kind.value_type)
        return pa.Array.from_buffers(kind, count, [bitmap, pa.py_buffer(offsets)], children=[child])
    return pa.array(values, kind)


def _offsets_and_data(texts: list[bytes]) -> list[pa.Buffer]:
    offsets = np.zeros(len(texts) + 1, dtype=np.int32)
    np.cumsum([len(t) for t in texts], out=offsets[1:])
    return [pa.py_buffer(offsets), pa.py_buffer(b"".join(texts))]


def remove_debris(lake: Path, run_id: str, tables: list[str], known: set[str]) -> int:
    """Delete what a killed ingest of the run left: parts no manifest lists, staging.

    Call with the run lock held. Returns how many parts were removed.
    """
    removed = 0
    staging = lake / STAGING
    if staging.is_dir():
        for folder in staging.iterdir():
            # The run lock is ours, so no live ingest of this run owns these.
            if folder.name.rsplit(".", 2)[0] == run_id:
                shutil.rmtree(folder, ignore_errors=True)
    for table in tables:
        root = partition_dir(lake, table, run_id)
        if not root.is_dir():
            continue
        for folder in root.iterdir():
            if folder.name.startswith("."):
                shutil.rmtree(folder, ignore_errors=True) if folder.is_dir() else folder.unlink()
                continue
            for part in folder.glob("*.parquet"):
                if str(part.relative_to(lake)) not in known:
                    part.unlink()
                    removed += 1
            with contextlib.suppress(OSError):
                folder.rmdir()  # only when empty
    manifest = partition_dir(lake, MANIFEST, run_id)
    if manifest.is_dir():
        for leftover in manifest.glob(".*.tmp"):
            leftover.unlink(missing_ok=True)
    return removed


def last_publish_time(lake: Path, run_id: str, tables: list[str]) -> datetime | None:
    """The newest ``ingested_at`` of the run's parts (so the clock never goes back)."""
    latest: datetime | None = None
    for table in tables:
        root = partition_dir(lake, table, run_id)
        if not root.is_dir():
            continue
        for folder in root.iterdir():
            found = TIME_FOLDER.match(folder.name)
            if found:
                with contextlib.suppress(ValueError):
                    moment = parse_time(found.group(1) + "Z")
                    latest = moment if latest is None else max(latest, moment)
    return latest
