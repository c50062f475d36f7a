"""The run resolver: what each run holds, one run by id or name, or a page's runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from obs.reports.errors import ReportError
from obs.reports.resolve import (
    WITH_AGENT,
    WITH_EVAL_STEPS,
    WITH_HISTORY,
    WITH_REWARDS,
    WITH_ROLLOUTS,
    FoundRun,
    RunKind,
    choose_runs,
    holdings,
    holds,
    missing_note,
    notes_for,
    resolve_run,
    runs_of,
    runs_with_data,
)

WAREHOUSE = Path("wh.duckdb")


@pytest.fixture
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    """Tracked runs a (named twin), b (twin), c (solo); rollouts of c and r; rewards of c;
    eval steps of e (known nowhere else); g's group summary holds times only."""
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
    con.execute("create table fct_group_summary as select 'g' as run_id, null as basis")
    yield con
    con.close()


def test_holdings_name_every_run_and_what_it_holds(con: duckdb.DuckDBPyConnection) -> None:
    assert holdings(con) == {
        "a": (WITH_HISTORY,),
        "b": (WITH_HISTORY,),
        "c": (WITH_ROLLOUTS, WITH_HISTORY, WITH_REWARDS),
        "e": (WITH_AGENT,),
        "r": (WITH_ROLLOUTS,),
    }
    assert holds(holdings(con)["c"]) == "rollouts, tracker history and reward data"
    assert holds([WITH_HISTORY]) == "tracker history only"


def test_a_missing_note_says_what_a_run_holds_and_what_lands_the_rest() -> None:
    assert missing_note(["tbx"], [WITH_HISTORY], [WITH_ROLLOUTS]) == (
        "tbx: tracker history only; land rollout dumps (obs ingest rollouts PATH --run tbx)"
        " to see prompts"
    )
    assert missing_note(["a", "b"], [WITH_AGENT], [WITH_ROLLOUTS, WITH_HISTORY], "audit it") == (
        "a, b: agent data only; land rollout dumps (obs ingest rollouts PATH --run RUN) and"
        " its tracker history (obs ingest metrics PATH --run RUN) to audit it"
    )


def test_notes_group_the_runs_that_hold_the_same(con: duckdb.DuckDBPyConnection) -> None:
    found = holdings(con)
    assert notes_for(found, found, WITH_ROLLOUTS) == [
        "a, b: tracker history only; land rollout dumps (obs ingest rollouts PATH --run RUN)"
        " to see prompts",
        "e: agent data only; land rollout dumps (obs ingest rollouts PATH --run e) to see prompts",
    ]


def test_runs_of_a_kind_are_sorted_and_none_when_not_built(
    con: duckdb.DuckDBPyConnection,
) -> None:
    assert runs_of(con, WITH_HISTORY, WITH_ROLLOUTS) == ["a", "b", "c", "r"]
    assert runs_of(con, RunKind(("fct_not_built",))) == []


def test_a_run_is_found_by_its_id(con: duckdb.DuckDBPyConnection) -> None:
    assert resolve_run(con, WAREHOUSE, "c", WITH_REWARDS) == FoundRun("c", True)
    assert resolve_run(con, WAREHOUSE, "e", WITH_EVAL_STEPS) == FoundRun("e", True)


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
    assert str(raised.value) == "wh.duckdb: no run 'twin' (runs: a, b, c, e, r)"


def test_an_unknown_run_names_every_run_there_is(con: duckdb.DuckDBPyConnection) -> None:
    for kind in (WITH_ROLLOUTS, WITH_REWARDS, WITH_EVAL_STEPS):
        with pytest.raises(ReportError) as raised:
            resolve_run(con, WAREHOUSE, "nope", kind)
        assert str(raised.value) == "wh.duckdb: no run 'nope' (runs: a, b, c, e, r)"


def test_a_known_run_without_the_data_says_what_it_holds_and_what_lands_it(
    con: duckdb.DuckDBPyConnection,
) -> None:
    with pytest.raises(ReportError) as raised:
        resolve_run(con, WAREHOUSE, "r", WITH_REWARDS)
    assert str(raised.value) == (
        "r: rollouts only; land per-function rewards (rollouts with reward columns, or obs"
        " ingest monitoring DIR --run r) or a tracker history that logs the reward to see"
        " reward monitoring"
    )
    assert resolve_run(con, WAREHOUSE, "r", WITH_REWARDS, required=False) == FoundRun("r", False)
    # by name: the id the name stands for is told what lands its data
    with pytest.raises(ReportError) as raised:
        resolve_run(con, WAREHOUSE, "solo", WITH_EVAL_STEPS, by_name="unique")
    assert str(raised.value) == (
        "c: rollouts, tracker history and reward data; land the eval files (obs ingest"
        " eval-logs DIR --run c) to see its eval steps"
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
    with pytest.raises(ReportError, match=r"no run 'x' \(runs: a, b, c, e, r\)"):
        runs_with_data(con, WAREHOUSE, ["x"], ["c"], marts)
