"""`obs build` builds what changed: its results equal a rebuild from scratch.

A run lands in three steps the way a live run grows: iterations 0..2 and the
first half of iteration 3's dump; then the rest of that dump (a grown file),
iteration 4 (a new iteration) and a second run. After each step the same
warehouse is built incrementally; a second warehouse is then built from
scratch on the final lake, and every table of the two must hold the same rows
(numbers within 1e-12 relative, everything else exactly).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import duckdb
import pytest
from obs.demo.rollouts import DemoSpec, write_demo_run
from obs.runner import build_state

from tests.conftest import run_cli
from tests.integration.growing_run import land_first, land_more
from tests.integration.warehouses import differences, relative

pytestmark = pytest.mark.integration

# Everything here lands within seconds, inside the default look-back window
# (which re-reads recent parts on purpose); 0 shows the pure rule.
NO_LOOKBACK = ["--vars", "{incremental_lookback_seconds: 0}"]
BUILT = re.compile(r"built \d+ models")


def _tables(con: duckdb.DuckDBPyConnection, catalog: str) -> list[str]:
    rows = con.execute(
        "select table_name from information_schema.tables "
        "where table_catalog = ? and table_type = 'BASE TABLE' order by 1",
        [catalog],
    ).fetchall()
    return [name for (name,) in rows]


def _empty_tables(warehouse: Path) -> list[str]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return [
            table
            for table in _tables(con, warehouse.stem)
            if con.execute(f'select count(*) from "{table}"').fetchone()[0] == 0
        ]
    finally:
        con.close()


def _positions(warehouse: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_incremental_build_equals_full_rebuild(tmp_path: Path) -> None:
    lake, warehouse = tmp_path / "lake", tmp_path / "inc" / "obs.duckdb"
    base = ["--lake", lake, "--warehouse", warehouse]
    grown_run = land_first(tmp_path, base)
    run_cli([*base, "build", *NO_LOOKBACK])
    # Sentinels: an incremental build that re-read an unchanged iteration
    # would overwrite them; one in the grown iteration must be overwritten.
    # (fct_prompt_iteration and fct_metric_history are views: their rows are
    # int_prompt_iteration's and int_metric_history's)
    sentinels = {
        "int_prompt_iteration": "mean_response_chars",
        "fct_score_distribution": "n",
        "fct_instruction_iteration": "n_prompts",
    }
    # (columns no other model reads, so the rebuilt marts downstream stay true)
    run_sentinels = {
        "int_run_steps": "reward_std",
        "int_metric_scores": "trailing_spread",
        "fct_metric_summary": "data_points",
    }
    con = duckdb.connect(str(warehouse))
    for table, column in sentinels.items():
        flipped = f"update {table} set {column} = -{column} - 1"
        con.execute(f"{flipped} where run_id = 'a' and iteration in (1, 3)")
    # The reward marts build by step (a rollout's iteration) too. Their
    # values feed tables rebuilt at every build, so the mark is the publish
    # time they hold (an old one is never "new"), put back before comparing.
    reward_tables = [
        "int_reward_samples",
        "int_reward_sample_function_steps",
        "int_reward_sample_steps",
        "int_reward_sample_pair_steps",
    ]
    held_times = {
        table: con.execute(
            f"select distinct step, ingested_through from {table} where run_id = 'a'"
        ).fetchall()
        for table in reward_tables
    }
    for table in reward_tables:
        con.execute(
            f"update {table} set ingested_through = timestamp '2000-01-01' "
            "where run_id = 'a' and step in (1, 3)"
        )
    # The agent model builds by iteration too, and keeps a marker row for
    # the iterations of a run with no agentic rollout (run a).
    agent_times = con.execute(
        "select distinct run_id, iteration, ingested_through from int_agent_rollouts"
    ).fetchall()
    con.execute(
        "update int_agent_rollouts set ingested_through = timestamp '2000-01-01' "
        "where (run_id = 'a' and iteration in (1, 3)) or (run_id = 'g' and iteration = 2)"
    )
    # The run-history models build by run: w0 must not be read again, the
    # grown w1 must, whole (its marks of how far it was judged included).
    for table, column in run_sentinels.items():  # negated: exact both ways
        flipped = f"update {table} set {column} = -{column} where {column} > 0"
        con.execute(f"{flipped} and run_id in ('w0', 'w1')")
    con.execute("update int_metric_history set source = source || '#' where run_id in ('w0', 'w1')")
    con.execute("update int_run_findings set summary = coalesce(summary, '') || '#'")
    con.close()
    # obs builds a warehouse changed behind its back whole; take these edits as its own.
    state_file = build_state.state_dir(warehouse) / build_state.STATE_FILE
    state = json.loads(state_file.read_text())
    state["warehouse"] = build_state.warehouse_identity(warehouse)
    state_file.write_text(json.dumps(state))

    # The dump grows, a new iteration lands, a second run appears.
    land_more(grown_run)
    plan = build_state.what_to_rebuild(
        warehouse,
        lake,
        ["--no-write-json", "--exclude-resource-type", "unit_test", *NO_LOOKBACK],
        ["rollouts", "metrics", "runs", "reward_samples"],
    )
    assert (plan.full, plan.tables) == (False, ("metrics", "reward_samples", "rollouts", "runs"))
    rebuilt = run_cli([*base, "build", *NO_LOOKBACK])
    assert "up to date" not in rebuilt.stderr
    con = duckdb.connect(str(warehouse))
    for table, column in sentinels.items():
        marked = f"select distinct iteration from {table} where {column} < 0"
        # Iteration 1 was not read again; the grown iteration 3 was, whole.
        assert con.execute(marked).fetchall() == [(1,)], table
        con.execute(f"update {table} set {column} = -{column} - 1 where {column} < 0")
    for table in reward_tables:
        marked = f"select distinct step from {table} where ingested_through < '2001-01-01'"
        assert con.execute(marked).fetchall() == [(1,)], table
        (original,) = [t for step, t in held_times[table] if step == 1]
        con.execute(
            f"update {table} set ingested_through = ? where ingested_through < '2001-01-01'",
            [original],
        )
    marked = (
        "select distinct run_id, iteration from int_agent_rollouts "
        "where ingested_through < '2001-01-01' order by all"
    )
    # a's iteration 1 and g's 2 were not read again (3 was: it grew)
    assert con.execute(marked).fetchall() == [("a", 1), ("g", 2)]
    for run, iteration, original in agent_times:
        con.execute(
            "update int_agent_rollouts set ingested_through = ? where run_id = ? "
            "and iteration = ? and ingested_through < '2001-01-01'",
            [original, run, iteration],
        )
    for table, column in run_sentinels.items():
        marked = f"select distinct run_id from {table} where {column} < 0"
        assert con.execute(marked).fetchall() == [("w0",)], table
        con.execute(f"update {table} set {column} = -{column} where {column} < 0")
    for table, column in (("int_metric_history", "source"), ("int_run_findings", "summary")):
        marked = f"select distinct run_id from {table} where {column} like '%#'"
        assert con.execute(marked).fetchall() == [("w0",)], table
    con.execute("update int_metric_history set source = rtrim(source, '#')")
    con.execute("update int_run_findings set summary = nullif(rtrim(summary, '#'), '')")
    con.execute("update fct_run_findings set summary = rtrim(summary, '#')")  # copied from it
    con.close()

    full = tmp_path / "full" / "obs.duckdb"
    run_cli(["--lake", lake, "--warehouse", full, "build", *NO_LOOKBACK])
    # Numbers within 1e-12 (a sum's last bits depend on the order threads add in),
    # everything else exactly.
    assert differences(warehouse, full, relative(1e-12)) == {}
    # Every model holds rows (an empty table would compare equal trivially).
    assert _empty_tables(full) == []
    rollouts = _positions(full, "select sum(n), count(distinct run_id) from fct_score_distribution")
    # runs a, b, the agent's g, NeMo-RL's n and prime-rl's p
    assert rollouts == [(12 * 5 * 4 + 9 * 3 * 4 + 4 * 3 * 3 + 4 * 6 + 2 * 3, 5)]
    mismatch = _positions(full, "select step, rollouts from fct_logprob_mismatch order by 1")
    assert mismatch == [(1, 6), (2, 6), (3, 6), (4, 6)]  # step 3 grew: counted whole
    lag = _positions(full, "select run_id, step, samples, max_lag from fct_policy_lag order by 2")
    assert lag == [("p", 0, 3, 0), ("p", 1, 3, 1)]  # step 1 landed in the second ingest
    # Run m's eight monitored steps, three samples each; run a's steps are its rollouts'.
    samples = _positions(
        full,
        "select run_id, source, count(distinct step), count(*) "
        "from int_reward_samples group by all order by all",
    )
    assert ("m", "reward-monitor", 8, 8 * 3 * 2) in samples
    assert [row[1] for row in samples if row[0] == "a"] == ["rollouts"]


def _small_built_run(tmp_path: Path) -> tuple[list, Path, str]:
    """A six-prompt run landed and built: the obs arguments, the warehouse, the build's log."""
    dumps = tmp_path / "dumps"
    write_demo_run(dumps, DemoSpec(prompts=6, iterations=2, samples_per_prompt=2, seed=5))
    lake, warehouse = tmp_path / "lake", tmp_path / "obs.duckdb"
    base = ["--lake", lake, "--warehouse", warehouse]
    run_cli([*base, "ingest", "rollouts", dumps, "--run", "r", "-q"])
    return base, warehouse, run_cli([*base, "build"]).stderr


