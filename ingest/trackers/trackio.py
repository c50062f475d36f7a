"""Trackio projects: every run of a project database, with its config and alerts.

Trackio (checked against trackio 0.43.0, database schema version 2, and the
layout of releases before 0.24) keeps one SQLite database per project,
``<TRACKIO_DIR>/<project>.db`` (``TRACKIO_DIR`` defaults to
``~/.cache/huggingface/trackio``), where ``<project>`` is the project name
with every character but letters, digits, ``-`` and ``_`` left out. Beside it
lie ``<project>.lock`` (Trackio's process lock) and, while a writer has it
open, ``<project>.db-wal``/``-shm``: Trackio writes in WAL mode. Its tables:

* ``metrics``: one row per ``trackio.log`` call: ``run_id`` (a uuid; missing
  before 0.24, when a run was its name), ``run_name``, ``step``,
  ``timestamp`` (ISO, UTC: the moment the batch was written, so rows
  flushed together share it) and ``metrics``, the logged dict as JSON with
  NaN and Infinity written as the texts ``"NaN"``, ``"Infinity"``,
  ``"-Infinity"``;
* ``configs``: one row per run, written with its first log: ``config`` (JSON,
  with Trackio's own ``_Username``, ``_Created`` and ``_Group`` added) and
  ``created_at``;
* ``alerts`` (``trackio.alert``, since 0.18): ``title``, ``text``, ``level``
  (info, warn, error), ``step``, ``timestamp``;
* ``system_metrics`` (GPU/CPU samples, by time with no step), ``traces``,
  artifacts and upload queues: no step, so no metric; counted as skipped.

Reading: the file is opened with the standard library's sqlite3 in
read-only mode (``mode=ro``) and every table is read inside one read
transaction, so what lands is one committed state of the database: a live
run's writer is neither blocked (WAL readers take no write lock) nor ever
seen half-way through a batch. Trackio itself is not imported. Like any
SQLite reader of a WAL database, the read may leave an empty ``-wal`` and a
``-shm`` file beside it (a read-only connection cannot remove them); the
writer uses them as they are. A database SQLite cannot read whole (cut short
while copied, overwritten, not SQLite, not Trackio's) is one error line
naming it, and nothing of it lands; other sources land.

What lands: each logged number as a point under its key as logged (nested
dicts flattened with ``.``; ``"NaN"``/``"Infinity"`` back to the numbers
they stand for, kept as values; media, tables, histograms and text counted
as skipped), at the row's step, with the row's timestamp as wall time. A row
whose JSON is damaged or whose step is no non-negative integer is a reject
(the database, the row's id, the reason). Each ingest reads the whole
database and the keyed landing keeps what the run holds already, so a
growing project lands only its new points.

The run: ``name`` is Trackio's run name, ``project`` the database's project,
``entity`` Trackio's ``_Username`` (the Hugging Face user, when logged in),
``created_at`` its ``_Created``, the group as the tag ``group=<name>``, and
``config`` the logged config without those three keys.

Alerts go into the run's ``summary`` as ``alerts``: a list of ``{step,
level, title, text, logged_at}`` in the order they were raised (with
``trackio_run_id``, Trackio's own id of the run). They are attributes of the
run as its trainer saw it, few and small, and every alert keeps all it said:
no lake table holds a free-text finding per step, and a new table with its
staging view would be a schema change for a handful of rows per run that
``stg_runs``/``dim_runs`` already carry (``json_extract(summary,
'$.alerts')``). A new alert changes the summary, so the run's row lands
again and the newest wins in ``dim_runs``, as for any changed attribute.

Run id: ``<project>.<run name>``, made valid by ``safe_run_id``. It is always
project-qualified: names repeat across projects (generated names, one
experiment name in several projects), and whether another project holds the
same name cannot decide the id without changing it when that project
appears. Within a project Trackio allows two runs of one name (a second
``trackio.init(name=...)`` without ``resume``): the first to log a metric
keeps ``<project>.<name>``, each later one gets ``-<first 8 characters of its
Trackio id>`` appended, so ids do not change as the project grows.
"""

from __future__ import annotations

import math
import os
import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path
from typing import Any

from obs.ingest.errors import IngestError
from obs.ingest.readers import loads
from obs.ingest.trackers.base import RunHistory, as_step, media_kind, safe_run_id, utc

