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
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

MAX_STEP = 2**63 - 1


@dataclass
class HistoryReject:
    file: Path
    line: int  # 1-based line, or 1-based record number in a file of records
    reason: str
    raw: str = ""


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
    skipped: Counter[str] = field(default_factory=Counter)
    rejects: list[HistoryReject] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. "truncated at the end"

    def add(self, step: int, key: str, value: Any, wall_time: float | None = None) -> None:
        """One logged value at ``step`` (see the module docstring for what lands)."""
        if value is None:
            return
        if isinstance(value, bool):
            self._point(step, key, 1.0 if value else 0.0, wall_time)
        elif isinstance(value, int | float):
            number = float(value) if not isinstance(value, int) or abs(value) < 2**63 else math.inf
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
        self.steps.append(step)
        self.keys.append(key)
        self.values.append(value)
        self.wall_times.append(
            wall_time if wall_time is not None and math.isfinite(wall_time) else None
        )

    def reject(self, file: Path, line: int, reason: str, raw: Any = "") -> None:
        text = raw if isinstance(raw, str) else repr(raw)
        self.rejects.append(HistoryReject(file, line, reason, text[: 64 * 1024]))

    @property
    def points(self) -> int:
        return len(self.steps)


def media_kind(kind: str) -> str:
    """A W&B ``_type`` as the summary line names it: histogram, image, table, ..."""
    kind = kind.lower()
    for name in ("histogram", "image", "table", "audio", "video", "html", "plotly", "molecule"):
        if name in kind:
            return name
    return kind


def as_step(value: Any) -> int | None:
    """An integer step from a logged value (5, 5.0, "5"), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value <= MAX_STEP else None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and value >= 0:
        return int(value)
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
    """A run id made from a source's name: other characters become ``_``, at most 128."""
    cleaned = re.sub(r"[^A-Za-z0-9._+@:-]", "_", name.strip())[:128]
    return "run" if cleaned in {"", ".", ".."} else cleaned
