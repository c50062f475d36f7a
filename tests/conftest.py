"""Shared fixtures: a throw-away lake and warehouse, the fixture data, and ``invoke``."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner, Result

DATA = Path(__file__).parent / "data"

Invoke = Callable[..., Result]

# The three prompts of tests/data/ifeval_small (their values are worked out in
# tests/integration/test_pipeline.py).
SMALL_A = "Write a haiku about rain. Do not use any commas."
SMALL_B = "Say hello in lowercase letters only."
SMALL_C = "Write a JSON object with the key 'city'. End your response with 'Done.'"


def prompt_hash(prompt: str) -> str:
    """The prompt identity (first 16 hex of SHA-256), computed independently of obs."""
    return hashlib.sha256(prompt.encode()).hexdigest()[:16]


@pytest.fixture(scope="session", autouse=True)
def room_for_every_plan() -> Iterator[None]:
    """Room in the per-user plan cache for every var set the suite builds under.

    Each distinct ``--vars`` or ``--success`` is a plan of its own, compiled by dbt
    once (a full parse: many seconds). The suite builds under more var sets than
    the cache keeps (``PLAN_CACHE_FILES``), so the oldest plans were dropped while
    the suite ran and each run compiled most of them again."""
    from obs.runner import plan

    kept = plan.PLAN_CACHE_FILES
    plan.PLAN_CACHE_FILES = max(kept, 64)
    yield
    plan.PLAN_CACHE_FILES = kept


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A private copy of tests/data (tests may append to or break its files)."""
    target = tmp_path / "data"
    shutil.copytree(DATA, target)
    return target


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    return tmp_path / "lake"


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    return tmp_path / "warehouse" / "obs.duckdb"


def run_cli(args: list[str], exit_code: int = 0) -> Result:
    """Run ``obs`` in-process and check its exit code; happy paths re-raise errors."""
    from obs.cli.main import cli  # imported late: conftest stays importable alone

    runner = CliRunner()
    result = runner.invoke(cli, [str(a) for a in args], catch_exceptions=exit_code != 0)
    assert result.exit_code == exit_code, (
        f"exit {result.exit_code}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    )
    return result


@pytest.fixture
def invoke(lake: Path, warehouse: Path) -> Invoke:
    """``invoke(args, exit_code=0)`` with --lake/--warehouse pointing at tmp_path."""

    def _invoke(args: list[object], exit_code: int = 0) -> Result:
        return run_cli(["--lake", lake, "--warehouse", warehouse, *args], exit_code)

    return _invoke


def lake_rows(lake: Path, table: str = "rollouts", where: str = "true") -> list[dict]:
    """Rows of a lake table, read with Hive partitioning, ordered by file and line."""
    con = duckdb.connect()
    pattern = str(lake / table / "**" / "*.parquet")
    cursor = con.execute(
        f"select * from read_parquet('{pattern}', hive_partitioning = true) "
        f"where {where} order by source_file, source_line"
    )
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def lake_query(lake: Path, table: str, sql: str) -> list[tuple]:
    """``sql`` over a lake table, named ``t`` (Hive partitions on, their values as text)."""
    pattern = str(lake / table / "*" / "*" / "*.parquet")
    con = duckdb.connect()
    try:
        con.execute(
            f"create view t as select * from read_parquet('{pattern}', hive_partitioning = true, "
            "hive_types_autocast = false)"
        )
        return con.execute(sql).fetchall()
    finally:
        con.close()


def kill_when(command: list[str], ready: Callable[[], bool], timeout: float = 60.0) -> bool:
    """Run ``command`` in a process group of its own and SIGKILL the whole group (its
    workers too) as soon as ``ready()`` holds; True when it was killed, False when it
    ended first (the caller decides whether that spoils the test)."""
    process = subprocess.Popen(command, start_new_session=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        if ready():
            break
        time.sleep(0.002)
    killed = process.poll() is None
    if killed:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    return killed


def after(seconds: float) -> Callable[[], bool]:
    """A ``ready`` for kill_when that holds once ``seconds`` have passed."""
    start = time.monotonic()
    return lambda: time.monotonic() - start >= seconds


def picked_runs(page: str) -> list[str]:
    """The runs a dashboard page's run picker offers, in order (none: no picker)."""
    picker = re.search(r'<select id="run-pick".*?</select>', page, flags=re.S)
    return re.findall(r'<option value="([^"]+)"', picker.group(0)) if picker else []
