"""The run writer: one call's writing to the lake, the same for every landing.

Both landings use it: the append landing (``appended.py``: rollouts, by byte
offset) and the keyed landing (``keyed.py``: tracker histories, the reward
monitor, eval and console logs, by key). A landing decides *what* lands; the
writer owns *how*:

* **the lock policy.** One ingest at a time writes a run (``lake.run_lock``).
  Without ``--strict`` a call holds one run's lock at a time, while it lands
  that run, so an ingest of a folder of many runs never keeps the others
  waiting for long. With ``--strict`` it takes every run's lock first, in
  sorted order (no two calls can each hold one the other waits for), and
  holds them until every run is published or nothing is;
* **debris.** Opening a run removes what a killed ingest of it left: staged
  folders, and parts of any lake table that no manifest lists;
* **staging, the clock, publishing.** Parts are written under ``_staging/``
  and published by renaming their folder into ``<table>/run_id=<run>/
  ingested_at=<t>/``, ``t`` strictly increasing within the run; then the
  manifest records them (one manifest file per publish);
* **--strict.** Nothing is published unless no file or source of the call
  is a problem (``FileResult.is_problem``);
* **the skip index.** A source that has not changed since it landed (the same
  size and modification time of every file it reads) is not read again: a
  live run's folder is mostly files landed long ago. The index records, per
  source, that stat and the runs it landed into (a tracker folder can hold
  many runs, known only once read); a run whose lake was removed by hand
  lands again;
* **the result types** every landing returns and the CLI reports.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from obs.ingest import lake as lake_files
from obs.ingest.errors import IngestError
from obs.ingest.lake import Clock, ManifestEntry, Staging
from obs.ingest.schema import LAKE_TABLES

logger = logging.getLogger(__name__)

# Parquet parts: zstd at its fastest level keeps them small (the codec bench/floor.py writes).
WRITE_OPTIONS: dict[str, Any] = {"compression": "zstd", "compression_level": 1}
SOURCES = "_sources"  # the skip index: per source, the stat it had when it last landed

# --------------------------------------------------------------------------- results

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
        "passed over",  # a folder's link out of it, a dangling link, a FIFO: not read
    }
)
PROBLEMS = frozenset(
    {"rewritten", "refused", "retry", "changed", "damaged", "unreadable", "passed over"}
)


@dataclass
class FileResult:
    """One file's or source's outcome.

    ``rows_landed`` counts every row it landed: rollouts, metric points,
    reward samples and record rows (the last two also counted apart).
    """

    source: Path
    run_id: str
    # landed, appended, unchanged, copy, rewritten, refused, waiting, retry, changed,
    # damaged, unreadable
    status: str = "landed"
    rows_landed: int = 0
    rows_rejected: int = 0
    note: str = ""
    reject_reasons: list[str] = field(default_factory=list)
    reject_lines: list[int] = field(default_factory=list)  # beside reject_reasons, where known
    samples_landed: int = 0
    record_rows: int = 0
    records_landed: Counter[str] = field(default_factory=Counter)  # blocks, per table
    # rows of a companion table landed beside the rows (rollout_tokens: a rollout's
    # per-token arrays), not counted in rows_landed
    companion_rows: int = 0

    @property
    def skipped(self) -> bool:
        return self.status in SKIPPED

    @property
    def is_problem(self) -> bool:
        """Worth a non-zero exit under --strict."""
        return self.rows_rejected > 0 or self.status in PROBLEMS or ("gzip" in self.note)

    def unpublish(self) -> None:
        """Say that nothing of it was published (--strict found a problem)."""
        self.note = "; ".join(n for n in (self.note, "nothing published (--strict)") if n)
        self.rows_landed = 0
        self.samples_landed = 0
        self.record_rows = 0
        self.records_landed = Counter()
        self.companion_rows = 0


@dataclass
class IngestResult:
    """A call's outcome: every file's or source's, and what the sources held besides."""

    files: list[FileResult]
    strict_failed: bool = False  # --strict found a problem, so nothing was published
    skipped: Counter[str] = field(default_factory=Counter)  # what a tracker logged that no
    # table holds (histograms, images, ...), by kind
    sources: int = 0  # the sources planned (tracker landings)
    runs: list[str] = field(default_factory=list)  # the runs the sources are of

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

    @property
    def companion_rows(self) -> int:
        """Rows of companion tables landed (rollout_tokens), beside ``rows_landed``."""
        return sum(f.companion_rows for f in self.files)

    @property
    def samples_landed(self) -> int:
        """Reward samples landed (``rows_landed`` counts them too)."""
        return sum(f.samples_landed for f in self.files)

    @property
    def record_rows(self) -> int:
        """Rows of keyed-record tables landed (``rows_landed`` counts them too)."""
        return sum(f.record_rows for f in self.files)

    @property
    def records_landed(self) -> Counter[str]:
        """Records (blocks) landed, per table."""
        total: Counter[str] = Counter()
        for f in self.files:
            total.update(f.records_landed)
        return total

    @property
    def points_landed(self) -> int:
        return self.rows_landed - self.samples_landed - self.record_rows


