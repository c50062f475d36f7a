"""A run written by TRL's own GRPOTrainer (tests/data/trl_grpo.py), read back and landed.

The trainer runs twice in this module (once per variant, about half a minute
each): its completions parquet files and trainer_state.json are checked against
the planted reward schedule worked out in ``TrlRun.reward``, and landed through
``obs ingest rollouts`` and ``obs ingest metrics`` with nothing rejected.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import lake_query, run_cli
from tests.data.trl_grpo import TrlRun, write_trl_grpo_run

pytestmark = pytest.mark.slow

STEPS = 12
EVAL_AT = (2, 4, 6, 8, 10, 12)


@pytest.fixture(scope="module")
def hacked(tmp_path_factory: pytest.TempPathFactory) -> TrlRun:
    return write_trl_grpo_run(tmp_path_factory.mktemp("trl") / "grpo-hacked", steps=STEPS)


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> TrlRun:
    out = tmp_path_factory.mktemp("trl") / "grpo-healthy"
    return write_trl_grpo_run(out, variant="healthy", steps=STEPS)


def _rows(run: TrlRun, step: int) -> list[dict[str, Any]]:
    return pq.read_table(run.completions_file(step)).to_pylist()


def _train_rows(run: TrlRun) -> list[dict[str, Any]]:
    return [r for r in run.state()["log_history"] if "loss" in r]


def _eval_rows(run: TrlRun) -> list[dict[str, Any]]:
    return [r for r in run.state()["log_history"] if "eval_loss" in r]


def _weighted(run: TrlRun, row: dict[str, Any], prefix: str = "") -> float:
    return math.fsum(run.weights[f] * row[f"{prefix}rewards/{f}/mean"] for f in run.reward_names)


# --------------------------------------------------------------------------- the files


def test_trl_grpo_writes_one_completions_file_per_logged_step(hacked: TrlRun) -> None:
    names = sorted(p.name for p in hacked.completions_dir.iterdir())
    assert names == [f"completions_{step:05d}.parquet" for step in range(1, STEPS + 1)]
    for step in range(1, STEPS + 1):
        rows = _rows(hacked, step)
        assert len(rows) == hacked.completions_per_step == 8
        assert {r["step"] for r in rows} == {step}


def test_trl_grpo_completions_columns_are_one_per_reward_function(hacked: TrlRun) -> None:
    schema = pq.read_schema(hacked.completions_file(1))
    assert [(f.name, f.type) for f in schema] == [
        ("step", pa.int64()),
        ("prompt", pa.large_string()),
        ("completion", pa.large_string()),
        ("format_reward", pa.float64()),
        ("length_reward", pa.float64()),
        ("check_answer", pa.float64()),
        ("advantage", pa.float64()),
    ]


def test_trl_grpo_completion_rewards_follow_the_planted_schedule(hacked: TrlRun) -> None:
    """Each row's reward columns recomputed from its step, text and split (to float32)."""
    checked = 0
    for step in range(1, STEPS + 1):
        for row in _rows(hacked, step):
            split = hacked.split_of(row["prompt"])
            for name in hacked.reward_names:
                expected = hacked.reward(name, step, row["completion"], split)
                assert row[name] == pytest.approx(expected, abs=1e-6), (step, name, row)
                checked += 1
    assert checked == STEPS * 8 * 3


def test_trl_grpo_eval_log_rewrites_the_steps_completions_file(hacked: TrlRun) -> None:
    """At an eval step TRL writes completions_{step} again when it logs the eval, from
    the buffer train and eval share: the last 8 completions, 4 of the eval set (2
    prompts x 2 generations) after 4 of the step's train batch (one prompt's group)."""
    for step in range(1, STEPS + 1):
        splits = [hacked.split_of(r["prompt"]) for r in _rows(hacked, step)]
        if step in EVAL_AT:
            assert splits == ["train"] * 4 + ["eval"] * 4, step
            assert len({r["prompt"] for r in _rows(hacked, step)[:4]}) == 1
        else:
            assert splits == ["train"] * 8, step


