"""Reward monitoring marts against the GRPO reward monitor's formulas.

Runs are written as real files (rollout dumps with per-function rewards, a
JSON-lines metric log), landed with `obs ingest` and built with `obs build`;
every mart value is then compared with tests/data/reward_reference.py, a
plain numpy implementation of the monitor's formulas fed with the arrays
the files were written from. The worked example (three samples of two
functions) is checked against numbers worked out by hand.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pytest

from tests.conftest import run_cli
from tests.data import reward_reference as ref

pytestmark = pytest.mark.integration

ITERATIONS = 40
SAMPLES = 16


def _write_run(folder: Path, history: ref.History) -> None:
    """One dump per step: a rollout a sample, its per-function rewards in `rewards`."""
    folder.mkdir(parents=True)
    for step, rewards in history.items():
        names = sorted(rewards)
        with (folder / f"{step}.jsonl").open("w") as handle:
            for i in range(len(rewards[names[0]])):
                values = {f: float(rewards[f][i]) for f in names}
                row = {
                    "input": f"prompt {i // 4}",
                    "output": f"response {i}",
                    "score": math.fsum(values.values()),
                    "rewards": values,
                }
                handle.write(json.dumps(row) + "\n")


def _write_metrics(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _seed_functions(rng: np.random.Generator, step: int, hacked: bool) -> dict[str, np.ndarray]:
    """The monitor's four functions with their ranges; format_approx hacked or honest."""
    n = SAMPLES
    exact = rng.choice([0.0, 3.0], size=n, p=[0.4, 0.6])
    if hacked:  # climbs to its ceiling while the answers get worse
        level = min(2.5, -1.0 + 0.1 * step)
        approx = np.clip(np.round((level + rng.normal(0, 0.5, n)) * 2) / 2, -2.5, 2.5)
        right = min(0.9, max(0.05, 0.7 - 0.015 * step))
    else:
        approx = np.clip(np.round(rng.normal(1.0, 0.8, n) * 2) / 2, -2.5, 2.5)
        right = min(0.9, 0.3 + 0.015 * step)
    answer = np.where(rng.random(n) < right, 3.0, rng.choice([-1.0, 0.0, 0.25, 0.5, 1.5], n))
    numbers = np.full(n, 1.5)  # constant: check_numbers always matches
    return {
        "check_answer": answer,
        "check_numbers": numbers,
        "format_approx": approx,
        "format_exact": exact,
    }


def _alerting_run() -> tuple[ref.History, list[dict]]:
    """Every default alert once: a decline (steps 10-19), zero variance (30-32),
    KL above 0.5 (40-42) and a variance spike (45-46), nothing else."""
    history: ref.History = {}
    for t in range(60):
        mean = 50.0 if t < 10 else 50.0 - 1.0 * (t - 9) if t < 20 else 40.0
        spread = 0.0 if 30 <= t <= 32 else 12.0 if 45 <= t <= 46 else 1.0
        signs = np.array([1.0, -1.0] * 4)
        history[t] = {"a": mean + spread * signs, "b": np.zeros(8)}
    metrics = [{"step": t, "kl": 0.8 if 40 <= t <= 42 else 0.1} for t in range(60)]
    return history, metrics


