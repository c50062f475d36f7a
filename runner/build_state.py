"""What ``obs build`` needs to build: the lake tables that received parts since its last build.

After a successful full build, obs records beside the warehouse (in its
``.dbt`` state folder) the newest part of every lake table as listed *before*
the build started, a fingerprint of the dbt project and its arguments, and
the warehouse file's identity. The next ``obs build`` compares: when only
parts were published, it builds the models downstream of the tables that
received them (``--select source:lake.<table>+``); when nothing was, it says
so and runs nothing; when the project, the arguments, the lake's path or
the warehouse changed in any other way, it rebuilds everything (``--full-refresh``), since
incremental rows built under the old project or vars would otherwise stay.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from obs.core.lake_layout import TIME_PARTITION, run_folder
from obs.runner.dbt import project_dir, state_dir

STATE_FILE = "build-state.json"
# Folders of the project whose files decide what a build produces.
PROJECT_PARTS = ("models", "macros", "seeds", "data-tests", "analyses")
PROJECT_FILES = ("dbt_project.yml", "profiles.yml")
# dbt arguments that choose what runs: a build given them is the user's own
# selection, recorded as nothing (the next plain build builds everything).
SELECTING = {
    "--select",
    "-s",
    "--models",
    "-m",
    "--exclude",
    "--selector",
    "--resource-type",
    "--resource-types",
    "--exclude-resource-type",
    "--exclude-resource-types",
    "--state",
    "--defer",
}
# dbt arguments that change nothing a build produces.
HARMLESS = {
    "--quiet",
    "-q",
    "--debug",
    "-d",
    "--write-json",
    "--no-write-json",
    "--full-refresh",
    "-f",
    "--fail-fast",
    "-x",
    "--no-fail-fast",
    "--use-colors",
    "--no-use-colors",
    "--use-colors-file",
    "--no-use-colors-file",
    "--print",
    "--no-print",
}
# ... and options whose value changes nothing built.
HARMLESS_WITH_VALUE = {"--log-level", "--log-level-file", "--log-format", "--log-format-file"}


def selects(extra_args: Sequence[str]) -> bool:
    """The user chose what to run (``obs build --select ...``)."""
    return any(arg.split("=", 1)[0] in SELECTING for arg in extra_args)


def full_refresh(extra_args: Sequence[str]) -> bool:
    return any(arg in {"--full-refresh", "-f"} for arg in extra_args)


def lake_marks(lake: Path, tables: Sequence[str]) -> dict[str, str]:
    """A mark per lake table of ``tables`` (the project's sources, ``_rejects`` among
    them) that changes whenever a part is published to it."""
    if not lake.is_dir():
        return {}
    return {
        table: _newest_publish(lake / table) for table in sorted(tables) if (lake / table).is_dir()
    }


def _newest_publish(table: Path) -> str:
    """A hash of the names of every part of the table: any part published changes it."""
    names = sorted(
        f"{run.name}/{part.name}"
        for run in table.glob(run_folder("*"))
        for part in run.glob(f"{TIME_PARTITION}=*")
    )
    return hashlib.sha1("\n".join(names).encode()).hexdigest() if names else ""


def _meaningful(extra_args: Sequence[str]) -> list[str]:
    """The arguments that can change what a build produces."""
    kept: list[str] = []
    skip_value = False
    for arg in extra_args:
        if skip_value:
            skip_value = False
            continue
        name = arg.split("=", 1)[0]
        if name in HARMLESS_WITH_VALUE:
            skip_value = "=" not in arg
        elif arg not in HARMLESS:
            kept.append(arg)
    return kept


def project_fingerprint(extra_args: Sequence[str]) -> str:
    """Hash of every project file and the dbt arguments: a change means a full build."""
    digest = hashlib.sha1()
    root = project_dir()
    files = [root / name for name in PROJECT_FILES]
    for part in PROJECT_PARTS:
        # (bytecode an install writes beside a Python model is no project file)
        files.extend(
            sorted(
                p for p in (root / part).rglob("*") if p.is_file() and "__pycache__" not in p.parts
            )
        )
    for path in files:
        if path.is_file():
            digest.update(str(path.relative_to(root)).encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    digest.update("\0".join(_meaningful(extra_args)).encode())
    return digest.hexdigest()


def warehouse_identity(warehouse: Path) -> list[int] | None:
    try:
        stat = warehouse.stat()
    except FileNotFoundError:
        return None
    return [stat.st_ino, stat.st_size, stat.st_mtime_ns]


@dataclass(frozen=True)
class Rebuild:
    """What a build rebuilds: everything, the models downstream of some tables, or
    nothing (the compiled nodes themselves are ``plan.CompiledPlan``)."""

    full: bool
    tables: tuple[str, ...]
    marks: dict[str, str]
    fingerprint: str
    # Tables among ``tables`` that had no part at the last build: the views
    # over them change (an empty relation becomes the lake's).
    first_parts: tuple[str, ...] = ()

    @property
    def nothing(self) -> bool:
        return not self.full and not self.tables

    def select_args(self) -> list[str]:
        """dbt's selection: the models downstream of the tables that received parts,
        less the views (their SQL is unchanged) unless a table received its first."""
        if self.full or not self.tables:
            return []
        chosen = ["--select", " ".join(f"source:lake.{table}+" for table in self.tables)]
        if not self.first_parts:
            chosen += ["--exclude", "config.materialized:view"]
        return chosen


def what_to_rebuild(
    warehouse: Path, lake: Path, extra_args: Sequence[str], sources: Sequence[str]
) -> Rebuild:
    """Compare the lake and project with the record of the last full build."""
    marks = lake_marks(lake, sources)
    # The views name the lake's path: another lake (or the lake moved) is
    # another warehouse's worth of rows.
    fingerprint = project_fingerprint([*extra_args, f"--obs-lake={lake.resolve()}"])
    try:
        recorded = json.loads((state_dir(warehouse) / STATE_FILE).read_text())
    except (FileNotFoundError, ValueError):
        return Rebuild(True, tuple(marks), marks, fingerprint)
    if (
        recorded.get("fingerprint") != fingerprint
        or recorded.get("warehouse") != warehouse_identity(warehouse)
        or not isinstance(recorded.get("marks"), dict)
    ):
        return Rebuild(True, tuple(marks), marks, fingerprint)
    changed = tuple(t for t, mark in marks.items() if recorded["marks"].get(t) != mark)
    first = tuple(t for t in changed if not recorded["marks"].get(t))
    return Rebuild(False, changed, marks, fingerprint, first)


def record(warehouse: Path, built: Rebuild, succeeded: bool = True) -> None:
    """Remember a build: the marks listed before it started, or none if it failed.

    After a failed incremental build every table counts as changed, so the
    next build selects everything again; each incremental model's own
    watermark then picks up what the failed build did not finish. A failed
    rebuild from scratch is forgotten: the next build starts from scratch again.
    """
    if not succeeded and built.full:
        forget(warehouse)
        return
    state = {
        "fingerprint": built.fingerprint,
        "marks": dict(built.marks) if succeeded else {},
        "warehouse": warehouse_identity(warehouse),
    }
    path = state_dir(warehouse) / STATE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(state, indent=1))
    os.replace(temporary, path)


def forget(warehouse: Path) -> None:
    """The next ``obs build`` rebuilds everything from scratch."""
    (state_dir(warehouse) / STATE_FILE).unlink(missing_ok=True)