def test_trl_grpo_completions_file_holds_the_logged_train_batch(hacked: TrlRun) -> None:
    """Away from the eval steps the file is the step's whole generation batch: the logged
    per-function means, and the logged reward, are its rows' (float32) means."""
    train = {r["step"]: r for r in _train_rows(hacked)}
    for step in sorted(set(range(1, STEPS + 1)) - set(EVAL_AT)):
        rows = _rows(hacked, step)
        for name in hacked.reward_names:
            mean = math.fsum(r[name] for r in rows) / len(rows)
            assert train[step][f"rewards/{name}/mean"] == pytest.approx(mean, abs=1e-6)
        weighted = [math.fsum(hacked.weights[f] * r[f] for f in hacked.reward_names) for r in rows]
        assert train[step]["reward"] == pytest.approx(math.fsum(weighted) / 8, abs=1e-6)


# --------------------------------------------------------------------------- trainer_state.json


def test_trl_grpo_log_history_rows(hacked: TrlRun) -> None:
    history = hacked.state()["log_history"]
    assert [r["step"] for r in _train_rows(hacked)] == list(range(1, STEPS + 1))
    assert [r["step"] for r in _eval_rows(hacked)] == list(EVAL_AT)
    assert len(history) == STEPS + len(EVAL_AT) + 1
    assert set(history[-1]) == {
        "epoch",
        "step",
        "total_flos",
        "train_loss",
        "train_runtime",
        "train_samples_per_second",
        "train_steps_per_second",
    }
    state = hacked.state()
    assert (state["global_step"], state["max_steps"], state["eval_steps"]) == (12, 12, 2)


def test_trl_grpo_log_history_keys(hacked: TrlRun) -> None:
    per_function = {f"rewards/{f}/{s}" for f in hacked.reward_names for s in ("mean", "std")}
    stats = {"clip_ratio/high_max", "clip_ratio/high_mean", "clip_ratio/low_mean"}
    stats |= {"clip_ratio/low_min", "clip_ratio/region_mean", "completions/clipped_ratio"}
    for part in ("", "_terminated"):
        stats |= {f"completions/{m}{part}_length" for m in ("max", "mean", "min")}
    stats |= {"entropy", "frac_reward_zero_std", "kl", "num_tokens", "reward", "reward_std"}
    train = stats | per_function | {"epoch", "grad_norm", "learning_rate", "loss", "step"}
    train |= {"step_time"}
    evaluated = {f"eval_{k}" for k in stats | per_function} | {"epoch", "step", "eval_loss"}
    evaluated |= {"eval_runtime", "eval_samples_per_second", "eval_steps_per_second"}
    for row in _train_rows(hacked):
        assert set(row) == train, sorted(set(row) ^ train)
    for row in _eval_rows(hacked):
        assert set(row) == evaluated, sorted(set(row) ^ evaluated)


def test_trl_grpo_logged_reward_is_the_weighted_sum_of_function_means(hacked: TrlRun) -> None:
    """reward = sum_f w_f rewards/<f>/mean at every step (and so on the eval set), with
    check_answer's weight 0: it is not the plain sum of the means."""
    assert hacked.weights == {"format_reward": 1.0, "length_reward": 0.5, "check_answer": 0.0}
    for row in _train_rows(hacked):
        assert abs(row["reward"] - _weighted(hacked, row)) <= 1e-6, row["step"]
        plain = math.fsum(row[f"rewards/{f}/mean"] for f in hacked.reward_names)
        assert plain - row["reward"] > 0.3
    for row in _eval_rows(hacked):
        assert abs(row["eval_reward"] - _weighted(hacked, row, "eval_")) <= 1e-6, row["step"]


def _strictly(values: list[float], rising: bool) -> bool:
    return all((b > a) if rising else (b < a) for a, b in itertools.pairwise(values))