@dataclass
class Built:
    con: duckdb.DuckDBPyConnection
    histories: dict[str, ref.History]
    performance: dict[str, list[float]]
    lake: Path
    warehouse: Path
    written: dict[str, dict[int, dict[str, float]]]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    root = tmp_path_factory.mktemp("rewards")
    lake, warehouse = root / "lake", root / "warehouse" / "obs.duckdb"
    rng = np.random.default_rng(11)
    histories: dict[str, ref.History] = {
        # the worked example: two functions, three samples, step 42
        "example": {42: {"func1": np.array([1.0, 2.0, 1.5]), "func2": np.array([0.5, 0.7, 0.6])}},
        "hacked": {t: _seed_functions(rng, t, hacked=True) for t in range(ITERATIONS)},
        "clean": {t: _seed_functions(rng, t, hacked=False) for t in range(ITERATIONS)},
    }
    alerting, alerting_metrics = _alerting_run()
    histories["alerting"] = alerting
    performance = {
        "hacked": [0.8 - 0.01 * t + rng.normal(0, 0.004) for t in range(ITERATIONS)],
        "clean": [0.3 + 0.01 * t + rng.normal(0, 0.004) for t in range(ITERATIONS)],
    }
    metrics = {
        "example": [{"step": 42, "training/kl_divergence": 0.05, "training/policy_entropy": 2.3}],
        # a trainer's own reward at a step with no samples: another sum, not taken
        "hacked": [{"step": t, "eval/accuracy": v} for t, v in enumerate(performance["hacked"])]
        + [{"step": 99, "reward": 5.0}],
        "clean": [{"step": t, "eval/accuracy": v} for t, v in enumerate(performance["clean"])],
        "alerting": alerting_metrics,
        # logged aggregates only: the monitor's keys, no samples
        "logged": [
            {
                "step": t,
                "rewards/mean": 1.0 + 0.1 * t,
                "rewards/std": 0.5,
                "rewards/functions/f": 0.4 + 0.1 * t,
                "rewards/functions/f_std": 0.3,
                "rewards/functions/g": 0.6,
                "rewards/functions/g_std": 0.2 + 0.01 * t,
                "contributions/f": 100 * (0.4 + 0.1 * t) / (1.0 + 0.1 * t),
                "contributions/g": 100 * 0.6 / (1.0 + 0.1 * t),
                "training/kl_divergence": 0.01 * t,
            }
            for t in range(12)
        ],
    }
    base = ["--lake", lake, "--warehouse", warehouse]
    # Two runs written by obs.monitor.RewardTracker, landed with `obs ingest
    # monitoring`: one with its samples, one with its logged values only.
    from obs.monitor import RewardTracker

    written: dict[str, dict[int, dict[str, float]]] = {"monitor": {}, "monitor-logged": {}}
    monitored: ref.History = {
        t: {
            "fmt": rng.choice([0.0, 3.0], size=8),
            "ans": rng.normal(0.5 + 0.05 * t, 1.0, size=8),
            "len": rng.uniform(-1.0, 1.0, size=8),
        }
        for t in range(15)
    }
    for run, distributions in (("monitor", True), ("monitor-logged", False)):
        folder = root / "data" / run / "monitoring_data"
        with RewardTracker(
            ["fmt", "ans", "len"], folder, track_distributions=distributions
        ) as tracker:
            for t, rewards in monitored.items():
                written[run][t] = tracker.track_step(
                    t, {f: v.tolist() for f, v in rewards.items()}, kl_divergence=0.01 * t
                )
        run_cli([*base, "ingest", "monitoring", folder, "--run", run, "--quiet"])
    histories["monitor"] = monitored
    # A TRL GRPOTrainer output folder: one column per reward function; a NaN is
    # a function that returned None for the sample (no reward from it).
    completions = root / "data" / "trl" / "completions"
    completions.mkdir(parents=True)
    import pandas as pd

    pd.DataFrame(
        {
            "step": [10, 10, 10],
            "prompt": ["What is 2 + 2?", "What is 2 + 2?", "Name a prime."],
            "completion": ["4", "5", "7"],
            "accuracy_reward": [1.0, 0.0, 1.0],
            "format_reward": [0.5, float("nan"), 1.0],
            "advantage": [0.75, -0.75, 0.0],
        }
    ).to_parquet(completions / "completions_00010.parquet")
    run_cli([*base, "ingest", "rollouts", completions.parent, "--run", "trl", "--quiet"])
    for run, history in histories.items():
        if run == "monitor":
            continue
        _write_run(root / "data" / run, history)
        run_cli([*base, "ingest", "rollouts", root / "data" / run, "--run", run, "--quiet"])
    for run, rows in metrics.items():
        path = root / "data" / f"{run}.metrics.jsonl"
        _write_metrics(path, rows)
        run_cli([*base, "ingest", "metrics", path, "--run", run, "--quiet"])
    run_cli([*base, "build", "--quiet"])
    con = duckdb.connect(str(warehouse), read_only=True)
    yield Built(con, histories, performance, lake, warehouse, written)
    con.close()


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict]:
    cursor = con.execute(sql)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def test_worked_example_by_hand(built: Built) -> None:
    """func1 = [1, 2, 1.5], func2 = [.5, .7, .6]: R = [1.5, 2.7, 2.1]."""
    (step,) = _rows(built.con, "select * from fct_reward_steps where run_id = 'example'")
    assert step["step"] == 42 and step["basis"] == "samples" and step["n"] == 3
    assert step["mean"] == pytest.approx(2.1)
    assert step["std"] == pytest.approx(math.sqrt(0.24))
    assert step["variance"] == pytest.approx(0.24)
    assert (step["min"], step["max"]) == (pytest.approx(1.5), pytest.approx(2.7))
    assert step["total"] == pytest.approx(6.3)
    assert step["signal_to_noise"] == pytest.approx(2.1 / math.sqrt(0.24))
    assert step["signal_to_noise"] == pytest.approx(4.2866, abs=1e-4)
    h = -(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3))
    assert step["entropy"] == pytest.approx(h, abs=1e-8)
    assert step["entropy"] == pytest.approx(0.6365, abs=1e-4)
    assert step["kl_divergence"] == 0.05 and step["policy_entropy"] == 2.3
    assert step["is_zero_variance"] is False
    functions = {
        r["reward_function"]: r
        for r in _rows(
            built.con, "select * from fct_reward_function_steps where run_id = 'example'"
        )
    }
    assert functions["func1"]["contribution_pct"] == pytest.approx(100 * 4.5 / 6.3)
    assert functions["func1"]["contribution_pct"] == pytest.approx(71.43, abs=0.005)
    assert functions["func2"]["contribution_pct"] == pytest.approx(28.57, abs=0.005)
    assert functions["func1"]["mean"] == pytest.approx(1.5)
    assert functions["func1"]["std"] == pytest.approx(math.sqrt(1 / 6))
    assert functions["func2"]["abs_share"] == pytest.approx(0.6 / 2.1)


