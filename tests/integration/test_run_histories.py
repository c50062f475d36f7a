"""Run histories through `obs ingest metrics`, the way a hostile user feeds them.

Files are written by the real writers where one exists (transformers' TrainerState
for trainer_state.json); every test counts the points that landed against the
points written, and checks that a run holds one value per step and key.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import sys
import time
from pathlib import Path

import duckdb
import pytest

from tests.conftest import Invoke, after, kill_when, run_cli

pytestmark = pytest.mark.integration


# --------------------------------------------------------------------------- helpers


def metric_rows(lake: Path, where: str = "true") -> list[dict]:
    con = duckdb.connect()
    try:
        pattern = str(lake / "metrics" / "**" / "*.parquet")
        cursor = con.execute(
            f"select * from read_parquet('{pattern}', hive_partitioning = true, "
            f"hive_types_autocast = false) where {where} order by run_id, step, key"
        )
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    finally:
        con.close()


def assert_one_value_per_key(lake: Path) -> None:
    rows = metric_rows(lake)
    keys = [(r["run_id"], r["step"], r["key"]) for r in rows]
    assert len(keys) == len(set(keys)), "a (run, step, key) landed twice"


def trainer_state(path: Path, steps: int, *, max_steps: int = 100, evals: int = 5) -> int:
    """A trainer_state.json written by transformers itself; returns the points it holds."""
    from transformers.trainer_callback import TrainerState

    rows, points = [], 0
    for step in range(1, steps + 1):
        rows.append(
            {
                "loss": 1.0 / step,
                "grad_norm": 0.5,
                "learning_rate": 1e-5,
                "reward": -0.5 + step / 100,
                "reward_std": 0.1,
                "kl": 0.001 * step,
                "completions/mean_length": 100.0 + step,
                "step": step,
            }
        )
        points += 7
        if step % evals == 0:
            rows.append({"eval_loss": 1.0 / step + 0.1, "eval_reward": step / 100, "step": step})
            points += 2
    state = TrainerState(global_step=steps, max_steps=max_steps, log_history=rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    state.save_to_json(str(path))
    return points


def ingest(invoke: Invoke, path: Path, *args: object, exit_code: int = 0) -> dict:
    result = invoke(["ingest", "metrics", path, "--json", *args], exit_code=exit_code)
    return json.loads(result.stdout) if exit_code == 0 else {"stderr": result.stderr}


# --------------------------------------------------------------------------- TRL


def test_trl_checkpoints_land_each_step_once(tmp_path: Path, invoke: Invoke, lake: Path) -> None:
    out = tmp_path / "trl-out"
    written = trainer_state(out / "trainer_state.json", 40)
    trainer_state(out / "checkpoint-10" / "trainer_state.json", 10)
    trainer_state(out / "checkpoint-20" / "trainer_state.json", 20)
    report = ingest(invoke, tmp_path)
    assert report["run_ids"] == ["trl-out"]
    assert report["rows_landed"] == written
    assert len(metric_rows(lake)) == written
    assert_one_value_per_key(lake)
    again = ingest(invoke, tmp_path)
    assert again["rows_landed"] == 0
    assert {f["status"] for f in again["file_results"]} == {"unchanged"}


def test_trl_state_rewritten_with_more_steps_lands_only_the_new(
    tmp_path: Path, invoke: Invoke, lake: Path
) -> None:
    state = tmp_path / "run" / "trainer_state.json"
    first = trainer_state(state, 10)
    assert ingest(invoke, state)["rows_landed"] == first
    total = trainer_state(state, 25)  # the trainer saves the whole file again
    assert ingest(invoke, state)["rows_landed"] == total - first
    rows = metric_rows(lake, "key = 'loss'")
    assert [r["step"] for r in rows] == list(range(1, 26))
    assert [r["value"] for r in rows] == [1.0 / s for s in range(1, 26)]


def test_copy_of_a_landed_file_lands_nothing(tmp_path: Path, invoke: Invoke) -> None:
    state = tmp_path / "a" / "trainer_state.json"
    written = trainer_state(state, 12)
    copy = tmp_path / "b" / "elsewhere" / "trainer_state.json"
    copy.parent.mkdir(parents=True)
    shutil.copy(state, copy)
    assert ingest(invoke, state, "--run", "r")["rows_landed"] == written
    assert ingest(invoke, copy, "--run", "r")["rows_landed"] == 0


# --------------------------------------------------------------------------- JSON lines


def test_jsonl_odd_bytes_rejected_with_line_rest_lands(
    tmp_path: Path, invoke: Invoke, lake: Path
) -> None:
    log = tmp_path / "verl.jsonl"
    lines = [
        "\ufeff" + json.dumps({"step": 0, "data": {"actor/pg_loss": 0.5}}),  # BOM
        json.dumps({"step": 1, "data": {"actor/pg_loss": float("nan")}}),  # NaN kept
        '{"step": 2, "data": {"actor/pg_loss": 0.1}, "step": 3}',  # duplicate key
        '{"step": 4, "data": {"actor/pg_loss": "\\ud800"}}',  # lone surrogate
        '{"step": 5, "data": {"actor/pg_loss": Infinity}}',  # Infinity kept
        "not json at all",
        json.dumps({"step": "x", "data": {"actor/pg_loss": 1.0}}),  # step not an integer
        json.dumps({"step": 7, "data": {"actor/pg_loss": 0.25, "img": {"_type": "image-file"}}}),
    ]
    log.write_text("\n".join(lines) + "\n" + '{"step": 8, "data": {"actor/pg_loss"')
    report = ingest(invoke, log)
    assert report["rows_landed"] == 4
    assert report["rows_rejected"] == 4
    rows = metric_rows(lake)
    assert [r["step"] for r in rows] == [0, 1, 5, 7]
    assert math.isnan(rows[1]["value"]) and rows[2]["value"] == math.inf
    rejects = duckdb.sql(
        f"select source_line, reason from read_parquet('{lake}/_rejects/**/*.parquet') "
        "order by source_line"
    ).fetchall()
    assert [line for line, _ in rejects] == [3, 4, 6, 7]
    assert "duplicate key" in rejects[0][1] and "surrogate" in rejects[1][1]
    # The partial last line lands once it is complete.
    with log.open("a") as handle:
        handle.write(": 0.125}}\n")
    assert ingest(invoke, log)["rows_landed"] == 1
    assert metric_rows(lake, "step = 8")[0]["value"] == 0.125


def test_strict_lands_nothing_when_a_record_is_bad(
    tmp_path: Path, invoke: Invoke, lake: Path
) -> None:
    log = tmp_path / "metrics.jsonl"
    log.write_text('{"step": 0, "loss": 1}\n{"step": 1, "loss": 0.5}\nbroken\n')
    result = invoke(["ingest", "metrics", log, "--strict"], exit_code=1)
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"Error: {log}: 1 record rejected") and "nothing landed" in last
    assert not (lake / "metrics").exists() or metric_rows(lake) == []
    invoke(["ingest", "metrics", log])
    assert len(metric_rows(lake)) == 2


# --------------------------------------------------------------------------- bad input


def test_unknown_source_and_missing_path_get_one_line(tmp_path: Path, invoke: Invoke) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    result = invoke(["ingest", "metrics", tmp_path], exit_code=1)
    assert result.stderr.startswith(f"Error: {tmp_path}: found no source here")
    assert result.stderr.count("\n") == 1
    missing = invoke(["ingest", "metrics", tmp_path / "nope"], exit_code=1)
    assert "no such file or folder" in missing.stderr and missing.stderr.count("\n") == 1
    bad_run = invoke(["ingest", "metrics", tmp_path, "--run", "a/b"], exit_code=2)
    assert "not a valid run id" in bad_run.stderr
    fmt = invoke(["ingest", "metrics", tmp_path, "--format", "nope"], exit_code=2)
    assert "'nope' is not one of auto" in fmt.stderr


def test_half_written_trainer_state_is_named_and_others_land(
    tmp_path: Path, invoke: Invoke, lake: Path
) -> None:
    good = tmp_path / "good" / "trainer_state.json"
    written = trainer_state(good, 5)
    bad = tmp_path / "bad" / "trainer_state.json"
    bad.parent.mkdir()
    bad.write_text(good.read_text()[:200])
    result = invoke(["ingest", "metrics", tmp_path])
    assert f"{bad}: is not complete JSON" in result.stderr or "not complete JSON" in result.stderr
    assert len(metric_rows(lake)) == written


def test_odd_run_names_in_a_wandb_csv_become_valid_ids(
    tmp_path: Path, invoke: Invoke, lake: Path
) -> None:
    csv = tmp_path / "chart.csv"
    csv.write_text(
        "Step,grpo run/\u03b1 1 - train/loss,grpo run/\u03b1 1 - train/loss__MIN,"
        "../up - train/loss\n"
        "0,1.0,0.9,2.0\n1,0.5,0.4,1.5\n",
        encoding="utf-8",
    )
    report = ingest(invoke, csv)
    assert report["rows_landed"] == 4
    ids = sorted({r["run_id"] for r in metric_rows(lake)})

    def sha(name: str) -> str:
        return hashlib.sha1(name.encode()).hexdigest()[:8]

    # Changed names keep a hash of the whole name: two names that differ only
    # where they were changed stay two runs.
    alpha = "grpo run/\u03b1 1"
    assert ids == [f"_up-{sha('../up')}", f"grpo_run___1-{sha(alpha)}"]
    assert all(not (lake / "metrics" / f"run_id={i}").resolve().is_relative_to(tmp_path / "up")
               for i in ids)  # fmt: skip


def test_two_runs_whose_names_clash_stay_two_runs(
    tmp_path: Path, invoke: Invoke, lake: Path
) -> None:
    a = trainer_state(tmp_path / "exp-a" / "trainer_output" / "trainer_state.json", 5)
    b = trainer_state(tmp_path / "exp-b" / "trainer_output" / "trainer_state.json", 7)
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "\u8bad\u7ec3.jsonl").write_text('{"step": 0, "loss": 1}\n')
    (logs / "\u6d4b\u8bd5.jsonl").write_text('{"step": 0, "loss": 2}\n')
    report = ingest(invoke, tmp_path)
    assert report["rows_landed"] == a + b + 2
    runs = {r["run_id"] for r in metric_rows(lake)}
    assert {"exp-a.trainer_output", "exp-b.trainer_output"} <= runs
    assert len(runs) == 4


# --------------------------------------------------------------------------- processes


def _big_logs(folder: Path, runs: int, steps: int) -> int:
    folder.mkdir(parents=True)
    for run in range(runs):
        with (folder / f"run{run}.jsonl").open("w") as handle:
            for step in range(steps):
                handle.write(json.dumps({"step": step, "loss": 1 / (step + 1), "kl": 0.01}) + "\n")
    return runs * steps * 2


@pytest.mark.slow
def test_kill_9_mid_ingest_then_ingest_again(tmp_path: Path) -> None:
    logs, lake, warehouse = tmp_path / "logs", tmp_path / "lake", tmp_path / "w.duckdb"
    written = _big_logs(logs, runs=12, steps=20_000)
    command = [
        sys.executable,
        "-c",
        "from pathlib import Path; from obs.ingest.keyed import ingest_metrics; "
        f"ingest_metrics(Path({str(logs)!r}), lake=Path({str(lake)!r}))",
    ]
    for delay in (0.4, 0.8, 1.2, 1.6):
        kill_when(command, after(delay))
    run_cli(["--lake", lake, "--warehouse", warehouse, "ingest", "metrics", logs, "-q"])
    assert len(metric_rows(lake)) == written
    assert_one_value_per_key(lake)
    # Nothing half-written is left behind (a glob of a missing folder is empty too).
    assert list(lake.glob("_staging/*")) == []
    again = run_cli(["--lake", lake, "--warehouse", warehouse, "ingest", "metrics", logs, "--json"])
    assert json.loads(again.stdout)["rows_landed"] == 0


def test_build_between_ingests_sees_every_point(tmp_path: Path, invoke: Invoke, lake: Path,
                                                warehouse: Path) -> None:  # fmt: skip
    state = tmp_path / "run" / "trainer_state.json"
    trainer_state(state, 10)
    ingest(invoke, state)
    invoke(["build"])
    total = trainer_state(state, 30, max_steps=30)
    ingest(invoke, state)
    invoke(["build"])
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        points = con.execute("select count(*) from fct_metric_history").fetchone()[0]
        state_now, steps = con.execute("select state, steps from dim_runs").fetchone()
    finally:
        con.close()
    assert points == total
    assert (state_now, steps) == ("finished", 30)


# --------------------------------------------------------------------------- commands


@pytest.fixture
def two_runs(tmp_path: Path, invoke: Invoke) -> tuple[int, int]:
    a = trainer_state(tmp_path / "run-a" / "trainer_state.json", 30)
    b = trainer_state(tmp_path / "run-b" / "trainer_state.json", 20)
    ingest(invoke, tmp_path)
    invoke(["build"])
    return a, b


def test_runs_analyze_compare_export(two_runs: tuple[int, int], invoke: Invoke,
                                     tmp_path: Path) -> None:  # fmt: skip
    listed = json.loads(invoke(["runs", "--format", "json"]).stdout)
    assert [r["run_id"] for r in listed] == ["run-a", "run-b"]
    assert [r["steps"] for r in listed] == [30, 20]
    filtered = json.loads(invoke(["runs", "--config", "max_steps=100", "--format", "json"]).stdout)
    assert len(filtered) == 2
    assert json.loads(invoke(["runs", "--config", "max_steps=7", "--format", "json"]).stdout) == []

    analysis = json.loads(invoke(["analyze", "run-a", "--format", "json"]).stdout)
    titles = [(s["number"], s["title"], s["available"]) for s in analysis["sections"]]
    assert [t[0] for t in titles] == list(range(1, 13))
    training = {r["metric"]: r for r in analysis["sections"][1]["data"]}
    assert training["loss"]["first"] == 1.0 and training["loss"]["last"] == 1 / 30
    assert training["reward_mean"]["trend"] == "rising (good)"
    # A section without data says why.
    assert all(s["note"] for s in analysis["sections"] if not s["available"])
    text = invoke(["analyze", "run-a"]).stdout
    assert "2. Training metrics" in text and "4. Extraction" in text

    compared = json.loads(
        invoke(
            ["compare", "run-a", "run-b", "--metrics", "loss", "reward_mean",
             "--reach", "reward_mean=-0.345", "--format", "json"]
        ).stdout
    )  # fmt: skip
    reward = next(m for m in compared["metrics"] if m["metric"] == "reward_mean")
    # with no --metrics, the held-out reward TRL logged is among the defaults, before the
    # training reward, each run's last point (run-a's eval at step 30, run-b's at 20)
    defaults = json.loads(invoke(["compare", "run-a", "run-b", "--format", "json"]).stdout)
    names = [m["metric"] for m in defaults["metrics"]]
    assert names.index("eval_reward") < names.index("reward_mean"), names
    held_out = next(m for m in defaults["metrics"] if m["metric"] == "eval_reward")
    assert {v["run_id"]: v["final"] for v in held_out["values"]} == pytest.approx(
        {"run-a": 0.3, "run-b": 0.2}
    )
    reached = {v["run_id"]: v["reached"]["step"] for v in reward["values"]}
    assert reached == {"run-a": 16, "run-b": 16}
    finals = {v["run_id"]: v["final"] for v in reward["values"]}
    assert finals == pytest.approx({"run-a": -0.2, "run-b": -0.3})

    out = tmp_path / "analysis_run-b.json"
    invoke(["export", "run", "run-b", "--out", out])
    exported = json.loads(out.read_text())
    assert exported["id"] == "run-b" and len(exported["history"]) == 20
    assert exported["metrics"]["loss"]["data_points"] == 20


def test_unknown_run_is_one_line_and_exit_1(two_runs: tuple[int, int], invoke: Invoke) -> None:
    for args in (["analyze", "nope"], ["compare", "run-a", "nope"], ["findings", "--run", "nope"],
                 ["export", "run", "nope"]):  # fmt: skip
        result = invoke(args, exit_code=1)
        assert "no run 'nope'" in result.stderr and result.stderr.count("\n") == 1


def test_watch_lands_a_tracker_log_beside_the_rollouts(
    tmp_path: Path, data_dir: Path, invoke: Invoke, warehouse: Path
) -> None:
    log = tmp_path / "metrics.jsonl"
    log.write_text("".join(json.dumps({"step": s, "loss": 1 / (s + 1)}) + "\n" for s in range(5)))
    first = invoke(["watch", data_dir / "ifeval_small", "--run", "w", "--metrics", log,
                    "--rounds", "1"])  # fmt: skip
    assert "+5 metric points" in first.stderr
    with log.open("a") as handle:
        handle.write(json.dumps({"step": 5, "loss": 0.1}) + "\n")
    second = invoke(["watch", data_dir / "ifeval_small", "--run", "w", "--metrics", log,
                     "--rounds", "1"])  # fmt: skip
    assert "+1 metric points" in second.stderr
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        steps = con.execute(
            "select count(*) from fct_metric_history where run_id = 'w' and metric = 'loss'"
        ).fetchone()[0]
        rollouts = con.execute("select count(*) from fct_iteration_summary").fetchone()[0]
    finally:
        con.close()
    assert steps == 6 and rollouts > 0


def test_unchanged_source_is_not_read_and_rejects_land_once(
    tmp_path: Path, lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from obs.ingest import keyed
    from obs.ingest.trackers import jsonl_metrics

    log = tmp_path / "metrics.jsonl"
    log.write_text('{"step": 0, "loss": 1}\nbroken\n')
    calls = []
    real = jsonl_metrics.read
    monkeypatch.setattr(jsonl_metrics, "read", lambda *a: calls.append(a) or real(*a))
    first = keyed.ingest_metrics(log, lake=lake)
    assert (first.rows_landed, first.rows_rejected) == (1, 1)
    again = keyed.ingest_metrics(log, lake=lake)
    assert [f.status for f in again.files] == ["unchanged"] and len(calls) == 1
    assert again.runs == [tmp_path.name]  # metrics.jsonl is named after its folder
    with log.open("a") as handle:
        handle.write('{"step": 1, "loss": 0.5}\n')
    grown = keyed.ingest_metrics(log, lake=lake)
    assert (grown.rows_landed, grown.rows_rejected) == (1, 0) and len(calls) == 2
    rejects = duckdb.sql(f"select count(*) from read_parquet('{lake}/_rejects/**/*.parquet')")
    assert rejects.fetchone()[0] == 1
    # Under another --run the source is read again and lands in that run.
    other = keyed.ingest_metrics(log, lake=lake, run_id="other")
    assert other.rows_landed == 2 and len(calls) == 3


# --------------------------------------------------------------------------- from a review


def test_hostile_values_are_rejected_or_kept_never_a_traceback(
    tmp_path: Path, invoke: Invoke, lake: Path, warehouse: Path
) -> None:
    log = tmp_path / "odd.jsonl"
    lines = [
        {"step": 1e19, "loss": 1.0},  # beyond a 64-bit step: rejected
        {"step": "1e19", "loss": 1.0},  # the same as text
        {"step": 2, "loss": 10**30, "neg": -(10**30), "huge": 10**400},  # ints as doubles
        {"step": 3, "loss": 0.5, "timestamp": time.time_ns()},  # nanoseconds: a real moment
        {"step": 4, "loss": 0.25, "timestamp": 1e308},  # no wall time at all
    ]
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    report = ingest(invoke, log)
    assert report["rows_rejected"] == 2
    rows = {(r["step"], r["key"]): r for r in metric_rows(lake)}
    assert rows[(2, "loss")]["value"] == 1e30 and rows[(2, "neg")]["value"] == -1e30
    assert rows[(2, "huge")]["value"] == math.inf
    assert abs(rows[(3, "loss")]["wall_time"] - time.time()) < 60
    assert rows[(4, "loss")]["wall_time"] is None
    state = tmp_path / "t" / "trainer_state.json"
    state.parent.mkdir()
    state.write_text(
        '{"global_step": 1, "max_steps": 1, "log_history": [{"lo\\ud800ss": 1.0, "step": 1}]}'
    )
    export = tmp_path / "export.json"
    export.write_text(json.dumps({"id": "e1", "tags": 5, "config": {"k\ud800": 1},
                                  "history": [{"_step": 0, "x": 1.0}]}))  # fmt: skip
    ingest(invoke, state)
    ingest(invoke, export)
    invoke(["build"])
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        keys = con.execute("select metric from fct_metric_history where run_id = 't'").fetchall()
        tags = con.execute("select tags from dim_runs where run_id = 'e1'").fetchone()[0]
        walls = con.execute("select count(wall_time) from fct_metric_history").fetchone()[0]
    finally:
        con.close()
    assert keys == [("lo\ufffdss",)] and tags == []
    assert walls == 1  # only step 3 carried a usable time


def test_a_restarted_trainer_keeps_the_newest_values_however_it_was_ingested(
    tmp_path: Path, lake: Path, warehouse: Path
) -> None:
    from obs.ingest.keyed import ingest_metrics

    first = [{"step": s, "loss": 1.0} for s in range(11)]
    restart = [{"step": s, "loss": 2.0} for s in range(5, 16)]
    once, twice = tmp_path / "once" / "log.jsonl", tmp_path / "twice" / "log.jsonl"
    for path in (once, twice):
        path.parent.mkdir()
    once.write_text("".join(json.dumps(r) + "\n" for r in first + restart))
    ingest_metrics(once, lake=lake, run_id="once")
    twice.write_text("".join(json.dumps(r) + "\n" for r in first))
    ingest_metrics(twice, lake=lake, run_id="twice")
    with twice.open("a") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in restart)
    grown = ingest_metrics(twice, lake=lake, run_id="twice")
    assert grown.rows_landed == 11 and "6 values differ" in grown.files[0].note
    run_cli(["--lake", lake, "--warehouse", warehouse, "build"])
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        series = con.execute(
            "select run_id, list(value order by step) from fct_metric_history group by 1 order by 1"
        ).fetchall()
    finally:
        con.close()
    expected = [1.0] * 5 + [2.0] * 11
    assert series == [("once", expected), ("twice", expected)]


def test_trl_copies_of_the_final_state_leave_the_run_finished(
    tmp_path: Path, invoke: Invoke, warehouse: Path
) -> None:
    out = tmp_path / "out"
    trainer_state(out / "checkpoint-500" / "trainer_state.json", 5, max_steps=10)
    trainer_state(out / "checkpoint-1000" / "trainer_state.json", 10, max_steps=10)
    trainer_state(out / "trainer_state.json", 10, max_steps=10)  # the same as checkpoint-1000
    ingest(invoke, tmp_path)
    invoke(["build"])
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        assert con.execute("select state from dim_runs").fetchall() == [("finished",)]
    finally:
        con.close()


def test_a_file_of_garbage_exits_1_and_names_no_run(
    tmp_path: Path, invoke: Invoke, lake: Path
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"step": 0, "loss": 1}\n')  # found as a metric log by its first line
    ingest(invoke, bad)
    garbage = tmp_path / "g" / "run.jsonl"
    garbage.parent.mkdir()
    garbage.write_text("garbage\nmore garbage\n")
    result = invoke(["ingest", "metrics", garbage, "--format", "jsonl"], exit_code=1)
    assert "no record could be read (2 records rejected)" in result.stderr
    runs = duckdb.sql(f"select distinct run_id from read_parquet('{lake}/runs/**/*.parquet')")
    assert runs.fetchall() == [("bad",)]


def test_config_keys_that_clash_once_flattened_stay_apart(
    tmp_path: Path, invoke: Invoke, warehouse: Path
) -> None:
    export = tmp_path / "export.json"
    config = {"optimizer.lr": 0.1, "optimizer": {"lr": 0.2}, 'q"x': 1, "qx": 2,
              "a[0]": {"b": 3}, "target_modules": ["q_proj", "v_proj"]}  # fmt: skip
    export.write_text(json.dumps({"id": "c1", "config": config, "history": [{"_step": 0, "x": 1}]}))
    ingest(invoke, export)
    invoke(["build"])
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        rows = dict(con.execute("select key, value from fct_run_config").fetchall())
    finally:
        con.close()
    assert rows == {
        '"optimizer.lr"': "0.1",
        "optimizer.lr": "0.2",
        '"q\\"x"': "1",
        "qx": "2",
        '"a[0]".b': "3",
        "target_modules": '["q_proj","v_proj"]',
    }


def test_reports_read_nan_as_missing_and_compare_reaches_rollout_only_runs(
    tmp_path: Path, invoke: Invoke
) -> None:
    from obs.demo.rollouts import DemoSpec, write_demo_run

    logs = tmp_path / "logs"
    logs.mkdir()
    nan = float("nan")
    rows_a = [
        {"step": s, "data": {"benchmark/trajectories": 10.0, "benchmark/rollout_time_s": 5.0,
                             "eval_loss": 2.0 - s / 10, "elo/challenger": 1000.0 + s,
                             "seed_cfg": 1.0}}
        for s in range(6)
    ]  # fmt: skip
    rows_a[2]["data"]["benchmark/rollout_time_s"] = nan
    rows_a[3]["data"]["elo/challenger"] = nan
    rows_b = [{"step": s, "data": {"eval_loss": 1.5 - s / 20, "elo/challenger": 900.0}}
              for s in range(6)]  # fmt: skip
    for name, rows in (("a", rows_a), ("b", rows_b)):
        (logs / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    ingest(invoke, logs)
    for name in ("ra", "rb"):  # two rollout-only runs sharing their prompts
        write_demo_run(tmp_path / name, DemoSpec(prompts=6, iterations=3, samples_per_prompt=2,
                                                 seed=3))  # fmt: skip
        invoke(["ingest", "rollouts", tmp_path / name, "--run", name, "-q"])
    invoke(["build"])

    analysis = invoke(["analyze", "a", "--format", "json"]).stdout
    assert "NaN" not in analysis and "Infinity" not in analysis
    sections = {s["title"]: s for s in json.loads(analysis)["sections"]}
    # (10 + 10 + 10 + 10 + 10) trajectories over the five finite rollout times of 5 s
    assert sections["Performance"]["data"]["trajectories_per_second"] == 2.0
    assert sections["League"]["data"]["last_elo"] == 1005.0

    compared = json.loads(
        invoke(["compare", "a", "b", "--metrics", "eval_loss", "elo",
                "--reach", "eval_loss=1.35", "--reach", "elo=1004", "--format", "json"]).stdout
    )  # fmt: skip
    by_metric = {m["metric"]: m for m in compared["metrics"]}
    loss = by_metric["eval_loss"]
    assert loss["lower_is_better"] is True
    assert {v["run_id"]: v["best"] for v in loss["values"]} == {"a": 1.5, "b": 1.25}
    assert {v["run_id"]: v["reached"]["step"] for v in loss["values"]} == {"a": None, "b": 3}
    # a's NaN Elo at step 3 does not count as reaching 1004 (step 4 does)
    elo = {v["run_id"]: v["reached"]["step"] for v in by_metric["elo"]["values"]}
    assert elo == {"a": 4, "b": None}
    text = invoke(["compare", "a", "b", "--metrics", "elo", "--reach", "elo=1004"]).stdout
    assert "never" in text
    # --target names the build to read, as for the other reading commands; the former
    # --target METRIC=VALUE gets one line naming --reach
    assert invoke(["compare", "a", "b", "--target", "duckdb", "--format", "json"]).stdout == (
        invoke(["compare", "a", "b", "--format", "json"]).stdout
    )
    old = invoke(["compare", "a", "b", "--target", "elo=1004"], exit_code=2).stderr
    assert "--reach elo=1004" in old and len(old.strip().splitlines()[-1]) < 160, old

    prompts = json.loads(invoke(["compare", "ra", "rb", "--format", "json"]).stdout)
    assert prompts["prompt_diff"][0]["shared_prompts"] == 6


def test_markdown_keeps_two_tables_of_a_section_apart() -> None:
    from obs.reports.runs import Analysis, Section
    from obs.reports.runs_format import analysis_text

    similar = {
        "run_id": "b",
        "same_config_values": 3,
        "config_differences": [{"key": "lr", "values": {"a": "1e-05", "b": "5e-06"}}],
        "metrics": [{"metric": "loss", "values": [{"run_id": "a", "final": 0.5}]}],
    }
    text = analysis_text(
        Analysis("a", "a", [Section(11, "Compare with similar runs", [similar])]), markdown=True
    )
    assert "| lr | 1e-05 | 5e-06 |\n\n| metric |" in text