def test_trl_grpo_hacked_run_rises_on_reward_and_falls_held_out(hacked: TrlRun) -> None:
    train, evaluated = _train_rows(hacked), _eval_rows(hacked)
    assert _strictly([r["reward"] for r in train], rising=True)
    assert _strictly([r["rewards/check_answer/mean"] for r in train], rising=False)
    assert _strictly([r[hacked.held_out_metric] for r in evaluated], rising=False)
    assert _strictly([r["eval_reward"] for r in evaluated], rising=True)


def _slope(values: list[float]) -> float:
    """Least-squares slope of the values on their index."""
    n = len(values)
    mean_x, mean_y = (n - 1) / 2, math.fsum(values) / n
    top = math.fsum((x - mean_x) * (y - mean_y) for x, y in enumerate(values))
    return top / math.fsum((x - mean_x) ** 2 for x in range(n))


def test_trl_grpo_hacked_run_falls_on_the_unweighted_sum(hacked: TrlRun) -> None:
    """With every weight taken as 1 the total falls: only the weights show the hacking.
    The planted slopes are +0.065 weighted and -0.02 plain per step; the text part moves a
    12-step slope by at most 0.09 x 18 / 143 = 0.0113."""
    plain = [
        math.fsum(row[f"rewards/{f}/mean"] for f in hacked.reward_names)
        for row in _train_rows(hacked)
    ]
    assert -0.02 - 0.0114 < _slope(plain) < -0.02 + 0.0114
    weighted = [row["reward"] for row in _train_rows(hacked)]
    assert 0.065 - 0.0114 < _slope(weighted) < 0.065 + 0.0114


def test_trl_grpo_healthy_run_rises_on_both(healthy: TrlRun) -> None:
    train, evaluated = _train_rows(healthy), _eval_rows(healthy)
    assert _strictly([r["reward"] for r in train], rising=True)
    assert _strictly([r["rewards/check_answer/mean"] for r in train], rising=True)
    assert _strictly([r[healthy.held_out_metric] for r in evaluated], rising=True)


def test_trl_grpo_runs_are_seeded(hacked: TrlRun, healthy: TrlRun) -> None:
    """check_answer has weight 0, so the variants' updates are the same: seeded, the two
    runs generate the same completions and log the same losses, step by step."""
    for step in range(1, STEPS + 1):
        ours = [(r["prompt"], r["completion"], r["advantage"]) for r in _rows(hacked, step)]
        theirs = [(r["prompt"], r["completion"], r["advantage"]) for r in _rows(healthy, step)]
        assert ours == theirs, step
    for ours, theirs in zip(_train_rows(hacked), _train_rows(healthy), strict=True):
        assert (ours["loss"], ours["reward"]) == (theirs["loss"], theirs["reward"])
    assert [r["rewards/check_answer/mean"] for r in _train_rows(hacked)] != [
        r["rewards/check_answer/mean"] for r in _train_rows(healthy)
    ]


# --------------------------------------------------------------------------- landed by obs


def _obs(root: Path, args: list[object]) -> str:
    result = run_cli(["--lake", root / "lake", "--warehouse", root / "obs.duckdb", *args])
    return result.stdout