@pytest.mark.parametrize("run", ["hacked", "clean", "alerting", "monitor"])
def test_step_marts_equal_the_reference(built: Built, run: str) -> None:
    history = built.histories[run]
    steps = {
        r["step"]: r
        for r in _rows(built.con, f"select * from fct_reward_steps where run_id = '{run}'")
    }
    functions = {
        (r["step"], r["reward_function"]): r
        for r in _rows(built.con, f"select * from fct_reward_function_steps where run_id = '{run}'")
    }
    assert sorted(steps) == sorted(history)
    assert len(functions) == sum(len(v) for v in history.values())
    for step, rewards in history.items():
        expected = ref.step_metrics(rewards)
        row = steps[step]
        for key in (
            "n",
            "mean",
            "std",
            "min",
            "max",
            "total",
            "variance",
            "signal_to_noise",
            "entropy",
        ):
            assert ref.close(row[key], expected[key]), (run, step, key, row[key], expected[key])
        for f in rewards:
            got = functions[(step, f)]
            assert got["basis"] == "samples"
            assert ref.close(got["mean"], expected[f"{f}/mean"])
            assert ref.close(got["std"], expected[f"{f}/std"])
            assert ref.close(got["contribution_pct"], expected[f"{f}/contribution"])


@pytest.mark.parametrize("run", ["hacked", "clean", "alerting", "monitor"])
def test_quality_importance_and_correlations_equal_the_reference(built: Built, run: str) -> None:
    history = built.histories[run]
    (quality,) = _rows(built.con, f"select * from fct_reward_quality where run_id = '{run}'")
    expected = ref.quality(history)
    for key, value in expected.items():
        assert ref.close(quality[key], value, rel=1e-9), (run, key, quality[key], value)
    importance = {
        r["reward_function"]: r
        for r in _rows(
            built.con, f"select * from fct_reward_function_importance where run_id = '{run}'"
        )
    }
    for f, values in ref.importance(history).items():
        for key, value in values.items():
            assert ref.close(importance[f][key], value, rel=1e-9), (run, f, key)
    ranks = sorted(importance.values(), key=lambda r: r["rank"])
    impacts = [r["impact_score"] for r in ranks]
    assert impacts == sorted(impacts, reverse=True)
    pairs = {
        (r["function_a"], r["function_b"]): r
        for r in _rows(built.con, f"select * from fct_reward_correlations where run_id = '{run}'")
    }
    for pair, value in ref.correlations(history).items():
        assert ref.close(pairs[pair]["correlation"], value, rel=1e-9), (run, pair)
        assert pairs[pair]["is_redundant"] == (value is not None and abs(value) > 0.9)


