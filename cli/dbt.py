"""Run dbt on the obs project against one warehouse and lake."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import click


def project_dir() -> Path:
    """The obs dbt project: the checkout this package is installed from (editable)."""
    root = Path(__file__).resolve().parents[1]
    if not (root / "dbt_project.yml").is_file():
        raise click.ClickException(
            f"{root}: no dbt_project.yml; install obs from a checkout with `make install`"
        )
    return root


@contextlib.contextmanager
def lake_environment(warehouse: Path, lake: Path) -> Iterator[None]:
    """Point dbt's profile and sources at this warehouse and lake (absolute paths)."""
    saved = {k: os.environ.get(k) for k in ("OBS_WAREHOUSE", "OBS_LAKE")}
    os.environ["OBS_WAREHOUSE"] = str(warehouse.resolve())
    os.environ["OBS_LAKE"] = str(lake.resolve())
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _release_warehouse() -> None:
    """Close the DuckDB database dbt-duckdb keeps open in this process.

    Without this, a later read-only connection in the same process (``obs
    demo`` summarising right after its build) is refused by DuckDB.
    """
    import gc

    from dbt.adapters.duckdb.connections import DuckDBConnectionManager

    environment = DuckDBConnectionManager._ENV
    if environment is not None:
        environment.close()
    DuckDBConnectionManager.close_all_connections()
    gc.collect()


@dataclass(frozen=True)
class BuildResult:
    success: bool
    passed: int
    failed: int
    skipped: int


def run_dbt(
    command: str, warehouse: Path, lake: Path, extra_args: Sequence[str] = ()
) -> BuildResult:
    """Invoke ``dbt <command>`` in-process; dbt's log goes to stderr."""
    from dbt.cli.main import dbtRunner  # imported late: it is slow to import

    root = project_dir()
    warehouse.parent.mkdir(parents=True, exist_ok=True)
    args = [
        command,
        "--project-dir",
        str(root),
        "--profiles-dir",
        str(root),
        *extra_args,
    ]
    with lake_environment(warehouse, lake), contextlib.redirect_stdout(sys.stderr):
        try:
            result = dbtRunner().invoke(args)
        finally:
            _release_warehouse()
    passed = failed = skipped = 0
    nodes = getattr(result.result, "results", None) or []
    for node in nodes:
        status = str(getattr(node, "status", "")).lower()
        if status in {"success", "pass"}:
            passed += 1
        elif status in {"error", "fail", "runtime error"}:
            failed += 1
        else:
            skipped += 1
    if result.exception is not None and not nodes:
        message = str(result.exception).strip().splitlines()[0]
        raise click.ClickException(f"dbt {command} failed: {message}")
    return BuildResult(bool(result.success), passed, failed, skipped)
