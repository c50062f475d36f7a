"""An agent trainer's eval logs (``eval_logs/eval_step_XXXX.json``): one record per eval.

One folder is one run (its id: the folder's name, or its parent's when the
folder is called ``eval_logs``; ``--run`` overrides). Each
``eval_step_*.json`` holds one eval's statistics; ``baseline_eval_*.json``
(a baseline evaluated before training) lands as step -1 with ``is_baseline``.

* The statistics (``schema.EVAL_STATISTICS``) land in their own columns of
  ``eval_steps``; the other spellings a trainer's source fields use
  (``ever_found_right_email``, ``ever_read_right_email``,
  ``num_repeated_searches``) and W&B's ``eval/`` prefix are mapped onto them.
* Every other key lands in ``extra`` (JSON), so another agent's rubric is
  kept and can be queried; so does a statistic whose value has the wrong type
  (a count that is not a whole number), with a note.
* The step is the file's ``step`` key; the number in its name only when it
  has none (a step past 9999 widens the name).
* ``has_baseline`` is true when the folder holds a baseline file (only then
  is a ``beat_rate`` of 0.0 known to be a comparison), else unknown.

Bad input: a file that is not JSON, not an object, or whose step cannot be
told is rejected (its name, line 1, the reason) while the others land; the
newest file cut short (a trainer still writing it) is left for the next
ingest with a note. Two files of one step: the last by name wins (a note
says so). A file written again with other values lands again; the newest is
the value.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

from obs.ingest.errors import IngestError
from obs.ingest.readers import finite_json
from obs.ingest.schema import EVAL_COUNTS, EVAL_NUMBERS, EVAL_STATISTICS, EVAL_STEPS
from obs.ingest.trackers.base import (
    CutShort,
    RecordBlock,
    RunHistory,
    as_step,
    clean_text,
    find_folders,
    listed,
    load_json_file,
    newest_files,
    relative_name,
    safe_run_id,
)

FORMAT = "eval-logs"
FORMATS = {FORMAT: "an agent trainer's eval logs (eval_logs/eval_step_XXXX.json)"}
EVAL_FILE = re.compile(r"^eval_step_(\d+)\.json$")
BASELINE_FILE = re.compile(r"^baseline_eval(?:_.*)?\.json$")
ALIASES = {
    "ever_found_right_email": "found_correct_email",
    "ever_read_right_email": "read_correct_email",
    "num_repeated_searches": "total_repeated_searches",
}
KNOWN = frozenset(EVAL_STATISTICS)
BOM = "\ufeff"
SNIFF_BYTES = 64 * 1024
HINTS = (b'"accuracy"', b'"total_samples"', b'"correct_answers"', b'"avg_reward"')


# --------------------------------------------------------------------------- finding


def find(path: Path) -> list[tuple[str, Path]]:
    """Every folder of eval files at or under ``path`` (an eval file stands for its folder)."""
    return find_folders(
        path,
        FORMAT,
        lambda name: bool(EVAL_FILE.match(name) or BASELINE_FILE.match(name)),
        _is_eval_folder,
    )


def _is_eval_folder(folder: Path, names: list[str] | None = None) -> bool:
    """Whether ``folder`` holds eval files: one of the first, middle and last looks like one."""
    if names is None:
        try:
            names = os.listdir(folder)
        except OSError:
            return False
    files = sorted(n for n in names if EVAL_FILE.match(n) or BASELINE_FILE.match(n))
    if not files:
        return False
    picked = dict.fromkeys([files[0], files[len(files) // 2], files[-1]])
    return any(_sniff(folder / name) for name in picked)


def _sniff(file: Path) -> bool:
    try:
        with file.open("rb") as handle:
            head = handle.read(SNIFF_BYTES)
    except OSError:
        return False
    head = head.removeprefix(BOM.encode()).lstrip()
    return head.startswith(b"{") and any(hint in head for hint in HINTS)


def eval_files(folder: Path) -> list[Path]:
    """The folder's baseline files (by name), then its eval files by the step their name says."""
    try:
        names = os.listdir(folder)
    except OSError as exc:
        raise IngestError(f"{folder}: cannot be listed ({exc})") from exc
    baselines = sorted(n for n in names if BASELINE_FILE.match(n))
    steps = sorted((int(m.group(1)), n) for n in names if (m := EVAL_FILE.match(n)) is not None)
    ordered = baselines + [n for _, n in steps]
    return [folder / n for n in ordered if (folder / n).is_file()]


def stat_files(fmt: str, origin: Path) -> list[Path]:
    """Every file the run is read from: a new or rewritten one makes the folder read again."""
    return eval_files(origin)


def run_name(origin: Path, root: Path) -> str:
    """The folder's name below ``root``; an ``eval_logs`` folder is named by its parent."""
    folder = origin.resolve()
    if folder.name == "eval_logs" and folder.parent != folder:
        folder = folder.parent
    return relative_name(folder, root)


# --------------------------------------------------------------------------- reading


