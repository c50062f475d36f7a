"""Findings that real GRPO runs need, on fixture runs landed by the real readers.

- A verl run that blows up at its very first step (gradient norm 100x its
  later level at step 1, then the reward collapses): grad_spike_reward_collapse.
- A TRL run whose reward rises while its held-out accuracy collapses from
  step 40 on: held_out_collapse (critical) and reward_held_out_divergence.
- A verl run whose held-out accuracy (``val-core/.../acc/mean@1``) falls on a
  line while the reward rises: reward_held_out_divergence over the run only.
- A run of rollout dumps whose last three iterations have 4 of their 6 groups
  with zero variance (3 all solved, 1 all failed) while its reward rises:
  grpo_signal_loss.
- A healthy tracker run and a healthy run of dumps: none of these.

Each expected number is worked out from the files written here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest
from obs.ingest.keyed import ingest_metrics

from tests.conftest import run_cli
from tests.integration.test_run_findings import (
    START_STEPS,
    _batch_means,
    _warm_start,
    _write_start,
    _write_verl_lines,
)
from tests.integration.test_serve import _get, _server

pytestmark = pytest.mark.integration

NEW_PATTERNS = {"held_out_collapse", "reward_held_out_divergence", "grpo_signal_loss"}
# The hacked run's held-out accuracy at step 1 and every 10th step.
HACKED_ACCURACY = {
    1: 0.6,
    10: 0.62,
    20: 0.6,
    30: 0.55,
    40: 0.1,
    50: 0.05,
    60: 0.04,
    70: 0.05,
    80: 0.03,
}
# Rollout dumps: 6 prompts of 4 samples, iterations 0..9; per iteration how
# many prompts have every sample solved (1.0) and how many every sample failed
# (0.0); the others mix 0 and 1.
PROMPTS = 6
SIGNAL_LOSS_GROUPS = {i: (1, 1) if i < 7 else (3, 1) for i in range(10)}
HEALTHY_GROUPS = {i: (1, 0) for i in range(10)}


class Built:
    def __init__(self, root: Path, con: duckdb.DuckDBPyConnection) -> None:
        self.root = root
        self.con = con

    def findings(self, run_id: str) -> list[dict[str, Any]]:
        cursor = self.con.execute(
            "select * from fct_run_findings where run_id = ? order by pattern, first_step",
            [run_id],
        )
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _first_step_blow_up(seed: int) -> dict[str, np.ndarray]:
    """Gradient norm 50 at step 1, then about 0.5 (lognormal, sigma 0.3); the
    reward 0.62 at step 1 (sampled before the first update), then about 0.04."""
    rng = np.random.default_rng(seed)
    t = np.arange(1, START_STEPS + 1, dtype=float)
    grad = 0.5 * np.exp(rng.normal(0, 0.3, START_STEPS))
    grad[0] = 50.0
    p = np.where(t <= 1, 0.62, 0.04)
    return {
        "reward": _batch_means(rng, p),
        "loss": rng.normal(0, 0.01, START_STEPS),
        "kl": 0.001 * np.exp(rng.normal(0, 0.1, START_STEPS)),
        "grad_norm": grad,
        "entropy": 0.6 * np.exp(rng.normal(0, 0.05, START_STEPS)),
        "accuracy": np.where(t <= 1, 0.7, 0.02),
    }


def _rising(seed: int, accuracy: np.ndarray) -> dict[str, np.ndarray]:
    """A run whose reward rises (batch means of 256 at 0.3 -> 0.7) with small
    gradient norms and KL, and the given held-out accuracy."""
    rng = np.random.default_rng(seed)
    t = np.arange(1, START_STEPS + 1, dtype=float)
    return {
        "reward": _batch_means(rng, 0.3 + 0.4 * t / START_STEPS, batch=256),
        "loss": rng.normal(0, 0.01, START_STEPS),
        "kl": (0.0005 + 0.01 * t / START_STEPS) * np.exp(rng.normal(0, 0.3, START_STEPS)),
        "grad_norm": 0.3 * np.exp(rng.normal(0, 0.2, START_STEPS)),
        "entropy": 0.5 * np.exp(rng.normal(0, 0.05, START_STEPS)),
        "accuracy": accuracy,
    }


def _hacked_accuracy() -> np.ndarray:
    accuracy = np.full(START_STEPS, np.nan)
    for step, value in HACKED_ACCURACY.items():
        accuracy[step - 1] = value
    return accuracy


def _falling_accuracy() -> np.ndarray:
    """0.7 at step 1 falling on a line to 0.45 at step 80."""
    t = np.arange(1, START_STEPS + 1, dtype=float)
    return 0.7 - 0.25 * (t - 1) / (START_STEPS - 1)


def _write_dumps(folder: Path, groups: dict[int, tuple[int, int]]) -> None:
    """{iteration}.jsonl with PROMPTS prompts of 4 samples: the first `solved`
    prompts score 1.0 on every sample, the next `failed` 0.0 on every sample,
    the rest 1, 0, 1, 0."""
    folder.mkdir(parents=True)
    for iteration, (solved, failed) in groups.items():
        lines = []
        for prompt in range(PROMPTS):
            if prompt < solved:
                scores = [1.0] * 4
            elif prompt < solved + failed:
                scores = [0.0] * 4
            else:
                scores = [1.0, 0.0, 1.0, 0.0]
            lines += [
                json.dumps({"input": f"prompt {prompt}", "output": f"answer {k}", "score": s})
                for k, s in enumerate(scores)
            ]
        (folder / f"{iteration}.jsonl").write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    root = tmp_path_factory.mktemp("run_findings_signals")
    logs = root / "logs"
    logs.mkdir()
    _write_start(logs, "blowup-first", "verl", _first_step_blow_up(51))
    _write_start(logs, "hacked", "trl", _rising(52, _hacked_accuracy()))
    # verl's held-out accuracy under its val-core key (an eval_accuracy alias)
    diverging = _rising(53, _falling_accuracy())
    rows = []
    for i in range(START_STEPS):
        row = {
            "critic/score/mean": float(diverging["reward"][i]),
            "actor/pg_loss": float(diverging["loss"][i]),
            "actor/kl_loss": float(diverging["kl"][i]),
            "actor/grad_norm": float(diverging["grad_norm"][i]),
        }
        if i == 0 or (i + 1) % 10 == 0:
            row["val-core/openai/gsm8k/acc/mean@1"] = float(diverging["accuracy"][i])
        rows.append(row)
    _write_verl_lines(logs / "diverging.jsonl", rows)
    _write_start(logs, "healthy", "verl", _warm_start(42, 6.0, 8.0))
    lake, warehouse = root / "lake", root / "warehouse" / "obs.duckdb"
    landed = ingest_metrics(logs, lake=lake)
    assert sorted(landed.runs) == ["blowup-first", "diverging", "hacked", "healthy"]
    for run_id, groups in (("signal-loss", SIGNAL_LOSS_GROUPS), ("dumps-healthy", HEALTHY_GROUPS)):
        _write_dumps(root / run_id, groups)
        base = ["--lake", lake, "--warehouse", warehouse]
        run_cli([*base, "ingest", "rollouts", root / run_id, "--run", run_id, "-q"])
    # obs's own build (its executor), as a user runs it: obs analyze reads every mart
    run_cli(["--lake", lake, "--warehouse", warehouse, "build", "-q"])
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        yield Built(root, con)
    finally:
        con.close()


def test_a_run_that_blows_up_at_its_first_step_is_a_gradient_spike_collapse(
    built: Built,
) -> None:
    """grad_norm 50 at step 1 against about 0.5 after: named at step 1, critical."""
    findings = {f["pattern"]: f for f in built.findings("blowup-first")}
    collapse = findings["grad_spike_reward_collapse"]
    assert (collapse["severity"], collapse["first_step"]) == ("critical", 1)
    evidence = json.loads(collapse["evidence"])
    assert evidence["spike_step"] == 1 and evidence["grad_norm"] == 50.0
    assert evidence["drop_fraction"] > 0.8
    assert "grad_norm reached 50.0 at step 1, " in collapse["summary"]
    assert "(first point: nothing before it)" in collapse["summary"]
    # the median of the next 20 points is what it is measured against
    grads = [
        json.loads(line)["data"]["actor/grad_norm"]
        for line in (built.root / "logs" / "blowup-first.jsonl").read_text().splitlines()
    ]
    later = float(np.median(grads[1:21]))
    assert f"x the median {round(later, 3)} of the points after it" in collapse["summary"]
    # the reward collapsed with it: not a held-out collapse
    assert not NEW_PATTERNS & set(findings)


def test_a_held_out_collapse_while_the_reward_rises_is_critical(built: Built) -> None:
    """eval_accuracy from 0.61 (mean of its first 2 points) to a mean of 0.054
    over steps 40-80 while the reward rose: critical, at steps 40-80."""
    findings = {f["pattern"]: f for f in built.findings("hacked")}
    collapse = findings["held_out_collapse"]
    assert (collapse["severity"], collapse["first_step"], collapse["last_step"]) == (
        "critical",
        40,
        80,
    )
    assert collapse["signals"] == ["held_out_collapsed"]
    low = [HACKED_ACCURACY[s] for s in (40, 50, 60, 70, 80)]
    start = (HACKED_ACCURACY[1] + HACKED_ACCURACY[10]) / 2
    fall = (start - sum(low) / len(low)) / start
    evidence = json.loads(collapse["evidence"])
    assert evidence["held_out_start"] == pytest.approx(start)
    assert evidence["held_out_fall"] == pytest.approx(fall, rel=1e-6)
    state = json.loads((built.root / "logs" / "hacked" / "trainer_state.json").read_text())
    reward = {row["step"]: row["reward"] for row in state["log_history"]}
    reward_start = np.mean([v for s, v in reward.items() if s <= 10])
    reward_after = np.mean([v for s, v in reward.items() if 40 <= s <= 80])
    assert evidence["reward_start"] == pytest.approx(reward_start, rel=1e-6)
    assert evidence["reward_after"] == pytest.approx(reward_after, rel=1e-6)
    assert collapse["summary"].startswith(
        "Held-out collapse while the reward held at steps 40-80: eval_accuracy averaged 0.054 "
        f"over its 5 points from step 40 to its last at step 80, {round(100 * fall)}% below "
        "its start 0.61, while reward_mean (no reward functions known) held"
    )
    assert collapse["hypotheses"][0].startswith("Reward hacking")
    # the reward rose over the run while the accuracy fell: a divergence too
    divergence = findings["reward_held_out_divergence"]
    assert divergence["severity"] == "warning"
    assert "diverged_over_run" in divergence["signals"]


def test_a_held_out_metric_falling_on_a_line_diverges_over_the_run(built: Built) -> None:
    """val-core accuracy 0.7 -> 0.45 on a line (36%) while the reward rises; each
    window of 4 evaluations (30 steps) falls only about 14-17%: the run, not a window."""
    findings = {f["pattern"]: f for f in built.findings("diverging")}
    assert "held_out_collapse" not in findings
    divergence = findings["reward_held_out_divergence"]
    assert (divergence["severity"], divergence["first_step"], divergence["last_step"]) == (
        "warning",
        1,
        80,
    )
    assert divergence["signals"] == ["diverged_over_run"]
    steps = [1, *range(10, START_STEPS + 1, 10)]
    accuracy = _falling_accuracy()
    values = [accuracy[s - 1] for s in steps]
    slope, intercept = np.polyfit(steps, values, 1)
    fitted_start, fitted_end = intercept + slope * 1, intercept + slope * 80
    evidence = json.loads(divergence["evidence"])
    assert evidence["held_out_start"] == pytest.approx(fitted_start, rel=1e-6)
    assert evidence["held_out_fall"] == pytest.approx(
        (fitted_start - fitted_end) / fitted_start, rel=1e-6
    )
    assert divergence["summary"].startswith(
        "Reward rising, held-out falling at steps 1-80: val-core/openai/gsm8k/acc/mean@1 fell "
        f"{round(100 * (fitted_start - fitted_end) / fitted_start)}% over steps 1-80 (the whole "
        "run)"
    )
    assert evidence["reward_rise"] > 0


def test_a_run_ending_with_two_thirds_of_its_groups_without_gradient_says_so(
    built: Built,
) -> None:
    """4 of 6 groups zero variance at iterations 7-9 (3 all solved, 1 all failed):
    flagged at 8 and 9 (two points running above half), from 7; a warning."""
    findings = built.findings("signal-loss")
    assert [f["pattern"] for f in findings] == ["grpo_signal_loss"]
    loss = findings[0]
    assert (loss["severity"], loss["first_step"], loss["last_step"], loss["flagged_steps"]) == (
        "warning",
        7,
        9,
        2,
    )
    assert loss["signals"] == ["groups_all_solved"]
    evidence = json.loads(loss["evidence"])
    assert evidence["zero_variance_share"] == pytest.approx(4 / 6)
    assert (evidence["zero_variance_solved"], evidence["zero_variance_failed"]) == (3, 1)
    assert loss["summary"] == (
        "GRPO signal loss at steps 7-9: 67% of the 6 groups gave no gradient at step 8 "
        "(3 all solved, 1 all failed) (2 flagged steps)."
    )
    # ... and the reward rose meanwhile: the run is otherwise healthy
    rows = built.con.execute(
        "select iteration, sum(mean_score * n_samples) / sum(n_samples) "
        "from int_prompt_iteration where run_id = 'signal-loss' group by 1 order by 1"
    ).fetchall()
    assert rows[0][1] < rows[-1][1]
    assert math.isclose(rows[-1][1], (3 * 4 + 2 * 2) / 24)


@pytest.mark.parametrize("run_id", ["healthy", "dumps-healthy"])
def test_healthy_runs_get_none_of_these_findings(built: Built, run_id: str) -> None:
    findings = built.findings(run_id)
    assert not NEW_PATTERNS & {f["pattern"] for f in findings}
    assert all(f["severity"] == "info" for f in findings), findings


def test_obs_analyze_and_obs_findings_show_the_new_findings(built: Built) -> None:
    root = built.root
    base = ["--lake", root / "lake", "--warehouse", root / "warehouse" / "obs.duckdb"]
    hacked = run_cli([*base, "analyze", "hacked"]).stdout
    assert "[CRITICAL] held_out_collapse (steps 40-80)" in hacked
    assert "[WARNING] reward_held_out_divergence" in hacked
    # a run of dumps alone: obs analyze reads tracker histories; obs findings lists it
    listed = json.loads(
        run_cli([*base, "findings", "--run", "signal-loss", "--format", "json"]).stdout
    )
    assert [(f["pattern"], f["severity"]) for f in listed] == [("grpo_signal_loss", "warning")]


def test_obs_alerts_raise_the_new_findings(built: Built) -> None:
    """A held-out collapse is a critical alert (exit 1, for scripts that stop a run);
    signal loss a warning at the episode's first step."""
    root = built.root
    base = ["--lake", root / "lake", "--warehouse", root / "warehouse" / "obs.duckdb"]
    hacked = run_cli([*base, "alerts", "--run", "hacked", "--level", "warning"], exit_code=1)
    assert "🚨 [CRITICAL] Step 40: Held-out collapse while the reward held at steps 40-80" in (
        hacked.stdout
    )
    assert "[WARNING] Step 1: Reward rising, held-out falling" in hacked.stdout
    loss = run_cli([*base, "alerts", "--run", "signal-loss", "--format", "json"])
    alerts = [a for a in json.loads(loss.stdout) if a["kind"] == "finding"]
    assert [(a["rule_name"], a["level"], a["step"]) for a in alerts] == [
        ("grpo_signal_loss", "warning", 7)
    ]
    healthy = run_cli([*base, "alerts", "--run", "healthy", "--format", "json"])
    assert not [a for a in json.loads(healthy.stdout) if a["kind"] == "finding"]


