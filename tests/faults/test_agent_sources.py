"""The agentic sources under hostile use: eval files and a trainer's console log.

Rows landed are counted against what the files hold, counted here without
obs: the printed advantage cells of the log (a row of a table is a line that
starts with a rollout number and a bar), the eval files written.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest
from obs.demo.agent import AgentSpec, write_agent_run

from tests.conftest import kill_when, lake_query, run_cli
from tests.faults.conftest import OBS

pytestmark = pytest.mark.integration

ROW = re.compile(r"^\s+\d+\s+\|")


def _cells(text: str) -> int:
    """Advantage cells the log prints: numbers in table rows (`---` is no cell)."""
    count = 0
    for row in text.splitlines():
        if ROW.match(row):
            count += sum(1 for cell in row.split("|")[1:] if cell.strip() not in {"", "---"})
    return count


def _ingest_log(lake: Path, log: Path, run: str = "agent") -> str:
    result = run_cli(["--lake", lake, "ingest", "trainer-log", log, "--run", run])
    return result.output + result.stderr


def test_a_log_growing_while_read_lands_every_cell_once(tmp_path: Path) -> None:
    write_agent_run(tmp_path / "run", AgentSpec(steps=6, queries=4, rollouts=4))
    text = (tmp_path / "run" / "train.log").read_text()
    lake, log = tmp_path / "lake", tmp_path / "live.log"
    # cut inside a table's row, mid-line: the writer is still at it
    cut = text.index("|", text.index("Turn-by-Turn", len(text) // 2)) + 5
    log.write_text(text[:cut])
    first = _ingest_log(lake, log)
    assert "being written" in first or "not complete yet" in first
    landed = lake_query(lake, "turn_advantages", "select count(*) from t")[0][0]
    assert 0 < landed < _cells(text)
    with log.open("a") as grown:
        grown.write(text[cut:])
    _ingest_log(lake, log)
    rows, keys = lake_query(
        lake,
        "turn_advantages",
        "select count(*), count(distinct (step, group_id, sample_idx, turn)) from t",
    )[0]
    assert rows == keys == _cells(text)
    # each step's summary: the step the first ingest saw in part landed again,
    # whole, and its newest version is the complete one
    newest = lake_query(
        lake,
        "step_groups",
        "select step, groups_total, finished_early from t "
        "qualify row_number() over (partition by step order by ingested_at desc) = 1",
    )
    assert len(newest) == 6 and all(total == 4 and early is not None for _, total, early in newest)


def test_copies_of_a_log_and_of_an_eval_folder_land_nothing_again(tmp_path: Path) -> None:
    write_agent_run(tmp_path / "run", AgentSpec(steps=4, queries=3, rollouts=3, eval_every=2))
    lake = tmp_path / "lake"
    _ingest_log(lake, tmp_path / "run" / "train.log")
    run_cli(
        ["--lake", lake, "ingest", "eval-logs", tmp_path / "run" / "eval_logs", "--run", "agent"]
    )
    copy = tmp_path / "copy"
    shutil.copytree(tmp_path / "run", copy)
    # a copy with one more line at its top holds the same records
    (copy / "train.log").write_text("starting\n" + (copy / "train.log").read_text())
    again = _ingest_log(lake, copy / "train.log")
    assert "0 records landed" in again or "already" in again, again
    evals = run_cli(["--lake", lake, "ingest", "eval-logs", copy / "eval_logs", "--run", "agent"])
    assert "0 records landed" in evals.output, evals.output
    text = (tmp_path / "run" / "train.log").read_text()
    assert lake_query(lake, "turn_advantages", "select count(*) from t") == [(_cells(text),)]
    assert lake_query(lake, "eval_steps", "select count(*) from t where source = 'eval-logs'") == [
        (2,)
    ]


def test_odd_bytes_in_eval_files_cost_nothing_good(tmp_path: Path) -> None:
    folder, lake = tmp_path / "eval_logs", tmp_path / "lake"
    folder.mkdir()
    # a BOM, a key given twice (the last wins, as JSON readers do), NaN, a lone
    # surrogate in an unknown key, Infinity where a count belongs
    (folder / "eval_step_0001.json").write_bytes(
        b'\xef\xbb\xbf{"step": 1, "accuracy": 0.1, "accuracy": 0.5, "avg_reward": NaN, '
        b'"total_samples": 10, "correct_answers": 5, "note": "caf\\ud800", '
        b'"num_idk": Infinity}'
    )
    (folder / "eval_step_0002.json").write_text('{"step": 2, "accuracy": 0.6}')
    (folder / "eval_step_0003.json").write_bytes(b'{"step": 3, "accuracy": 0.\xff7}')
    result = run_cli(["--lake", lake, "ingest", "eval-logs", folder, "--run", "odd"])
    assert "2 eval steps landed, 1 rejected" in result.output
    assert "eval_step_0003.json: not valid UTF-8 text" in result.stderr
    rows = lake_query(
        lake,
        "eval_steps",
        "select step, accuracy, isnan(avg_reward), num_idk, extra from t order by step",
    )
    one, extra = rows[0][:4], rows[0][4]
    assert one == (1, 0.5, True, None) and extra is not None
    kept = json.loads(extra)
    assert kept["note"] == "caf\ufffd" and kept["num_idk"] == "Infinity"
    assert rows[1][:2] == (2, 0.6)


@pytest.mark.parametrize("run", ["a:b@c+1.x", "runs.2024-11-20_agent"])
def test_odd_run_names_round_trip_through_the_build(tmp_path: Path, run: str) -> None:
    write_agent_run(tmp_path / "run", AgentSpec(steps=2, queries=2, rollouts=2, eval_every=1))
    lake, warehouse = tmp_path / "lake", tmp_path / "w.duckdb"
    base = ["--lake", lake, "--warehouse", warehouse]
    run_cli([*base, "ingest", "eval-logs", tmp_path / "run" / "eval_logs", "--run", run])
    run_cli([*base, "ingest", "trainer-log", tmp_path / "run" / "train.log", "--run", run])
    built = run_cli([*base, "build", "-v", "--select", "+fct_eval_steps", "+fct_turn_summary"])
    # (a test of the rollout marts reads stg_rollouts too: with a selection it must not run)
    assert "Completed successfully" in built.stderr
    assert "\x1b[" not in built.stderr  # dbt's log is plain text when stderr is no terminal
    # Without -v dbt says nothing but its errors: one line of obs's.
    again = run_cli([*base, "build", "--select", "fct_eval_steps"])
    assert re.fullmatch(r"built with dbt in \d+\.\d s\n", again.stderr), again.stderr
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        steps = con.execute("select run_id, count(*) from fct_eval_steps group by 1").fetchall()
        turns = con.execute("select distinct run_id from fct_turn_summary").fetchall()
    finally:
        con.close()
    assert steps == [(run, 2)] and turns == [(run,)]


@pytest.mark.slow
def test_kill_9_mid_log_ingest_then_ingest_again(tmp_path: Path) -> None:
    write_agent_run(tmp_path / "run", AgentSpec(steps=400, queries=8, rollouts=8, eval_every=50))
    log, lake = tmp_path / "run" / "train.log", tmp_path / "lake"
    command = [OBS, "--lake", str(lake), "ingest", "trainer-log", str(log), "--run", "r", "-q"]
    killed = kill_when(command, lambda: bool(list((lake / "_staging").glob("*/*/part.parquet"))))
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    rows, keys = lake_query(
        lake,
        "turn_advantages",
        "select count(*), count(distinct (step, group_id, sample_idx, turn)) from t",
    )[0]
    assert rows == keys == _cells(log.read_text())
    assert lake_query(lake, "step_groups", "select count(*) from t") == [(400,)]
    assert not list((lake / "_staging").glob("*/*"))
    assert killed, "the ingest finished before it could be killed"


@pytest.mark.slow
def test_a_build_running_during_an_ingest_misses_nothing(tmp_path: Path) -> None:
    write_agent_run(tmp_path / "run", AgentSpec(steps=30, queries=6, rollouts=6, eval_every=5))
    lake, warehouse = tmp_path / "lake", tmp_path / "w.duckdb"
    base = [OBS, "--lake", str(lake), "--warehouse", str(warehouse)]
    run = tmp_path / "run"
    # something in the lake first, so the first build has a source to read
    subprocess.run(
        [*base, "ingest", "eval-logs", str(run / "eval_logs"), "--run", "g", "-q"], check=True
    )
    builder = subprocess.Popen([*base, "build", "-q"], stdout=subprocess.DEVNULL)
    for command in (
        [*base, "ingest", "rollouts", str(run / "rollouts"), "--run", "g", "-q"],
        [*base, "ingest", "trainer-log", str(run / "train.log"), "--run", "g-log", "-q"],
    ):
        subprocess.run(command, check=True, timeout=300)
    assert builder.wait(timeout=300) == 0
    subprocess.run([*base, "build", "-q"], check=True, timeout=300, stdout=subprocess.DEVNULL)
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        summary = con.execute(
            "select run_id, count(*), sum(rollouts) from fct_group_summary group by 1 order by 1"
        ).fetchall()
        cells = con.execute(
            "select count(*) from fct_turn_advantages where run_id = 'g-log'"
        ).fetchall()
    finally:
        con.close()
    assert summary == [("g", 30, 30 * 36), ("g-log", 30, 30 * 36)]
    assert cells == [(_cells((run / "train.log").read_text()),)]
