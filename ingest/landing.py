"""The landing core every source uses: plan, snapshot, decide, read, validate, publish, record.

A source module supplies two things: a plan (which files, for which run, read
how) and a *builder* that turns records into rows of its lake table or rejects
them with a reason. This module does the rest, the same way for every source:

* one ingest of a run at a time (a lock), and the debris of a killed one removed;
* a file is known by its content, not its path: the manifest records, per file,
  the SHA-1 and length of the content consumed, so a file that grew lands only
  its new lines, a copy of landed content is skipped with a note, and a file
  rewritten in place is refused;
* rows go to a staged part and bad rows to ``_rejects`` (file, line, reason);
  parts are published by an atomic rename, then recorded in the manifest;
* with ``strict`` nothing is published unless every file is clean.
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
from obs.ingest._workers import WorkerDied, WorkerPool
from obs.ingest.errors import IngestError
from obs.ingest.lake import Clock, ManifestEntry, Staging, read_part
from obs.ingest.readers import (
    Content,
    Record,
    Snapshot,
    count_lines,
    json_records,
    parquet_records,
    read_buffer,
    snapshot,
)
from obs.ingest.schema import REJECT_TABLE, REJECTS

logger = logging.getLogger(__name__)

BATCH_ROWS = 20_000
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


@dataclass(frozen=True)
class Numbering:
    """A column numbered by the core: 0, 1, ... within each group, across the run.

    A builder numbers rows from 0 within each group of one file; the core adds
    what the run already holds for the group (landed parts and earlier files
    of the same call), so numbers continue across files and appends.
    """

    groups: tuple[str, ...]  # the first is the range column (recorded min/max)
    column: str


class Builder(Protocol):
    """Turns records of one file into rows of one lake table (one builder per file)."""

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


SKIPPED = frozenset(
    {
        "unchanged",
        "copy",
        "rewritten",
        "refused",
        "waiting",
        "retry",
        "changed",
        "damaged",
        "unreadable",
    }
)
PROBLEMS = frozenset({"rewritten", "refused", "retry", "changed", "damaged", "unreadable"})


@dataclass
class FileResult:
    source: Path
    run_id: str
    # landed, appended, unchanged, copy, rewritten, refused, waiting, retry, changed, damaged
    status: str = "landed"
    rows_landed: int = 0
    rows_rejected: int = 0
    note: str = ""
    reject_reasons: list[str] = field(default_factory=list)

    @property
    def skipped(self) -> bool:
        return self.status in SKIPPED

    @property
    def is_problem(self) -> bool:
        """Worth a non-zero exit under --strict."""
        return self.rows_rejected > 0 or self.status in PROBLEMS or ("gzip" in self.note)


@dataclass
class IngestResult:
    files: list[FileResult]
    strict_failed: bool = False  # --strict found a problem, so nothing was published

    @property
    def run_ids(self) -> list[str]:
        return list(dict.fromkeys(f.run_id for f in self.files))

    @property
    def run_id(self) -> str:
        return ", ".join(self.run_ids)

    @property
    def rows_landed(self) -> int:
        return sum(f.rows_landed for f in self.files)

    @property
    def rows_rejected(self) -> int:
        return sum(f.rows_rejected for f in self.files)

    @property
    def files_skipped(self) -> int:
        return sum(1 for f in self.files if f.skipped)


@dataclass
class _Staged:
    """A file's outcome before publishing: staged parts and its manifest entry."""

    result: FileResult
    entry: ManifestEntry | None = None
    data: Path | None = None
    rejects: Path | None = None


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
        if last.status != "complete":
            return _Decision(
                "unchanged", note=f"already ingested as far as it reads ({last.status})"
            )
        return _Decision("unchanged", note="already ingested")
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
        return _Decision("waiting", note="no complete line yet; it lands once one is written")
    if best is not None and best.bytes_consumed == end:
        if best.source_file == path:
            return _Decision("unchanged", note="already ingested", digest=digest)
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