FORMAT = "trackio"
FORMATS: dict[str, str] = {FORMAT: "Trackio project database (<project>.db in TRACKIO_DIR)"}
SUFFIX = ".db"
WAL = "-wal"
LOCK = ".lock"  # Trackio's process lock beside each project database
SQLITE_HEADER = b"SQLite format 3\x00"
METRIC_COLUMNS = frozenset({"run_name", "step", "metrics", "timestamp"})
# How long a read waits for a writer that holds the database locked (a
# rollback-journal database, as on a Space; a WAL database never makes it wait).
BUSY_TIMEOUT_S = 10.0
# The config keys Trackio adds to every run's config.
USER_KEY, CREATED_KEY, GROUP_KEY = "_Username", "_Created", "_Group"
# How Trackio writes the numbers JSON cannot hold.
NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
MEDIA_PREFIX = "trackio."
# What to do with a file in a Trackio folder that is no project database.
MOVE_IT = "move it out of the Trackio folder, or point at a <project>.db"


# --------------------------------------------------------------------------- interface


def find(path: Path) -> list[tuple[str, Path]]:
    """A project database given as a file, or every database of each Trackio folder
    at or under ``path`` (a folder holding at least one project database; as for
    Trackio, each ``*.db`` in it is a project, so a damaged one is named, not passed over)."""
    if path.is_file():
        claimed = path.suffix == SUFFIX or _sqlite_header(path)
        return [(FORMAT, path)] if claimed else []
    if not path.is_dir():
        return []
    found: list[Path] = []
    for top, dirs, names in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        here = Path(top)
        databases = sorted(here / name for name in names if name.endswith(SUFFIX))
        if any(_is_project(db) for db in databases):
            found.extend(databases)
            dirs.clear()  # media/, artifacts/, traces/ of the folder hold no projects
    return [(FORMAT, db) for db in found]


def stat_files(fmt: str, origin: Path) -> list[Path]:
    """The database and, when it holds anything, its write-ahead log: a live writer's
    commits reach the ``-wal`` file first, and the main file only at a checkpoint."""
    _check_format(fmt)
    wal = _wal(origin)
    try:
        grown = wal.stat().st_size > 0
    except OSError:
        grown = False
    return [origin, wal] if grown else [origin]


def read(fmt: str, origin: Path, root: Path) -> list[RunHistory]:
    """Every run of the project database (``root`` is not needed: Trackio names its runs)."""
    _check_format(fmt)
    snapshot = _read_database(origin)
    return _histories(snapshot, origin, project_name(origin))


def project_name(origin: Path) -> str:
    """The project a database holds: its file name without ``.db``."""
    return origin.name.removesuffix(SUFFIX) or origin.name


# --------------------------------------------------------------------------- finding


