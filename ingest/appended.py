"""The append landing: rollout files land by byte offset (plan, snapshot, decide, read, validate).

A source module supplies two things: a plan (which files, for which run, read
how) and a *builder* that turns records into rows of its lake table or rejects
them with a reason. This module does the rest, the same way for every rollout
source; the run writer (``writer.py``) does the writing every landing shares
(the lock, debris, staging, publishing, the manifest, ``--strict``, the skip
index):

* a file is known by its content, not its path: the manifest records, per file,
  the SHA-1 and length of the content consumed, so a file that grew lands only
  its new lines, a copy of landed content is skipped with a note, and a file
  rewritten in place is refused;
* rows go to a staged part and bad rows to ``_rejects`` (file, line, reason);
* files are read in worker processes when there is enough to read, a few in
  flight at a time, and published in plan order.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import logging
import os
import shutil
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from obs.ingest import lake as lake_files
from obs.ingest.errors import IngestError
from obs.ingest.lake import ManifestEntry
from obs.ingest.numbering import Numbering, Sequencer
from obs.ingest.readers import (
    Content,
    GzipLimit,
    Record,
    Snapshot,
    count_lines,
    json_records,
    parquet_records,
    read_buffer,
    snapshot,
)
from obs.ingest.schema import REJECT_TABLE, REJECTS
from obs.ingest.workers import WorkerDied, WorkerPool
from obs.ingest.writer import (
    SKIPPED,
    WRITE_OPTIONS,
    FileResult,
    IngestResult,
    LakeWriter,
    RunLanding,
    SourceIndex,
)

logger = logging.getLogger(__name__)

BATCH_ROWS = 20_000
# A batch also ends at this many bytes of source lines: an agent trace or a long
# transcript can be megabytes a line, and 20,000 of them parsed at once would
# bound memory by the file's size times Python's overhead, not by a batch.
BATCH_BYTES = 64 << 20
# The bulk path parses a file this much at a time (its tables take a few times that).
BULK_BYTES = 8 << 20
# Files are read in worker processes when a call holds at least this much.
PARALLEL_BYTES = 16 << 20
MAX_IN_FLIGHT = 3


@dataclass(frozen=True)
class SourceFile:
    """One file to land, and what is known of it before reading."""

    path: Path
    run_id: str
    reader: str  # "jsonl" or "parquet"
    format: str  # what wrote it: dump, table, trl, nemo, ...
    claimed_iteration: int | None = None  # from the file's name


@dataclass
class Reject:
    line: int
    reason: str
    raw: str
    fixable_by: str | None = None  # an option that would let the row land
    whole_file: bool = False  # the option is for a file none of whose rows landed
    table: str | None = None  # the table the row was meant for (default: the builder's)


class Builder(Protocol):
    """Turns records of one file into rows of one lake table (one builder per file).

    A builder may also fill a *companion* table from the same records (the
    per-token arrays of NeMo-RL's rollouts): it then has ``companion`` (that
    table's ``TableSpec``) and ``take_companion()``, the companion rows of its
    last ``build``. They carry the builder's numbering columns, are numbered
    with its rows and land with them, in the same publish and manifest entry
    (a companion's rejects name its table). Such a builder has no bulk path.
    """

    @property
    def table(self) -> str: ...

    @property
    def numbering(self) -> Numbering | None: ...

    def build(self, source: SourceFile, records: list[Record]) -> tuple[pa.Table, list[Reject]]:
        """Rows for the records that land, rejects for the others (same batch)."""
        ...


class BuilderFactory(Protocol):
    """Makes a builder for a file; must pickle (files may be read in worker processes)."""

    @property
    def table(self) -> str: ...

    @property
    def schema(self) -> pa.Schema: ...

    @property
    def numbering(self) -> Numbering | None: ...

    @property
    def parallel(self) -> bool:
        """Whether files may be read in worker processes."""
        ...

    def __call__(self, source: SourceFile) -> Builder: ...


@dataclass
class _Staged:
    """A file's outcome before publishing: staged parts and its manifest entry."""

    result: FileResult
    entry: ManifestEntry | None = None
    data: Path | None = None
    rejects: Path | None = None
    companion: Path | None = None
    indexed: tuple[int, int, str] | None = None  # unchanged: stat and status for the index


# --------------------------------------------------------------------------- decisions


def _prefix_hashes(content: Content, lengths: set[int]) -> dict[int, str]:
    """SHA-1 of content[:n] for every n in ``lengths`` (one pass)."""
    hasher = hashlib.sha1()
    done = 0
    out: dict[int, str] = {}
    for length in sorted(lengths):
        hasher.update(memoryview(content)[done:length])
        done = length
        out[length] = hasher.hexdigest()
    return out


@dataclass
class _Decision:
    status: str  # new, append, unchanged, copy, rewritten, refused, waiting
    start: int = 0  # content byte to read from
    first_line: int = 1
    note: str = ""
    digest: str = ""  # SHA-1 of content[:complete_end]
    # unchanged: the stat and status to record in the skip index
    landed: tuple[int, int, str] | None = None


def _decide(
    source: SourceFile, snap: Snapshot, entries: list[ManifestEntry], table: str
) -> _Decision:
    """What to do with a file, given what its run already landed."""
    path = str(source.path.resolve())
    # Content is compared only among files that claim the same iteration (or
    # none): a dump that starts like another iteration's is no append of it.
    mine = [
        e
        for e in entries
        if e.table_name == table
        and (e.claimed_iteration == source.claimed_iteration or e.source_file == path)
    ]
    same_path = [e for e in mine if e.source_file == path]
    last = same_path[-1] if same_path else None
    end = snap.complete_end
    if (
        last is not None
        and last.size_bytes == snap.size
        and last.mtime_ns == snap.mtime_ns
        and last.bytes_consumed == end
    ):
        landed = (snap.size, snap.mtime_ns, last.status)
        return _Decision("unchanged", note=_as_far_as_it_reads(last.status), landed=landed)
    lengths = {e.bytes_consumed for e in mine if 0 < e.bytes_consumed <= end} | {end}
    hashes = _prefix_hashes(snap.content, lengths)
    digest = hashes[end]
    if last is not None and (
        last.bytes_consumed > end or hashes.get(last.bytes_consumed) != last.content_hash
    ):
        return _Decision(
            "rewritten",
            note="changed since it was ingested (not an append); its new content is not "
            "landed: ingest it under a new --run to keep both",
            digest=digest,
        )
    matches = [
        e for e in mine if e.bytes_consumed in hashes and hashes[e.bytes_consumed] == e.content_hash
    ]
    best = max(matches, key=lambda e: (e.bytes_consumed, e.source_file == path), default=None)
    if end == 0:
        if snap.status == "damaged":
            return _Decision("damaged", note="nothing could be read")
        if source.reader == "jsonl" and b"\r" in bytes(memoryview(snap.content)[: 1 << 20]):
            return _Decision(
                "refused",
                note="its lines end in a lone CR (no LF), which obs does not read as line ends; "
                "convert them (tr '\\r' '\\n' < OLD > NEW) and ingest the new file",
            )
        return _Decision("waiting", note="no complete line yet; it lands once one is written")
    if best is not None and best.bytes_consumed == end:
        if best.source_file == path:
            landed = (snap.size, snap.mtime_ns, best.status)
            return _Decision("unchanged", note="already ingested", digest=digest, landed=landed)
        return _Decision(
            "copy",
            note=f"same content already landed for run {source.run_id} from {best.source_file}",
            digest=digest,
        )
    if best is not None:
        # Counted, not taken from the entry: a file of this very call may not
        # have its line count yet.
        first_line = count_lines(snap.content, 0, best.bytes_consumed) + 1
        return _Decision("append", best.bytes_consumed, first_line, digest=digest)
    if source.claimed_iteration is not None:
        owners = [e for e in mine if e.source_file != path]
        if owners:
            return _Decision(
                "refused",
                note=f"iteration {source.claimed_iteration} of run {source.run_id} already "
                f"landed from {owners[-1].source_file} with other content; ingest this file "
                "under another --run to keep both",
                digest=digest,
            )
    return _Decision("new", digest=digest)


def check_claims(plan: list[SourceFile]) -> None:
    """Refuse a plan in which two files claim one iteration of one run."""
    owners: dict[tuple[str, int], Path] = {}
    for source in plan:
        if source.claimed_iteration is None:
            continue
        key = (source.run_id, source.claimed_iteration)
        if key in owners:
            raise IngestError(
                f"{source.path}: claims iteration {source.claimed_iteration} of run "
                f"{source.run_id}, as {owners[key]} does; keep one of the two files "
                "(or ingest them under different --run names)"
            )
        owners[key] = source.path


# --------------------------------------------------------------------------- reading (workers)


@dataclass
class _Job:
    """One file to read: everything a worker process needs, and nothing else.

    ``content`` is the snapshot's bytes. A worker process is sent them only
    when ``ship`` (decompressed gzip): of a plain file it gets None and reads
    the file again itself, exactly ``end`` bytes, checked against the
    snapshot's SHA-1, so it lands the bytes the manifest records and no other.
    The ingest's own process reads a job from the snapshot, which it keeps
    until then (or until a worker takes the job): a few files at most.
    """

    source: SourceFile
    content: Content | None
    digest: str
    start: int
    end: int
    first_line: int
    factory: BuilderFactory
    staging: Path  # a folder for this job's parts
    ship: bool = True
    alone: bool = True  # no other file is read meanwhile (else: one thread each)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        if not self.ship:
            state["content"] = None  # cheaper read again than sent through a pipe
        return state


class ChangedWhileReading(Exception):
    """The file's bytes changed between the snapshot and the read."""


def _content(job: _Job) -> Content:
    if job.content is not None:
        return job.content
    with job.source.path.open("rb") as handle:
        data = read_buffer(handle, job.end)
    if len(data) != job.end or hashlib.sha1(data).hexdigest() != job.digest:
        raise ChangedWhileReading(
            f"{job.source.path}: changed while it was read (not an append); "
            "nothing of it landed; ingest it again once it is written"
        )
    return data


@dataclass
class _Work:
    """What a worker made of one file."""

    data: Path | None
    rejects: Path | None
    landed: int
    rejected: int
    reasons: list[str]
    retry_note: str  # every row rejected for a reason an option fixes
    lines: int = 0  # lines of content[:end] (JSON lines files)
    range_min: Any = None
    range_max: Any = None
    groups: dict[tuple[Any, ...], int] = field(default_factory=dict)
    companion: Path | None = None  # the companion table's part (see Builder)
    companion_landed: int = 0
    note: str = ""  # news for the file's result (companion rows rejected)


def _records(job: _Job) -> Iterator[list[Record]]:
    content = _content(job)
    if job.source.reader == "parquet":
        yield from parquet_records(content, job.source.path, BATCH_ROWS)
        return
    yield from _json_batches(content, job.start, job.end, job.first_line)


def _json_batches(
    content: Content, start: int, end: int, first_line: int
) -> Iterator[list[Record]]:
    """The records of content[start:end] in batches of BATCH_ROWS or BATCH_BYTES."""
    batch: list[Record] = []
    size = 0
    for record in json_records(content, start, end, first_line):
        batch.append(record)
        size += record.size
        if len(batch) >= BATCH_ROWS or size >= BATCH_BYTES:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _write_rejects(path: Path, table: str, source: SourceFile, rejects: list[Reject]) -> None:
    rows = pa.Table.from_pydict(
        {
            "table_name": [r.table or table for r in rejects],
            "source_file": [str(source.path.resolve())] * len(rejects),
            "source_line": [r.line for r in rejects],
            "reason": [r.reason for r in rejects],
            "raw": [r.raw for r in rejects],
        },
        schema=REJECT_TABLE.schema,
    )
    pq.write_table(rows, path, compression="zstd")


def _read(job: _Job) -> _Work:
    """Parse and validate one file into staged parts (in a worker or in-process)."""
    # Parsed rows are plain dicts and lists (no cycles): the cyclic collector
    # would only rescan them again and again as they pile up.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _read_file(job)
    finally:
        if enabled:
            gc.enable()


def _bulk(job: _Job, builder: Builder, start: int, end: int, first_line: int) -> pa.Table | None:
    """content[start:end] in bulk, when the builder can vouch for it (every line one row)."""
    fast = getattr(builder, "fast", None)
    if fast is None:
        return None
    job.content = _content(job)  # read once, whichever path parses it
    try:
        return fast(job.source, job.content, start, end, first_line, threads=job.alone)
    except Exception:  # the bulk path only speeds up; the rules decide
        logger.debug("bulk path failed for %s", job.source.path, exc_info=True)
        return None


def _slice_end(content: Content, at: int, end: int) -> int:
    """The end of the line holding byte ``at`` (``end`` at the latest)."""
    view = memoryview(content)
    while at < end:
        found = bytes(view[at : min(at + (1 << 20), end)]).find(b"\n")
        if found >= 0:
            return at + found + 1
        at += 1 << 20
    return end


def _batches(
    job: _Job, builder: Builder, numbering: Numbering | None
) -> Iterator[tuple[pa.Table, list[Reject], bool]]:
    """The file's tables and rejects, and whether each came from the bulk path.

    JSON lines go through the bulk path a slice of BULK_BYTES at a time, so a
    file's memory is bounded by a slice, not by the file; the first slice the
    bulk path cannot vouch for, and everything after it, is read row by row.
    Each path numbers its rows from 0 within a group (the bulk path per slice,
    the rules across their batches); the numbers of the slices before are
    added here, so the file is numbered 0, 1, ... as if read in one piece.
    """
    if (
        job.source.reader != "jsonl"
        or getattr(builder, "fast", None) is None
        or getattr(builder, "companion", None) is not None
    ):
        for batch in _records(job):
            table, bad = builder.build(job.source, batch)
            yield table, bad, False
        return
    content = _content(job)
    start, first_line = job.start, job.first_line
    before: Counter[tuple[Any, ...]] = Counter()  # rows of each group in the slices so far
    while start < job.end:
        stop = _slice_end(content, start + BULK_BYTES, job.end)
        table = _bulk(job, builder, start, stop, first_line)
        if table is None:
            break
        if numbering is not None and table.num_rows:
            counts = _group_counts(table, list(numbering.groups))
            table = _numbered_after(table, numbering, before, counts)
            before.update(counts)
        yield table, [], True
        first_line += table.num_rows  # one row a line
        start = stop
    if start >= job.end:
        return
    rest = (
        _records(job)  # nothing of it in bulk: the whole file row by row
        if start == job.start
        else _json_batches(content, start, job.end, first_line)
    )
    for batch in rest:
        table, bad = builder.build(job.source, batch)
        if numbering is not None and table.num_rows and before:
            table = _numbered_after(table, numbering, before, None)
        yield table, bad, False


def _numbered_after(
    table: pa.Table,
    numbering: Numbering,
    before: Counter[tuple[Any, ...]],
    counts: dict[tuple[Any, ...], int] | None,
) -> pa.Table:
    """``table``'s numbers moved on by ``before``, the rows of each group before it."""
    if not before or (counts is not None and not any(k in before for k in counts)):
        return table
    keys = zip(*(table.column(n).to_pylist() for n in numbering.groups), strict=True)
    offsets = pa.array([before.get(k, 0) for k in keys], pa.int64())
    index = table.schema.get_field_index(numbering.column)
    field = table.schema.field(index)
    moved = pc.add(table.column(index).cast(pa.int64()), offsets).cast(field.type)
    return table.set_column(index, field, moved)


def _group_counts(table: pa.Table, names: list[str]) -> dict[tuple[Any, ...], int]:
    """Rows per distinct value of the ``names`` columns (none of them null).

    Dictionary codes and numpy, not ``Table.group_by``: that loads pyarrow's
    dataset module, which imports pandas (0.3 s) in a worker that needs none.
    """
    codes, values = [], []
    for name in names:
        column = table.column(name).combine_chunks()
        if column.null_count:
            counts = table.group_by(names).aggregate([([], "count_all")])
            keys = zip(*(counts.column(n).to_pylist() for n in names), strict=True)
            return dict(zip(keys, counts.column("count_all").to_pylist(), strict=True))
        encoded = pc.dictionary_encode(column)
        index = encoded.indices
        codes.append(np.frombuffer(index.buffers()[1], np.int32, len(index), index.offset * 4))
        values.append(encoded.dictionary.to_pylist())
    key = np.zeros(table.num_rows, dtype=np.int64)
    for code, distinct in zip(codes, values, strict=True):
        key = key * len(distinct) + code
    found, counts = np.unique(key, return_counts=True)
    parts = []
    for distinct in reversed(values):
        found, code = np.divmod(found, len(distinct))
        parts.append([distinct[c] for c in code.tolist()])
    return dict(zip(zip(*reversed(parts), strict=True), counts.tolist(), strict=True))


def _read_file(job: _Job) -> _Work:
    builder = job.factory(job.source)
    numbering = builder.numbering
    data = job.staging / f"{builder.table}.{uuid.uuid4().hex[:12]}" / "part.parquet"
    writer: pq.ParquetWriter | None = None
    rejects: list[Reject] = []
    landed = 0
    groups: Counter[tuple[Any, ...]] = Counter()
    low = high = None
    bulk_only = True  # every row from the bulk path: one row a line
    companion = getattr(builder, "companion", None)
    side: _SideWriter | None = None
    if companion is not None:
        side = _SideWriter(job.staging / f"{companion.name}.{uuid.uuid4().hex[:12]}", companion)
    try:
        for table, bad, from_bulk in _batches(job, builder, numbering):
            bulk_only = bulk_only and from_bulk
            rejects.extend(bad)
            if side is not None:
                side.write(builder.take_companion())  # type: ignore[attr-defined]
            if not table.num_rows:
                continue
            if writer is None:
                data.parent.mkdir(parents=True)
                writer = pq.ParquetWriter(data, job.factory.schema, **WRITE_OPTIONS)
            writer.write_table(table)
            landed += table.num_rows
            if numbering is not None:
                groups.update(_group_counts(table, list(numbering.groups)))
                column = table.column(numbering.groups[0])
                batch_low, batch_high = pc.min(column).as_py(), pc.max(column).as_py()
                low = batch_low if low is None else min(low, batch_low)
                high = batch_high if high is None else max(high, batch_high)
    finally:
        if writer is not None:
            writer.close()
        if side is not None:
            side.close()
    fixable = [r for r in rejects if r.fixable_by and not r.whole_file]
    if not fixable and not landed and rejects and all(r.fixable_by for r in rejects):
        fixable = rejects
    if fixable:
        # Landing the rest would record the file, and the retry with the
        # option could then never land these rows: land none of it yet.
        fixes = ", ".join(sorted({r.fixable_by for r in fixable if r.fixable_by}))
        what = (
            "every row was"
            if len(fixable) == len(rejects) and not landed
            else (f"{len(fixable):,} rows were")
        )
        note = (
            f"{what} rejected ({fixable[0].reason}); pass {fixes} and ingest it again "
            "(nothing of the file landed or was recorded, so the retry lands it)"
        )
        return _Work(None, None, 0, len(rejects), [r.reason for r in rejects], note)
    reject_path = None
    if rejects:
        rejects.sort(key=lambda r: r.line)
        reject_path = job.staging / f"{REJECTS}.{uuid.uuid4().hex[:12]}" / "part.parquet"
        reject_path.parent.mkdir(parents=True)
        _write_rejects(reject_path, builder.table, job.source, rejects)
    lines = 0
    if job.source.reader == "jsonl":
        if bulk_only:  # one row a line
            lines = job.first_line - 1 + landed
        else:
            lines = job.first_line - 1 + count_lines(_content(job), job.start, job.end)
    return _Work(
        data if writer is not None else None,
        reject_path,
        landed,
        len(rejects),
        [r.reason for r in rejects],
        "",
        lines,
        low,
        high,
        dict(groups),
        side.path if side is not None and side.rows else None,
        side.rows if side is not None else 0,
        _companion_note(builder.table, rejects),
    )


def _companion_note(table: str, rejects: list[Reject]) -> str:
    """One line for a file some of whose rows landed without their companion row."""
    apart = [r for r in rejects if r.table is not None and r.table != table]
    if not apart:
        return ""
    lines = ", ".join(str(r.line) for r in apart[:5]) + (", ..." if len(apart) > 5 else "")
    return (
        f"{len(apart):,} of its rows landed without a {apart[0].table} row (line {lines}; "
        f"first reason: {apart[0].reason})"
    )


class _SideWriter:
    """A companion table's staged part (see Builder), written a batch at a time."""

    def __init__(self, folder: Path, spec: Any) -> None:
        self.path = folder / "part.parquet"
        self.schema: pa.Schema = spec.schema
        self.rows = 0
        self._writer: pq.ParquetWriter | None = None

    def write(self, table: pa.Table) -> None:
        if not table.num_rows:
            return
        if self._writer is None:
            self.path.parent.mkdir(parents=True)
            self._writer = pq.ParquetWriter(self.path, self.schema, **WRITE_OPTIONS)
        self._writer.write_table(table)
        self.rows += table.num_rows

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


# --------------------------------------------------------------------------- landing


class _Inline:
    """The executor interface, run in this process (small ingests, live runs)."""

    def submit(self, function: Callable[[_Job], _Work], job: _Job) -> Future[_Work]:
        future: Future[_Work] = Future()
        try:
            future.set_result(function(job))
        except BaseException as exc:
            future.set_exception(exc)
        return future

    def run_here(self, future: Future[_Work]) -> None:
        pass  # every job ran when it was submitted

    def shutdown(self) -> None:
        pass


def _executor(plan: list[SourceFile], factory: BuilderFactory, workers: int | None) -> Any:
    """Worker processes when there is enough to read and the builder allows it.

    ``workers`` readers in all: this process reads too (``WorkerPool.run_here``),
    so it starts one worker process fewer.
    """
    count = workers if workers is not None else min(os.cpu_count() or 1, 4)
    size = 0
    for source in plan:
        with contextlib.suppress(OSError):
            size += source.path.stat().st_size
    if count < 2 or len(plan) < 2 or size < PARALLEL_BYTES or not factory.parallel:
        return _Inline()
    return WorkerPool(min(count, len(plan)) - 1, taken=_drop_content)


def _drop_content(job: _Job) -> None:
    """A worker took the job: this process keeps no copy of a file the worker reads again."""
    if not job.ship:
        job.content = None


def _index_key(source: SourceFile, table: str) -> str:
    """The file's name in the skip index: its table, path and run."""
    return f"{table}\0{source.path.resolve()}\0{source.run_id}"


def _stat(source: SourceFile) -> list[int] | None:
    try:
        stat = source.path.stat()
    except OSError:
        return None  # the snapshot says why
    return [stat.st_size, stat.st_mtime_ns]


def _unchanged(source: SourceFile, index: SourceIndex, table: str) -> str | None:
    """The note of a file its run landed at this very size and modification time, else None.

    Such a file is not read again (``_decide`` would find the same by
    reading it): a live run's folder is mostly files landed long ago.
    """
    stat = _stat(source)
    if stat is None:
        return None
    indexed = index.unchanged(_index_key(source, table), stat)
    if indexed is None or source.run_id not in indexed.runs:
        return None
    return indexed.note or "already ingested"


def _as_far_as_it_reads(status: str) -> str:
    if status != "complete":
        return f"already ingested as far as it reads ({status})"
    return "already ingested"


@dataclass
class _Run:
    """One run's state during a call: its landing, numbering and files to index."""

    landing: RunLanding
    factory: BuilderFactory
    strict: bool
    index: SourceIndex
    sequencer: Sequencer | None
    gzip_limit: GzipLimit | None = None
    # published (or to publish under --strict), then recorded in the skip index:
    # each file's size, modification time and status
    to_index: list[tuple[SourceFile, tuple[int, int, str]]] = field(default_factory=list)

    def finish(
        self,
        source: SourceFile,
        staged: _Staged,
        future: Future[_Work] | None,
        job: _Job | None,
    ) -> None:
        """Complete one file (in plan order) and publish it, or hold it for --strict."""
        entries = self.landing.entries
        if future is not None and job is not None:
            try:
                try:
                    work = future.result()
                except WorkerDied as exc:
                    logger.warning("%s: %s; reading it in this process", job.source.path, exc)
                    shutil.rmtree(job.staging, ignore_errors=True)
                    job.staging.mkdir(parents=True)
                    work = _read(job)
                _complete(staged, work, self.sequencer, self.factory)
            except ChangedWhileReading as exc:
                staged.result.status = "changed"
                staged.result.note = str(exc).split(": ", 1)[1]
            except IngestError as exc:
                staged.result.status = "unreadable"
                staged.result.note = (
                    f"{str(exc).split(': ', 1)[-1]}; nothing of it landed (if it is still "
                    "being written, ingest it again once it is complete)"
                )
            except Exception as exc:
                logger.debug("reading %s failed", job.source.path, exc_info=True)
                staged.result.status = "unreadable"
                staged.result.note = (
                    f"could not be read ({type(exc).__name__}: {exc}); nothing of it landed"
                )
            if staged.result.status in {"retry", "changed", "unreadable"}:
                if staged.entry in entries:
                    entries.remove(staged.entry)
                staged.entry = None
        if staged.entry is not None:
            parts = [(self.factory.table, staged.data), (REJECTS, staged.rejects)]
            if staged.companion is not None:
                parts.append((_companion_name(staged.companion), staged.companion))
            self.landing.add(staged.entry, [(t, p) for t, p in parts if p is not None])
            entry = staged.entry
            self.to_index.append((source, (entry.size_bytes, entry.mtime_ns, entry.status)))
        elif staged.result.status == "unchanged" and staged.indexed is not None:
            self.to_index.append((source, staged.indexed))
        if not self.strict:
            self.landing.publish()
            self.record()

    def record(self) -> None:
        """Record the published files in the skip index."""
        for source, (size, mtime, status) in self.to_index:
            self.index.record(
                _index_key(source, self.factory.table),
                source.path,
                [size, mtime],
                [source.run_id],
                "" if status == "complete" else _as_far_as_it_reads(status),
            )
        self.to_index = []


def land(
    plan: list[SourceFile],
    factory: BuilderFactory,
    lake: Path,
    *,
    strict: bool = False,
    on_file: Callable[[FileResult], None] | None = None,
    workers: int | None = None,
    gzip_limit: GzipLimit | None = None,
) -> IngestResult:
    """Land every file of ``plan``, run by run; see the module docstring.

    ``gzip_limit``: how far a gzip file may expand (default: ``GzipLimit.from_env``,
    the ratio OBS_GZIP_MAX_RATIO sets, else 50).
    """
    for source in plan:
        lake_files.check_run_id(source.run_id)
    check_claims(plan)
    by_run: dict[str, list[SourceFile]] = {}
    for source in plan:
        by_run.setdefault(source.run_id, []).append(source)
    results: list[FileResult] = []
    runs: list[_Run] = []
    index = SourceIndex(lake)
    with contextlib.ExitStack() as stack:
        writer = stack.enter_context(LakeWriter(lake, by_run, strict=strict))
        to_read = [s for s in plan if _unchanged(s, index, factory.table) is None]
        executor = _executor(to_read, factory, workers)
        stack.callback(executor.shutdown)  # runs first: no job writes after a discard
        for run_id, sources in by_run.items():
            with writer.run(run_id) as landing:
                run = _Run(
                    landing,
                    factory,
                    strict,
                    index,
                    Sequencer(lake, factory.numbering, landing.entries, factory.table)
                    if factory.numbering is not None
                    else None,
                    gzip_limit,
                )
                runs.append(run)
                window: deque[tuple[SourceFile, _Staged, Future[_Work] | None, _Job | None]]
                window = deque()
                for source in sources:
                    alone = isinstance(executor, _Inline)
                    staged, job = _plan_file(source, run, alone=alone)
                    future = executor.submit(_read, job) if job is not None else None
                    window.append((source, staged, future, job))
                    # A few files in flight: memory stays bounded by a few files.
                    while window and (len(window) > MAX_IN_FLIGHT or source is sources[-1]):
                        done_source, done, done_future, done_job = window.popleft()
                        if done_future is not None:
                            # Read a file here rather than wait: this one if no
                            # worker has started it, else the next no worker has.
                            executor.run_here(done_future)
                        run.finish(done_source, done, done_future, done_job)
                        results.append(done.result)
                        if on_file is not None:
                            on_file(done.result)
        strict_failed = writer.finish(results)
        if strict and not strict_failed:
            for run in runs:
                run.record()
    return IngestResult(results, strict_failed, runs=list(by_run))


def _plan_file(source: SourceFile, run: _Run, *, alone: bool = True) -> tuple[_Staged, _Job | None]:
    """Snapshot a file and decide what to do with it; the job to read it, if any."""
    factory, entries = run.factory, run.landing.entries
    result = FileResult(source.path, source.run_id)
    landed_note = _unchanged(source, run.index, factory.table)
    if landed_note is not None:
        result.status, result.note = "unchanged", landed_note
        return _Staged(result), None
    try:
        snap = snapshot(source.path, line_based=source.reader == "jsonl", gzip_limit=run.gzip_limit)
    except IngestError as exc:  # gone, or unreadable: one line, and the call goes on
        result.status, result.note = "unreadable", str(exc).split(": ", 1)[-1]
        return _Staged(result), None
    decision = _decide(source, snap, entries, factory.table)
    result.note = "; ".join(n for n in (decision.note, snap.note) if n)
    if decision.status in SKIPPED:
        result.status = decision.status
        return _Staged(result, indexed=decision.landed), None
    result.status = "appended" if decision.status == "append" else "landed"
    entry = ManifestEntry(
        table_name=factory.table,
        source_file=str(source.path.resolve()),
        size_bytes=snap.size,
        mtime_ns=snap.mtime_ns,
        content_hash=decision.digest,
        bytes_consumed=snap.complete_end,
        lines_consumed=0,  # filled from the reader's count
        rows_landed=0,
        rows_rejected=0,
        claimed_iteration=source.claimed_iteration,
        iteration_min=None,
        iteration_max=None,
        parts=[],
        status=snap.status,
        recorded_at=lake_files.utc_now(),
    )
    entries.append(entry)  # later files of this call see it (copies, claims)
    folder = run.landing.staging.root / uuid.uuid4().hex[:12]
    folder.mkdir()
    job = _Job(
        source,
        snap.content,
        decision.digest,
        decision.start,
        snap.complete_end,
        decision.first_line,
        factory,
        folder,
        # A worker process reads a plain file again rather than receive it by pipe.
        ship=source.path.name.endswith(".gz"),
        alone=alone,
    )
    return _Staged(result, entry), job


def _complete(
    staged: _Staged, work: _Work, sequencer: Sequencer | None, factory: BuilderFactory
) -> None:
    """Fill a file's result and manifest entry from what its reader made."""
    result, entry = staged.result, staged.entry
    assert entry is not None
    result.rows_rejected = work.rejected
    result.reject_reasons = work.reasons
    if work.retry_note:
        result.status = "retry"
        result.note = "; ".join(n for n in (result.note, work.retry_note) if n)
        return
    if sequencer is not None:
        sequencer.continue_numbers(work.groups, work.data, factory.schema, work.companion)
    result.rows_landed = work.landed
    result.companion_rows = work.companion_landed
    if work.note:
        result.note = "; ".join(n for n in (result.note, work.note) if n)
    entry.rows_landed = work.landed
    entry.rows_rejected = work.rejected
    entry.iteration_min = work.range_min
    entry.iteration_max = work.range_max
    # JSON lines: lines; a parquet table: rows.
    entry.lines_consumed = work.lines if work.lines else work.landed + work.rejected
    staged.data, staged.rejects, staged.companion = work.data, work.rejects, work.companion


def _companion_name(part: Path) -> str:
    """The table of a staged companion part: its folder is ``<table>.<id>``."""
    return part.parent.name.rsplit(".", 1)[0]
