"""The held-out findings judge the reward the trainer optimised, whenever the held-out metric lands.

One TRL-shaped run (``completions/completions_{step}.parquet`` with two reward
columns) trains on format_reward alone: check_answer is logged at weight 0
(``--reward-weights format_reward=1,check_answer=0``). format_reward rises
0.12 -> 0.5 over steps 1-20 while check_answer, and the held-out accuracy,
collapse after step 10. Its tracker log (a home-grown loop's metrics.jsonl)
logs ``rewards/mean``, the plain sum's mean, which collapses with the accuracy:
judged on it, the run held nothing; judged on R (format_reward), the held-out
metric collapsed while the reward held.

Every expected number is worked out here with numpy from the values written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import Result
from obs.demo.histories import write_grpo_log

from tests.conftest import run_cli
from tests.integration.test_run_report import charts

pytestmark = pytest.mark.integration

STEPS = range(1, 21)
PROMPTS = ("What is 2 + 3?", "What is 7 x 6?")
SAMPLES = 4  # per prompt
WEIGHTS = "format_reward=1,check_answer=0"
# held-out accuracy every second step: steady, then collapsed after step 10
ACCURACY = {s: (0.6 + 0.01 * (s % 4) if s <= 10 else 0.05 - 0.001 * s) for s in STEPS if s % 2 == 0}


def sample_values(seed: int) -> dict[int, np.ndarray]:
    """Per step, an array (samples x 2): format_reward, check_answer."""
    rng = np.random.default_rng(seed)
    values = {}
    n = len(PROMPTS) * SAMPLES
    for step in STEPS:
        fmt = 0.1 + 0.02 * step + rng.normal(0, 0.01, n)
        check = (0.9 if step <= 10 else 0.05) + rng.normal(0, 0.01, n)
        values[step] = np.column_stack([fmt, check])
    return values


def write_completions(folder: Path, values: dict[int, np.ndarray]) -> None:
    folder.mkdir(parents=True)
    rows = [(p, k) for p in PROMPTS for k in range(SAMPLES)]
    for step, matrix in values.items():
        table = {
            "step": [str(step)] * len(rows),
            "prompt": [p for p, _ in rows],
            "completion": [f"answer {k} to {p} at {step}" for p, k in rows],
            "format_reward": matrix[:, 0].tolist(),
            "check_answer": matrix[:, 1].tolist(),
            "advantage": [0.0] * len(rows),
        }
        pq.write_table(pa.table(table), folder / f"completions_{step:05d}.parquet")


def write_metrics(path: Path, values: dict[int, np.ndarray], accuracy: bool) -> Path:
    """rewards/mean (the plain sum's mean), loss, and eval/accuracy when asked."""
    lines = []
    for step, matrix in values.items():
        row: dict[str, Any] = {"step": step, "rewards/mean": float(matrix.sum(axis=1).mean())}
        row["loss"] = 0.01
        if accuracy and step in ACCURACY:
            row["eval/accuracy"] = ACCURACY[step]
        lines.append(json.dumps(row))
    path.write_text("\n".join(lines) + "\n")
    return path


def write_eval_logs(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for step, value in ACCURACY.items():
        (folder / f"eval_step_{step:04d}.json").write_text(
            json.dumps({"step": step, "accuracy": value})
        )
    return folder


@dataclass
class Built:
    lake: Path
    warehouse: Path

    def invoke(self, args: list[object], exit_code: int = 0) -> Result:
        return run_cli(["--lake", self.lake, "--warehouse", self.warehouse, *args], exit_code)

    def findings(self, run_id: str) -> dict[str, dict[str, Any]]:
        with duckdb.connect(str(self.warehouse), read_only=True) as con:
            cursor = con.execute("select * from fct_run_findings where run_id = ?", [run_id])
            names = [d[0] for d in cursor.description]
            rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        return {row["pattern"]: row for row in rows}


def _state(root: Path) -> Built:
    return Built(root / "lake", root / "warehouse" / "obs.duckdb")


@pytest.fixture(scope="module")
def values() -> dict[int, np.ndarray]:
    return sample_values(7)


@pytest.fixture(scope="module")
def weighted(tmp_path_factory: pytest.TempPathFactory, values: dict[int, np.ndarray]) -> Built:
    root = tmp_path_factory.mktemp("held_out_weighted")
    state = _state(root)
    write_completions(root / "completions", values)
    metrics = write_metrics(root / "metrics.jsonl", values, accuracy=True)
    state.invoke(
        [
            "ingest",
            "rollouts",
            root / "completions",
            "--run",
            "w",
            "--reward-weights",
            WEIGHTS,
            "-q",
        ]
    )
    state.invoke(["ingest", "metrics", metrics, "--run", "w", "-q"])
    state.invoke(["build", "-q"])
    return state


def _collapse_numbers(values: dict[int, np.ndarray]) -> dict[str, float]:
    """The collapse rule's numbers, by hand: the held-out start is the mean of
    its first 2 points (steps 2, 4), its low stretch steps 12-20; the reward's
    start its points up to step 4, its level the mean over steps 12-20."""
    r = {s: float(m[:, 0].mean()) for s, m in values.items()}  # R = format_reward
    plain = {s: float(m.sum(axis=1).mean()) for s, m in values.items()}
    start = (ACCURACY[2] + ACCURACY[4]) / 2
    low = [v for s, v in ACCURACY.items() if s >= 12]
    return {
        "held_out_start": start,
        "held_out_fall": (start - np.mean(low)) / start,
        "reward_start": float(np.mean([r[s] for s in STEPS if s <= 4])),
        "reward_after": float(np.mean([r[s] for s in STEPS if s >= 12])),
        "plain_start": float(np.mean([plain[s] for s in STEPS if s <= 4])),
        "plain_after": float(np.mean([plain[s] for s in STEPS if s >= 12])),
    }


def test_held_out_collapse_judges_the_optimised_reward_not_reward_mean(
    weighted: Built, values: dict[int, np.ndarray]
) -> None:
    numbers = _collapse_numbers(values)
    # the plain sum collapsed with the accuracy (more than 50% below its start) ...
    assert numbers["plain_after"] < 0.5 * numbers["plain_start"]
    # ... while R held (rose): judged on R, a critical collapse at steps 12-20
    assert numbers["reward_after"] > numbers["reward_start"]
    findings = weighted.findings("w")
    collapse = findings["held_out_collapse"]
    assert (collapse["severity"], collapse["first_step"], collapse["last_step"]) == (
        "critical",
        12,
        20,
    )
    evidence = json.loads(collapse["evidence"])
    for key in ("held_out_start", "held_out_fall", "reward_start", "reward_after"):
        assert evidence[key] == pytest.approx(numbers[key], rel=1e-6), key
    assert "while R (the reward the trainer optimised) held (" in collapse["summary"]
    # R rose steadily over the run while the accuracy fell: a divergence on R too
    divergence = findings["reward_held_out_divergence"]
    assert "while R (the reward the trainer optimised) rose" in divergence["summary"]


def test_an_eval_log_landed_after_the_run_was_judged_judges_it_again(
    tmp_path: Path, values: dict[int, np.ndarray]
) -> None:
    """Rollouts and a tracker log without the held-out metric: judged, with no
    held-out metric to judge. The eval logs landed later carry the accuracy:
    the next build judges the run again and finds the collapse."""
    state = _state(tmp_path)
    write_completions(tmp_path / "completions", values)
    metrics = write_metrics(tmp_path / "metrics.jsonl", values, accuracy=False)
    completions = tmp_path / "completions"
    state.invoke(["ingest", "rollouts", completions, "--run", "late", "--reward-weights", WEIGHTS])
    state.invoke(["ingest", "metrics", metrics, "--run", "late", "-q"])
    state.invoke(["build", "-q"])
    assert not {"held_out_collapse", "reward_held_out_divergence"} & set(state.findings("late"))
    state.invoke(["ingest", "eval-logs", write_eval_logs(tmp_path / "eval_logs"), "--run", "late"])
    state.invoke(["build", "-q"])
    collapse = state.findings("late")["held_out_collapse"]
    assert (collapse["severity"], collapse["first_step"], collapse["last_step"]) == (
        "critical",
        12,
        20,
    )
    numbers = _collapse_numbers(values)
    evidence = json.loads(collapse["evidence"])
    for key in ("held_out_start", "held_out_fall", "reward_start", "reward_after"):
        assert evidence[key] == pytest.approx(numbers[key], rel=1e-6), key
    assert "eval_logs accuracy averaged" in collapse["summary"]
    # the same lake built cold gives the same findings
    cold = Built(state.lake, tmp_path / "cold" / "obs.duckdb")
    cold.invoke(["build", "-q"])
    assert cold.findings("late") == state.findings("late")


def _write_dumps(folder: Path, scores: dict[int, list[float]]) -> None:
    """{iteration}.jsonl: one prompt per score of the iteration, 2 samples each
    (the score and the score minus 0.2)."""
    folder.mkdir(parents=True)
    for iteration, means in scores.items():
        lines = [
            json.dumps({"input": f"prompt {p}", "output": f"answer {k}", "score": m - 0.2 * k})
            for p, m in enumerate(means)
            for k in range(2)
        ]
        (folder / f"{iteration}.jsonl").write_text("\n".join(lines) + "\n")


def test_analyze_a_run_of_rollouts_alone_analyses_their_reward(tmp_path: Path) -> None:
    """Dumps alone, no tracker history: obs analyze answers (exit 0) with the
    reward from the rollouts' scores and says, on stderr, what is missing."""
    scores = {0: [0.2, 0.4], 1: [0.5, 0.3], 2: [0.8, 0.6]}
    state = _state(tmp_path)
    _write_dumps(tmp_path / "dumps", scores)
    state.invoke(["ingest", "rollouts", tmp_path / "dumps", "--run", "bare", "-q"])
    state.invoke(["build", "-q"])
    result = state.invoke(["analyze", "bare", "--format", "json"])
    assert result.stderr == (
        "bare: rollouts only; land its tracker history (obs ingest metrics PATH --run bare)"
        " to see loss, KL, gradient norm, the held-out metric and config\n"
    )
    sections = {s["title"]: s for s in json.loads(result.stdout)["sections"]}
    info = sections["Run info"]["data"]
    assert (info["state"], info["steps"], info["last_step"]) == ("unknown", 3, 2)
    assert info["missing"] == result.stderr.strip()
    # each iteration's mean over its 4 rollouts: the prompts' means less 0.1
    means = {i: float(np.mean(v)) - 0.1 for i, v in scores.items()}
    (reward,) = sections["Training metrics"]["data"]
    assert (reward["metric"], reward["key"]) == ("reward_mean", "rollouts' mean score")
    assert reward["first"] == pytest.approx(means[0])
    assert reward["last"] == pytest.approx(means[2])
    assert reward["min"] == pytest.approx(min(means.values()))
    assert reward["mean"] == pytest.approx(np.mean(list(means.values())))
    assert reward["trend"] == "rising (good)"
    # the sections a history fills say why they are empty; the text form answers too
    assert not sections["Compare with similar runs"]["available"]
    text = state.invoke(["analyze", "bare"]).stdout
    assert "rollouts' mean score" in text
    assert sections["Export"]["note"] == "obs export run needs the run's tracker history"


@pytest.mark.parametrize(
    ("held_out_key", "var", "first"),
    [
        ("eval_reward", "{performance_metric: eval_reward}", "eval reward"),
        ("eval/accuracy", "{}", "eval accuracy"),
    ],
)
def test_the_run_report_draws_the_picked_held_out_metric_first(
    tmp_path: Path, held_out_key: str, var: str, first: str
) -> None:
    """A run logging loss, reward and a held-out key every 5th step; the build's
    held-out pick (var performance_metric, a canonical eval_* alias) is the first
    panel of the report's training chart, with its points as logged."""
    state = _state(tmp_path)
    log = tmp_path / "metrics.jsonl"
    held = {s: 0.8 - 0.01 * s for s in range(0, 20, 5)}
    lines = []
    for step in range(20):
        row: dict[str, Any] = {"step": step, "loss": 1.0 / (1 + step), "reward": 0.1 * step}
        if step in held:
            row[held_out_key] = held[step]
        lines.append(json.dumps(row))
    log.write_text("\n".join(lines) + "\n")
    state.invoke(["ingest", "metrics", log, "--run", "picked", "-q"])
    state.invoke(["build", "--vars", var, "-q"])
    out = tmp_path / "report.html"
    state.invoke(["analyze", "picked", "--out", out])
    figure = charts(out)["Training metrics"]
    assert [t["name"] for t in figure["data"]][:3] == [first, "loss", "reward mean"]
    assert figure["data"][0]["x"] == list(held) and figure["data"][0]["y"] == list(held.values())


# Healthy generated runs (write_grpo_log: the reward rises; the held-out
# accuracy stays flat, a pass rate of eval_size answers every eval_every steps)
# whose binomial noise the 50% (collapse) and 20% (divergence) rules alone
# took for a fall, out of 720 such runs: run id -> (style, eval_size,
# eval_every, start, seed).
NOISY_HEALTHY: dict[str, tuple[str, int, int, float, int]] = {
    "verl-n30-e10-p0.1-s8": ("verl", 30, 10, 0.1, 8),
    "verl-n30-e10-p0.1-s0": ("verl", 30, 10, 0.1, 0),
    "verl-n30-e25-p0.1-s5": ("verl", 30, 25, 0.1, 5),
    "verl-n30-e25-p0.25-s7": ("verl", 30, 25, 0.25, 7),
    "verl-n50-e25-p0.1-s5": ("verl", 50, 25, 0.1, 5),
    "verl-n200-e25-p0.1-s5": ("verl", 200, 25, 0.1, 5),
    "verl-n200-e25-p0.25-s9": ("verl", 200, 25, 0.25, 9),
    "trl-n30-e10-p0.1-s8": ("trl", 30, 10, 0.1, 8),
    "trl-n30-e10-p0.25-s8": ("trl", 30, 10, 0.25, 8),
    "trl-n50-e10-p0.1-s8": ("trl", 50, 10, 0.1, 8),
    "trl-n50-e10-p0.25-s8": ("trl", 50, 10, 0.25, 8),
    "trl-n200-e25-p0.25-s9": ("trl", 200, 25, 0.25, 9),
}


@pytest.fixture(scope="module")
def noisy_healthy(tmp_path_factory: pytest.TempPathFactory) -> Built:
    root = tmp_path_factory.mktemp("held_out_noisy_healthy")
    logs = root / "logs"
    for run, (style, size, every, start, seed) in NOISY_HEALTHY.items():
        target = logs / f"{run}.jsonl" if style == "verl" else logs / run / "trainer_state.json"
        write_grpo_log(
            target,
            steps=200,
            seed=1000 + seed,
            style=style,
            start=start,
            eval_every=every,
            eval_size=size,
            eval_offset=-0.05 if start > 0.15 else 0.0,
            eval_follows=0.0,
            **({"scale": (-0.5, 0.25)} if style == "trl" else {}),
        )
    state = _state(root)
    state.invoke(["ingest", "metrics", logs, "-q"])
    state.invoke(["build", "-q"])
    return state


@pytest.mark.parametrize("run_id", sorted(NOISY_HEALTHY))
def test_held_out_noise_on_a_healthy_run_is_no_collapse_nor_divergence(
    noisy_healthy: Built, run_id: str
) -> None:
    style, _, every, _, _ = NOISY_HEALTHY[run_id]
    with duckdb.connect(str(noisy_healthy.warehouse), read_only=True) as con:
        (points,) = con.execute(
            "select count(*) from int_reward_held_out where run_id = ?", [run_id]
        ).fetchone()
    # judged: every eval_every steps (verl also at step 0, before training)
    assert points == 200 // every + (style == "verl")
    assert not {"held_out_collapse", "reward_held_out_divergence"} & set(
        noisy_healthy.findings(run_id)
    )
