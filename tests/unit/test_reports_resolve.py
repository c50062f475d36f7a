"""The run resolver: one run by id or name among a kind's runs, or a page's runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from obs.reports.errors import ReportError
from obs.reports.resolve import (
    WITH_EVAL_STEPS,
    WITH_HISTORY,
    WITH_REWARDS,
    WITH_ROLLOUTS,
    FoundRun,
    RunKind,
    choose_runs,
    resolve_run,
    runs_of,
    runs_with_data,
)

WAREHOUSE = Path("wh.duckdb")
HINT = "`obs runs` lists them, `obs ingest metrics PATH` then `obs build` adds one"


@pytest.fixture
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    """Tracked runs a (named twin), b (twin), c (solo); rollouts of c and r; rewards of c;
    eval steps of e (known nowhere else)."""
    con = duckdb.connect()
    con.execute(
        "create table dim_runs as select * from"
        " (values ('a', 'twin'), ('b', 'twin'), ('c', 'solo')) as t(run_id, name)"
    )
    con.execute(
        "create table fct_iteration_summary as select * from (values ('c'), ('r')) as t(run_id)"
    )
    con.execute("create table fct_reward_steps as select 'c' as run_id")
    con.execute("create table fct_eval_steps as select 'e' as run_id")
    yield con
    con.close()


def test_runs_of_a_kind_are_sorted_and_none_when_not_built(
    con: duckdb.DuckDBPyConnection,
) -> None:
    assert runs_of(con, WITH_HISTORY, WITH_ROLLOUTS) == ["a", "b", "c", "r"]
    assert runs_of(con, RunKind(("fct_not_built",))) == []


def test_a_run_is_found_by_its_id(con: duckdb.DuckDBPyConnection) -> None:
    assert resolve_run(con, WAREHOUSE, "c", WITH_REWARDS) == FoundRun("c", True)


def test_a_tracker_run_is_found_by_its_name_when_asked(con: duckdb.DuckDBPyConnection) -> None:
    assert resolve_run(con, WAREHOUSE, "solo", WITH_HISTORY, by_name="strict").run_id == "c"
    assert resolve_run(con, WAREHOUSE, "solo", WITH_HISTORY, by_name="unique").run_id == "c"
    with pytest.raises(ReportError, match="no run 'solo'"):
        resolve_run(con, WAREHOUSE, "solo", WITH_HISTORY)


def test_a_name_two_runs_share_is_an_error_only_when_strict(
    con: duckdb.DuckDBPyConnection,
) -> None:
    with pytest.raises(ReportError) as raised:
        resolve_run(con, WAREHOUSE, "twin", WITH_HISTORY, by_name="strict")
    assert str(raised.value) == "wh.duckdb: 2 runs are named 'twin' (a, b); give the run id"
    with pytest.raises(ReportError) as raised:
        resolve_run(con, WAREHOUSE, "twin", WITH_EVAL_STEPS, by_name="unique")
    assert str(raised.value) == "wh.duckdb: no run 'twin' (runs with eval steps: e)"


def test_an_unknown_run_names_the_kinds_runs_or_the_listed_ones(
    con: duckdb.DuckDBPyConnection,
) -> None:
    with pytest.raises(ReportError) as raised:
        resolve_run(con, WAREHOUSE, "nope", WITH_ROLLOUTS)
    assert str(raised.value) == "wh.duckdb: no run 'nope' (runs: c, r)"
    with pytest.raises(ReportError) as raised:
        resolve_run(con, WAREHOUSE, "nope", WITH_REWARDS, listed=WITH_HISTORY)
    assert str(raised.value) == f"wh.duckdb: no run 'nope' (runs: a, b, c); {HINT}"
    con.execute("drop table dim_runs")
    with pytest.raises(ReportError) as raised:  # the listed runs' mart is not built
        resolve_run(con, WAREHOUSE, "nope", WITH_REWARDS, listed=WITH_HISTORY)
    assert str(raised.value) == "wh.duckdb: no run 'nope' (runs with reward data: c)"


def test_a_known_run_without_the_data_says_what_lands_it(
    con: duckdb.DuckDBPyConnection,
) -> None:
    with pytest.raises(ReportError) as raised:
        resolve_run(con, WAREHOUSE, "r", WITH_REWARDS, known=(WITH_ROLLOUTS,))
    assert str(raised.value) == (
        "wh.duckdb: run 'r' has no reward data (runs with reward data: c); land per-function"
        " rewards with `obs ingest rollouts DIR --run r` (a `rewards` object per sample) or a"
        " tracker log with reward metrics, then `obs build`"
    )
    found = resolve_run(con, WAREHOUSE, "r", WITH_REWARDS, known=(WITH_ROLLOUTS,), required=False)
    assert found == FoundRun("r", False)
    # by name: the id the name stands for is told what lands its data
    with pytest.raises(ReportError, match=r"run 'solo' has no eval steps .*--run c`"):
        resolve_run(
            con, WAREHOUSE, "solo", WITH_EVAL_STEPS, known=(WITH_HISTORY,), by_name="unique"
        )


def test_choose_runs_falls_back_to_the_default_and_refuses_unknown_runs() -> None:
    assert choose_runs(WAREHOUSE, None, ["a", "b"]) == ["a", "b"]
    assert choose_runs(WAREHOUSE, ["c"], ["a"], known=["c"]) == ["c"]
    with pytest.raises(ReportError) as raised:
        choose_runs(WAREHOUSE, ["a", "x"], ["a"], known=["c"])
    assert str(raised.value) == "wh.duckdb: no run 'x' (runs: a, c)"


def test_a_pages_runs_split_into_those_with_its_data_and_those_without(
    con: duckdb.DuckDBPyConnection,
) -> None:
    marts = WITH_REWARDS.marts
    assert runs_with_data(con, WAREHOUSE, None, ["c"], marts) == (["c"], [])
    assert runs_with_data(con, WAREHOUSE, ["r", "c"], ["c"], marts) == (["c"], ["r"])
    with pytest.raises(ReportError, match=r"no run 'e' \(runs: a, b, c, r\)"):
        runs_with_data(con, WAREHOUSE, ["e"], ["c"], marts)