def read(fmt: str, origin: Path, root: Path) -> list[RunHistory]:
    if not origin.is_dir():
        raise IngestError(f"{origin}: not a folder; point at the eval_logs/ folder")
    name = run_name(origin, root)
    history = RunHistory(run_id=safe_run_id(name), source=FORMAT, origin=origin, name=name)
    files = eval_files(origin)
    has_baseline = any(BASELINE_FILE.match(f.name) for f in files) or None
    newest = newest_files(files, files[-1:])
    blocks: dict[tuple[int, bool], RecordBlock] = {}
    cut: list[str] = []
    superseded: list[str] = []
    renamed: list[str] = []
    mistyped: list[str] = []
    for path in files:
        try:
            record = _load(history, path, path in newest)
        except CutShort:
            cut.append(path.name)
            continue
        if record is None:
            continue
        row = _row(history, path, record, renamed, mistyped)
        if row is None:
            continue
        row["has_baseline"] = has_baseline
        key = (row["step"], row["is_baseline"])
        earlier = blocks.get(key)
        if earlier is not None:
            superseded.append(f"{path.name} over {earlier.file.name}")
        blocks[key] = RecordBlock(EVAL_STEPS, [row], path)
    history.records.extend(blocks[k] for k in sorted(blocks))
    history.state = "running" if cut else None
    if renamed:
        history.notes.append(
            f"{listed(renamed)}: the step inside a file is kept, not the one its name says"
        )
    if superseded:
        history.notes.append(
            f"{len(superseded):,} files hold a step another file holds too; the last by "
            f"name is kept ({listed(superseded)})"
        )
    if mistyped:
        history.notes.append(
            f"{listed(mistyped)}: not of the statistic's type; kept in extra, not in its column"
        )
    if cut:
        history.truncated = True
        history.notes.append(
            f"{', '.join(cut)} is not complete JSON yet (being written?); "
            "it lands once it is complete"
        )
    return [history]


def _reject(history: RunHistory, path: Path, reason: str, raw: Any) -> None:
    history.reject(path, 1, f"{path.name}: {reason}", raw, table=EVAL_STEPS)


def _load(history: RunHistory, path: Path, may_be_cut: bool) -> Any:
    """The file's JSON value; None once rejected. Raises CutShort for a newest file cut short."""
    value, reason, raw = load_json_file(path, may_be_cut)
    if reason is not None:
        _reject(history, path, f"{reason}; fix or remove the file", raw)
    return value


def _row(
    history: RunHistory,
    path: Path,
    record: Any,
    renamed: list[str],
    mistyped: list[str],
) -> dict[str, Any] | None:
    """The eval_steps row of one file's object; None once rejected."""
    if not isinstance(record, dict):
        _reject(history, path, f"not a JSON object but a {_kind(record)}", _raw(record))
        return None
    baseline_name = BASELINE_FILE.match(path.name) is not None
    named = EVAL_FILE.match(path.name)
    is_baseline = record.get("is_baseline") is True or baseline_name
    step: int | None
    if "step" in record:
        step = _step(record["step"])
        if step is None:
            reason = f"step is not a whole number >= -1 ({_shown(record['step'])})"
            _reject(history, path, reason, _raw(record))
            return None
    elif named is not None:
        step = int(named.group(1))
    elif is_baseline:
        step = -1
    else:
        _reject(history, path, "no step key and none in the file name", _raw(record))
        return None
    if named is not None and int(named.group(1)) != step:
        renamed.append(f"{path.name} holds step {step}")
    row: dict[str, Any] = {"step": step, "is_baseline": is_baseline}
    extra: dict[str, Any] = {}
    for key, value in record.items():
        name = clean_text(str(key))
        canonical = ALIASES.get(name.removeprefix("eval/"), name.removeprefix("eval/"))
        if name in {"step", "is_baseline"}:
            continue
        if canonical not in KNOWN or canonical in row:
            extra[name] = value  # (a second spelling of a statistic is kept, not lost)
            continue
        typed = _typed(canonical, value)
        if typed is _WRONG:
            mistyped.append(f"{path.name} {name}={_shown(value)}")
            extra[name] = value
        elif typed is not None:
            row[canonical] = typed
    # (a lone surrogate, which JSON text may escape, has no UTF-8 form: U+FFFD)
    row["extra"] = clean_text(finite_json(extra)) if extra else None
    return row


_WRONG = object()


def _typed(name: str, value: Any) -> Any:
    """The statistic's value in its column's type; None for null; _WRONG when it has none."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return _WRONG
    if name in EVAL_COUNTS:
        if isinstance(value, float):
            if not math.isfinite(value) or not value.is_integer():
                return _WRONG
            value = int(value)
        return value if 0 <= value < 2**63 else _WRONG
    assert name in EVAL_NUMBERS
    number = float(value)
    return number if math.isnan(number) or abs(number) <= 1e100 else _WRONG


def _step(value: Any) -> int | None:
    if value == -1 and not isinstance(value, bool):
        return -1
    return as_step(value)


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "text"
    if value is None:
        return "null"
    return type(value).__name__


def _raw(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)[: 64 * 1024]


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:37] + "..."
