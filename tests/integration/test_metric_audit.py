"""`fct_metric_audit`, its finding and `obs audit`, on runs written at test time.

Four runs go through the real `obs ingest` and `obs build`, each with rollouts
and a tracker history under one run id:
- verl-planted: verl V1 dumps ``{N}.jsonl`` (steps 1-5, four uid groups of four)
  and verl's file-logger metrics.jsonl (``{"step": N, "data": {...}}``) whose
  values are the dumps' own, except critic/score/mean at step 2 (+0.1) and
  critic/score/std at step 4 (0.3);
- verl-clean: the same dumps and honest metrics (sample std, as torch.std);
- verl-population: the same dumps, the reward monitor's keys (rewards/mean,
  rewards/std) with the population std;
- trl-weighted: TRL completions_{N}.parquet with two reward functions and an
  MLflow run whose params hold reward_weights [2.0, 0.5] and whose `reward`
  is the weighted total's mean, as TRL logs it.

Every step's rollouts are the same, so the values are worked out once here.
verl: scores per group A 1,1,1,1; B 0,0,0,0; C 1,0,1,0; D 1,1,1,0: mean 9/16,
population variance 9/16 - (9/16)^2 = 63/256, sample variance 63/256 x 16/15;
zero-std groups A and B: 2/4; solved all A, none B, some C and D.
TRL (weights 2 and 0.5): prompt P1 four times (accuracy 1, format 1): weighted
2.5 each; P2 (1,0), (0,1), (0,0), (1,0): weighted 2, 0.5, 0, 2. Weighted mean
14.5/8, unweighted (scores 2,2,2,2,1,1,0,1) 11/8; accuracy mean 6/8, format
5/8; zero-std groups: P1 only, 1/2.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import Result

from tests.conftest import run_cli
from tests.data.run_writers import verl_uid, write_verl_dump

pytestmark = pytest.mark.integration

STEPS = range(1, 6)
GROUPS = {"A": (1, 1, 1, 1), "B": (0, 0, 0, 0), "C": (1, 0, 1, 0), "D": (1, 1, 1, 0)}
VERL_MEAN = 9 / 16
VERL_STD_POPULATION = math.sqrt(63 / 256)
VERL_STD_SAMPLE = math.sqrt(63 / 256 * 16 / 15)
PLANTED = {2: ("critic/score/mean", VERL_MEAN + 0.1), 4: ("critic/score/std", 0.3)}

TRL_ROWS = {  # prompt -> (accuracy, format) per completion
    "P1": ((1, 1), (1, 1), (1, 1), (1, 1)),
    "P2": ((1, 0), (0, 1), (0, 0), (1, 0)),
}
TRL_WEIGHTS = (2.0, 0.5)
TRL_WEIGHTED = (2.5, 2.5, 2.5, 2.5, 2.0, 0.5, 0.0, 2.0)
TRL_WEIGHTED_MEAN = 14.5 / 8
TRL_UNWEIGHTED_MEAN = 11 / 8
# sum of squared deviations from 14.5/8: 4 x 0.6875^2 + 2 x 0.1875^2 + 1.3125^2 + 1.8125^2
TRL_WEIGHTED_STD = math.sqrt(6.96875 / 7)


# --------------------------------------------------------------------------- the runs


def write_verl_dumps(folder: Path) -> Path:
    for step in STEPS:
        rows = []
        for prompt, (name, scores) in enumerate(GROUPS.items()):
            for session, score in enumerate(scores):
                rows.append(
                    {
                        "input": f"question {name}",
                        "output": f"answer {session} of {name} at {step}",
                        "gts": "1",
                        "score": float(score),
                        "uid": verl_uid(prompt, session, step=step),
                    }
                )
        write_verl_dump(folder, step, rows)
    return folder


def write_verl_metrics(path: Path, std: float, planted: bool, keys: str = "verl") -> Path:
    """verl's file logger (``{"step": N, "data": {...}}``), or the monitor's flat keys."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for step in STEPS:
        values = {
            "critic/score/mean": VERL_MEAN,
            "critic/score/std": std,
            "actor/pg_loss": 0.01 * step,
            "response_length/clip_ratio": 0.0,
        }
        if planted and step in PLANTED:
            key, value = PLANTED[step]
            values[key] = value
        if keys == "verl":
            lines.append(json.dumps({"step": step, "data": values}))
        else:
            flat = {"step": step, "rewards/mean": VERL_MEAN, "rewards/std": std}
            lines.append(json.dumps(flat))
    path.write_text("\n".join(lines) + "\n")
    return path