def _sqlite_header(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


def _wal(origin: Path) -> Path:
    return origin.with_name(origin.name + WAL)


def _is_project(db: Path) -> bool:
    """Whether ``db`` is a Trackio project database: SQLite with Trackio's metrics
    table, or beside Trackio's lock file (a new project whose tables are still in
    its write-ahead log). The schema is read as an immutable file: looking at a
    folder's databases takes no lock and leaves no file behind."""
    if not _sqlite_header(db):
        return False
    if db.with_name(project_name(db) + LOCK).is_file():
        return True
    try:
        con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
        try:
            return _columns(con, "metrics") >= METRIC_COLUMNS
        finally:
            con.close()
    except sqlite3.Error:
        return False


# --------------------------------------------------------------------------- reading


@dataclass
class _Snapshot:
    """The tables of one committed state of a project database."""

    has_run_ids: bool
    metrics: list[tuple[Any, ...]]  # row id, run key, run name, step, timestamp, metrics JSON
    configs: list[tuple[Any, ...]]  # run key, run name, config JSON, created_at
    alerts: list[tuple[Any, ...]]  # row id, run key, run name, timestamp, title, text, level, step
    unread: dict[str, Counter[Any]] = field(default_factory=dict)  # kind -> rows per run key


def _read_database(origin: Path) -> _Snapshot:
    """Every table read in one read-only transaction, or one line saying why not."""
    try:
        con = sqlite3.connect(
            f"{origin.resolve().as_uri()}?mode=ro",
            uri=True,
            timeout=BUSY_TIMEOUT_S,
            isolation_level=None,
        )
    except sqlite3.Error as exc:
        raise IngestError(f"{origin}: cannot be opened ({exc}); nothing of it landed") from exc
    try:
        con.execute("begin")  # one snapshot across tables
        return _read_tables(con, origin)
    except sqlite3.Error as exc:
        raise IngestError(_unreadable(origin, exc)) from exc
    finally:
        con.close()


def _read_tables(con: sqlite3.Connection, origin: Path) -> _Snapshot:
    metric_columns = _columns(con, "metrics")
    if not metric_columns >= METRIC_COLUMNS:
        raise IngestError(
            f"{origin}: an SQLite database, but not a Trackio project (no metrics table with "
            f"{', '.join(sorted(METRIC_COLUMNS))} columns); nothing of it landed: {MOVE_IT}"
        )
    has_run_ids = "run_id" in metric_columns

    def key_of(table: str) -> str:
        return "run_id" if "run_id" in _columns(con, table) else "run_name"

    metrics = con.execute(
        f"select rowid, {key_of('metrics')}, run_name, step, timestamp, metrics "
        "from metrics order by rowid"
    ).fetchall()
    configs: list[tuple[Any, ...]] = []
    config_columns = _columns(con, "configs")
    if {"run_name", "config"} <= config_columns:
        created = "created_at" if "created_at" in config_columns else "null"
        configs = con.execute(
            f"select {key_of('configs')}, run_name, config, {created} from configs order by rowid"
        ).fetchall()
    alerts: list[tuple[Any, ...]] = []
    alert_columns = _columns(con, "alerts")
    if {"run_name", "title"} <= alert_columns:
        wanted = ("timestamp", "title", "text", "level", "step")
        picked = ", ".join(c if c in alert_columns else "null" for c in wanted)
        alerts = con.execute(
            f"select rowid, {key_of('alerts')}, run_name, {picked} from alerts order by rowid"
        ).fetchall()
    unread: dict[str, Counter[Any]] = {}
    for table, kind in (("system_metrics", "system-metrics record"), ("traces", "trace")):
        if "run_name" in _columns(con, table):
            rows = con.execute(f"select {key_of(table)}, count(*) from {table} group by 1")
            unread[kind] = Counter({key: count for key, count in rows})
    return _Snapshot(has_run_ids, metrics, configs, alerts, unread)


def _columns(con: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in con.execute(f"pragma table_info({table})")}


def _unreadable(origin: Path, exc: sqlite3.Error) -> str:
    message = " ".join(str(exc).split()) or type(exc).__name__
    if "not a database" in message:
        return (
            f"{origin}: not an SQLite database ({message}), so not a Trackio project; "
            f"nothing of it landed: {MOVE_IT}"
        )
    if "locked" in message or "busy" in message:
        return (
            f"{origin}: its writer kept the database locked for {BUSY_TIMEOUT_S:g} s "
            f"({message}); nothing of it landed: ingest again"
        )
    return (
        f"{origin}: SQLite cannot read this database whole ({message}); nothing of it "
        "landed: if it is still being copied ingest again once it is complete, else "
        "restore it from a copy"
    )


# --------------------------------------------------------------------------- runs


@dataclass
class _Run:
    key: str  # Trackio's run id (its name before 0.24)
    name: str
    history: RunHistory
    first_metric: int | None = None  # the id of its first metrics row
    first_alert: int | None = None
    first_seen: str | None = None  # the timestamp of its first row
    alerts: list[dict[str, Any]] = field(default_factory=list)


def _histories(snapshot: _Snapshot, origin: Path, project: str) -> list[RunHistory]:
    runs: dict[str, _Run] = {}
    by_name: dict[str, str] = {}  # run name -> key of the last run of that name to log

    def run(key: Any, name: Any, stamp: Any = None) -> _Run:
        key = str(key if key is not None else name)
        if key not in runs and name is not None and key == str(name) and key in by_name:
            key = by_name[key]  # a table keyed by name in a database of run ids
        found = runs.get(key)
        if found is None:
            label = str(name if name is not None else key)
            history = RunHistory("", FORMAT, origin, project=project, name=label)
            found = runs[key] = _Run(key, label, history)
        if name is not None:
            by_name[str(name)] = key
        if found.first_seen is None and isinstance(stamp, str):
            found.first_seen = stamp
        return found

    times: dict[Any, float | None] = {}
    for row_id, key, name, step, stamp, payload in snapshot.metrics:
        found = run(key, name, stamp)
        if found.first_metric is None:
            found.first_metric = row_id
        _add_row(found.history, origin, row_id, step, stamp, payload, times)
    for key, name, payload, created in snapshot.configs:
        _configure(run(key, name).history, payload, created)
    for row_id, key, name, stamp, title, text, level, step in snapshot.alerts:
        found = run(key, name, stamp)
        if found.first_alert is None:
            found.first_alert = row_id
        found.alerts.append(
            {"step": step, "level": level, "title": title, "text": text, "logged_at": stamp}
        )
    for kind, counts in snapshot.unread.items():
        for key, count in counts.items():
            if str(key) in runs:
                runs[str(key)].history.skipped[kind] += count
    for found in runs.values():
        history = found.history
        if snapshot.has_run_ids:
            history.summary["trackio_run_id"] = found.key
        if found.alerts:
            history.summary["alerts"] = found.alerts
        if history.created_at is None and found.first_seen is not None:
            history.created_at = utc(found.first_seen)
    _name_runs(list(runs.values()), project)
    return [found.history for found in runs.values()]


def _add_row(
    history: RunHistory,
    origin: Path,
    row_id: int,
    step: Any,
    stamp: Any,
    payload: Any,
    times: dict[Any, float | None],
) -> None:
    """One logged row's values as points (or the row as a reject)."""
    text = _text(payload)
    raw = f"step={step!r} metrics={text}"
    at = as_step(step)
    if at is None:
        history.reject(origin, row_id, f"step {step!r} is not a non-negative integer", raw)
        return
    try:
        values = loads(text)
    except ValueError as exc:
        history.reject(origin, row_id, f"metrics is not valid JSON ({exc})", raw)
        return
    if not isinstance(values, dict):
        history.reject(origin, row_id, "metrics is not a JSON object", raw)
        return
    if stamp not in times:
        moment = utc(stamp) if isinstance(stamp, str) else None
        times[stamp] = moment.replace(tzinfo=UTC).timestamp() if moment else None
    wall_time = times[stamp]
    for key, value in values.items():
        history.add(at, str(key), _value(value, history), wall_time)


def _value(value: Any, history: RunHistory) -> Any:
    """A logged value as ``RunHistory.add`` takes it: Trackio's texts for NaN and
    Infinity back to numbers; its media objects (``{"_type": "trackio.image"}``)
    counted here under their kind, and left out."""
    if isinstance(value, str):
        return NON_FINITE.get(value, value)
    if isinstance(value, dict):
        kind = value.get("_type")
        if isinstance(kind, str):
            history.skipped[media_kind(kind.removeprefix(MEDIA_PREFIX))] += 1
            return None
        return {key: _value(inner, history) for key, inner in value.items()}
    return value


def _configure(history: RunHistory, payload: Any, created: Any) -> None:
    """The run's config row: the user's config, and what Trackio adds to it."""
    try:
        config = loads(_text(payload))
    except ValueError as exc:
        history.notes.append(f"the config of run {history.name!r} is not valid JSON ({exc})")
        return
    if not isinstance(config, dict):
        history.notes.append(f"the config of run {history.name!r} is not a JSON object")
        return
    user = config.pop(USER_KEY, None)
    started = config.pop(CREATED_KEY, None)
    group = config.pop(GROUP_KEY, None)
    history.config = config
    history.entity = str(user) if user else None
    history.created_at = utc(started) if isinstance(started, str) else None
    if history.created_at is None and isinstance(created, str):
        history.created_at = utc(created)
    history.tags = [f"group={group}"] if group else []


def _name_runs(runs: list[_Run], project: str) -> None:
    """Each run's id: ``<project>.<name>``; later runs of a name get their Trackio id's
    start appended (the module docstring says why)."""
    unset = float("inf")
    order = sorted(
        runs,
        key=lambda r: (
            r.first_metric if r.first_metric is not None else unset,
            r.first_alert if r.first_alert is not None else unset,
            r.key,
        ),
    )
    taken: set[str] = set()
    for found in order:
        plain = safe_run_id(f"{project}.{found.name}")
        if plain not in taken:
            found.history.run_id = plain
        else:
            found.history.run_id = safe_run_id(f"{project}.{found.name}-{found.key[:8]}")
            found.history.notes.append(
                f"run {found.name!r} ({found.key}) shares its name with an earlier run of "
                f"project {project!r}: landed as {found.history.run_id}"
            )
        taken.add(found.history.run_id)


# --------------------------------------------------------------------------- helpers


def _text(payload: Any) -> str:
    """A JSON column's text (Trackio stores it as bytes)."""
    if isinstance(payload, bytes | bytearray | memoryview):
        return bytes(payload).decode("utf-8", "replace")
    return "" if payload is None else str(payload)


def _check_format(fmt: str) -> None:
    if fmt != FORMAT:
        raise ValueError(f"trackio reads {FORMAT!r}, not {fmt!r}")
