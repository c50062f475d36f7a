"""What every tracker reader gives the landing: one run's history, already normalised.

A reader turns a tracker's files (read with the tracker's own library) into
``RunHistory`` objects: the run's attributes (``runs`` lake table) and its
points (``metrics`` lake table: step, key, value, wall time). Readers only
parse; they never compute analytics. ``add`` holds the one rule for what a
logged value becomes:

* a number is a point (bool as 1/0; NaN and Infinity kept: a diverging loss is
  information);
* a W&B media object (``{"_type": "histogram", ...}``), a list, a text or any
  other non-number is not a point: it is counted under its kind in
  ``skipped`` so the summary line can say what was left out;
* a nested mapping of numbers is flattened with ``.`` (``{"a": {"b": 1}}`` ->
  ``a.b``), the way W&B shows nested keys;
* ``None`` (a sparse row) is nothing at all.

A record that cannot be read at all (a damaged line, a step that is not an
integer) is a reject: file, line (or record number) and reason.

A source that logs every sample's reward (the reward monitor's
``reward_scores``) adds them as ``samples``: one block per (step, reward
function), its rewards in sample order, for the ``reward_samples`` table.

A source of keyed records (an agent's eval files, a trainer's console log)
adds them as ``records``: one ``RecordBlock`` per key of its table (an eval
step, a training step's group summary, one group's advantage table), whose
rows land together or not at all (``schema.RECORD_KEYS``).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from obs.core.identity import is_run_id
from obs.ingest.readers import TooDeep, loads

MAX_STEP = 2**63 - 1
SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass
class HistoryReject:
    file: Path
    line: int  # 1-based line, or 1-based record number in a file of records
    reason: str
    raw: str = ""
    table: str = "metrics"  # the lake table the record was meant for


@dataclass
class SampleBlock:
    """One step's per-sample rewards of one reward function (sample i at position i)."""

    step: int
    reward_function: str
    rewards: Any  # a 1-D float64 numpy array
    file: Path | None = None  # the file it was read from (else the run's origin)


@dataclass
class RecordBlock:
    """One record of a keyed table: the rows that share the table's key columns.

    ``rows`` hold the table's columns (``schema.RECORD_TABLES``) except
    ``source``, ``source_file`` and ``record_hash``, which the landing adds;
    every row carries the key columns with the same values. A column a row
    lacks is null. ``line`` is where the record starts in ``file`` (1 for a
    JSON file), for rows that carry no ``source_line`` of their own.
    """

    table: str
    rows: list[dict[str, Any]]
    file: Path
    line: int = 1


@dataclass
class RunHistory:
    """One run as one source holds it."""

    run_id: str  # the id the source gives (W&B id, folder name, MLflow run id, ...)
    source: str  # wandb, wandb-export, wandb-csv, tensorboard, trl, mlflow, jsonl
    origin: Path  # the file or folder the run was read from (recorded in the manifest)
    project: str | None = None
    entity: str | None = None
    name: str | None = None
    state: str | None = None
    tags: list[str] = field(default_factory=list)
    created_at: datetime | None = None  # UTC, naive
    config: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    artifacts: list[Any] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    wall_times: list[float | None] = field(default_factory=list)
    samples: list[SampleBlock] = field(default_factory=list)  # per-sample rewards, if logged
    records: list[RecordBlock] = field(default_factory=list)  # keyed records (eval steps, ...)
    skipped: Counter[str] = field(default_factory=Counter)
    rejects: list[HistoryReject] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. "truncated at the end"
    truncated: bool = False  # the source ends in a record still being written

    def add(self, step: int, key: str, value: Any, wall_time: float | None = None) -> None:
        """One logged value at ``step`` (see the module docstring for what lands)."""
        if value is None:
            return
        if isinstance(value, bool):
            self._point(step, key, 1.0 if value else 0.0, wall_time)
        elif isinstance(value, int | float):
            try:
                number = float(value)
            except OverflowError:  # an int beyond a double's range
                number = math.inf if value > 0 else -math.inf
            self._point(step, key, number, wall_time)
        elif isinstance(value, dict):
            kind = value.get("_type")
            if isinstance(kind, str):
                self.skipped[media_kind(kind)] += 1
                return
            for sub, inner in value.items():
                self.add(step, f"{key}.{sub}", inner, wall_time)
        elif isinstance(value, str):
            self.skipped["text"] += 1
        elif isinstance(value, list | tuple):
            self.skipped["list"] += 1
        else:
            self.skipped[type(value).__name__] += 1

    def _point(self, step: int, key: str, value: float, wall_time: float | None) -> None:
        if not 0 <= step <= MAX_STEP:
            self.skipped["out-of-range step"] += 1
            return
        self.steps.append(step)
        self.keys.append(clean_text(key))
        self.values.append(value)
        self.wall_times.append(epoch_seconds(wall_time))

    def reject(
        self, file: Path, line: int, reason: str, raw: Any = "", table: str = "metrics"
    ) -> None:
        text = raw if isinstance(raw, str) else repr(raw)
        self.rejects.append(HistoryReject(file, line, reason, text[: 64 * 1024], table))

    @property
    def points(self) -> int:
        return len(self.steps)

    @property
    def sample_count(self) -> int:
        return sum(len(block.rewards) for block in self.samples)


def media_kind(kind: str) -> str:
    """A W&B ``_type`` as the summary line names it: histogram, image, table, ..."""
    kind = kind.lower()
    for name in ("histogram", "image", "table", "audio", "video", "html", "plotly", "molecule"):
        if name in kind:
            return name
    return kind


# Wall times outside 1970..2200 are no wall times; larger numbers are taken as
# milli-, micro- or nanoseconds (time.time_ns() lands as the moment it means).
LATEST_EPOCH = 7_258_118_400.0  # 2200-01-01


