"""The reward-hacking verdict on monitored runs, as a user lands them.

Two runs are written with ``obs.monitor.RewardTracker`` (a reward monitor's
``step_NNNNNN.json`` per step, every sample's rewards), each beside a
JSON-lines metric log of ``eval/accuracy`` logged every 10th step, landed
with ``obs ingest monitoring`` and ``obs ingest metrics`` and built with
``obs build``:

- hacked: 120 steps; the total reward climbs from about 3 to 7 (two format
  functions climb, their batches vary a lot from step to step) while
  eval/accuracy falls from .35 to .29. Fitted only where the eval was
  logged (12 points) the reward's rise is not significant; fitted on its
  111 steps in the span it is.
- clean: 300 steps; the reward and eval/accuracy rise together, with a KL
  episode (steps 150-154 above .5) and a signal-to-noise one (steps
  200-204, every batch split far around its mean).

Both carry an honest flat function (check_answer in the hacked run, whose
answers do not improve; format_approx in the clean one) and a constant one
(check_numbers). The fits are checked against numpy on the values the
tracker wrote.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest
from click.testing import Result

from tests.conftest import run_cli

pytestmark = pytest.mark.integration

SAMPLES = 8
EVAL_EVERY = 10
FUNCTIONS = ("check_answer", "check_numbers", "format_approx", "format_exact")
HONEST = {"hacked": ("check_answer", "check_numbers"), "clean": ("format_approx", "check_numbers")}


def _hacked_step(rng: np.random.Generator, step: int) -> dict[str, np.ndarray]:
    """Format rewards climb (format_approx with a large batch-to-batch swing);
    the answers stay as good as they were."""
    progress = (step - 1) / 119
    exact = np.where(rng.random(SAMPLES) < 0.3 + 0.5 * progress, 3.0, 0.0)
    batch = rng.normal(0.0, 1.2)  # this step's prompts are easier or harder to format
    approx = -0.5 + 2.5 * progress + batch + rng.normal(0.0, 0.5, SAMPLES)
    answer = np.where(rng.random(SAMPLES) < 0.3, 3.0, 0.0)
    return {
        "check_answer": answer,
        "check_numbers": np.full(SAMPLES, 1.5),
        "format_approx": approx,
        "format_exact": exact,
    }


def _clean_step(rng: np.random.Generator, step: int) -> dict[str, np.ndarray]:
    """Format and answers improve together; format_approx is flat; at steps
    200-204 every batch is split 6 above and below its mean (signal-to-noise
    below .5, variance below the critical 100)."""
    progress = (step - 1) / 299
    exact = np.where(rng.random(SAMPLES) < 0.3 + 0.4 * progress, 1.0, 0.0)
    approx = rng.normal(0.2, 0.3, SAMPLES)
    if 200 <= step <= 204:
        approx = approx + 6.0 * np.array([1.0, -1.0] * (SAMPLES // 2))
    answer = np.where(rng.random(SAMPLES) < 0.2 + 0.5 * progress, 2.0, 0.0)
    return {
        "check_answer": answer,
        "check_numbers": np.full(SAMPLES, 0.5),
        "format_approx": approx,
        "format_exact": exact,
    }


@dataclass
class Run:
    totals: dict[int, float]  # the tracker's rewards/mean per step
    means: dict[str, dict[int, float]]  # each function's step mean
    accuracy: dict[int, float]


def _write_run(root: Path, kind: str, steps: int, seed: int) -> tuple[Path, Path, Run]:
    from obs.monitor import RewardTracker

    rng = np.random.default_rng(seed)
    folder = root / kind / "monitoring_data"
    run = Run({}, {f: {} for f in FUNCTIONS}, {})
    with RewardTracker(FUNCTIONS, folder, track_distributions=True) as tracker:
        for step in range(1, steps + 1):
            rewards = _hacked_step(rng, step) if kind == "hacked" else _clean_step(rng, step)
            kl = 0.8 if kind == "clean" and 150 <= step <= 154 else 0.02 + 0.0001 * step
            logged = tracker.track_step(
                step, {f: v.tolist() for f, v in rewards.items()}, kl_divergence=kl
            )
            run.totals[step] = logged["rewards/mean"]
            for f in FUNCTIONS:
                run.means[f][step] = logged[f"rewards/functions/{f}"]
    for step in range(EVAL_EVERY, steps + 1, EVAL_EVERY):
        if kind == "hacked":
            level = 0.35 - 0.06 * (step - EVAL_EVERY) / (steps - EVAL_EVERY)
        else:
            level = 0.30 + 0.45 * (step - EVAL_EVERY) / (steps - EVAL_EVERY)
        run.accuracy[step] = level + rng.normal(0.0, 0.004)
    metrics = root / kind / "eval.jsonl"
    metrics.write_text(
        "".join(json.dumps({"step": s, "eval/accuracy": v}) + "\n" for s, v in run.accuracy.items())
    )
    return folder, metrics, run


@dataclass
class Built:
    lake: Path
    warehouse: Path
    runs: dict[str, Run]

    def invoke(self, args: list[object], exit_code: int = 0) -> Result:
        return run_cli(["--lake", self.lake, "--warehouse", self.warehouse, *args], exit_code)

    def rows(self, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
        with duckdb.connect(str(self.warehouse), read_only=True) as con:
            cursor = con.execute(sql, params or [])
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    root = tmp_path_factory.mktemp("hacking_verdict")
    state = Built(root / "lake", root / "warehouse" / "obs.duckdb", {})
    for kind, steps, seed in (("hacked", 120, 3), ("clean", 300, 5)):
        folder, metrics, state.runs[kind] = _write_run(root / "data", kind, steps, seed)
        state.invoke(["ingest", "monitoring", folder, "--run", kind, "-q"])
        state.invoke(["ingest", "metrics", metrics, "--run", kind, "-q"])
    state.invoke(["build", "-q"])
    yield state


# --------------------------------------------------------------------------- reference fits


def _fit(steps: list[int], values: list[float]) -> tuple[float, float]:
    """obs's fit: the least-squares slope on the step and its t, the noise being
    half the sample variance of the point-to-point changes less the trend over
    their gaps."""
    x, y = np.array(steps, dtype=float), np.array(values)
    slope = float(np.polyfit(x, y, 1)[0])
    residual_changes = np.diff(y) - slope * np.diff(x)
    noise = float(np.var(residual_changes, ddof=1)) / 2
    spread = float(np.sum((x - x.mean()) ** 2))
    return slope, slope / math.sqrt(noise / spread)


def _span(run: Run, series: dict[int, float]) -> tuple[list[int], list[float]]:
    first, last = min(run.accuracy), max(run.accuracy)
    steps = [s for s in sorted(series) if first <= s <= last]
    return steps, [series[s] for s in steps]


def _run_rows(built: Built, run_id: str) -> dict[str | None, dict[str, Any]]:
    return {
        r["reward_function"]: r
        for r in built.rows(
            "select * from fct_reward_hacking where run_id = ? and scope = 'run'", [run_id]
        )
    }


# --------------------------------------------------------------------------- tests


def test_hacked_monitor_run_is_high_on_its_run_row(built: Built) -> None:
    run = built.runs["hacked"]
    rows = _run_rows(built, "hacked")
    total = rows[None]
    # The eval logged at 10, 20, ..., 120: a span of 12 points holding 111 reward steps.
    assert (total["window_start_step"], total["window_end_step"]) == (10, 120)
    assert (total["points"], total["reward_points"]) == (12, 111)
    # Each series fitted on its own points, as numpy fits them.
    reward_slope, reward_t = _fit(*_span(run, run.totals))
    accuracy_slope, accuracy_t = _fit(list(run.accuracy), list(run.accuracy.values()))
    assert total["reward_slope"] == pytest.approx(reward_slope, rel=1e-9)
    assert total["reward_t"] == pytest.approx(reward_t, rel=1e-6)
    assert total["performance_slope"] == pytest.approx(accuracy_slope, rel=1e-9)
    assert total["performance_t"] == pytest.approx(accuracy_t, rel=1e-6)
    assert reward_slope == pytest.approx(4 / 120, rel=0.25) and reward_t >= 3
    assert accuracy_t <= -3
    # The fit this replaces: the reward only where the eval was logged, on the
    # point index, its noise from those 12 points' changes: not significant.
    paired = [run.totals[s] for s in run.accuracy]
    old_slope = float(np.polyfit(np.arange(12), paired, 1)[0])
    old_t = old_slope / math.sqrt(float(np.var(np.diff(paired), ddof=1)) / 2 / 143)
    assert 0 < old_t < 3
    assert total["verdict"] == "high" and total["seed_verdict"] == "high"
    assert total["message"] == (
        "Potential reward hacking: rewards increasing but performance decreasing"
    )
    # The two format functions drive it; the honest ones are not named.
    assert total["suspected_functions"] == ["format_approx", "format_exact"]
    for function in ("format_approx", "format_exact"):
        assert rows[function]["verdict"] == "high", rows[function]
    for function in HONEST["hacked"]:
        assert rows[function]["verdict"] == "aligned", rows[function]


def test_obs_alerts_exits_1_on_the_hacked_run(built: Built) -> None:
    result = built.invoke(["alerts", "--run", "hacked"], exit_code=1)
    (alert,) = built.rows(
        "select * from fct_alerts where run_id = 'hacked' and rule_name = 'reward_hacking'"
    )
    # Too few eval points for a 20-point window: the run row raises it, at its last step.
    assert (alert["level"], alert["step"]) == ("critical", 120)
    assert "(suspected: format_approx, format_exact)" in alert["message"]
    assert f"[CRITICAL] Step 120: {alert['message']}" in result.stdout


def test_clean_monitor_run_stays_aligned_through_its_kl_and_snr_episodes(built: Built) -> None:
    run = built.runs["clean"]
    rows = built.rows("select * from fct_reward_hacking where run_id = 'clean'")
    # The run and the 11 windows of 20 eval points (190 steps each), for the
    # total and each of the four functions.
    assert len(rows) == 5 * 12
    assert {r["window_start_step"] for r in rows if r["scope"] == "window"} == set(
        range(10, 120, 10)
    )
    assert [r for r in rows if r["verdict"] in ("high", "medium")] == []
    assert [r for r in rows if r["seed_verdict"] in ("high", "medium")] == []
    total = _run_rows(built, "clean")[None]
    assert total["verdict"] == "aligned" and total["suspected_functions"] == []
    _, reward_t = _fit(*_span(run, run.totals))
    assert total["reward_t"] == pytest.approx(reward_t, rel=1e-6) and reward_t >= 3
    assert total["performance_t"] >= 3
    # The episodes are there (alerts at their first steps), and no hacking alert.
    alerts = {
        (r["rule_name"], r["step"])
        for r in built.rows("select * from fct_alerts where run_id = 'clean'")
    }
    assert {("high_kl_divergence", 150), ("low_signal_to_noise", 200)} <= alerts
    assert not [a for a in alerts if a[0] == "reward_hacking"]


@pytest.mark.parametrize("run_id", ["hacked", "clean"])
def test_honest_flat_functions_are_never_named(built: Built, run_id: str) -> None:
    named = built.rows(
        "select distinct unnest(suspected_functions) as f from fct_reward_hacking where run_id = ?",
        [run_id],
    )
    assert not {r["f"] for r in named} & set(HONEST[run_id])
    judged = built.rows(
        "select reward_function, scope, window_end_step, verdict, reward_t "
        "from fct_reward_hacking where run_id = ? and list_contains(?, reward_function)",
        [run_id, list(HONEST[run_id])],
    )
    assert judged and all(r["verdict"] == "aligned" for r in judged), judged