def _records(job: _Job) -> Iterator[list[Record]]:
    content = _content(job)
    if job.source.reader == "parquet":
        yield from parquet_records(content, job.source.path, BATCH_ROWS)
        return
    batch: list[Record] = []
    for record in json_records(content, job.start, job.end, job.first_line):
        batch.append(record)
        if len(batch) >= BATCH_ROWS:
            yield batch
            batch = []
    if batch:
        yield batch


def _write_rejects(path: Path, table: str, source: SourceFile, rejects: list[Reject]) -> None:
    rows = pa.Table.from_pydict(
        {
            "table_name": [table] * len(rejects),
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


def _bulk(job: _Job, builder: Builder) -> pa.Table | None:
    """The whole file in bulk, when the builder can vouch for it (every line one row)."""
    fast = getattr(builder, "fast", None)
    if fast is None:
        return None
    job.content = _content(job)  # read once, whichever path parses it
    try:
        return fast(job.source, job.content, job.start, job.end, job.first_line, threads=job.alone)
    except Exception:  # the bulk path only speeds up; the rules decide
        logger.debug("bulk path failed for %s", job.source.path, exc_info=True)
        return None


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


# Parquet parts: zstd at its fastest level keeps them small (the codec bench/floor.py writes).
WRITE_OPTIONS: dict[str, Any] = {"compression": "zstd", "compression_level": 1}


def _read_file(job: _Job) -> _Work:
    builder = job.factory(job.source)
    numbering = builder.numbering
    data = job.staging / f"{builder.table}.{uuid.uuid4().hex[:12]}" / "part.parquet"
    writer: pq.ParquetWriter | None = None
    rejects: list[Reject] = []
    landed = 0
    groups: Counter[tuple[Any, ...]] = Counter()
    low = high = None
    bulk = _bulk(job, builder)
    batches: Iterator[tuple[pa.Table, list[Reject]]] = (
        iter([(bulk, [])])
        if bulk is not None
        else (builder.build(job.source, batch) for batch in _records(job))
    )
    try:
        for table, bad in batches:
            rejects.extend(bad)
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
        if bulk is not None:  # one row a line
            lines = job.first_line - 1 + bulk.num_rows
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
    )


# --------------------------------------------------------------------------- numbering


class _Sequencer:
    """Continues a builder's per-file numbering across the run (main process only)."""

    def __init__(self, lake: Path, numbering: Numbering, entries: list[ManifestEntry], table: str):
        self.lake = lake
        self.numbering = numbering
        self.counts: dict[tuple[Any, ...], int] = {}
        self.loaded: set[Any] = set()
        # Parts landed before this call; this call's files are counted as they come.
        prefix = table + "/"
        self.parts = [
            (e.iteration_min, e.iteration_max, part)
            for e in entries
            if e.table_name == table
            for part in e.parts
            if part.startswith(prefix)
        ]

    def _load(self, value: Any) -> None:
        self.loaded.add(value)
        files = [
            str(self.lake / part)
            for low, high, part in self.parts
            if low is not None and high is not None and low <= value <= high
        ]
        missing = [f for f in files if not Path(f).is_file()]
        if missing:
            logger.warning("%s: a landed part is missing (deleted by hand?)", missing[0])
            files = [f for f in files if f not in missing]
        if not files:
            return
        import duckdb  # here: worker processes, which never number, need not load it

        groups = list(self.numbering.groups)
        names = ", ".join(f'"{g}"' for g in groups)
        con = duckdb.connect()
        try:
            rows = con.execute(
                f"select {names}, count(*) from read_parquet(?) "
                f'where "{groups[0]}" = ? group by all',
                [files, value],
            ).fetchall()
        finally:
            con.close()
        for *key, count in rows:
            group = tuple(key)
            self.counts[group] = self.counts.get(group, 0) + int(count)

    def continue_numbers(self, work: _Work, schema: pa.Schema) -> None:
        """Shift the file's numbers past the run's; rewrite its part only when needed."""
        offsets = {}
        for key in work.groups:
            if key[0] not in self.loaded:
                self._load(key[0])
            offset = self.counts.get(key, 0)
            if offset:
                offsets[key] = offset
        for key, count in work.groups.items():
            self.counts[key] = self.counts.get(key, 0) + count
        if offsets and work.data is not None:
            self._shift(work.data, offsets, schema)

    def _shift(self, part: Path, offsets: dict[tuple[Any, ...], int], schema: pa.Schema) -> None:
        groups, column = list(self.numbering.groups), self.numbering.column
        table = read_part(part, schema)
        keys = zip(*(table.column(g).to_pylist() for g in groups), strict=True)
        shift = pa.array([offsets.get(key, 0) for key in keys], pa.int64())
        shifted = pc.add(table.column(column), shift)
        table = table.set_column(table.schema.get_field_index(column), column, shifted)
        temporary = part.with_name("shifted.parquet")
        pq.write_table(table, temporary, compression="zstd", compression_level=1)
        os.replace(temporary, part)


# --------------------------------------------------------------------------- landing


def _publish(lake: Path, staged: _Staged, table: str, clock: Clock) -> ManifestEntry | None:
    entry = staged.entry
    if entry is None:
        return None
    run = staged.result.run_id
    if staged.data is not None:
        entry.parts.append(lake_files.publish(lake, table, run, staged.data, clock))
    if staged.rejects is not None:
        entry.parts.append(lake_files.publish(lake, REJECTS, run, staged.rejects, clock))
    entry.recorded_at = lake_files.utc_now()
    return entry


def _record(lake: Path, run_id: str, table: str, clock: Clock, staged: list[_Staged]) -> None:
    """Publish staged parts, then record them in the manifest (one file)."""
    entries = [_publish(lake, s, table, clock) for s in staged]
    lake_files.write_manifest(lake, run_id, [e for e in entries if e is not None])


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


@dataclass
class _Run:
    """One run's state during a call: its manifest, numbering and unpublished files."""

    lake: Path
    run_id: str
    factory: BuilderFactory
    strict: bool
    entries: list[ManifestEntry]
    clock: Clock
    sequencer: _Sequencer | None
    pending: list[_Staged] = field(default_factory=list)

    def finish(self, staged: _Staged, future: Future[_Work] | None, job: _Job | None) -> None:
        """Complete one file (in plan order) and publish it, or hold it for --strict."""
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
                if staged.entry in self.entries:
                    self.entries.remove(staged.entry)
                staged.entry = None
        if self.strict:
            self.pending.append(staged)
        else:
            _record(self.lake, self.run_id, self.factory.table, self.clock, [staged])


def land(
    plan: list[SourceFile],
    factory: BuilderFactory,
    lake: Path,
    *,
    strict: bool = False,
    on_file: Callable[[FileResult], None] | None = None,
    workers: int | None = None,
) -> IngestResult:
    """Land every file of ``plan``, run by run; see the module docstring."""
    for source in plan:
        lake_files.check_run_id(source.run_id)
    check_claims(plan)
    by_run: dict[str, list[SourceFile]] = {}
    for source in plan:
        by_run.setdefault(source.run_id, []).append(source)
    results: list[FileResult] = []
    runs: list[_Run] = []
    stagings: list[Staging] = []
    with contextlib.ExitStack() as stack:
        # Every run's lock, in one order for every caller (no two ingests can
        # each hold one the other waits for), held to the end: --strict
        # publishes every run's parts at once.
        for run_id in sorted(by_run):
            stack.enter_context(lake_files.run_lock(lake, run_id))
        stack.callback(_discard_all, stagings)  # (filled below, discarded at the end)
        manifests = {run_id: lake_files.read_manifest(lake, run_id) for run_id in by_run}
        to_read = [s for s in plan if _unchanged(s, manifests[s.run_id], factory.table) is None]
        executor = _executor(to_read, factory, workers)
        stack.callback(executor.shutdown)  # runs first: no job writes after a discard
        for run_id, sources in by_run.items():
            tables = [factory.table, REJECTS]
            entries = manifests[run_id]
            known = {part for e in entries for part in e.parts}
            removed = lake_files.remove_debris(lake, run_id, tables, known)
            if removed:
                logger.warning("run %s: removed %d parts a killed ingest left", run_id, removed)
            staging = Staging(lake, run_id)
            stagings.append(staging)
            run = _Run(
                lake,
                run_id,
                factory,
                strict,
                entries,
                Clock(lake_files.last_publish_time(lake, run_id, tables)),
                _Sequencer(lake, factory.numbering, entries, factory.table)
                if factory.numbering is not None
                else None,
            )
            runs.append(run)
            window: deque[tuple[_Staged, Future[_Work] | None, _Job | None]] = deque()
            for source in sources:
                alone = isinstance(executor, _Inline)
                staged, job = _plan_file(source, entries, staging, factory, alone=alone)
                future = executor.submit(_read, job) if job is not None else None
                window.append((staged, future, job))
                # A few files in flight: memory stays bounded by a few files.
                while window and (len(window) > MAX_IN_FLIGHT or source is sources[-1]):
                    done, done_future, done_job = window.popleft()
                    if done_future is not None:
                        # Read a file here rather than wait: this one if no
                        # worker has started it, else the next no worker has.
                        executor.run_here(done_future)
                    run.finish(done, done_future, done_job)
                    results.append(done.result)
                    if on_file is not None:
                        on_file(done.result)
        for run in runs:
            lake_files.compact_manifest(lake, run.run_id)
        strict_failed = strict and any(r.is_problem for r in results)
        for run in runs:
            if not strict:
                continue
            if not strict_failed:
                _record(lake, run.run_id, factory.table, run.clock, run.pending)
                continue
            for staged in run.pending:
                staged.result.note = "; ".join(
                    n for n in (staged.result.note, "nothing published (--strict)") if n
                )
                staged.result.rows_landed = 0
    return IngestResult(results, strict_failed)


def _unchanged(source: SourceFile, entries: list[ManifestEntry], table: str) -> str | None:
    """The note of a file its run landed at this very size and modification time, else None.

    Such a file is not read again (``_decide`` would find the same by
    reading it): a live run's folder is mostly files landed long ago.
    """
    path = str(source.path.resolve())
    same_path = [e for e in entries if e.table_name == table and e.source_file == path]
    if not same_path:
        return None
    last = same_path[-1]
    try:
        stat = source.path.stat()
    except OSError:
        return None  # the snapshot says why
    if last.size_bytes != stat.st_size or last.mtime_ns != stat.st_mtime_ns:
        return None
    if last.status != "complete":
        return f"already ingested as far as it reads ({last.status})"
    return "already ingested"


def _plan_file(
    source: SourceFile,
    entries: list[ManifestEntry],
    staging: Staging,
    factory: BuilderFactory,
    *,
    alone: bool = True,
) -> tuple[_Staged, _Job | None]:
    """Snapshot a file and decide what to do with it; the job to read it, if any."""
    result = FileResult(source.path, source.run_id)
    landed_note = _unchanged(source, entries, factory.table)
    if landed_note is not None:
        result.status, result.note = "unchanged", landed_note
        return _Staged(result), None
    snap = snapshot(source.path, line_based=source.reader == "jsonl")
    decision = _decide(source, snap, entries, factory.table)
    result.note = "; ".join(n for n in (decision.note, snap.note) if n)
    if decision.status in SKIPPED:
        result.status = decision.status
        return _Staged(result), None
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
    folder = staging.root / uuid.uuid4().hex[:12]
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
    staged: _Staged, work: _Work, sequencer: _Sequencer | None, factory: BuilderFactory
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
        sequencer.continue_numbers(work, factory.schema)
    result.rows_landed = work.landed
    entry.rows_landed = work.landed
    entry.rows_rejected = work.rejected
    entry.iteration_min = work.range_min
    entry.iteration_max = work.range_max
    # JSON lines: lines; a parquet table: rows.
    entry.lines_consumed = work.lines if work.lines else work.landed + work.rejected
    staged.data, staged.rejects = work.data, work.rejects


def _discard_all(stagings: list[Staging]) -> None:
    """Remove what every run's staging still holds (what was published has left it)."""
    for staging in stagings:
        staging.discard()