def test_constant_function_and_its_texts(built: Built) -> None:
    """check_numbers is always 1.5: no spread, no signal, no coverage, never a suspect."""
    (row,) = _rows(
        built.con,
        "select * from fct_reward_function_quality "
        "where run_id = 'hacked' and reward_function = 'check_numbers'",
    )
    assert row["discriminability"] == 0 and row["coverage"] == 0 and row["consistency"] == 1
    assert "Poor reward discriminability - cannot distinguish quality" in row["issues"]
    assert "Limited reward range coverage - most rewards clustered" in row["warnings"]
    snr = built.con.execute(
        "select max(signal_to_noise), bool_and(is_zero_variance) from fct_reward_function_steps "
        "where run_id = 'hacked' and reward_function = 'check_numbers'"
    ).fetchone()
    assert snr == (0.0, True)


def test_hacked_function_is_named_and_the_clean_run_gets_no_verdict(built: Built) -> None:
    runs = {
        (r["run_id"], r["reward_function"]): r
        for r in _rows(built.con, "select * from fct_reward_hacking where scope = 'run'")
    }
    total = runs[("hacked", None)]
    assert total["verdict"] == "high" and total["seed_verdict"] == "high"
    assert total["suspected_functions"] == ["format_approx"]
    assert runs[("hacked", "format_approx")]["verdict"] == "high"
    for f in ("check_numbers", "format_exact"):  # honest and flat: never named
        assert runs[("hacked", f)]["verdict"] == "aligned"
    # the monitor's run verdict on the aligned series, recomputed
    history = built.histories["hacked"]
    totals = [ref.step_metrics(history[t])["mean"] for t in sorted(history)]
    assert total["seed_verdict"] == ref.seed_hacking(totals, built.performance["hacked"])
    clean = _rows(
        built.con,
        "select * from fct_reward_hacking where run_id = 'clean' and verdict in ('high', 'medium')",
    )
    assert clean == []
    assert runs[("alerting", None)]["verdict"] == "no_performance_metric"
    # the hacked function is flagged in its windows: from the first full window on
    windows = _rows(
        built.con,
        "select window_start_step, window_end_step, verdict from fct_reward_hacking "
        "where run_id = 'hacked' and reward_function = 'format_approx' and scope = 'window' "
        "order by window_end_step",
    )
    assert [w["window_end_step"] for w in windows] == list(range(19, ITERATIONS))
    assert windows[0]["window_start_step"] == 0
    high = [w for w in windows if w["verdict"] == "high"]
    assert len(high) >= len(windows) // 2


