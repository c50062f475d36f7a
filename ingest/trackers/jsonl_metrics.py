"""JSON-lines metric logs: verl's file logger and flat ``metrics.jsonl`` files.

Two layouts, one record a line:

* verl (``trainer.logger=['file']``): ``{"step": 12, "data": {"actor/pg_loss": 0.1, ...}}``;
* flat: ``{"step": 12, "loss": 0.1, ...}``; the step may be called ``step``,
  ``_step``, ``global_step`` or ``iteration``. A file with none of them numbers
  its records 0, 1, ... and says so. prime-rl's file monitor writes this
  layout to ``<run_dir>/metrics.jsonl`` (``{"step", "time", ...}``; its
  trainer and its orchestrator both append to the file, each its own keys;
  a key both log at one step, such as ``time/step``, keeps the later line's
  value).

A wall time is taken from ``_timestamp``, ``timestamp``, ``wall_time`` or
``time`` (epoch seconds, or an ISO text). A line that is not a JSON object, or
whose step is not a non-negative integer, is rejected with its line number; a
last line with no newline is a record still being written and is left for the
next ingest. Files of rollouts (``input``/``output``, ``prompt``/``response``,
and prime-rl's episode ``traces.jsonl``, not even opened) are not metric logs
and are not picked up from a folder.
"""

from __future__ import annotations

import gzip
import math
import os
import zlib
from datetime import datetime
from pathlib import Path
from typing import Any

from obs.ingest.errors import IngestError
from obs.ingest.readers import GzipLimit, gunzip, loads, parse_json_line, raw_text
from obs.ingest.trackers.base import RunHistory, as_step, relative_name, safe_run_id, utc

FORMATS = {"jsonl": "JSON-lines metric log (verl file logger, flat metrics.jsonl, prime-rl)"}
STEP_KEYS = ("step", "_step", "global_step", "iteration")
TIME_KEYS = ("_timestamp", "timestamp", "wall_time", "time")
ROLLOUT_KEYS = frozenset({"input", "output", "prompt", "response", "completion", "messages"})
# prime-rl's episode files: one (often large) episode a line, never a metric log.
EPISODE_FILES = frozenset({"traces.jsonl"})
EPOCH = datetime(1970, 1, 1)
GENERIC_STEMS = frozenset({"metrics", "log", "logs", "train", "history", "scalars"})


def _suffixed(path: Path) -> bool:
    return path.name.endswith((".jsonl", ".jsonl.gz"))


def find(path: Path) -> list[tuple[str, Path]]:
    if path.is_file():
        return [("jsonl", path)] if _suffixed(path) else []
    return [
        ("jsonl", p)
        for p in sorted(path.rglob("*.jsonl*"))
        if _suffixed(p) and p.name not in EPISODE_FILES and p.is_file() and _is_log(p)
    ]


def _is_log(path: Path) -> bool:
    """The first complete line is a metric record, not a rollout."""
    try:
        with path.open("rb") as raw:
            handle = gzip.GzipFile(fileobj=raw) if path.name.endswith(".gz") else raw
            first = handle.readline(1 << 20)
    except (OSError, EOFError, zlib.error):
        return False
    if not first.endswith(b"\n"):
        return False
    try:
        record = loads(first)
    except ValueError:
        return False
    if not isinstance(record, dict) or ROLLOUT_KEYS & record.keys():
        return False
    data = record.get("data")
    values = data.values() if isinstance(data, dict) else record.values()
    return any(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def stat_files(fmt: str, origin: Path) -> list[Path]:
    return [origin]


def run_name(origin: Path, root: Path) -> str:
    """The file's name, its folder's for a generic one (``metrics.jsonl``), below ``root``."""
    stem = origin.name.removesuffix(".gz").removesuffix(".jsonl")
    folder = relative_name(origin.parent, root)
    if stem.lower() in GENERIC_STEMS:
        return folder
    base = root.resolve()
    inside = origin.resolve().parent != (base.parent if base.is_file() else base)
    return f"{folder}.{stem}" if inside else stem


def read(fmt: str, origin: Path, root: Path) -> list[RunHistory]:
    try:
        content = origin.read_bytes()
    except OSError as exc:
        raise IngestError(f"{origin}: cannot be read ({exc})") from exc
    name = run_name(origin, root)
    history = RunHistory(run_id=safe_run_id(name), source="jsonl", origin=origin, name=name)
    if origin.name.endswith(".gz"):
        # Decompressed up to the gzip limit, as rollout dumps are (a bomb is cut there).
        unpacked, status, note = gunzip(content, GzipLimit.from_env(os.environ))
        content = bytes(unpacked)
        if note:
            history.notes.append(note)
        history.truncated = history.truncated or status in {"truncated", "limited"}
    complete = content[: content.rfind(b"\n") + 1]
    if len(complete) < len(content):
        history.notes.append("its last line is not complete yet; it lands once it is written")
        history.truncated = True
    records: list[tuple[int, dict[str, Any], bytes]] = []
    for number, line in enumerate(complete.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = parse_json_line(line)
        except ValueError as exc:
            history.reject(origin, number, str(exc), raw_text(line))
            continue
        if not isinstance(record, dict):
            history.reject(origin, number, "not a JSON object", raw_text(line))
            continue
        records.append((number, record, line))
    # Records are numbered 0, 1, ... only in a file none of whose records has a
    # step: numbers would collide with the steps of the others.
    stepped = any(k in record for _, record, _ in records for k in STEP_KEYS)
    numbered = 0
    for number, record, line in records:
        if stepped and not any(k in record for k in STEP_KEYS):
            reason = "no step field, while other records have one"
            history.reject(origin, number, reason, raw_text(line))
            continue
        numbered += _record(history, origin, number, record, numbered, line)
    if numbered:
        history.notes.append(
            f"{numbered:,} records carry no step field; they are numbered 0, 1, ... in file order"
        )
    return [history]


def _record(
    history: RunHistory, origin: Path, number: int, record: dict[str, Any], count: int, line: bytes
) -> int:
    """Add one record's points; 1 when it had no step and was numbered."""
    data = record.get("data") if isinstance(record.get("data"), dict) else None
    values = data if data is not None else record
    key = next((k for k in STEP_KEYS if k in record), None)
    numbered = 0
    if key is None:
        step: int | None = count
        numbered = 1
    else:
        step = as_step(record[key])
    if step is None:
        given = record[key] if key is not None else None
        history.reject(
            origin, number, f"{key} is not a non-negative integer ({given!r})", raw_text(line)
        )
        return 0
    wall = _wall_time(record)
    for name, value in values.items():
        if data is None and (name in STEP_KEYS or name in TIME_KEYS):
            continue
        history.add(step, name, value, wall)
    return numbered


def _wall_time(record: dict[str, Any]) -> float | None:
    for key in TIME_KEYS:
        value = record.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value) if math.isfinite(value) else None
        if isinstance(value, str):
            moment = utc(value)
            if moment is not None:
                return (moment - EPOCH).total_seconds()
    return None