def write_trl_completions(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for step in STEPS:
        prompts, completions, accuracy, fmt = [], [], [], []
        for prompt, pairs in TRL_ROWS.items():
            for number, (acc, form) in enumerate(pairs):
                prompts.append(f"solve {prompt}")
                completions.append(f"completion {number} of {prompt} at {step}")
                accuracy.append(float(acc))
                fmt.append(float(form))
        table = pa.table(
            {
                "step": [str(step)] * len(prompts),
                "prompt": prompts,
                "completion": completions,
                "accuracy": accuracy,
                "format": fmt,
                "advantage": [0.0] * len(prompts),
            }
        )
        pq.write_table(table, folder / f"completions_{step}.parquet")
    return folder


def write_trl_mlflow(root: Path) -> Path:
    """An MLflow file store as TRL's MLflow callback leaves it: the arguments as params."""
    from mlflow.tracking import MlflowClient

    store = root / "mlruns"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 writes file stores only so
        client = MlflowClient(tracking_uri=store.resolve().as_uri())
        experiment = client.create_experiment("trl")
        run = client.create_run(experiment, run_name="trl-weighted").info.run_id
        _log(client, run)
    return store


def _log(client: Any, run: str) -> None:
    from mlflow.entities import Metric, Param

    params = [Param("reward_weights", str(list(TRL_WEIGHTS))), Param("learning_rate", "1e-06")]
    metrics = []
    for step in STEPS:
        values = {
            "reward": TRL_WEIGHTED_MEAN,
            "reward_std": TRL_WEIGHTED_STD,
            "rewards/accuracy/mean": 6 / 8,
            "rewards/format/mean": 5 / 8,
            "frac_reward_zero_std": 0.5,
        }
        metrics += [Metric(k, v, 1_700_000_000_000 + step, step) for k, v in values.items()]
    client.log_batch(run, metrics=metrics, params=params)
    client.set_terminated(run)


@dataclass
class Built:
    lake: Path
    warehouse: Path

    def invoke(self, args: list[object], exit_code: int = 0) -> Result:
        return run_cli(["--lake", self.lake, "--warehouse", self.warehouse, *args], exit_code)

    def rows(self, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
        with duckdb.connect(str(self.warehouse), read_only=True) as con:
            cursor = con.execute(sql, params or [])
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    root = tmp_path_factory.mktemp("metric_audit")
    state = Built(root / "lake", root / "warehouse" / "obs.duckdb")
    dumps = write_verl_dumps(root / "verl" / "rollout_data")
    for run, std, planted, keys in (
        ("verl-planted", VERL_STD_SAMPLE, True, "verl"),
        ("verl-clean", VERL_STD_SAMPLE, False, "verl"),
        ("verl-population", VERL_STD_POPULATION, False, "monitor"),
    ):
        metrics = write_verl_metrics(root / run / "metrics.jsonl", std, planted, keys)
        state.invoke(["ingest", "rollouts", dumps, "--run", run, "-q"])
        state.invoke(["ingest", "metrics", metrics, "--run", run, "-q"])
    completions = write_trl_completions(root / "trl" / "completions")
    state.invoke(["ingest", "rollouts", completions, "--run", "trl-weighted", "-q"])
    state.invoke(
        ["ingest", "metrics", write_trl_mlflow(root / "trl"), "--run", "trl-weighted", "-q"]
    )
    # one side only, for the one-line answers
    state.invoke(["ingest", "rollouts", dumps, "--run", "dumps-only", "-q"])
    state.invoke(["build"])
    yield state


def _audit(built: Built, run: str) -> dict[tuple[int, str], dict[str, Any]]:
    found = built.rows("select * from fct_metric_audit where run_id = ?", [run])
    return {(r["step"], r["metric"]): r for r in found}


# --------------------------------------------------------------------------- the mart


def test_metric_audit_verl_planted_steps_and_only_those_disagree(built: Built) -> None:
    audit = _audit(built, "verl-planted")
    disagreeing = sorted((s, m) for (s, m), r in audit.items() if r["verdict"] == "disagrees")
    assert disagreeing == [(2, "critic/score/mean"), (4, "critic/score/std")]
    for step in STEPS:
        mean = audit[(step, "critic/score/mean")]
        assert mean["recomputed_value"] == pytest.approx(VERL_MEAN)
        assert mean["convention"] == "score"
        std = audit[(step, "critic/score/std")]
        if step != 4:
            assert std["verdict"] == "agrees"
            assert std["recomputed_value"] == pytest.approx(VERL_STD_SAMPLE)
            assert std["convention"] == "sample std (ddof 1)"
    assert audit[(2, "critic/score/mean")]["difference"] == pytest.approx(0.1)
    # no token counts and no max length in any config: shown, never compared
    clip = audit[(1, "response_length/clip_ratio")]
    assert clip["verdict"] == "not_comparable"
    assert clip["convention"] == "no max length in the run config"
    assert (1, "actor/pg_loss") not in audit


def test_metric_audit_step_alignment_is_iteration_equals_step(built: Built) -> None:
    """Dump N against tracker step N: a shift by one would move or multiply the planted steps."""
    audit = _audit(built, "verl-clean")
    assert {s for s, _ in audit} == set(STEPS)
    assert all(r["verdict"] != "disagrees" for r in audit.values())


def test_metric_audit_std_convention_is_named_not_a_disagreement(built: Built) -> None:
    audit = _audit(built, "verl-population")
    for step in STEPS:
        std = audit[(step, "rewards/std")]
        assert std["verdict"] == "agrees"
        assert std["convention"] == "population std (ddof 0)"
        assert std["recomputed_value"] == pytest.approx(VERL_STD_POPULATION)
        assert audit[(step, "rewards/mean")]["verdict"] == "agrees"


def test_metric_audit_trl_weighted_reward_agrees_under_the_weights(built: Built) -> None:
    audit = _audit(built, "trl-weighted")
    for step in STEPS:
        reward = audit[(step, "reward")]
        assert reward["verdict"] == "agrees"
        assert reward["convention"] == "weighted by reward_weights"
        assert reward["recomputed_value"] == pytest.approx(TRL_WEIGHTED_MEAN)
        std = audit[(step, "reward_std")]
        assert (std["verdict"], std["convention"]) == ("agrees", "weighted, sample std (ddof 1)")
        accuracy = audit[(step, "rewards/accuracy/mean")]
        assert (accuracy["verdict"], accuracy["reward_function"]) == ("agrees", "accuracy")
        assert audit[(step, "rewards/format/mean")]["recomputed_value"] == pytest.approx(5 / 8)
        zero = audit[(step, "frac_reward_zero_std")]
        assert zero["verdict"] == "agrees"
        assert zero["recomputed_value"] == pytest.approx(0.5)
        assert zero["convention"].startswith("groups by prompt")
    # the unweighted mean is the other convention, and would not have agreed
    assert abs(TRL_WEIGHTED_MEAN - TRL_UNWEIGHTED_MEAN) > 0.1


# --------------------------------------------------------------------------- the finding


def test_logged_metric_disagrees_names_the_metrics_and_steps(built: Built) -> None:
    found = built.rows(
        "select * from fct_run_findings where pattern = 'logged_metric_disagrees' order by run_id"
    )
    assert [f["run_id"] for f in found] == ["verl-planted"]
    finding = found[0]
    assert finding["severity"] == "critical"  # the reward itself disagrees
    assert (finding["first_step"], finding["last_step"], finding["flagged_steps"]) == (2, 4, 2)
    assert finding["summary"] == (
        "Logged metrics disagree with the rollouts: "
        "critic/score/mean at step 2; critic/score/std at step 4."
    )
    evidence = json.loads(finding["evidence"])
    assert evidence["metrics"]["critic/score/mean"]["steps"] == [2]
    assert evidence["metrics"]["critic/score/std"]["steps"] == [4]
    assert any("reward_weights" in h for h in finding["hypotheses"])


# --------------------------------------------------------------------------- obs audit


def test_audit_exits_1_and_names_the_worst_step(built: Built) -> None:
    out = built.invoke(["audit", "verl-planted"], exit_code=1).stdout.splitlines()
    assert out[0] == "Metric audit: verl-planted"
    mean = next(line for line in out if line.startswith("critic/score/mean "))
    assert mean.split()[2:5] == ["5", "4", "1"]
    assert " 2 (0.1)" in mean
    data = json.loads(built.invoke(["audit", "verl-planted", "--format", "json"], 1).stdout)
    assert data["disagrees"] is True
    by_metric = {m["metric"]: m for m in data["metrics"]}
    assert by_metric["critic/score/std"]["disagreeing_steps"] == [4]
    assert by_metric["critic/score/std"]["convention"] == "sample std (ddof 1)"


@pytest.mark.parametrize("run", ["verl-clean", "verl-population", "trl-weighted"])
def test_audit_exits_0_when_everything_agrees(built: Built, run: str) -> None:
    data = json.loads(built.invoke(["audit", run, "--format", "json"]).stdout)
    assert data["disagrees"] is False
    assert all(m["disagrees"] == 0 for m in data["metrics"])


def test_audit_trl_says_which_convention_matched(built: Built) -> None:
    out = built.invoke(["audit", "trl-weighted"]).stdout
    reward = next(line for line in out.splitlines() if line.startswith("reward "))
    assert reward.endswith("weighted by reward_weights")


@pytest.mark.parametrize(
    ("run", "message"),
    [
        ("nope", "no run 'nope'"),
        (
            "dumps-only",
            "dumps-only: rollouts only; land its tracker history (obs ingest metrics PATH"
            " --run dumps-only) to audit the logged metrics",
        ),
    ],
)
def test_audit_without_both_sides_says_so_in_one_line(built: Built, run: str, message: str) -> None:
    result = built.invoke(["audit", run], exit_code=1)
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert message in result.stderr