def test_build_runs_nothing_when_nothing_landed(tmp_path: Path) -> None:
    base, warehouse, first_log = _small_built_run(tmp_path)
    # An everyday build runs on obs's executor: every model and its data
    # tests, not dbt's unit tests.
    built = re.search(r"built (\d+) models, (\d+) data tests passed", first_log)
    assert built and int(built[1]) > 60 and int(built[2]) > 60, first_log
    assert "unit test" not in first_log
    again = run_cli([*base, "build"])
    assert "up to date: nothing landed since the last build" in again.stderr
    assert again.stdout.strip() == str(warehouse)
    # A rebuild from scratch is one flag away, and the rows are the same.
    count = "select count(*) from fct_prompt_iteration"
    rows = _positions(warehouse, count)
    refreshed = run_cli([*base, "build", "--full-refresh"])
    assert BUILT.search(refreshed.stderr)
    assert _positions(warehouse, count) == rows == [(12,)]
    # A warehouse changed behind obs's back (deleted here) is built whole again.
    warehouse.unlink()
    rebuilt = run_cli([*base, "build"])
    assert BUILT.search(rebuilt.stderr)
    assert _positions(warehouse, count) == rows
    # So is one pointed at another lake (here the same rollouts, moved): its
    # views must read the new place.
    moved = tmp_path / "moved_lake"
    shutil.move(base[1], moved)
    elsewhere = run_cli(["--lake", moved, "--warehouse", warehouse, "build"])
    assert BUILT.search(elsewhere.stderr)
    assert _positions(warehouse, "select count(*) from stg_rollouts") == [(24,)]