def test_default_alerts_fire_once_at_their_episode_start(built: Built) -> None:
    history = built.histories["alerting"]
    steps = sorted(history)
    series = {
        metric: [(t, ref.step_metrics(history[t])[metric]) for t in steps]
        for metric in ("mean", "signal_to_noise", "variance")
    }
    series["kl_divergence"] = [(t, 0.8 if 40 <= t <= 42 else 0.1) for t in steps]
    expected = ref.alerts(series).fired
    got = [
        (r["rule_name"], r["step"])
        for r in _rows(
            built.con, "select * from fct_alerts where run_id = 'alerting' order by step, rule_name"
        )
    ]
    assert sorted(got) == sorted(expected)
    assert sorted(name for name, _ in got) == [
        "high_kl_divergence",
        "high_reward_variance",
        "low_signal_to_noise",
        "mean_reward_declining",
    ]
    assert ("low_signal_to_noise", 30) in got and ("high_kl_divergence", 40) in got
    assert ("high_reward_variance", 45) in got
    messages = dict(
        built.con.execute(
            "select rule_name, message from fct_alerts where run_id = 'alerting'"
        ).fetchall()
    )
    assert messages["low_signal_to_noise"] == (
        "signal_to_noise (0.0000) less than threshold (0.5000)"
    )
    assert (
        messages["high_kl_divergence"] == "kl_divergence (0.8000) greater than threshold (0.5000)"
    )
    assert messages["mean_reward_declining"].startswith("mean_reward trend slope (")
    assert messages["mean_reward_declining"].endswith(") below minimum (-0.010000)")
    hacking = _rows(
        built.con,
        "select * from fct_alerts where run_id = 'hacked' and rule_name = 'reward_hacking'",
    )
    first_high = built.con.execute(
        "select min(window_end_step) from fct_reward_hacking where run_id = 'hacked' "
        "and reward_function is null and scope = 'window' and verdict = 'high'"
    ).fetchone()[0]
    assert hacking and hacking[0]["step"] == first_high and hacking[0]["level"] == "critical"
    assert "(suspected: format_approx)" in hacking[0]["message"]
    assert (
        _rows(built.con, "select * from fct_alerts where run_id = 'clean' and level = 'critical'")
        == []
    )


def test_anomalies_equal_the_reference(built: Built) -> None:
    for run in ("hacked", "alerting"):
        history = built.histories[run]
        means = [ref.step_metrics(history[t])["mean"] for t in sorted(history)]
        flags = [
            r[0]
            for r in built.con.execute(
                f"select is_anomaly from fct_reward_anomalies where run_id = '{run}' order by step"
            ).fetchall()
        ]
        assert flags == ref.anomalies(means)
    assert (
        built.con.execute(
            "select count(*) from fct_reward_anomalies where run_id = 'alerting' and is_anomaly"
        ).fetchone()[0]
        > 0
    )


def test_logged_aggregates_only(built: Built) -> None:
    steps = _rows(built.con, "select * from fct_reward_steps where run_id = 'logged' order by step")
    assert [s["step"] for s in steps] == list(range(12))
    assert {s["basis"] for s in steps} == {"logged"}
    assert steps[3]["mean"] == pytest.approx(1.3) and steps[3]["std"] == 0.5
    assert steps[3]["signal_to_noise"] == pytest.approx(1.3 / 0.5)
    assert steps[3]["kl_divergence"] == pytest.approx(0.03)
    assert steps[3]["entropy"] is None and steps[3]["min"] is None
    f = _rows(
        built.con,
        "select * from fct_reward_function_steps where run_id = 'logged' and step = 3 "
        "order by reward_function",
    )
    assert [r["reward_function"] for r in f] == ["f", "g"]
    assert f[0]["mean"] == pytest.approx(0.7) and f[0]["std"] == 0.3
    assert f[0]["contribution_pct"] == pytest.approx(100 * 0.7 / 1.3)
    assert f[0]["n"] is None and f[0]["total"] is None
    (quality,) = _rows(built.con, "select * from fct_reward_quality where run_id = 'logged'")
    assert quality["basis"] == "logged"
    assert quality["coverage"] is None and quality["quality_score"] is None
    # consistency from the step means alone: f's means 0.4..1.5, g's constant
    f_means = np.array([0.4 + 0.1 * t for t in range(12)])
    cv = (np.std(f_means) / np.mean(f_means) + 0.0) / 2
    assert quality["consistency"] == pytest.approx(1 / (1 + cv))
    # discriminability by the law of total variance: pooled std from the logged stds
    g_stds = np.array([0.2 + 0.01 * t for t in range(12)])
    f_cv = math.sqrt(0.09 + np.var(f_means)) / np.mean(f_means)
    g_cv = math.sqrt(np.mean(g_stds**2)) / 0.6
    assert quality["discriminability"] == pytest.approx(min(1.0, (f_cv + g_cv) / 2 / 2))