def test_the_served_runs_list_shows_the_held_out_metric_and_the_run_page_its_findings(
    built: Built,
) -> None:
    root = built.root
    with _server(root / "lake", root / "warehouse" / "obs.duckdb", root / "serve.log") as (
        base,
        _,
    ):
        status, home = _get(base + "/")
        assert status == 200
        assert "<th>held-out, first → last</th>" in home
        # the hacked run's eval_accuracy, its first (0.6) and last (0.03) points
        assert '<td class="held-out">eval_accuracy 0.600 → 0.030</td>' in home
        status, page = _get(base + "/runs/hacked")
        assert status == 200
        assert "Held-out collapse while the reward held at steps 40-80" in page
        status, page = _get(base + "/runs/signal-loss")
        assert status == 200
        assert "GRPO signal loss at steps 7-9" in page


def test_a_rollout_landed_later_judges_the_run_again(tmp_path: Path) -> None:
    """Dumps alone, judged on their rollouts: 2 of 6 groups without gradient at
    iterations 0-6 and 4 of 6 at iteration 7 give nothing (one point above half);
    iteration 8 landed later (4 of 6 again) makes the build judge the run again
    and find the signal loss at 7-8, incrementally as from scratch."""
    lake, warehouse = tmp_path / "lake", tmp_path / "warehouse" / "obs.duckdb"
    base = ["--lake", lake, "--warehouse", warehouse]
    dumps = tmp_path / "dumps"
    _write_dumps(dumps, {i: SIGNAL_LOSS_GROUPS[i] for i in range(8)})
    run_cli([*base, "ingest", "rollouts", dumps, "--run", "late", "-q"])
    run_cli([*base, "build", "-q"])
    listed = json.loads(run_cli([*base, "findings", "--run", "late", "--format", "json"]).stdout)
    assert listed == []
    more = tmp_path / "more"
    _write_dumps(more, {8: SIGNAL_LOSS_GROUPS[8]})
    run_cli([*base, "ingest", "rollouts", more, "--run", "late", "-q"])
    run_cli([*base, "build", "-q"])
    listed = json.loads(run_cli([*base, "findings", "--run", "late", "--format", "json"]).stdout)
    assert [(f["pattern"], f["severity"], f["first_step"], f["last_step"]) for f in listed] == [
        ("grpo_signal_loss", "warning", 7, 8)
    ]


