"""Every published number is the same, bit for bit, on every build of one lake.

One lake (the growing run of the parity test, plus a demo-sized agent run
whose equal-reward groups give zero advantages), three warehouses built
from it in ways that change the order DuckDB adds in: cold, on two model
threads and DuckDB's default thread count; grown (the first part landed
and built, then the rest built incrementally) on one model thread and one
DuckDB thread; and that second warehouse rebuilt with ``--full-refresh``.
Every table and view of the three must hold the same columns and the same
rows, every column of every row compared exactly (NaN equal to NaN), rows
sorted by all columns.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pytest
from obs.demo.agent import AgentSpec, write_agent_run
from obs.runner.build import build
from obs.runner.dbt import Dbt

from tests.conftest import run_cli
from tests.integration.growing_run import land_first, land_more

pytestmark = pytest.mark.integration


@contextmanager
def _threads(monkeypatch: pytest.MonkeyPatch, models: int, engine: int | None) -> Iterator[None]:
    """Builds inside run ``models`` models at once, each query on ``engine`` DuckDB
    threads (None: DuckDB's default, one per core)."""
    with monkeypatch.context() as patched:
        patched.setenv("OBS_BUILD_THREADS", str(models))
        if engine is not None:
            connect = duckdb.connect

            def on_threads(*args: Any, **kwargs: Any) -> duckdb.DuckDBPyConnection:
                con = connect(*args, **kwargs)
                con.execute(f"set threads = {engine}")
                return con

            patched.setattr(duckdb, "connect", on_threads)
        yield


def _obs_build(lake: Path, warehouse: Path, *args: str) -> None:
    done = build(Dbt(warehouse, lake), list(args))
    assert done.engine == "obs", "obs build fell back to dbt"


def _same(a: Any, b: Any) -> bool:
    """Equal, floats bit for bit (NaN equal to NaN)."""
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a.hex() == b.hex()
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _relations(con: duckdb.DuckDBPyConnection) -> list[str]:
    rows = con.execute(
        "select table_name from duckdb_tables() where schema_name = 'main' "
        "union all select view_name from duckdb_views() "
        "where schema_name = 'main' and not internal order by 1"
    ).fetchall()
    return [name for (name,) in rows]


def _differences(one: Path, other: Path) -> dict[str, str]:
    """Per relation that differs, how: the columns whose values differ, and a row."""
    a = duckdb.connect(str(one), read_only=True)
    b = duckdb.connect(str(other), read_only=True)
    found: dict[str, str] = {}
    try:
        relations_a, relations_b = _relations(a), _relations(b)
        if relations_a != relations_b:
            found["(relations)"] = f"{sorted(set(relations_a) ^ set(relations_b))}"
        for name in sorted(set(relations_a) & set(relations_b)):
            columns_a = a.execute(f'describe "{name}"').fetchall()
            columns_b = b.execute(f'describe "{name}"').fetchall()
            if [c[:2] for c in columns_a] != [c[:2] for c in columns_b]:
                found[name] = f"columns {columns_a} != {columns_b}"
                continue
            query = f'select * from "{name}" order by all'
            rows_a, rows_b = a.execute(query).fetchall(), b.execute(query).fetchall()
            if len(rows_a) != len(rows_b):
                found[name] = f"{len(rows_a)} rows != {len(rows_b)}"
                continue
            columns = [c[0] for c in columns_a]
            pairs = list(zip(rows_a, rows_b, strict=True))
            unequal = {
                columns[j] for x, y in pairs for j in range(len(columns)) if not _same(x[j], y[j])
            }
            if unequal:
                x, y = next((x, y) for x, y in pairs if not _same(x, y))
                found[name] = f"{sorted(unequal)} differ, first {x} != {y}"
    finally:
        a.close()
        b.close()
    return found


def _published_rows(warehouse: Path) -> int:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return sum(
            con.execute(f'select count(*) from "{name}"').fetchone()[0] for name in _relations(con)
        )
    finally:
        con.close()


def test_builds_of_one_lake_agree_bit_for_bit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake = tmp_path / "lake"
    cold, grown = tmp_path / "cold" / "obs.duckdb", tmp_path / "grown" / "obs.duckdb"
    base = ["--lake", lake, "--warehouse", grown]
    run = land_first(tmp_path, base)
    # The demo's agent run: groups whose rewards are all equal at some turns.
    agent = tmp_path / "agent-demo"
    write_agent_run(agent, AgentSpec(seed=7))
    run_cli([*base, "ingest", "rollouts", agent / "rollouts", "--run", "demo-agent", "-q"])
    run_cli([*base, "ingest", "eval-logs", agent / "eval_logs", "--run", "demo-agent", "-q"])

    with _threads(monkeypatch, models=1, engine=1):
        _obs_build(lake, grown)
    land_more(run)
    with _threads(monkeypatch, models=1, engine=1):
        _obs_build(lake, grown)
    with _threads(monkeypatch, models=2, engine=None):
        _obs_build(lake, cold)
    assert _published_rows(cold) > 10_000
    assert _differences(cold, grown) == {}

    with _threads(monkeypatch, models=2, engine=2):
        _obs_build(lake, grown, "--full-refresh")
    assert _differences(cold, grown) == {}
