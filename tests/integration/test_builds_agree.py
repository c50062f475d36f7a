"""Every build of one lake publishes the same marts: numbers within 1e-12, the rest exactly.

One lake (the growing run of the parity test, plus a demo-sized agent run
whose equal-reward groups give zero advantages), three warehouses built
from it in ways that change the order DuckDB adds in: cold, on two model
threads and DuckDB's default thread count; grown (the first part landed
and built, then the rest built incrementally) on one model thread and one
DuckDB thread; and that second warehouse rebuilt with ``--full-refresh``.
Every table and view of the three must hold the same columns and the same
rows, rows sorted by all columns: doubles within 1e-12 relative (a value 0
by the math may come out as float noise below 1e-15; NaN equal to NaN),
every text, label, rank, count and flag exactly.
"""

from __future__ import annotations

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
from tests.integration.warehouses import differences, relations, relative

pytestmark = pytest.mark.integration

TOLERANCE = relative(1e-12)


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


def _published_rows(warehouse: Path) -> int:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return sum(
            con.execute(f'select count(*) from "{name}"').fetchone()[0] for name in relations(con)
        )
    finally:
        con.close()


def test_builds_of_one_lake_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
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
    assert differences(cold, grown, TOLERANCE) == {}

    with _threads(monkeypatch, models=2, engine=2):
        _obs_build(lake, grown, "--full-refresh")
    assert differences(cold, grown, TOLERANCE) == {}
