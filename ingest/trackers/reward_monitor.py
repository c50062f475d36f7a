"""The GRPO reward monitor's folder (``monitoring_data/``): step files, final metrics, summary.

One folder is one run (its id: the folder's name, its path below the folder
given when there are several; ``--run`` overrides). The format, its file
names and its key names are ``obs.monitor.format``'s (the writer,
``obs.monitor.RewardTracker``, uses the same module):

* ``step_NNNNNN.json``: ``{"step", "timestamp", "metrics", "reward_scores"}``.
  ``metrics`` land as points at the file's step, under W&B-style keys; the
  flat dataclass vocabulary (``mean_reward``, ``function_means{fn: x}``, ...)
  is mapped onto them, inside ``metrics`` or at the top of the step object. A
  segment ``P/`` that starts every key of a file and is no key family
  (``train/rewards/mean``) is dropped and recorded in the config as
  ``monitor_prefix``. ``timestamp`` (seconds since the monitor started) lands
  as the key ``timestamp``, and as the wall time only when it is epoch
  seconds (>= 1e9). ``reward_scores`` (each function's per-sample rewards)
  become sample blocks for the ``reward_samples`` table.
* ``final_metrics.json``: ``config`` -> the run's config, ``summary`` -> its
  summary, ``metrics_history`` entries -> points only for steps no step file
  holds (the monitor keeps its last ``window_size`` steps there).
* ``summary.json``: the summary (``{"summary": {...}}`` or the object itself),
  merged over final_metrics' (summary.json wins).

Bad input: a file that is not JSON, not an object, has no integer step or a
``metrics`` that is no object is rejected (file, line 1, reason) while the
others land; the newest file cut short (a writer still at it) is left for the
next ingest with a note. ``reward_scores`` holding a non-number, a
non-finite value, or functions of unequal lengths reject that step's samples
(one reject) while its metrics land. NaN and Infinity metric values are kept.
The step inside a file wins over its name (a note says when they differ);
two files holding one step: the last by name wins (a note says so).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from obs.ingest.errors import IngestError
from obs.ingest.schema import REWARD_SAMPLES
from obs.ingest.trackers.base import (
    CutShort,
    RunHistory,
    SampleBlock,
    as_step,
    find_folders,
    listed,
    load_json_file,
    newest_files,
    relative_name,
    safe_run_id,
    utc,
)
from obs.monitor.format import (
    DATACLASS_KEYS,
    DATACLASS_MAPS,
    DATACLASS_SCALARS,
    FAMILIES,
    FINAL_METRICS,
    FORMAT_NAME,
    METRICS,
    REWARD_SCORES,
    STEP,
    STEP_FILE,
    SUMMARY,
    TIMESTAMP,
)

FORMAT = FORMAT_NAME
FORMATS = {FORMAT: "GRPO reward monitor folder (step_NNNNNN.json, final_metrics.json)"}
BOM = "\ufeff"
SNIFF_BYTES = 64 * 1024
# A timestamp at least this large is epoch seconds (else seconds since the monitor started).
EPOCH_FLOOR = 1e9
STEP_HINTS = (b'"metrics"', b'"reward_scores"', *(f'"{k}"'.encode() for k in DATACLASS_KEYS))
FINAL_HINTS = (b'"metrics_history"', b'"reward_function_names"')
SUMMARY_HINTS = (b'"total_steps_tracked"', b'"function_statistics"', b'"anomalies_detected"')
EPOCH = datetime(1970, 1, 1)


# --------------------------------------------------------------------------- finding


def find(path: Path) -> list[tuple[str, Path]]:
    """Every monitor folder at or under ``path`` (a monitor's file stands for its folder)."""
    return find_folders(
        path,
        FORMAT,
        lambda name: bool(STEP_FILE.match(name)) or name in {FINAL_METRICS, SUMMARY},
        is_monitor_folder,
    )


def is_monitor_folder(folder: Path, names: list[str] | None = None) -> bool:
    """Whether ``folder`` holds the monitor's files (judged from a few files' heads).

    ``step_*.json`` and ``summary.json`` are common names, so a file counts
    only when its head looks like the monitor's: a step file (the first, the
    middle or the last by name) with a step and metrics or reward scores, a
    final_metrics.json with its history or config, a summary.json with the
    monitor's summary keys.
    """
    if names is None:
        try:
            names = os.listdir(folder)
        except OSError:
            return False
    if FINAL_METRICS in names and _sniff(folder / FINAL_METRICS, FINAL_HINTS, need_step=False):
        return True
    if SUMMARY in names and _sniff(folder / SUMMARY, SUMMARY_HINTS, need_step=False):
        return True
    steps = sorted(n for n in names if STEP_FILE.match(n))
    if not steps:
        return False
    picked = dict.fromkeys([steps[0], steps[len(steps) // 2], steps[-1]])
    return any(_sniff(folder / name, STEP_HINTS, need_step=True) for name in picked)


def _sniff(file: Path, hints: tuple[bytes, ...], *, need_step: bool) -> bool:
    try:
        with file.open("rb") as handle:
            head = handle.read(SNIFF_BYTES)
    except OSError:
        return False
    head = head.removeprefix(BOM.encode()).lstrip()
    if not head.startswith(b"{"):
        return False
    if need_step and b'"step"' not in head:
        return False
    return any(hint in head for hint in hints)


def monitor_files(folder: Path) -> tuple[list[Path], Path | None, Path | None]:
    """The folder's step files (ordered by the step their names claim, then name),
    its final_metrics.json and its summary.json (None when absent)."""
    try:
        names = os.listdir(folder)
    except OSError as exc:
        raise IngestError(f"{folder}: cannot be listed ({exc})") from exc
    steps = []
    for name in names:
        match = STEP_FILE.match(name)
        if match and (folder / name).is_file():
            steps.append((int(match.group(1)), name))
    files = [folder / name for _, name in sorted(steps)]
    final = folder / FINAL_METRICS
    summary = folder / SUMMARY
    return (
        files,
        final if final.is_file() else None,
        summary if summary.is_file() else None,
    )


def stat_files(fmt: str, origin: Path) -> list[Path]:
    """Every file the run is read from: a new, grown or completed one is read again."""
    steps, final, summary = monitor_files(origin)
    return steps + [p for p in (final, summary) if p is not None]


def run_name(origin: Path, root: Path) -> str:
    return relative_name(origin, root)


# --------------------------------------------------------------------------- reading


@dataclass
class _StepFile:
    """What one readable step file holds."""

    path: Path
    step: int
    points: list[tuple[str, Any]]
    wall_time: float | None
    prefix: str | None
    samples: list[SampleBlock] = field(default_factory=list)


def read(fmt: str, origin: Path, root: Path) -> list[RunHistory]:
    if not origin.is_dir():
        raise IngestError(
            f"{origin}: not a folder; point at the reward monitor's folder (monitoring_data/)"
        )
    name = run_name(origin, root)
    history = RunHistory(run_id=safe_run_id(name), source=FORMAT, origin=origin, name=name)
    steps, final, summary = monitor_files(origin)
    newest = _newest(steps, final, summary)
    cut: list[str] = []
    by_step: dict[int, _StepFile] = {}
    superseded: list[str] = []
    renamed: list[str] = []
    for path in steps:
        try:
            read_one = _read_step_file(history, path, path in newest)
        except CutShort:
            cut.append(path.name)
            continue
        if read_one is None:
            continue
        claimed = int(STEP_FILE.match(path.name).group(1))  # type: ignore[union-attr]
        if claimed != read_one.step:
            renamed.append(f"{path.name} holds step {read_one.step}")
        earlier = by_step.get(read_one.step)
        if earlier is not None:
            superseded.append(f"{path.name} over {earlier.path.name}")
        by_step[read_one.step] = read_one
    prefixes: set[str] = set()
    for step in sorted(by_step):
        one = by_step[step]
        for key, value in one.points:
            history.add(step, key, value, one.wall_time)
        history.samples.extend(one.samples)
        if one.prefix:
            prefixes.add(one.prefix)
    final_summary: dict[str, Any] = {}
    if final is not None:
        try:
            final_summary = _read_final(history, final, set(by_step), final in newest)
        except CutShort:
            cut.append(final.name)
    history.summary = final_summary
    if summary is not None:
        try:
            history.summary = {
                **final_summary,
                **_read_summary(history, summary, summary in newest),
            }
        except CutShort:
            cut.append(summary.name)
    if prefixes:
        shown = sorted(prefixes)
        history.config["monitor_prefix"] = shown[0] if len(shown) == 1 else shown
        if len(shown) > 1:
            history.notes.append(f"step files carry different key prefixes ({', '.join(shown)})")
    history.state = "finished" if final is not None and FINAL_METRICS not in cut else "running"
    if renamed:
        history.notes.append(
            f"{listed(renamed)}: the step inside a file is kept, not the one its name says"
        )
    if superseded:
        history.notes.append(
            f"{len(superseded):,} step files hold a step another file holds too; the last by "
            f"file name is kept ({listed(superseded)})"
        )
    if cut:
        history.truncated = True
        history.notes.append(
            f"{', '.join(cut)} is not complete JSON yet (being written?); "
            "it lands once it is complete"
        )
    return [history]


def _newest(steps: list[Path], final: Path | None, summary: Path | None) -> set[Path]:
    """The files a writer may still be writing: the last step file, the newest file."""
    return newest_files(steps + [p for p in (final, summary) if p is not None], steps[-1:])


def _load(history: RunHistory, path: Path, may_be_cut: bool) -> Any:
    """The file's JSON value; None once rejected. Raises CutShort for a newest file cut short."""
    value, reason, raw = load_json_file(path, may_be_cut)
    if reason is not None:
        history.reject(path, 1, reason, raw)
    return value


def _read_step_file(history: RunHistory, path: Path, may_be_cut: bool) -> _StepFile | None:
    record = _load(history, path, may_be_cut)
    if record is None:
        return None
    if not isinstance(record, dict):
        history.reject(path, 1, f"not a JSON object: a {_kind(record)}", _raw(record))
        return None
    if STEP not in record:
        history.reject(path, 1, "no step field", _raw(record))
        return None
    step = as_step(record[STEP])
    if step is None:
        reason = f"step is not a non-negative integer: {_shown(record[STEP])}"
        history.reject(path, 1, reason, _raw(record))
        return None
    metrics = record.get(METRICS, {})
    if metrics is None:
        metrics = {}
    if not isinstance(metrics, dict):
        history.reject(path, 1, f"metrics is not an object: a {_kind(metrics)}", _raw(record))
        return None
    points: list[tuple[str, Any]] = []
    wall_time = None
    stamp = record.get(TIMESTAMP)
    if isinstance(stamp, int | float) and not isinstance(stamp, bool):
        points.append((TIMESTAMP, stamp))
        wall_time = float(stamp) if math.isfinite(stamp) and stamp >= EPOCH_FLOOR else None
    elif isinstance(stamp, str) and (moment := utc(stamp)) is not None:
        wall_time = (moment - EPOCH).total_seconds()
    # Dataclass fields at the top of the step object, then the metrics (which win).
    top = {k: v for k, v in record.items() if k not in {STEP, TIMESTAMP, METRICS, REWARD_SCORES}}
    points.extend(normalise(top))
    prefix = key_prefix(metrics)
    if prefix:
        cut = len(prefix) + 1
        metrics = {key[cut:]: value for key, value in metrics.items()}
    points.extend(normalise(metrics))
    one = _StepFile(path, step, points, wall_time, prefix)
    scores = record.get(REWARD_SCORES)
    if scores is not None:
        one.samples = _samples(history, path, step, scores)
    return one


def key_prefix(metrics: dict[str, Any]) -> str | None:
    """``P`` when every key starts with one segment ``P/`` that is no key family."""
    heads = {key.split("/", 1)[0] if "/" in key else None for key in metrics}
    if len(heads) != 1:
        return None
    (head,) = heads
    return head if head and head not in FAMILIES else None


def normalise(metrics: dict[str, Any]) -> list[tuple[str, Any]]:
    """(key, value) pairs under the W&B keys: dataclass fields mapped, the rest as logged.

    The mapped fields come first, so a W&B key logged beside its dataclass
    twin keeps the W&B value (the last value of a key at a step is kept).
    """
    mapped: list[tuple[str, Any]] = []
    kept: list[tuple[str, Any]] = []
    for key, value in metrics.items():
        if key in DATACLASS_SCALARS:
            mapped.append((DATACLASS_SCALARS[key], value))
        elif key in DATACLASS_MAPS and isinstance(value, dict):
            make = DATACLASS_MAPS[key]
            mapped.extend((make(str(fn)), inner) for fn, inner in value.items())
        else:
            kept.append((key, value))
    return mapped + kept


def _samples(history: RunHistory, path: Path, step: int, scores: Any) -> list[SampleBlock]:
    """The step's sample blocks; none (and one reject) when any function's are bad."""

    def refuse(reason: str) -> list[SampleBlock]:
        history.reject(path, 1, reason, _raw(scores), table=REWARD_SAMPLES)
        return []

    if not isinstance(scores, dict):
        return refuse(f"reward_scores is not an object: a {_kind(scores)}")
    blocks: list[SampleBlock] = []
    for fn, values in scores.items():
        if not isinstance(values, list):
            return refuse(f"reward_scores of {fn} is not a list: a {_kind(values)}")
        if not set(map(type, values)) <= {int, float}:
            index, value = next((i, v) for i, v in enumerate(values) if type(v) not in {int, float})
            return refuse(
                f"reward_scores of {fn} hold a non-number: sample {index} is {_shown(value)}"
            )
        try:
            rewards = np.array(values, dtype=np.float64)
        except OverflowError:
            rewards = np.array([float(v) if abs(v) < 2**1023 else math.inf for v in values])
        finite = np.isfinite(rewards)
        if not finite.all():
            index = int(np.argmin(finite))
            return refuse(
                f"reward_scores of {fn} hold a non-finite value: sample {index} is "
                f"{_shown(values[index])}"
            )
        blocks.append(SampleBlock(step, str(fn), rewards, path))
    lengths = {len(b.rewards) for b in blocks}
    if len(lengths) > 1:
        shown = ", ".join(f"{b.reward_function}={len(b.rewards)}" for b in blocks)
        return refuse(f"reward_scores of unequal lengths: {shown}")
    return [b for b in blocks if len(b.rewards)]


def _read_final(
    history: RunHistory, path: Path, held: set[int], may_be_cut: bool
) -> dict[str, Any]:
    """Config and history entries into ``history``; the summary it holds."""
    data = _load(history, path, may_be_cut)
    if data is None:
        return {}
    if not isinstance(data, dict):
        history.reject(path, 1, f"not a JSON object: a {_kind(data)}", _raw(data))
        return {}
    config = data.get("config")
    if isinstance(config, dict):
        history.config.update(config)
    elif config is not None:
        history.reject(path, 1, f"config is not an object: a {_kind(config)}", _raw(config))
    entries = data.get("metrics_history")
    if isinstance(entries, list):
        for number, entry in enumerate(entries, start=1):
            _history_entry(history, path, number, entry, held)
    elif entries is not None:
        reason = f"metrics_history is not a list: a {_kind(entries)}"
        history.reject(path, 1, reason, _raw(entries))
    summary = data.get("summary")
    if isinstance(summary, dict):
        return summary
    if summary is not None:
        history.reject(path, 1, f"summary is not an object: a {_kind(summary)}", _raw(summary))
    return {}


def _history_entry(
    history: RunHistory, path: Path, number: int, entry: Any, held: set[int]
) -> None:
    """One metrics_history entry as points, unless a step file holds its step."""
    if not isinstance(entry, dict):
        reason = f"metrics_history entry is not an object: a {_kind(entry)}"
        history.reject(path, number, reason, _raw(entry))
        return
    step = as_step(entry.get(STEP))
    if step is None:
        reason = f"metrics_history entry has no integer step: {_shown(entry.get(STEP))}"
        history.reject(path, number, reason, _raw(entry))
        return
    if step in held:
        return
    stamp = entry.get(TIMESTAMP)
    wall = None
    if isinstance(stamp, int | float) and not isinstance(stamp, bool):
        history.add(step, TIMESTAMP, stamp)
        wall = float(stamp) if math.isfinite(stamp) and stamp >= EPOCH_FLOOR else None
    fields = {k: v for k, v in entry.items() if k not in {STEP, TIMESTAMP}}
    for key, value in normalise(fields):
        history.add(step, key, value, wall)


def _read_summary(history: RunHistory, path: Path, may_be_cut: bool) -> dict[str, Any]:
    data = _load(history, path, may_be_cut)
    if data is None:
        return {}
    if not isinstance(data, dict):
        history.reject(path, 1, f"not a JSON object: a {_kind(data)}", _raw(data))
        return {}
    inner = data.get("summary")
    if isinstance(inner, dict) and len(data) == 1:
        return inner
    return data


def _kind(value: Any) -> str:
    return {
        dict: "object",
        list: "list",
        str: "text",
        bool: "boolean",
        int: "number",
        float: "number",
        type(None): "null",
    }.get(type(value), type(value).__name__)


def _raw(value: Any) -> str:
    """A value as the reject's raw text (JSON; the reject cuts it at 64 KiB)."""
    return json.dumps(value, allow_nan=True, default=str)[: 64 * 1024]


def _shown(value: Any) -> str:
    text = json.dumps(value, allow_nan=True, default=str)
    return text if len(text) <= 40 else text[:40] + "..."
