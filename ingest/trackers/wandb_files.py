"""Weights & Biases run histories: run folders (``.wandb`` logs), export JSON, UI CSV.

Three ways a W&B history reaches a disk, three formats:

* ``wandb``: a run folder (``wandb/offline-run-*/``, ``wandb/run-*/``) holding
  ``run-<id>.wandb``, the log the SDK writes record by record. It is read with
  the wandb package's own reader (``wandb.sdk.internal.datastore`` and the
  record protobufs), imported only when a log is read: releases from 0.30
  dropped that reader, so obs pins ``wandb<0.30`` for reading; it reads the
  logs every release writes. A log cut short (a run still writing, a killed
  run) keeps every record before the cut and says so in ``notes``.
* ``wandb-export``: one JSON object per run, as the "analyze-experiment"
  workflow exports it (attributes, ``history`` rows, a ``metrics`` view).
* ``wandb-csv``: a chart exported from the W&B UI (``Step`` plus one column
  per metric, or ``<run> - <metric>`` columns for several runs).

Readers only parse: what a logged value becomes is ``RunHistory.add``'s rule.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlparse

from obs.ingest.errors import IngestError, install_hint
from obs.ingest.readers import TooDeep, holds_cut, loads, loads_cut, too_deep
from obs.ingest.trackers.base import RunHistory, as_step, safe_run_id, unwrap_config, utc

FORMATS: dict[str, str] = {
    "wandb": "W&B offline or synced run folder (.wandb log)",
    "wandb-export": "W&B run export JSON (history, summary, config of one run)",
    "wandb-csv": "W&B chart CSV export (Step plus metric or '<run> - <metric>' columns)",
}

LOG_SUFFIX = ".wandb"
INSTALL = "install the W&B reader: " + install_hint("wandb")
# Sniffing an export: files up to this size are parsed whole (exact top-level
# keys); larger ones are judged from their head so a folder scan stays cheap.
SNIFF_PARSE_LIMIT = 16 * 1024 * 1024
SNIFF_HEAD = 1024 * 1024
HEAD_HISTORY = re.compile(r'"history"\s*:\s*\[')
HEAD_ID = re.compile(r'"id"\s*:')
HEAD_ATTRS = re.compile(r'"(config|summary)"\s*:')
# Keys of a history row or record that are the row's coordinates, not metrics.
STEP_KEY = "_step"
TIME_KEY = "_timestamp"
CSV_STEP_COLUMNS = ("Step", "_step")
CSV_RANGE_SUFFIXES = ("__MIN", "__MAX")
CSV_RUN_SEPARATOR = " - "


# --------------------------------------------------------------------------- interface


def find(path: Path) -> list[tuple[str, Path]]:
    """(format, origin) for every W&B source at or under ``path``, sorted, no duplicates.

    Origins are resolved, so ``wandb/latest-run`` (a symlink to a run folder)
    and the folder it points at are one source.
    """
    files = [path] if path.is_file() else list(_walk(path)) if path.is_dir() else []
    run_folders = {f.resolve().parent for f in files if f.suffix == LOG_SUFFIX}
    found = {("wandb", folder) for folder in run_folders}
    for file in files:
        real = file.resolve()
        if _inside(real, run_folders):
            continue  # a run folder's own files (summary, media tables) are not exports
        if real.suffix == ".json" and _is_export(real):
            found.add(("wandb-export", real))
        elif real.suffix == ".csv" and _is_chart_csv(real):
            found.add(("wandb-csv", real))
    return sorted(found)


def stat_files(fmt: str, origin: Path) -> list[Path]:
    """The files whose size and mtime decide whether ``origin`` changed since it was landed."""
    if fmt != "wandb":
        return [origin]
    logs = _logs(origin)
    folder = origin.parent if origin.is_file() else origin
    extra = [p for p in (_config_file(folder), _summary_file(folder)) if p.is_file()]
    return logs + extra


def read(fmt: str, origin: Path, root: Path) -> list[RunHistory]:
    """Every run the source holds.

    ``root`` (the path the user gave) is not needed: every W&B source names its
    runs itself (run id in the log or export, run names in the CSV header).
    """
    if fmt == "wandb":
        return _read_run_folder(origin)
    if fmt == "wandb-export":
        return [_read_export(origin)]
    if fmt == "wandb-csv":
        return _read_csv(origin)
    raise IngestError(f"{origin}: {fmt!r} is not a W&B format; use one of {', '.join(FORMATS)}")


# --------------------------------------------------------------------------- finding


def _walk(top: Path) -> Iterator[Path]:
    """Every file under ``top``, following folder symlinks but visiting each real folder once.

    Hidden folders (``.git``, ``.venv``) are not entered: no run lives there and
    they can be large.
    """
    seen: set[Path] = set()
    stack = [top]
    while stack:
        folder = stack.pop()
        real = folder.resolve()
        if real in seen:
            continue
        seen.add(real)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            with contextlib.suppress(OSError):
                if entry.is_dir():
                    if not entry.name.startswith("."):
                        stack.append(Path(entry.path))
                elif entry.is_file():
                    yield Path(entry.path)


def _inside(path: Path, folders: set[Path]) -> bool:
    return any(parent in folders for parent in path.parents)


def _is_export(file: Path) -> bool:
    """Whether a .json file is a run export (not, say, a TRL ``trainer_state.json``)."""
    try:
        size = file.stat().st_size
        with file.open("rb") as handle:
            raw = handle.read(SNIFF_PARSE_LIMIT if size <= SNIFF_PARSE_LIMIT else SNIFF_HEAD)
        text = raw.decode("utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return False
    if size <= SNIFF_PARSE_LIMIT:
        try:
            return _looks_like_export(loads(text))
        except ValueError:
            pass  # an export still being written is found, so reading it can say so
    return _head_looks_like_export(text)


def _looks_like_export(data: Any) -> bool:
    if not isinstance(data, dict):
        return False
    return isinstance(data.get("history"), list) or (
        "id" in data and ("config" in data or "summary" in data)
    )


def _head_looks_like_export(head: str) -> bool:
    if not head.lstrip().startswith("{") or '"log_history"' in head:
        return False
    return bool(HEAD_HISTORY.search(head)) or bool(HEAD_ID.search(head) and HEAD_ATTRS.search(head))


def _is_chart_csv(file: Path) -> bool:
    """Whether a .csv file's header has a ``Step`` (or ``_step``) column."""
    try:
        with file.open(encoding="utf-8-sig", newline="") as handle:
            header = next(csv.reader(handle), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return False
    return any(cell.strip() in CSV_STEP_COLUMNS for cell in header)


# --------------------------------------------------------------------------- run folders


def _logs(origin: Path) -> list[Path]:
    if origin.is_file():
        return [origin]
    return sorted(p for p in origin.glob(f"*{LOG_SUFFIX}") if p.is_file())


def _config_file(folder: Path) -> Path:
    return folder / "files" / "config.yaml"


def _summary_file(folder: Path) -> Path:
    return folder / "files" / "wandb-summary.json"


def _reader_modules(origin: Path) -> tuple[ModuleType, ModuleType]:
    """The wandb package's log reader and record protobufs, imported only when needed."""
    try:
        from wandb.proto import wandb_internal_pb2
        from wandb.sdk.internal import datastore
    except ImportError as exc:
        version = _installed_wandb()
        found = "no wandb found"
        if version:
            found = f"wandb {version} has no usable reader: {_first_line(exc)}"
        raise IngestError(
            f"{origin}: reading a W&B run log needs wandb below 0.30 ({found}); {INSTALL}"
        ) from exc
    return datastore, wandb_internal_pb2


def _installed_wandb() -> str | None:
    from importlib import metadata

    try:
        return metadata.version("wandb")
    except metadata.PackageNotFoundError:
        return None


def _first_line(exc: BaseException) -> str:
    lines = str(exc).splitlines()
    return lines[0] if lines else type(exc).__name__


def _read_run_folder(origin: Path) -> list[RunHistory]:
    """One history per ``.wandb`` log in the folder (a run folder holds one)."""
    logs = _logs(origin)
    if not logs:
        raise IngestError(
            f"{origin}: holds no .wandb log; point at a run folder (wandb/run-*/ or "
            "wandb/offline-run-*/)"
        )
    modules = _reader_modules(origin)
    folder = origin.parent if origin.is_file() else origin
    histories = []
    for log in logs:
        history = _RunLog(log, origin, modules).read()
        _apply_run_files(history, folder)
        histories.append(history)
    return histories


def _apply_run_files(history: RunHistory, folder: Path) -> None:
    """``files/config.yaml`` and ``files/wandb-summary.json`` win over the log when present.

    W&B writes them from the run's final state (a synced run); the log holds
    the same data as a sequence of updates.
    """
    config_file, summary_file = _config_file(folder), _summary_file(folder)
    if config_file.is_file():
        config = _load_side_file(history, config_file, _load_yaml)
        if isinstance(config, dict):
            history.config = unwrap_config(config)
    if summary_file.is_file():
        summary = _load_side_file(history, summary_file, _load_json)
        if isinstance(summary, dict):
            history.summary = _without_wandb(summary)


def _load_side_file(history: RunHistory, file: Path, load: Any) -> Any:
    try:
        return load(file)
    except (OSError, ValueError) as exc:
        history.notes.append(f"{file.name} is not readable ({exc}); the log's values are kept")
        return None


def _load_yaml(file: Path) -> Any:
    import yaml

    try:
        return yaml.safe_load(file.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ValueError(str(exc).splitlines()[0]) from exc
    except RecursionError as exc:
        raise ValueError(too_deep()) from exc


def _load_json(file: Path) -> Any:
    return loads(file.read_text(encoding="utf-8"))


def _without_wandb(mapping: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in mapping.items() if key != "_wandb"}


class _RunLog:
    """One ``.wandb`` log read record by record into a ``RunHistory``."""

    def __init__(self, log: Path, origin: Path, modules: tuple[ModuleType, ModuleType]) -> None:
        self.log = log
        self.datastore, self.records = modules
        run_id = log.stem.removeprefix("run-") or log.parent.name
        self.history = RunHistory(run_id=run_id, source="wandb", origin=origin, state="running")
        self.config: dict[str, Any] = {}
        self.summary: dict[str, Any] = {}
        self.handlers = {
            "run": self._run,
            "config": self._config,
            "history": self._history,
            "summary": self._summary,
            "exit": self._exit,
        }

    def read(self) -> RunHistory:
        for number, data in enumerate(self._scan(), start=1):
            record = self.records.Record()
            try:
                record.ParseFromString(data)
            except Exception as exc:  # protobuf's DecodeError; the checksum passed, so rare
                self.history.reject(self.log, number, f"not a W&B record ({exc})", data[:256].hex())
                continue
            handler = self.handlers.get(record.WhichOneof("record_type") or "")
            if handler is not None:
                handler(record, number)
        self.history.config = _without_wandb(self.config)
        self.history.summary = _without_wandb(self.summary)
        return self.history

    # ---- the log's blocks

    def _scan(self) -> Iterator[bytes]:
        """The log's records in order; a cut or damaged end stops the scan with a note."""
        size = self.log.stat().st_size
        if size < self.datastore.LEVELDBLOG_HEADER_LEN:
            self.history.notes.append("the log has no header yet (still being written?)")
            return
        with _scannable(self.log) as path:
            store = self.datastore.DataStore()
            try:
                store.open_for_scan(str(path))
            except Exception as exc:
                store.close()
                raise IngestError(
                    f"{self.log}: is not a W&B run log ({exc}); point at a run folder "
                    "written by wandb"
                ) from exc
            try:
                yield from self._blocks(store, size)
            finally:
                store.close()

    def _blocks(self, store: Any, size: int) -> Iterator[bytes]:
        count = 0
        while True:
            offset = store.get_offset()
            try:
                data = store.scan_data()
            except Exception:  # the reader asserts on a short or damaged record
                note = self._cut_note(store, offset, size, count)
                self.history.notes.append(note)
                if note.startswith("the log is damaged"):
                    # Damage, not a log still being written: a reject (--strict refuses it).
                    self.history.reject(self.log, count + 1, note)
                else:
                    self.history.truncated = True
                return
            if data is None:
                if offset < size:  # a record's first fragment, its rest never written
                    self.history.notes.append(_partial_note(count))
                    self.history.truncated = True
                elif count == 0:
                    self.history.notes.append("the log holds no records yet (still being written?)")
                return
            count += 1
            yield data

    def _cut_note(self, store: Any, offset: int, size: int, count: int) -> str:
        """A short record at the end is a log still being written; elsewhere it is damage."""
        if store.get_offset() >= size:
            return _partial_note(count)
        return (
            f"the log is damaged at byte {offset} of {size}; {count} records read, "
            "the rest is not read"
        )

    # ---- records

    def _run(self, record: Any, number: int) -> None:
        run = record.run
        history = self.history
        history.run_id = run.run_id or history.run_id
        history.project = run.project or history.project
        history.entity = run.entity or history.entity
        history.name = run.display_name or history.name
        if run.tags:
            history.tags = list(run.tags)
        if run.HasField("start_time") and run.start_time.seconds:
            history.created_at = utc(run.start_time.seconds + run.start_time.nanos / 1e9)
        self._update(self.config, run.config.update, number, "config")
        self._update(self.summary, run.summary.update, number, "summary")

    def _config(self, record: Any, number: int) -> None:
        self._update(self.config, record.config.update, number, "config")
        _remove(self.config, record.config.remove)

    def _summary(self, record: Any, number: int) -> None:
        self._update(self.summary, record.summary.update, number, "summary")
        _remove(self.summary, record.summary.remove)

    def _exit(self, record: Any, number: int) -> None:
        self.history.state = "finished" if record.exit.exit_code == 0 else "failed"

    def _update(self, target: dict[str, Any], items: Any, number: int, what: str) -> None:
        for item in items:
            path = _item_path(item)
            try:
                value = loads(item.value_json)
            except ValueError:
                self.history.reject(
                    self.log,
                    number,
                    f"{what} value of {'.'.join(path)} is not JSON",
                    item.value_json,
                )
                continue
            _set_nested(target, path, value)

    def _history(self, record: Any, number: int) -> None:
        """One logged row: items regrouped by their first key (a media object is one value)."""
        row: dict[str, Any] = {}
        self._update(row, record.history.item, number, "history")
        logged_step = row.pop(STEP_KEY, None)
        step = record.history.step.num if logged_step is None else as_step(logged_step)
        if step is None:
            self.history.reject(
                self.log, number, "history _step is not a non-negative integer", repr(logged_step)
            )
            return
        wall = _wall_time(row.pop(TIME_KEY, None))
        for key, value in row.items():
            self.history.add(step, key, value, wall)


def _partial_note(count: int) -> str:
    return f"the log ends in a partial record (still being written?); {count} records read"


@contextlib.contextmanager
def _scannable(log: Path) -> Iterator[Path]:
    """``log``, or a private copy when it is read-only: wandb's reader opens logs ``r+b``."""
    try:
        with log.open("r+b"):
            pass
    except PermissionError:
        with tempfile.TemporaryDirectory(prefix="obs-wandb-") as scratch:
            copy = Path(scratch) / log.name
            shutil.copyfile(log, copy)
            yield copy
        return
    yield log


def _item_path(item: Any) -> list[str]:
    """An item's key: ``nested_key`` (newer writers) or ``key``."""
    return list(item.nested_key) or [item.key]


def _set_nested(target: dict[str, Any], path: list[str], value: Any) -> None:
    for key in path[:-1]:
        inner = target.get(key)
        if not isinstance(inner, dict):
            inner = target[key] = {}
        target = inner
    target[path[-1]] = value


def _remove(target: dict[str, Any], items: Any) -> None:
    for item in items:
        path = _item_path(item)
        inner: Any = target
        for key in path[:-1]:
            inner = inner.get(key) if isinstance(inner, dict) else None
        if isinstance(inner, dict):
            inner.pop(path[-1], None)


def _wall_time(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


# --------------------------------------------------------------------------- export JSON


def _read_export(origin: Path) -> RunHistory:
    data = _load_export(origin)
    history = RunHistory(
        run_id=_text(data.get("id")) or origin.stem,
        source="wandb-export",
        origin=origin,
        name=_text(data.get("name")),
        state=_text(data.get("state")),
        tags=[t for t in _as_list(data.get("tags")) if isinstance(t, str)],
        created_at=utc(data.get("created_at")),
    )
    history.entity, history.project = _entity_project(data)
    config, summary = data.get("config"), data.get("summary")
    history.config = unwrap_config(config) if isinstance(config, dict) else {}
    history.summary = _without_wandb(summary) if isinstance(summary, dict) else {}
    artifacts = data.get("artifacts")
    history.artifacts = artifacts if isinstance(artifacts, list) else []
    walls = _export_history(history, data.get("history"), origin)
    _export_metrics(history, data.get("metrics"), origin, walls)
    return history


def _load_export(origin: Path) -> dict[str, Any]:
    try:
        text = origin.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise IngestError(f"{origin}: cannot read ({exc.strerror}); check permissions") from exc
    except UnicodeDecodeError as exc:
        raise IngestError(f"{origin}: is not UTF-8 text; export the run again") from exc
    try:
        data = loads_cut(text)
    except TooDeep as exc:
        raise IngestError(f"{origin}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise IngestError(
            f"{origin}: is not complete JSON (still being written?) ({exc.msg} at line "
            f"{exc.lineno}); wait for the export to finish or export the run again"
        ) from exc
    if not isinstance(data, dict):
        raise IngestError(
            f"{origin}: holds a JSON {type(data).__name__}, not a run export object; "
            "export the run again"
        )
    return data


def _text(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return str(value)


def _entity_project(data: dict[str, Any]) -> tuple[str | None, str | None]:
    """Entity and project as given, else from the run's URL (``/<entity>/<project>/runs/<id>``)."""
    entity, project = _text(data.get("entity")), _text(data.get("project"))
    url = data.get("url")
    if (entity is None or project is None) and isinstance(url, str):
        parts = [p for p in urlparse(url).path.split("/") if p]
        if len(parts) >= 4 and parts[2] == "runs":
            entity, project = entity or parts[0], project or parts[1]
    return entity, project


def _export_history(history: RunHistory, rows: Any, origin: Path) -> dict[int, float | None]:
    """The history rows as points; the wall time of each step, for the metrics view."""
    walls: dict[int, float | None] = {}
    if rows is None:
        return walls
    if not isinstance(rows, list):
        history.notes.append(f"history is a {type(rows).__name__}, not a list of rows; not read")
        return walls
    for index, row in enumerate(rows):
        if not isinstance(row, dict):
            history.reject(origin, index + 1, "history row is not an object", _dump(row))
            continue
        if holds_cut(row):
            history.reject(origin, index + 1, too_deep(), _dump(row))
            continue
        step = as_step(row[STEP_KEY]) if STEP_KEY in row else index
        if step is None:
            history.reject(
                origin, index + 1, "history _step is not a non-negative integer", _dump(row)
            )
            continue
        wall = _wall_time(row.get(TIME_KEY))
        walls.setdefault(step, wall)
        for key, value in row.items():
            if key not in (STEP_KEY, TIME_KEY):
                history.add(step, key, value, wall)
    _note_sampling(history, len(rows), walls)
    return walls


def _note_sampling(history: RunHistory, rows: int, walls: dict[int, float | None]) -> None:
    """W&B samples an exported history: say so when the summary logged further."""
    last = as_step(history.summary.get(STEP_KEY))
    held = max(walls, default=None)
    if last is None or (held is not None and last <= held):
        return
    upto = f" up to step {held}" if held is not None else ""
    history.notes.append(
        f"history holds {rows} rows{upto}; the run logged to step {last} "
        "(W&B samples exported history)"
    )


def _export_metrics(
    history: RunHistory, metrics: Any, origin: Path, walls: dict[int, float | None]
) -> None:
    """The ``metrics`` view repeats series: only (step, key) pairs the history lacks land."""
    if not isinstance(metrics, dict):
        return
    held = set(zip(history.steps, history.keys, strict=True))
    for key, view in metrics.items():
        values = view.get("values") if isinstance(view, dict) else None
        if not isinstance(values, list):
            continue
        for index, entry in enumerate(values):
            step = as_step(entry.get(STEP_KEY)) if isinstance(entry, dict) else None
            if step is None:
                reason = f"metrics view of {key}: value {index + 1} has no non-negative _step"
                history.reject(origin, index + 1, reason, _dump(entry))
                continue
            if (step, key) in held:
                continue
            held.add((step, key))
            history.add(step, key, entry.get("value"), walls.get(step))


def _dump(value: Any) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


# --------------------------------------------------------------------------- UI CSV


def _read_csv(origin: Path) -> list[RunHistory]:
    try:
        with origin.open(encoding="utf-8-sig", newline="") as handle:
            return _read_csv_rows(origin, csv.reader(handle))
    except OSError as exc:
        raise IngestError(f"{origin}: cannot read ({exc.strerror}); check permissions") from exc
    except UnicodeDecodeError as exc:
        raise IngestError(f"{origin}: is not UTF-8 text; export the chart again") from exc
    except csv.Error as exc:
        raise IngestError(
            f"{origin}: is not a readable CSV ({exc}); export the chart again"
        ) from exc


def _read_csv_rows(origin: Path, reader: Any) -> list[RunHistory]:
    header = [cell.strip() for cell in next(reader, [])]
    step_column = next((header.index(c) for c in CSV_STEP_COLUMNS if c in header), None)
    if step_column is None:
        raise IngestError(
            f"{origin}: has no Step column; export the chart from W&B with Step as its x axis"
        )
    runs, targets, wall_column = _csv_columns(origin, header, step_column)
    first = next(iter(runs.values()))
    for row in reader:
        if not any(cell.strip() for cell in row):
            continue
        step = as_step(_cell(row, step_column))
        if step is None:
            first.reject(origin, reader.line_num, "Step is not an integer", ",".join(row))
            continue
        wall = _csv_number(_cell(row, wall_column)) if wall_column is not None else None
        for column, history, key in targets:
            cell = _cell(row, column)
            if cell:
                history.add(step, key, _csv_value(cell), _wall_time(wall))
    return list(runs.values())


def _csv_columns(
    origin: Path, header: list[str], step_column: int
) -> tuple[dict[str, RunHistory], list[tuple[int, RunHistory, str]], int | None]:
    """The runs of a chart export and, per metric column, its run and key.

    ``<run> - <metric>`` columns (every metric column so named) are several
    runs; otherwise the columns are one run's metrics, named after the file.
    """
    metrics = [
        (index, name)
        for index, name in enumerate(header)
        if index != step_column and not name.endswith(CSV_RANGE_SUFFIXES)
    ]
    several = bool(metrics) and all(CSV_RUN_SEPARATOR in name for _, name in metrics)
    wall_column = None if several else _index(header, TIME_KEY)
    runs: dict[str, RunHistory] = {}
    targets = []
    for index, column in metrics:
        if index == wall_column:
            continue
        name, key = origin.stem, column
        if several:
            name, _, key = column.rpartition(CSV_RUN_SEPARATOR)
        if name not in runs:
            runs[name] = _csv_run(origin, name or origin.stem)
        targets.append((index, runs[name], key))
    if not runs:
        runs[origin.stem] = _csv_run(origin, origin.stem)
    return runs, targets, wall_column


def _csv_run(origin: Path, name: str) -> RunHistory:
    return RunHistory(run_id=safe_run_id(name), source="wandb-csv", origin=origin, name=name)


def _index(header: list[str], name: str) -> int | None:
    return header.index(name) if name in header else None


def _cell(row: list[str], column: int) -> str:
    return row[column].strip() if column < len(row) else ""


def _csv_number(cell: str) -> float | None:
    try:
        return float(cell)
    except ValueError:
        return None


def _csv_value(cell: str) -> float | str:
    """A number (NaN and inf included), else the text (counted as skipped by ``add``)."""
    number = _csv_number(cell)
    return cell if number is None else number


def _as_list(value: Any) -> list[Any]:
    """A list field of an export: a text is one item, anything else not a list is none."""
    if isinstance(value, str):
        return [value]
    return value if isinstance(value, list) else []