@pytest.mark.parametrize("run", ["monitor", "monitor-logged"])
def test_monitor_runs_equal_what_the_tracker_logged(built: Built, run: str) -> None:
    """A run landed from the monitor's files gives back the values its writer logged,
    from the samples (track_distributions) or from the logged values alone."""
    steps = {
        r["step"]: r
        for r in _rows(built.con, f"select * from fct_reward_steps where run_id = '{run}'")
    }
    functions = {
        (r["step"], r["reward_function"]): r
        for r in _rows(built.con, f"select * from fct_reward_function_steps where run_id = '{run}'")
    }
    assert sorted(steps) == list(range(15))
    basis = "samples" if run == "monitor" else "logged"
    assert {r["basis"] for r in steps.values()} == {basis}
    for t, logged in built.written[run].items():
        row = steps[t]
        pairs = {
            "mean": "rewards/mean",
            "std": "rewards/std",
            "min": "rewards/min",
            "max": "rewards/max",
            "total": "rewards/total",
            "variance": "rewards/variance",
            "signal_to_noise": "rewards/signal_to_noise",
            "entropy": "rewards/entropy",
            "kl_divergence": "training/kl_divergence",
        }
        for column, key in pairs.items():
            assert ref.close(row[column], logged[key]), (run, t, column)
        for f in ("fmt", "ans", "len"):
            got = functions[(t, f)]
            assert ref.close(got["mean"], logged[f"rewards/functions/{f}"])
            assert ref.close(got["std"], logged[f"rewards/functions/{f}_std"])
            assert ref.close(got["contribution_pct"], logged.get(f"contributions/{f}"))
    (quality,) = _rows(built.con, f"select * from fct_reward_quality where run_id = '{run}'")
    if run == "monitor-logged":
        assert quality["quality_score"] is None and quality["coverage"] is None
    else:
        assert ref.close(
            quality["quality_score"], ref.quality(built.histories["monitor"])["quality_score"]
        )


def test_trl_completions_by_hand(built: Built) -> None:
    """accuracy [1, 0, 1], format [.5, None, 1]: R = [1.5, 0, 2], worked out by hand."""
    (step,) = _rows(built.con, "select * from fct_reward_steps where run_id = 'trl'")
    assert (step["step"], step["basis"], step["n"]) == (10, "samples", 3)
    assert step["mean"] == pytest.approx(3.5 / 3)
    assert step["total"] == pytest.approx(3.5)
    assert (step["min"], step["max"]) == (0.0, 2.0)
    assert step["std"] == pytest.approx(np.std([1.5, 0.0, 2.0]))
    functions = {
        r["reward_function"]: r
        for r in _rows(built.con, "select * from fct_reward_function_steps where run_id = 'trl'")
    }
    assert sorted(functions) == ["accuracy_reward", "format_reward"]
    assert functions["accuracy_reward"]["n"] == 3
    assert functions["accuracy_reward"]["mean"] == pytest.approx(2 / 3)
    assert functions["format_reward"]["n"] == 2  # the None is no sample
    assert functions["format_reward"]["mean"] == pytest.approx(0.75)
    assert functions["accuracy_reward"]["contribution_pct"] == pytest.approx(100 * 2 / 3.5)
    assert functions["format_reward"]["contribution_pct"] == pytest.approx(100 * 1.5 / 3.5)
