"""Which files ``obs ingest rollouts PATH`` lands, for which run, read how: the plan.

A folder of iteration dumps (``{N}.jsonl``, verl's and IFEval+GRPO's;
``val_{N}.jsonl`` into ``RUN:val``), NeMo-RL's ``train_data_step{N}.jsonl``,
TRL's ``completions_{N}.parquet`` (also under ``completions/``), a prime-rl run
folder's traces (``traces.py``), or one rollout table. The builder
(``rollouts.py``) reads what the plan names.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from obs.ingest import lake as lake_files
from obs.ingest import traces
from obs.ingest.appended import SourceFile
from obs.ingest.errors import IngestError
from obs.ingest.readers import loads

# File names, each with what wrote it and the run suffix its rows land under.
PATTERNS: list[tuple[re.Pattern[str], str, str, str]] = [
    (re.compile(r"^(\d+)\.jsonl(\.gz)?$"), "dump", "jsonl", ""),
    (re.compile(r"^val_(\d+)\.jsonl(\.gz)?$"), "dump", "jsonl", ":val"),
    (re.compile(r"^train_data_step(\d+)\.jsonl(\.gz)?$"), "nemo", "jsonl", ""),
    (re.compile(r"^val_data_step(\d+)\.jsonl(\.gz)?$"), "nemo", "jsonl", ":val"),
    (re.compile(r"^completions_(\d+)\.parquet$"), "trl", "parquet", ""),
]
TABLE_SUFFIXES = (".parquet", ".jsonl", ".jsonl.gz", ".ndjson", ".json")


def match_name(name: str) -> tuple[str, str, str, int] | None:
    for pattern, fmt, reader, suffix in PATTERNS:
        found = pattern.match(name)
        if found:
            return fmt, reader, suffix, int(found.group(1))
    return None


def default_run_id(path: Path) -> str:
    """The run id when ``--run`` is not given: the folder's (or table's) name.

    prime-rl's traces name their run folder: the one holding ``rollouts/``.
    """
    path = path.resolve()
    run_folder = traces.run_name(path)
    if run_folder is not None:
        name = run_folder
    elif path.is_dir():
        name = path.parent.name if path.name == "completions" else path.name
    elif match_name(path.name):
        parent = path.parent
        name = parent.parent.name if parent.name == "completions" else parent.name
    else:
        name = path.name.split(".")[0]
    try:
        return lake_files.check_run_id(name, origin="run name from the path")
    except IngestError as exc:
        raise IngestError(f"{path}: {exc}; pass --run NAME") from exc


def plan_rollouts(
    path: Path,
    run_id: str,
    *,
    iterations: Sequence[int] | None = None,
    iteration: int | None = None,
    hints: bool = True,
    passed_over: list[tuple[Path, str]] | None = None,
) -> list[SourceFile]:
    """The files ``obs ingest rollouts PATH`` lands, in iteration order. With ``hints``,
    an error for a tracker's files names the command that lands them.

    A folder's entries that are not read are added to ``passed_over`` with the
    reason: a link that leads out of the folder, a dangling link or a loop, and
    anything that is no regular file (a FIFO would block the read).
    """
    lake_files.check_run_id(run_id)
    if not path.exists():
        raise IngestError(f"{path}: no such file or folder; pass a dump folder or a rollout table")
    if not path.is_file() and not path.is_dir():
        raise IngestError(
            f"{path}: not a regular file or a folder (a FIFO, socket or device); "
            "pass a dump folder or a rollout table file"
        )
    wanted = set(iterations) if iterations else None
    if path.is_file():
        if wanted is not None:
            raise IngestError(
                f"{path}: --iterations picks files of a dump folder; a single file lands "
                "whole (select iterations in SQL afterwards)"
            )
        matched = match_name(path.name)
        if matched:
            fmt, reader, suffix, number = matched
            return [SourceFile(path, run_id + suffix, reader, fmt, number)]
        if path.name == traces.TRACES_FILE:
            place = traces.layout(path)
            return [SourceFile(path, run_id + place.run_suffix, "jsonl", "traces", place.step)]
        if path.name.lower().endswith(".json") and not _json_lines(path):
            raise IngestError(
                f"{path}: one JSON document, not JSON lines (a rollout per line)"
                + ((hints and _history_hint(path)) or "; write one rollout object per line")
            )
        if path.name.lower().endswith(TABLE_SUFFIXES):
            reader = "parquet" if path.name.lower().endswith(".parquet") else "jsonl"
            return [SourceFile(path, run_id, reader, "table", None)]
        raise IngestError(
            f"{path}: unknown format; expected a folder of {{N}}.jsonl dumps, a run "
            "folder, a traces.jsonl, a .parquet or a .jsonl rollout table"
        )
    found: list[tuple[int, str, SourceFile]] = []
    root = traces.rollouts_root(path)
    if root is not None:
        for place in traces.find(root, wanted):
            assert place.step is not None
            run = run_id + place.run_suffix
            source = SourceFile(place.path, run, "jsonl", "traces", place.step)
            found.append((place.step, str(place.path), source))
    folders = [path]
    if (path / "completions").is_dir():
        folders.append(path / "completions")
    for folder in folders:
        for child in folder.iterdir():
            matched = match_name(child.name)
            if not matched:
                continue
            why = _not_read(child, folder)
            if why is not None:
                if passed_over is not None:
                    passed_over.append((child, why))
                continue
            fmt, reader, suffix, number = matched
            if wanted is not None and number not in wanted:
                continue
            found.append(
                (number, child.name, SourceFile(child, run_id + suffix, reader, fmt, number))
            )
    if not found:
        if wanted:
            listed = " ".join(str(i) for i in sorted(wanted))
            raise IngestError(f"{path}: none of the iterations {listed} has a dump file here")
        hint = _history_hint(path) if hints else ""
        raise IngestError(
            f"{path}: no rollout files here ({{N}}.jsonl dumps, val_{{N}}.jsonl, "
            "train_data_step{N}.jsonl, completions_{N}.parquet, "
            "rollouts/step_{N}/train/all/traces.jsonl); "
            + (hint.removeprefix("; ") or "point at a dump folder or a run folder, or pass one "
               "rollout table file")
        )  # fmt: skip
    found.sort(key=lambda item: (item[0], item[1]))
    return [source for _, _, source in found]


def _not_read(child: Path, folder: Path) -> str | None:
    """Why a folder's entry is not read (None: it is a regular file to read)."""
    if child.is_symlink():
        try:
            target = child.resolve(strict=True)
        except FileNotFoundError:
            return "a dangling link (its target does not exist); not read"
        except (RuntimeError, OSError):
            return "a link that loops; not read"
        if not target.is_relative_to(folder.resolve()):
            return f"a link to {target}, outside the folder; not followed"
    if child.is_dir():
        return "a folder, not a dump file; not read"
    if not child.is_file():
        return "not a regular file (a FIFO, socket or device); not read"
    return None


def _json_lines(path: Path) -> bool:
    """Whether the file's first line is a whole JSON object (JSON lines), as a rollout
    table's is; a pretty-printed JSON document's is not."""
    try:
        with path.open("rb") as handle:
            first = handle.readline(1 << 20).strip()
        return isinstance(loads(first), dict)
    except (OSError, ValueError):
        return False


def _history_hint(path: Path) -> str:
    """``; it is a run history (trl): land it with obs ingest metrics PATH`` when a
    tracker reader of ``obs ingest metrics`` finds something at ``path``, else ""."""
    from obs.ingest import keyed

    try:
        found = sorted({source.format for source in keyed.plan(path, hints=False)})
    except IngestError:
        return ""
    what = "it is" if path.is_file() else "it holds"
    return f"; {what} a run history ({', '.join(found)}): land it with `obs ingest metrics {path}`"