def epoch_seconds(value: float | None) -> float | None:
    """Seconds since the epoch from a logged time, or None when it is none."""
    if value is None or not math.isfinite(value) or value < 0:
        return None
    for scale in (1.0, 1e3, 1e6, 1e9):
        if value / scale <= LATEST_EPOCH:
            return value / scale
    return None


def clean_text(text: str) -> str:
    """``text`` with lone surrogates (no UTF-8 form) replaced by U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return SURROGATE.sub("\ufffd", text)
    return text


def as_step(value: Any) -> int | None:
    """An integer step from a logged value (5, 5.0, "5"), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value <= MAX_STEP else None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and value >= 0:
        return int(value) if value <= MAX_STEP else None
    if isinstance(value, str):
        try:
            return as_step(float(value)) if "." in value or "e" in value else as_step(int(value))
        except ValueError:
            return None
    return None


def utc(moment: float | int | str | datetime | None) -> datetime | None:
    """A naive UTC datetime from epoch seconds, an ISO text or a datetime."""
    if moment is None:
        return None
    try:
        if isinstance(moment, datetime):
            found = moment
        elif isinstance(moment, int | float):
            if not math.isfinite(moment):
                return None
            return datetime.fromtimestamp(float(moment), UTC).replace(tzinfo=None)
        else:
            found = datetime.fromisoformat(str(moment).replace("Z", "+00:00"))
    except (ValueError, OverflowError, OSError):
        return None
    if found.tzinfo is not None:
        found = found.astimezone(UTC).replace(tzinfo=None)
    return found


def unwrap_config(config: Any) -> Any:
    """A W&B config without its ``{"value": ..., "desc": ...}`` wrappers (nesting kept)."""
    if isinstance(config, dict):
        if "value" in config and set(config) <= {"value", "desc"}:
            return unwrap_config(config["value"])
        return {str(k): unwrap_config(v) for k, v in config.items() if k != "_wandb"}
    if isinstance(config, list):
        return [unwrap_config(v) for v in config]
    return config


def safe_run_id(name: str) -> str:
    """A run id made from a source's name.

    A name that is a valid id is kept. Otherwise other characters become ``_``
    and a short hash of the whole name is appended, so two names that differ
    only where they were changed or cut (``训练``, ``测试``) stay two runs.
    """
    name = name.strip()
    if is_run_id(name):
        return name
    digest = hashlib.sha1(clean_text(name).encode("utf-8")).hexdigest()[:8]
    cleaned = re.sub(r"[^A-Za-z0-9._+@:-]", "_", name)[:119].strip(".") or "run"
    return f"{cleaned}-{digest}"


def relative_name(folder: Path, root: Path) -> str:
    """A run's name from its folder: the path below ``root`` joined with ``.``.

    Two runs found under one root thus keep distinct names (``exp-a.trainer_output``
    and ``exp-b.trainer_output``); a folder that is the root (or above it) is named
    by itself. The same folder reached from another root gets another name: pass
    ``--run`` for a name that never changes.
    """
    folder = folder.resolve()
    base = root.resolve()
    if base.is_file():
        base = base.parent
    if folder != base and folder.is_relative_to(base):
        return ".".join(folder.relative_to(base).parts)
    return folder.name or "run"


# --------------------------------------------------------------------------- folders of JSON files


class CutShort(Exception):
    """A JSON file that ends before its value does (a writer still at it)."""


def load_json_file(path: Path, may_be_cut: bool) -> tuple[Any, str | None, str]:
    """A JSON file's value, or why it cannot be read: ``(value, reason, raw text)``.

    ``reason`` is None when the value was read. A file a writer may still be
    writing (``may_be_cut``) that is empty or an object without its end
    raises CutShort: it is not damaged, only not complete yet.
    """
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return None, f"cannot be read: {exc.strerror or exc}", ""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not valid UTF-8 text: byte {exc.start + 1}", raw.decode("utf-8", "replace")
    text = text.removeprefix("\ufeff")
    try:
        return loads(text), None, text
    except TooDeep as exc:
        return None, str(exc), text
    except ValueError as exc:
        body = text.strip()
        if may_be_cut and (not body or (body.startswith("{") and not body.endswith("}"))):
            raise CutShort from exc
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return None, f"malformed JSON: {message}", text


def newest_files(files: list[Path], last: list[Path]) -> set[Path]:
    """The files a writer may still be writing: ``last`` and the newest by modification time."""
    newest: set[Path] = set(last)
    times = []
    for path in files:
        try:
            times.append((path.stat().st_mtime_ns, path))
        except OSError:
            continue
    if times:
        latest = max(t for t, _ in times)
        newest.update(p for t, p in times if t == latest)
    return newest


def find_folders(
    path: Path,
    fmt: str,
    names_one: Callable[[str], bool],
    holds: Callable[[Path, list[str] | None], bool],
) -> list[tuple[str, Path]]:
    """Every folder at or under ``path`` that ``holds`` a source's files, in ``fmt``: a
    file ``names_one`` names stands for its folder; hidden folders are not searched."""
    if path.is_file():
        return [(fmt, path.parent)] if names_one(path.name) and holds(path.parent, None) else []
    if not path.is_dir():
        return []
    found: list[Path] = []
    for top, dirs, names in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        if holds(Path(top), names):
            found.append(Path(top))
    return [(fmt, folder) for folder in sorted(found)]


def listed(items: list[str], shown: int = 3) -> str:
    """The first few items joined for a note, then how many there are in all."""
    text = "; ".join(items[:shown])
    return text + (f"; ... ({len(items):,} in all)" if len(items) > shown else "")