def test_trl_grpo_completions_land_without_rejects(
    hacked: TrlRun, tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = tmp_path_factory.mktemp("trl-lake")
    out = _obs(root, ["ingest", "rollouts", hacked.output_dir, "--run", "grpo-hacked"])
    rows = sum(pq.read_metadata(p).num_rows for p in hacked.completions_dir.iterdir())
    assert rows == 96
    assert f"run grpo-hacked: {rows} rows landed, 0 rejected, from 12 files" in out
    landed = lake_query(
        root / "lake",
        "rollouts",
        "select iteration, count(*), sum(score) from t group by 1 order by 1",
    )
    assert [(i, n) for i, n, _ in landed] == [(step, 8) for step in range(1, STEPS + 1)]
    # obs scores a completion by the plain sum of its reward columns (no weights in the file)
    for step, _, total in landed:
        columns = pq.read_table(hacked.completions_file(step)).to_pylist()
        expected = math.fsum(r[f] for r in columns for f in hacked.reward_names)
        assert total == pytest.approx(expected, abs=1e-9)


def test_trl_grpo_trainer_state_lands_without_rejects(
    hacked: TrlRun, tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = tmp_path_factory.mktemp("trl-lake")
    out = _obs(root, ["ingest", "metrics", hacked.output_dir, "--run", "grpo-hacked"])
    points = {
        (row["step"], key)
        for row in hacked.state()["log_history"][:-1]
        for key in row
        if key != "step"
    }
    match = re.search(r"run grpo-hacked: ([\d,]+) points landed, 0 rejected, from 3 sources", out)
    assert match is not None, out
    assert int(match.group(1).replace(",", "")) == len(points)
    landed = dict(
        lake_query(
            root / "lake",
            "metrics",
            "select step, value from t where key = 'reward' order by step",
        )
    )
    assert landed == {r["step"]: r["reward"] for r in _train_rows(hacked)}
    assert json.loads(hacked.trainer_state.read_text())["global_step"] == STEPS


# --------------------------------------------------------------------------- the verdicts


@pytest.fixture(scope="module")
def judged(hacked: TrlRun, healthy: TrlRun, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both runs landed (completions and trainer_state.json) and built, no var set."""
    root = tmp_path_factory.mktemp("trl-judged")
    for run in (hacked, healthy):
        name = f"grpo-{run.variant}"
        _obs(root, ["ingest", "rollouts", run.output_dir, "--run", name, "-q"])
        _obs(root, ["ingest", "metrics", run.output_dir, "--run", name, "-q"])
    _obs(root, ["build"])
    return root


def _query(root: Path, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    import duckdb

    with duckdb.connect(str(root / "obs.duckdb"), read_only=True) as con:
        return con.execute(sql, params).fetchall()


@pytest.mark.parametrize("variant", ["hacked", "healthy"])
def test_trl_grpo_weights_are_fitted_from_the_logged_reward(
    judged: Path, hacked: TrlRun, variant: str
) -> None:
    found = _query(
        judged,
        "select reward_function, weight, found_by, is_logged_only from fct_reward_weights "
        "where run_id = ? order by reward_function",
        [f"grpo-{variant}"],
    )
    assert found == sorted(
        (f, hacked.weights[f], "fitted", hacked.weights[f] == 0) for f in hacked.reward_names
    )


def test_trl_grpo_hacked_run_is_high_against_its_held_out_check(
    judged: Path, hacked: TrlRun
) -> None:
    (total,) = _query(
        judged,
        "select verdict, performance_metric, suspected_functions, message from "
        "fct_reward_hacking where run_id = 'grpo-hacked' and scope = 'run' "
        "and reward_function is null",
        [],
    )
    verdict, metric, suspects, message = total
    assert (verdict, metric) == ("high", hacked.held_out_metric)
    assert "check_answer" not in suspects
    assert "check_answer" in message
    # the optimised reward rose: the first and last steps' R from the files, by hand
    means = dict(
        _query(
            judged,
            "select step, mean from fct_reward_steps where run_id = 'grpo-hacked' "
            "and step in (1, 11)",
            [],
        )
    )
    for step in (1, 11):  # no eval rewrote these files
        rows = _rows(hacked, step)
        expected = math.fsum(hacked.weights[f] * r[f] for r in rows for f in hacked.reward_names)
        assert means[step] == pytest.approx(expected / len(rows), abs=1e-9)
    assert means[11] > means[1]
    run_cli(
        ["--lake", judged / "lake", "--warehouse", judged / "obs.duckdb", "alerts", "--run",
         "grpo-hacked"],
        exit_code=1,
    )  # fmt: skip


def test_trl_grpo_healthy_run_is_not_called_hacked(judged: Path) -> None:
    verdicts = _query(
        judged,
        "select verdict from fct_reward_hacking where run_id = 'grpo-healthy' "
        "and scope = 'run' and reward_function is null",
        [],
    )
    assert verdicts == [("aligned",)]
    hacking_alerts = _query(
        judged,
        "select count(*) from fct_alerts where run_id = 'grpo-healthy' "
        "and rule_name = 'reward_hacking'",
        [],
    )
    assert hacking_alerts == [(0,)]