# --------------------------------------------------------------------------- one run


@dataclass
class RunLanding:
    """One run's writing in one call: its manifest so far and its staged parts."""

    lake: Path
    run_id: str
    entries: list[ManifestEntry]  # the manifest, plus the entries of this call
    staging: Staging
    clock: Clock
    staged: list[tuple[ManifestEntry, list[tuple[str, Path]]]] = field(default_factory=list)

    def part_path(self, table: str) -> Path:
        """A new staged part's path (its folder made): ``<staging>/<table>.<id>/part.parquet``."""
        path = self.staging.root / f"{table}.{uuid.uuid4().hex[:12]}" / "part.parquet"
        path.parent.mkdir(parents=True)
        return path

    def stage(self, table: str, rows: pa.Table) -> Path:
        """Write ``rows`` as a staged part of ``table``; its path."""
        path = self.part_path(table)
        pq.write_table(rows, path, **WRITE_OPTIONS)
        return path

    def add(self, entry: ManifestEntry, parts: Iterable[tuple[str, Path]]) -> None:
        """Hold ``entry`` and its staged parts (table, path) until the next publish."""
        self.staged.append((entry, list(parts)))

    def parts(self, table: str) -> list[str]:
        """The run's parts of ``table``: published (oldest first), then staged in this call."""
        prefix = table + "/"
        landed = {part for entry in self.entries for part in entry.parts if part.startswith(prefix)}
        published = [
            str(self.lake / part) for part in sorted(landed) if (self.lake / part).is_file()
        ]
        staged = [str(path) for _, paths in self.staged for name, path in paths if name == table]
        return published + staged

    def publish(self) -> None:
        """Publish every staged part, then record them in the manifest (one file)."""
        if not self.staged:
            return
        entries = []
        for entry, parts in self.staged:
            for table, path in parts:
                entry.parts.append(
                    lake_files.publish(self.lake, table, self.run_id, path, self.clock)
                )
            entry.recorded_at = lake_files.utc_now()
            entries.append(entry)
        lake_files.write_manifest(self.lake, self.run_id, entries)
        self.staged = []


def open_run(lake: Path, run_id: str) -> RunLanding:
    """A run's landing (call with its lock held): manifest read, a killed ingest's debris gone."""
    entries = lake_files.read_manifest(lake, run_id)
    known = {part for e in entries for part in e.parts}
    tables = list(LAKE_TABLES)
    removed = lake_files.remove_debris(lake, run_id, tables, known)
    if removed:
        logger.warning("run %s: removed %d parts a killed ingest left", run_id, removed)
    clock = Clock(lake_files.last_publish_time(lake, run_id, tables))
    return RunLanding(lake, run_id, entries, Staging(lake, run_id), clock)