@pytest.mark.parametrize("engine", ["obs", "dbt"])
def test_build_replaces_a_relation_of_the_other_kind(
    tmp_path: Path, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warehouse an older project built, where a mart now a view was a table and an
    intermediate table was a view: a full build replaces each, on either engine."""
    base, warehouse, _ = _small_built_run(tmp_path)
    con = duckdb.connect(str(warehouse))
    rows = con.execute("select * from fct_prompt_iteration order by all").fetchall()
    con.execute("drop view fct_prompt_iteration")
    con.execute("create table fct_prompt_iteration as select * from int_prompt_iteration")
    con.execute("drop table int_run_attributes")
    con.execute("create view int_run_attributes as select 'old' as run_id")
    con.close()
    if engine == "dbt":
        monkeypatch.setenv("OBS_ENGINE", "dbt")
    run_cli([*base, "build", "--full-refresh"])
    kinds = _positions(
        warehouse,
        "select table_name, table_type from information_schema.tables "
        "where table_name in ('fct_prompt_iteration', 'int_run_attributes') order by 1",
    )
    assert kinds == [("fct_prompt_iteration", "VIEW"), ("int_run_attributes", "BASE TABLE")]
    assert _positions(warehouse, "select * from fct_prompt_iteration order by all") == rows


def test_build_names_the_broken_rule(tmp_path: Path) -> None:
    base, warehouse, _ = _small_built_run(tmp_path)
    con = duckdb.connect(str(warehouse))
    con.execute("update fct_prompt_learning set final_strict_acc = 2 where rowid < 2")
    con.execute("update fct_prompt_learning set run_id = null where rowid = 3")
    con.close()
    failed = run_cli([*base, "build", "--select", "fct_prompt_learning_rules"], exit_code=1)
    assert "fct_prompt_learning_rules: final_strict_acc outside [0, 1] (2 rows)" in failed.stderr
    assert "fct_prompt_learning_rules: run_id is null (1 rows)" in failed.stderr
    assert "dbt build failed (1 failed, 0 passed)" in failed.stderr