def test_the_static_dashboard_shows_the_held_out_metric_first(tmp_path: Path) -> None:
    """Dumps with a metrics.jsonl logging eval/accuracy 0.5 + 0.02 x step (steps 0-9):
    the header's first number after the run is the held-out metric, 0.500 -> 0.680."""
    lake, warehouse = tmp_path / "lake", tmp_path / "warehouse" / "obs.duckdb"
    base = ["--lake", lake, "--warehouse", warehouse]
    _write_dumps(tmp_path / "dumps", HEALTHY_GROUPS)
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text(
        "".join(
            json.dumps({"step": step, "eval/accuracy": 0.5 + 0.02 * step}) + "\n"
            for step in range(10)
        )
    )
    run_cli([*base, "ingest", "rollouts", tmp_path / "dumps", "--run", "dash", "-q"])
    run_cli([*base, "ingest", "metrics", metrics, "--run", "dash", "-q"])
    run_cli([*base, "build", "-q"])
    out = tmp_path / "dash.html"
    run_cli([*base, "render-dashboard", "--run", "dash", "--out", out])
    html = out.read_text()
    header = html[html.index('<div class="kpis"') : html.index("</header>")]
    kpis = [
        part.split('<div class="label">')[1].split("</div>")[0]
        for part in header.split('<div class="kpi">')[1:]
    ]
    assert kpis[:3] == ["run", "held-out eval/accuracy, first → last", "rollouts"]
    assert '<div class="value">0.500 → 0.680</div>' in header