class LakeWriter:
    """The runs one call writes, under the lock policy and ``--strict`` (module docstring).

    Use as a context manager; ``run(run_id)`` opens each run's landing. A
    landing's staged parts are published by ``RunLanding.publish`` (a file at
    a time, or the run's at once) without ``--strict``; with it by
    ``finish`` if no result is a problem.
    """

    def __init__(self, lake: Path, runs: Iterable[str], *, strict: bool = False) -> None:
        self.lake = lake
        self.strict = strict
        self.runs = sorted(set(runs))
        for run_id in self.runs:
            lake_files.check_run_id(run_id)
        self.landings: list[RunLanding] = []
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> LakeWriter:
        with contextlib.ExitStack() as stack:
            if self.strict:
                for run_id in self.runs:
                    stack.enter_context(lake_files.run_lock(self.lake, run_id))
            self._stack = stack.pop_all()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    @contextlib.contextmanager
    def run(self, run_id: str) -> Iterator[RunLanding]:
        """The run's landing; without ``--strict`` its lock is held while it is open and
        what it staged is published when it closes normally."""
        if run_id not in self.runs:
            raise IngestError(f"run {run_id}: not one of this call's runs")
        with contextlib.ExitStack() as one:
            if not self.strict:
                one.enter_context(lake_files.run_lock(self.lake, run_id))
            landing = open_run(self.lake, run_id)
            (self._stack if self.strict else one).callback(landing.staging.discard)
            self.landings.append(landing)
            yield landing
            if not self.strict:
                landing.publish()
                lake_files.compact_manifest(self.lake, run_id)

    def finish(self, results: list[FileResult]) -> bool:
        """Under ``--strict``: publish every run, or nothing if a result is a problem
        (then every result says so). Whether ``--strict`` failed."""
        if not self.strict:
            return False
        if any(r.is_problem for r in results):
            for result in results:
                result.unpublish()
            return True
        for landing in self.landings:
            landing.publish()
            lake_files.compact_manifest(self.lake, landing.run_id)
        return False


# --------------------------------------------------------------------------- the skip index


@dataclass(frozen=True)
class Indexed:
    """What the index holds of a source: the runs it landed into, and the note to repeat."""

    runs: list[str]
    note: str


class SourceIndex:
    """Per source (a key naming it, its reader and ``--run``), its stat when it last landed."""

    def __init__(self, lake: Path) -> None:
        self.lake = lake
        self._held: dict[str, bool] = {}  # run -> whether its manifest holds anything
        self._remove_dead_temporaries()

    def _remove_dead_temporaries(self) -> None:
        """Remove the half-written records of ingests killed while writing one (their
        process is gone); a live ingest's stay."""
        folder = self.lake / SOURCES
        try:
            leftovers = [p for p in folder.iterdir() if p.name.endswith(".tmp")]
        except OSError:
            return
        for leftover in leftovers:
            pid = leftover.name.rsplit(".", 3)[-3] if leftover.name.count(".") >= 4 else ""
            if pid.isdigit() and _alive(int(pid)):
                continue
            leftover.unlink(missing_ok=True)

    def _file(self, key: str) -> Path:
        return self.lake / SOURCES / f"{hashlib.sha1(key.encode()).hexdigest()[:32]}.json"

    def _read(self, key: str) -> dict[str, Any] | None:
        try:
            recorded = json.loads(self._file(key).read_text())
        except (OSError, ValueError):
            return None
        return recorded if isinstance(recorded, dict) else None

    def _landed(self, run_id: str) -> bool:
        if run_id not in self._held:
            try:
                self._held[run_id] = bool(lake_files.read_manifest(self.lake, run_id))
            except IngestError:
                self._held[run_id] = False
        return self._held[run_id]

    def unchanged(self, key: str, stat: Iterable[Any]) -> Indexed | None:
        """The source's record if it has the stat it landed with and its runs still hold it."""
        recorded = self._read(key)
        if recorded is None or recorded.get("stat") != list(stat):
            return None
        runs = recorded.get("runs")
        if not isinstance(runs, list) or not runs or not all(isinstance(r, str) for r in runs):
            return None
        if not all(self._landed(r) for r in runs):
            return None  # a run whose lake was removed by hand lands again
        return Indexed(runs, str(recorded.get("note") or ""))

    def landed_as(self, key: str) -> str | None:
        """The one run the source landed into (whatever its stat now), if it still holds it."""
        recorded = self._read(key)
        runs = recorded.get("runs") if recorded is not None else None
        if not isinstance(runs, list) or len(runs) != 1 or not isinstance(runs[0], str):
            return None
        try:
            lake_files.check_run_id(runs[0])
        except IngestError:
            return None
        return runs[0] if self._landed(runs[0]) else None

    def record(
        self, key: str, origin: Path, stat: Iterable[Any], runs: list[str], note: str = ""
    ) -> None:
        """Remember the source's stat once what it landed is published (atomic replace)."""
        if not runs:
            return
        path = self._file(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
        payload: dict[str, Any] = {
            "origin": str(origin.resolve()),
            "stat": list(stat),
            "runs": runs,
        }
        if note:
            payload["note"] = note
        temporary.write_text(json.dumps(payload))
        os.replace(temporary, path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
