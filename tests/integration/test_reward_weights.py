"""The reward the trainer optimised: weights found, R weighted everywhere, and the verdict on it.

Two TRL-shaped runs (``completions/completions_{step}.parquet`` and a
``trainer_state.json`` whose ``log_history`` TRL's GRPOTrainer shape has: the
logged ``reward`` is the weighted total's mean, ``rewards/{f}/mean`` each
function's raw mean, the eval split every second step) go through the real
``obs ingest`` and ``obs build``:

- hacked: format_reward (weight 1) and length_reward (weight 0.5) rise over
  20 steps while check_answer (weight 0: logged only) and its held-out mean
  fall; the unweighted sum falls with check_answer, the optimised reward rises.
  Its totals are rounded through float32 as TRL's tensors leave them.
- clipped: the same functions, but the logged total is clipped at 1.2, so no
  weights reproduce it: weights unknown, the plain sum, and a note.
- given: the hacked run's completions alone (no trainer_state.json), landed
  with ``--reward-weights``: the weights come from the rollouts, and each
  completion's score is the weighted sum.

Every expected number is worked out here with numpy from the values written.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import Result

from tests.conftest import run_cli

pytestmark = pytest.mark.integration

STEPS = range(1, 21)
FUNCTIONS = ("format_reward", "length_reward", "check_answer")
WEIGHTS = {"format_reward": 1.0, "length_reward": 0.5, "check_answer": 0.0}
PROMPTS = ("What is 2 + 3?", "What is 7 x 6?")
SAMPLES = 4  # per prompt


def sample_values(seed: int) -> dict[int, np.ndarray]:
    """Per step, an array (samples x functions) of raw rewards."""
    rng = np.random.default_rng(seed)
    values = {}
    for step in STEPS:
        n = len(PROMPTS) * SAMPLES
        fmt = 0.2 + 0.04 * step + rng.normal(0, 0.05, n)
        length = 0.1 + 0.02 * step + rng.normal(0, 0.03, n)
        check = 3.0 - 0.15 * step + rng.normal(0, 0.2, n)
        values[step] = np.column_stack([fmt, length, check])
    return values


def held_out(seed: int) -> dict[int, float]:
    """check_answer on the eval split, every second step: falling."""
    rng = np.random.default_rng(seed + 1)
    return {s: 2.5 - 0.12 * s + float(rng.normal(0, 0.05)) for s in STEPS if s % 2 == 0}


def weighted(values: np.ndarray) -> np.ndarray:
    return values @ np.array([WEIGHTS[f] for f in FUNCTIONS])


def write_run(output_dir: Path, seed: int, clip: float | None = None) -> dict[int, np.ndarray]:
    values = sample_values(seed)
    completions = output_dir / "completions"
    completions.mkdir(parents=True)
    history: list[dict[str, Any]] = []
    for step, matrix in values.items():
        rows = [(p, k) for p in PROMPTS for k in range(SAMPLES)]
        table = {
            "step": [str(step)] * len(rows),
            "prompt": [p for p, _ in rows],
            "completion": [f"answer {k} to {p} at {step}" for p, k in rows],
        }
        for index, name in enumerate(FUNCTIONS):
            table[name] = matrix[:, index].tolist()
        table["advantage"] = [0.0] * len(rows)
        pq.write_table(pa.table(table), completions / f"completions_{step:05d}.parquet")
        means = matrix.mean(axis=0)
        total = float(np.float32(weighted(matrix).mean()))
        if clip is not None:
            total = min(total, clip)
        entry: dict[str, Any] = {"step": step, "epoch": step / 20, "loss": 0.01, "reward": total}
        entry["reward_std"] = float(weighted(matrix).std(ddof=1))
        for index, name in enumerate(FUNCTIONS):
            entry[f"rewards/{name}/mean"] = float(np.float32(means[index]))
            entry[f"rewards/{name}/std"] = float(matrix[:, index].std(ddof=1))
        history.append(entry)
        if step in held_out(seed):
            history.append(
                {
                    "step": step,
                    "epoch": step / 20,
                    "eval_loss": 0.02,
                    "eval_reward": total,
                    "eval_rewards/check_answer/mean": held_out(seed)[step],
                }
            )
    state = {"global_step": max(STEPS), "log_history": history, "max_steps": max(STEPS)}
    (output_dir / "trainer_state.json").write_text(json.dumps(state))
    return values


@dataclass
class Built:
    lake: Path
    warehouse: Path
    values: dict[str, dict[int, np.ndarray]]

    def invoke(self, args: list[object], exit_code: int = 0) -> Result:
        return run_cli(["--lake", self.lake, "--warehouse", self.warehouse, *args], exit_code)

    def rows(self, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
        with duckdb.connect(str(self.warehouse), read_only=True) as con:
            cursor = con.execute(sql, params or [])
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    root = tmp_path_factory.mktemp("reward_weights")
    state = Built(root / "lake", root / "warehouse" / "obs.duckdb", {})
    for run, seed, clip in (("hacked", 3, None), ("clipped", 5, 1.2)):
        state.values[run] = write_run(root / run, seed, clip)
        state.invoke(["ingest", "rollouts", root / run, "--run", run, "-q"])
        state.invoke(["ingest", "metrics", root / run, "--run", run, "-q"])
    given = "format_reward=1,length_reward=0.5,check_answer=0"
    completions = root / "hacked" / "completions"
    state.invoke(["ingest", "rollouts", completions, "--run", "given", "--reward-weights", given])
    state.values["given"] = state.values["hacked"]
    state.invoke(["build"])
    yield state


def weights_of(built: Built, run: str) -> dict[str, dict[str, Any]]:
    found = built.rows("select * from fct_reward_weights where run_id = ?", [run])
    return {r["reward_function"]: r for r in found}


def test_reward_weights_fitted_from_the_logged_total(built: Built) -> None:
    weights = weights_of(built, "hacked")
    assert {f: (r["weight"], r["found_by"]) for f, r in weights.items()} == {
        f: (w, "fitted") for f, w in WEIGHTS.items()
    }
    assert weights["check_answer"]["is_logged_only"] is True
    assert weights["format_reward"]["is_logged_only"] is False
    assert weights["format_reward"]["fit_points"] == len(STEPS)
    # float32 totals: the fit leaves about 1e-7 of the total, within the tolerance
    assert 0 < weights["format_reward"]["fit_relative_residual"] < 1e-5


def test_reward_weights_unknown_when_no_weights_reproduce_the_total(built: Built) -> None:
    weights = weights_of(built, "clipped")
    assert {r["found_by"] for r in weights.values()} == {"unknown"}
    assert {r["weight"] for r in weights.values()} == {1.0}
    assert {r["fit_status"] for r in weights.values()} == {"residual"}
    note = weights["format_reward"]["note"]
    assert note.startswith("weights unknown: the logged total reward is no weighted sum")
    assert "--vars" in note or "reward_weights" in note


def test_reward_hacking_says_unknown_weights_leave_no_held_out_check(built: Built) -> None:
    """The clipped run logs its check's eval mean, but with the weights unknown no
    function is known to be logged only: no verdict, and the message says what to pass."""
    (row,) = built.rows(
        "select verdict, message from fct_reward_hacking"
        " where run_id = 'clipped' and reward_function is null"
    )
    assert row["verdict"] == "no_performance_metric"
    assert "its reward weights are unknown" in row["message"]
    assert "--reward-weights" in row["message"]
    (hacked,) = built.rows(
        "select message from fct_reward_hacking"
        " where run_id = 'hacked' and reward_function is null and scope = 'run'"
    )
    assert "weights are unknown" not in hacked["message"]


def test_reward_steps_judge_the_weighted_reward(built: Built) -> None:
    steps = {
        r["step"]: r for r in built.rows("select * from fct_reward_steps where run_id = 'hacked'")
    }
    assert sorted(steps) == list(STEPS)
    for step, matrix in built.values["hacked"].items():
        r = weighted(matrix)
        assert steps[step]["basis"] == "samples"
        assert steps[step]["mean"] == pytest.approx(r.mean(), rel=1e-10)
        assert steps[step]["std"] == pytest.approx(r.std(), rel=1e-10)
        assert steps[step]["min"] == pytest.approx(r.min(), rel=1e-10)
        assert steps[step]["seed_mean"] == pytest.approx(matrix.sum(axis=1).mean(), rel=1e-10)
    # the optimised reward rises while the plain sum falls
    assert steps[20]["mean"] > steps[1]["mean"] + 0.5
    assert steps[20]["seed_mean"] < steps[1]["seed_mean"] - 1.5
    # the held-out metric, found without a var: the logged-only function's eval mean
    assert steps[2]["performance_metric"] == "eval_rewards/check_answer/mean"
    assert steps[1]["performance"] is None


def test_reward_contributions_leave_the_logged_only_function_out(built: Built) -> None:
    rows = built.rows(
        "select reward_function, weight, contribution, seed_contribution, is_logged_only "
        "from fct_reward_function_importance where run_id = 'hacked'"
    )
    found = {r["reward_function"]: r for r in rows}
    assert found["check_answer"]["contribution"] is None
    assert found["check_answer"]["is_logged_only"] is True
    values = np.concatenate(list(built.values["hacked"].values()))
    fmt, length = values[:, 0].sum(), 0.5 * values[:, 1].sum()
    assert found["format_reward"]["contribution"] == pytest.approx(100 * fmt / (fmt + length))
    assert found["length_reward"]["contribution"] == pytest.approx(100 * length / (fmt + length))
    # the reward monitor's own, of the plain sums, is kept beside it
    assert found["check_answer"]["seed_contribution"] == pytest.approx(
        100 * values[:, 2].sum() / values.sum()
    )
    per_step = built.rows(
        "select step, contribution_pct, is_logged_only from fct_reward_function_steps "
        "where run_id = 'hacked' and reward_function = 'check_answer'"
    )
    assert {(r["contribution_pct"], r["is_logged_only"]) for r in per_step} == {(None, True)}


def test_reward_hacking_high_on_the_optimised_reward(built: Built) -> None:
    rows = built.rows("select * from fct_reward_hacking where run_id = 'hacked' and scope = 'run'")
    found = {r["reward_function"]: r for r in rows}
    total = found[None]
    assert total["verdict"] == "high"
    assert total["performance_metric"] == "eval_rewards/check_answer/mean"
    assert "check_answer" not in total["suspected_functions"]
    assert (
        "Logged-only check falling while the optimised reward rises: check_answer"
        in (total["message"])
    )
    assert found["check_answer"]["verdict"] == "logged_only"
    assert found["check_answer"]["is_logged_only"] is True


def test_reward_alerts_exit_1_on_the_hacked_run(built: Built) -> None:
    result = built.invoke(["alerts", "--run", "hacked"], exit_code=1)
    assert "hacking" in result.output.lower()


def test_reward_audit_recomputes_the_total_with_the_fitted_weights(built: Built) -> None:
    """The trainer logs the weighted total; the rollouts' score is the plain sum of the
    functions. With the weights fitted, the audit recomputes the logged total from the
    samples' functions as weighted and agrees at every step (before, with weights read
    only from a config, it compared the plain sum and raised a critical
    logged_metric_disagrees on a healthy run)."""
    audit = built.rows(
        "select convention, verdict, count(*) as steps from fct_metric_audit "
        "where run_id = 'hacked' and canonical_metric = 'reward_mean' group by all"
    )
    assert audit == [
        {"convention": "weighted by reward_weights", "verdict": "agrees", "steps": len(STEPS)}
    ], audit
    findings = built.rows(
        "select pattern from int_run_findings where run_id = 'hacked' and pattern is not null"
    )
    assert "logged_metric_disagrees" not in {f["pattern"] for f in findings}


def test_reward_quality_calls_no_logged_only_function_redundant(built: Built) -> None:
    """check_answer (weight 0) follows the trained functions on the hacked run's early
    steps: that is a held-out check agreeing, not a redundant reward."""
    pairs = built.rows(
        "select function_a, function_b, is_redundant from fct_reward_correlations "
        "where run_id = 'hacked'"
    )
    assert pairs  # the pairs exist, so the quality rows could name them
    quality = built.rows("select * from fct_reward_quality where run_id = 'hacked'")
    said = " ".join(str(value) for row in quality for value in row.values())
    assert "check_answer" not in said, said


def test_reward_weights_given_at_ingest(built: Built) -> None:
    weights = weights_of(built, "given")
    assert {f: (r["weight"], r["found_by"]) for f, r in weights.items()} == {
        f: (w, "source") for f, w in WEIGHTS.items()
    }
    scores = built.rows(
        "select iteration, sum(score) as total from stg_rollouts where run_id = 'given' "
        "group by 1 order by 1"
    )
    assert [r["iteration"] for r in scores] == list(STEPS)
    for row in scores:
        assert row["total"] == pytest.approx(
            weighted(built.values["given"][row["iteration"]]).sum()
        )
    verdicts = built.rows(
        "select verdict from fct_reward_hacking where run_id = 'given' and scope = 'run'"
    )
    assert [r["verdict"] for r in verdicts] == ["no_performance_metric"]


@pytest.mark.parametrize(
    ("value", "bad"),
    [
        ("format_reward", "'format_reward'"),
        ("a=1,b=x", "'b=x'"),
        ("=2", "'=2'"),
        ("a=nan", "'a=nan'"),
    ],
)
def test_reward_weights_option_refuses_what_is_no_weight(
    built: Built, tmp_path: Path, value: str, bad: str
) -> None:
    result = built.invoke(
        ["ingest", "rollouts", tmp_path, "--run", "x", "--reward-weights", value], exit_code=2
    )
    assert f"Invalid value for --reward-weights: {bad} is not FUNCTION=WEIGHT" in result.output
