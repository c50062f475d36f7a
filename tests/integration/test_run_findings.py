"""Run-analysis marts and findings on synthetic W&B exports with planted patterns.

One lake holds a clean run, a noiseless one, one without cache metrics and one
run per planted pattern (``obs.demo.histories``); it is landed through
the W&B export reader and built once for the module. Each planted pattern
must be found (warning or critical) within a few steps of where it was
planted, the healthy runs must raise nothing above info, the power-law fit
must recover the planted exponent, and the per-step marts must equal what the
export's own numbers give by hand.
"""

from __future__ import annotations

import csv
import json
import math
import statistics
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest
from obs.demo.histories import PATTERNS, write_grpo_log, write_seed_export
from obs.ingest.keyed import ingest_metrics
from obs.runner.dbt import project_dir, run_dbt

pytestmark = pytest.mark.integration

# Where each pattern is planted (its own run, its own step, its own seed).
PLANTS: dict[str, int] = {
    "training_instability": 120,
    "performance_plateau": 110,
    "infrastructure_bottleneck": 90,
    "model_quality_degradation": 100,
    "prefix_cache_inefficiency": 130,
    "grad_spike_reward_collapse": 80,
    "length_truncation": 105,
    "entropy_collapse_plateau": 95,
    "kl_runaway": 115,
}
# A planted pattern is found when a finding of it starts this close to the plant.
TOLERANCE = 5
# A plateau on a bending reward has no sharp start: the hinge that places it
# lands within a tenth of the run (its horizon) of the plant.
PLATEAU_TOLERANCE = 20
# Findings a planted pattern brings with it, as it would in a real run: a
# collapse starts with a gradient spike (instability); an entropy collapse and
# a degradation leave the reward flat afterwards (plateau).
COMPANIONS: dict[str, set[str]] = {
    "grad_spike_reward_collapse": {"training_instability"},
    "entropy_collapse_plateau": {"performance_plateau"},
    "model_quality_degradation": {"performance_plateau"},
}
HEALTHY = ("clean", "exact", "exact-twin", "nocache")
# Healthy runs with the noise real GRPO runs have (``write_grpo_log``: a batch
# mean of pass/fail rewards, heavy-tailed gradient norms, a loss of about 0),
# as verl and TRL log them: run id -> (style, steps, seed, extra arguments).
GRPO_HEALTHY: dict[str, tuple[str, int, int, dict[str, Any]]] = {
    "verl-400-a": ("verl", 400, 11, {}),
    "verl-400-b": ("verl", 400, 12, {}),
    "verl-400-c": ("verl", 400, 13, {}),
    "verl-2000": ("verl", 2000, 14, {}),
    "trl-400-a": ("trl", 400, 15, {"scale": (-0.5, 0.25)}),
    "trl-400-b": ("trl", 400, 16, {"scale": (-0.5, 0.25), "beta": 0.04, "batch": 256}),
    "trl-30": ("trl", 30, 17, {"scale": (-0.5, 0.25)}),
}
# ... a run that converged half way (a plateau, and nothing else), and one whose
# reward reached its ceiling of 1 (saturation, not a plateau).
GRPO_FLAT: dict[str, tuple[str, int, int, dict[str, Any]]] = {
    # (seed 18 draws a 21x gradient-norm spike from the heavy tail, which is
    # rightly a warning of its own)
    "verl-converged": ("verl", 2000, 21, {"pace": 6.0}),
    "trl-saturated": ("trl", 400, 19, {"start": 0.5, "ceiling": 1.0, "pace": 8.0}),
}
SEVERE = ("warning", "critical")
# Runs that blow up at step 2 (a learning rate ten times too high), as verl and
# TRL log them, and what they do after it: run id -> (style, seed, gradient norm
# level after the blow-up).
BLOWN_UP: dict[str, tuple[str, int, float]] = {
    "blowup-verl": ("verl", 31, 3.0),
    "blowup-trl": ("trl", 32, 0.05),
}
# Healthy runs whose gradient norm starts high and decays smoothly: run id ->
# (style, seed, its start as a multiple of its later level, decay time in steps).
WARM_STARTS: dict[str, tuple[str, int, float, float]] = {
    "warm-verl-fast": ("verl", 41, 10.0, 3.0),
    "warm-verl-a": ("verl", 42, 6.0, 8.0),
    "warm-verl-b": ("verl", 43, 6.0, 8.0),
    "warm-verl-slow": ("verl", 44, 4.0, 25.0),
    "warm-trl": ("trl", 45, 8.0, 5.0),
}
START_STEPS = 80


class Built:
    """The exports written, what was planted, and a read-only warehouse connection."""

    def __init__(self, exports: Path, planted: dict[str, dict[str, tuple[int, int]]]) -> None:
        self.exports = exports
        self.planted = planted
        self.con: duckdb.DuckDBPyConnection | None = None

    def export(self, run_id: str) -> dict[str, Any]:
        return json.loads((self.exports / f"{run_id}.json").read_text())

    def rows(self, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
        assert self.con is not None
        cursor = self.con.execute(sql, params or [])
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    root = tmp_path_factory.mktemp("run_findings")
    exports = root / "exports"
    planted: dict[str, dict[str, tuple[int, int]]] = {}
    planted["clean"] = write_seed_export(exports / "clean.json", run_id="clean", seed=101)
    for run_id, seed in (("exact", 102), ("exact-twin", 103)):
        planted[run_id] = write_seed_export(
            exports / f"{run_id}.json",
            run_id=run_id,
            seed=seed,
            noise=0.0,
            exponent=0.35,
            base_model_id="Qwen/Qwen2.5-14B-Instruct",
            tags=("power-laws",),
        )
    # A long healthy run: lone excursions that noise gives over 2,000 steps are not reported.
    planted["long"] = write_seed_export(
        exports / "long.json", run_id="long", seed=105, steps=2000, tags=("baseline",)
    )
    planted["nocache"] = write_seed_export(
        exports / "nocache.json", run_id="nocache", seed=104, cache=False, tags=("baseline",)
    )
    for index, (pattern, step) in enumerate(PLANTS.items()):
        planted[pattern] = write_seed_export(
            exports / f"{pattern}.json",
            run_id=pattern,
            seed=200 + index,
            patterns={pattern: step},
            tags=("baseline",),
        )
    # A seed-style run three times noisier than the default.
    planted["noisy"] = write_seed_export(
        exports / "noisy.json", run_id="noisy", seed=106, steps=400, noise=3.0, tags=("baseline",)
    )
    logs = root / "logs"
    for run_id, (style, steps, seed, extra) in {**GRPO_HEALTHY, **GRPO_FLAT}.items():
        target = (
            logs / f"{run_id}.jsonl" if style == "verl" else logs / run_id / "trainer_state.json"
        )
        write_grpo_log(target, steps=steps, seed=seed, style=style, **extra)
    _write_verl_lines(logs / "diverged.jsonl", _diverged())
    _write_verl_lines(logs / "crashed.jsonl", _crashed())
    for run_id, (style, seed, after) in BLOWN_UP.items():
        _write_start(logs, run_id, style, _blown_up(seed, after))
    for run_id, (style, seed, ratio, tau) in WARM_STARTS.items():
        _write_start(logs, run_id, style, _warm_start(seed, ratio, tau))
    lake, warehouse = root / "lake", root / "warehouse" / "obs.duckdb"
    landed = ingest_metrics(exports, lake=lake, fmt="wandb-export")
    assert sorted(landed.runs) == sorted(planted)
    landed = ingest_metrics(logs, lake=lake)
    assert sorted(landed.runs) == sorted(
        [*GRPO_HEALTHY, *GRPO_FLAT, "diverged", "crashed", *BLOWN_UP, *WARM_STARTS]
    )
    result = run_dbt(
        "build",
        warehouse,
        lake,
        [
            "--select",
            "+fct_run_findings +fct_run_throughput +fct_extraction_quality "
            "+fct_league +fct_eval_results +fct_power_law_fit +fct_cache_stats "
            "+fct_rollout_reliability "
            # fct_run_findings reads the rollouts too (the metric audit's finding), so
            # the data test over stg_rollouts runs; it reads int_prompt_iteration
            "+int_prompt_iteration",
        ],
    )
    assert result.success
    state = Built(exports, planted)
    state.con = duckdb.connect(str(warehouse), read_only=True)
    try:
        yield state
    finally:
        state.con.close()


def _write_verl_lines(path: Path, rows: list[dict[str, float]]) -> None:
    """verl's file-logger lines; NaN and Infinity as Python's json writes them."""
    path.write_text(
        "".join(json.dumps({"step": i + 1, "data": row}) + "\n" for i, row in enumerate(rows))
    )


def _diverged() -> list[dict[str, float]]:
    """A short run whose reward turns NaN at step 40 and KL infinite at step 45."""
    rows = []
    for i in range(60):
        row = {
            "critic/score/mean": 0.3 + 0.004 * i + 0.01 * math.sin(i),
            "actor/kl_loss": 0.001 * (1 + i / 60),
        }
        if i + 1 == 40:
            row["critic/score/mean"] = math.nan
        if i + 1 == 45:
            row["actor/kl_loss"] = math.inf
        rows.append(row)
    return rows


def _crashed() -> list[dict[str, float]]:
    """Reward only (no loss, no gradient norm): rising, then 40% lower from step 81 on."""
    return [
        {
            "critic/score/mean": (0.3 + 0.003 * i) * (0.6 if i >= 80 else 1.0)
            + 0.01 * math.sin(3 * i)
        }
        for i in range(140)
    ]


# Keys as verl's file logger and TRL's trainer_state.json write them.
KEYS = {
    "verl": {
        "reward": "critic/score/mean",
        "loss": "actor/pg_loss",
        "kl": "actor/kl_loss",
        "grad_norm": "actor/grad_norm",
        "entropy": "actor/entropy",
        "accuracy": "val-core/openai/gsm8k/reward/mean@1",
    },
    "trl": {
        "reward": "reward",
        "loss": "loss",
        "kl": "kl",
        "grad_norm": "grad_norm",
        "entropy": "entropy",
        "accuracy": "eval_accuracy",
    },
}


def _batch_means(rng: np.random.Generator, p: np.ndarray, batch: int = 64) -> np.ndarray:
    """The mean of a batch of pass/fail rewards at success probability p."""
    return rng.binomial(batch, np.clip(p, 0.0, 1.0)) / batch


def _blown_up(seed: int, after: float) -> dict[str, np.ndarray]:
    """A GRPO run with a learning rate ten times too high: step 1 is normal
    (gradient norm 0.5); the update it makes is far too large, so at step 2
    the gradient norm is 290 and KL 65; the policy is broken: from step 3 the
    reward (0.62 before) is about 0.04 and held-out accuracy falls from 0.77
    to 0.02. After the blow-up the gradient norm wanders around ``after``
    (3: the KL term pulls hard; 0.05: all-zero rewards leave GRPO almost no
    advantage)."""
    rng = np.random.default_rng(seed)
    t = np.arange(1, START_STEPS + 1, dtype=float)
    grad = after * np.exp(rng.normal(0, 0.5, START_STEPS))
    grad[0], grad[1] = 0.5 * math.exp(rng.normal(0, 0.1)), 290.0
    p = np.where(t <= 2, 0.62, np.where(t == 3, 0.25, 0.04))
    kl = np.where(t == 1, 0.001, 5.0 + 60.0 * np.exp(-(t - 2) / 15))
    kl = kl * np.exp(rng.normal(0, 0.1, START_STEPS))
    loss = rng.normal(0, 0.01, START_STEPS)
    loss[1] = 1.5
    entropy = np.where(t <= 1, 0.6, 3.0) * np.exp(rng.normal(0, 0.05, START_STEPS))
    accuracy = np.where(t <= 1, 0.77, 0.02)
    return {
        "reward": _batch_means(rng, p),
        "loss": loss,
        "kl": kl,
        "grad_norm": grad,
        "entropy": entropy,
        "accuracy": accuracy,
    }


def _warm_start(seed: int, ratio: float, tau: float) -> dict[str, np.ndarray]:
    """A healthy GRPO run whose gradient norm starts ``ratio`` times its later
    level and decays smoothly (time constant ``tau`` steps), with real noise
    (lognormal, heavy tailed); reward and accuracy rise, KL stays small."""
    rng = np.random.default_rng(seed)
    t = np.arange(1, START_STEPS + 1, dtype=float)
    level = 0.3 * (1 + (ratio - 1) * np.exp(-(t - 1) / tau))
    grad = level * np.exp(0.3 * rng.standard_t(6, START_STEPS) / math.sqrt(1.5))
    p = 0.3 + 0.4 * (1 - np.exp(-t / 30))
    kl = (0.0005 + 0.01 * t / START_STEPS) * np.exp(rng.normal(0, 0.3, START_STEPS))
    entropy = (0.4 + 0.2 * np.exp(-t / 30)) * np.exp(rng.normal(0, 0.05, START_STEPS))
    return {
        "reward": _batch_means(rng, p),
        "loss": rng.normal(0, 0.01, START_STEPS),
        "kl": kl,
        "grad_norm": grad,
        "entropy": entropy,
        "accuracy": 0.5 + 0.2 * (1 - np.exp(-t / 30)),
    }


def _write_start(logs: Path, run_id: str, style: str, series: dict[str, np.ndarray]) -> None:
    """A metric log of steps 1..START_STEPS, accuracy at step 1 and every 10th."""
    keys = KEYS[style]
    rows = []
    for i in range(START_STEPS):
        row = {keys[k]: float(v[i]) for k, v in series.items() if k != "accuracy"}
        if i == 0 or (i + 1) % 10 == 0:
            row[keys["accuracy"]] = float(series["accuracy"][i])
        rows.append(row)
    if style == "verl":
        _write_verl_lines(logs / f"{run_id}.jsonl", rows)
        return
    state = {
        "global_step": START_STEPS,
        "max_steps": START_STEPS,
        "log_history": [{"step": i + 1, **row} for i, row in enumerate(rows)],
    }
    (logs / run_id).mkdir(parents=True)
    (logs / run_id / "trainer_state.json").write_text(json.dumps(state))


def _findings(built: Built, run_id: str) -> list[dict[str, Any]]:
    return built.rows(
        "select * from fct_run_findings where run_id = ? order by pattern, first_step", [run_id]
    )


# --------------------------------------------------------------------------- findings


@pytest.mark.parametrize("pattern", sorted(PLANTS))
def test_run_findings_find_each_planted_pattern_where_it_was_planted(
    built: Built, pattern: str
) -> None:
    start, _ = built.planted[pattern][pattern]
    assert start == PLANTS[pattern]
    found = [
        f for f in _findings(built, pattern) if f["pattern"] == pattern and f["severity"] in SEVERE
    ]
    tolerance = PLATEAU_TOLERANCE if pattern == "performance_plateau" else TOLERANCE
    near = [f for f in found if abs(f["first_step"] - start) <= tolerance]
    assert near, (pattern, start, [(f["first_step"], f["summary"]) for f in found])
    expected = "critical" if pattern in ("grad_spike_reward_collapse", "kl_runaway") else "warning"
    assert near[0]["severity"] == expected
    # Nothing else above info but the pattern's known companions.
    others = {
        f["pattern"]
        for f in _findings(built, pattern)
        if f["severity"] in SEVERE and f["pattern"] != pattern
    }
    assert others <= COMPANIONS.get(pattern, set()), others


@pytest.mark.parametrize("run_id", HEALTHY)
def test_run_findings_raise_nothing_above_info_on_a_healthy_run(built: Built, run_id: str) -> None:
    findings = _findings(built, run_id)
    assert [
        (f["pattern"], f["first_step"], f["summary"]) for f in findings if f["severity"] in SEVERE
    ] == []
    patterns = {f["pattern"] for f in findings}
    assert "power_law_scaling" in patterns
    # The run without cache metrics says so (info); the others have a good cache.
    assert ("prefix_cache_inefficiency" in patterns) == (run_id == "nocache")


@pytest.mark.parametrize("run_id", [*sorted(GRPO_HEALTHY), "noisy"])
def test_run_findings_stay_quiet_on_healthy_runs_with_real_noise(built: Built, run_id: str) -> None:
    """Binomial reward noise, heavy-tailed gradient norms, a loss of 0: nothing above info."""
    severe = [
        (f["pattern"], f["severity"], f["summary"])
        for f in _findings(built, run_id)
        if f["severity"] in SEVERE
    ]
    assert severe == []


def test_a_converged_run_is_a_plateau_and_a_saturated_one_is_saturation(built: Built) -> None:
    converged = [f for f in _findings(built, "verl-converged") if f["severity"] in SEVERE]
    assert [f["pattern"] for f in converged] == ["performance_plateau"]
    # The reward's pace falls under a fifth of its average (time constant
    # 2000 / 6 steps) after 1.5 to 4 time constants; the plateau runs to the end.
    assert 500 <= converged[0]["first_step"] <= 1400
    assert converged[0]["last_step"] == 2000
    saturated = [f for f in _findings(built, "trl-saturated") if f["severity"] in SEVERE]
    assert "reward_saturation" in {f["pattern"] for f in saturated}
    assert "performance_plateau" not in {f["pattern"] for f in saturated}
    (finding,) = [f for f in saturated if f["pattern"] == "reward_saturation"]
    assert json.loads(finding["evidence"])["reward_mean_share_at_max"] >= 0.5
    assert "harder prompts" in finding["hypotheses"][0]


def test_a_non_finite_reward_or_kl_is_critical(built: Built) -> None:
    critical = [f for f in _findings(built, "diverged") if f["severity"] == "critical"]
    signals = {s for f in critical for s in f["signals"]}
    assert {"reward_mean_non_finite", "kl_non_finite"} <= signals
    assert {f["first_step"] for f in critical} == {40, 45} or (
        min(f["first_step"] for f in critical) == 40
    )


def test_a_reward_crash_without_loss_or_gradient_norm_is_found(built: Built) -> None:
    severe = [f for f in _findings(built, "crashed") if f["severity"] in SEVERE]
    falling = [f for f in severe if "reward_falling" in f["signals"]]
    assert falling, severe
    assert abs(falling[0]["first_step"] - 81) <= 10
    assert "no loss logged" in falling[0]["summary"]


@pytest.mark.parametrize("run_id", sorted(BLOWN_UP))
def test_a_run_that_blows_up_at_step_2_is_named_at_its_start(built: Built, run_id: str) -> None:
    """Gradient norm 290 at step 2 after 0.5, the reward from 0.62 to 0.04: named at step 2."""
    findings = {f["pattern"]: f for f in _findings(built, run_id) if f["severity"] in SEVERE}
    assert set(findings) == {"grad_spike_reward_collapse", "training_instability", "kl_runaway"}
    collapse = findings["grad_spike_reward_collapse"]
    assert (collapse["severity"], collapse["first_step"]) == ("critical", 2)
    evidence = json.loads(collapse["evidence"])
    assert evidence["spike_step"] == 2 and evidence["grad_norm"] == 290.0
    assert evidence["steps_to_collapse"] <= 5 and evidence["drop_fraction"] > 0.8
    assert (
        collapse["summary"].startswith("Gradient spike then reward collapse at steps 2-")
        and "grad_norm reached 290.0 at step 2 from " in collapse["summary"]
    )
    assert "below its median up to the spike" in collapse["summary"]
    instability = findings["training_instability"]
    assert (instability["severity"], instability["first_step"]) == ("warning", 2)
    assert "grad_norm_spike" in instability["signals"]
    assert "(burn-in)" in instability["summary"]
    assert findings["kl_runaway"]["severity"] == "critical"


def test_burn_in_scores_equal_hand_computations(built: Built) -> None:
    """blowup-verl's gradient norm at step 2 and its reward collapse, by hand."""
    _, seed, after = BLOWN_UP["blowup-verl"]
    series = _blown_up(seed, after)
    logs = np.log(series["grad_norm"])
    changes = np.diff(logs)  # into steps 2, 3, ...
    head = changes[:20]

    def mad(values: np.ndarray) -> float:
        return float(np.median(np.abs(values - np.median(values))))

    centre = float(np.median(changes))
    scale = max(
        1.4826 * mad(changes),
        float(np.quantile(np.abs(changes - centre), 0.95)) / 1.96,
        0.05 * float(np.quantile(logs, 0.95) - np.quantile(logs, 0.05)),
        1.4826 * mad(head),
    )
    expected_z = (changes[0] - float(np.median(head))) / scale
    [spike] = built.rows(
        "select * from int_metric_scores where run_id = 'blowup-verl' "
        "and metric = 'grad_norm' and step = 2"
    )
    assert spike["is_burn_in"] and spike["trailing_points"] == 1
    assert spike["z"] == pytest.approx(expected_z, rel=1e-9) and spike["z"] > 6
    assert spike["burn_in_reference"] == pytest.approx(series["grad_norm"][0])
    # Points with a trailing window are scored as before, not in burn-in.
    assert built.rows(
        "select count(*) as n from int_metric_scores where run_id = 'blowup-verl' "
        "and is_burn_in and trailing_points >= 10"
    ) == [{"n": 0}]
    # The collapse: the reward's median at steps 1-2 against its lowest mean
    # of 5 points running within 10 steps, in standard errors of the two.
    reward = series["reward"]
    [noise] = built.rows(
        "select any_value(noise_scale) as scale from int_metric_scores "
        "where run_id = 'blowup-verl' and metric = 'reward_mean'"
    )
    means = [float(np.mean(reward[i : i + 5])) for i in range(1, 12)]  # from steps 2-12
    before = float(np.median(reward[:2]))
    lowest = min(means)
    [collapse] = [
        f for f in _findings(built, "blowup-verl") if f["pattern"] == "grad_spike_reward_collapse"
    ]
    evidence = json.loads(collapse["evidence"])
    assert evidence["reward_before"] == pytest.approx(before, rel=1e-7)
    assert evidence["reward_min"] == pytest.approx(lowest, rel=1e-7)
    assert evidence["collapse_step"] == 2 + means.index(lowest)
    assert evidence["reward_drop_z"] == pytest.approx(
        (before - lowest) / (noise["scale"] * math.sqrt(1 / 5 + 1 / 2)), rel=1e-6
    )


@pytest.mark.parametrize("run_id", sorted(WARM_STARTS))
def test_a_healthy_run_with_a_high_decaying_start_stays_clean(built: Built, run_id: str) -> None:
    """A gradient norm 4-10x its later level at step 1, decaying smoothly: nothing above info."""
    severe = [
        (f["pattern"], f["severity"], f["summary"])
        for f in _findings(built, run_id)
        if f["severity"] in SEVERE
    ]
    assert severe == []
    # The start was judged: its gradient norms from step 2 to step 10 have burn-in scores.
    scored = built.rows(
        "select step from int_metric_scores where run_id = ? and metric = 'grad_norm' "
        "and is_burn_in order by step",
        [run_id],
    )
    assert [r["step"] for r in scored] == list(range(2, 11))


def test_run_findings_evidence_hypotheses_and_summary(built: Built) -> None:
    seed: dict[str, list[tuple[int, str]]] = {}
    with (project_dir() / "seeds" / "finding_hypotheses.csv").open(newline="") as handle:
        for row in csv.DictReader(handle):
            seed.setdefault(row["pattern"], []).append((int(row["position"]), row["hypothesis"]))
    findings = built.rows("select * from fct_run_findings")
    # Every pattern the generator plants, and the saturation of a reward at its ceiling,
    # whose groups then all score alike (TRL's frac_reward_zero_std near 1): signal loss.
    assert {f["pattern"] for f in findings} == {*PATTERNS, "reward_saturation", "grpo_signal_loss"}
    assert {f["run_id"] for f in findings if f["pattern"] == "grpo_signal_loss"} == {
        "trl-saturated"
    }
    for finding in findings:
        assert finding["hypotheses"] == [text for _, text in sorted(seed[finding["pattern"]])]
        evidence = json.loads(finding["evidence"])
        assert isinstance(evidence, dict) and evidence["flagged_steps"] == finding["flagged_steps"]
        assert all(isinstance(v, int | float) and math.isfinite(v) for v in evidence.values())
        assert finding["summary"].endswith(".") and str(finding["first_step"]) in finding["summary"]
    [collapse] = [
        f
        for f in findings
        if f["run_id"] == "grad_spike_reward_collapse" and f["pattern"] == f["run_id"]
    ]
    evidence = json.loads(collapse["evidence"])
    assert evidence["spike_step"] == PLANTS["grad_spike_reward_collapse"]
    # The generator drops reward to 68% of its level three steps after the spike.
    assert evidence["steps_to_collapse"] <= 4 and 0.2 <= evidence["drop_fraction"] <= 0.45
    assert "grad_norm reached" in collapse["summary"] and "% below" in collapse["summary"]


# --------------------------------------------------------------------------- power law


def test_power_law_fit_recovers_the_planted_exponent(built: Built) -> None:
    fits = {(r["scope"], r["fit_id"]): r for r in built.rows("select * from fct_power_law_fit")}
    exact = fits[("run", "exact")]
    assert abs(exact["exponent"] - 0.35) < 0.02 and exact["exponent"] == pytest.approx(
        0.35, abs=1e-4
    )
    assert exact["r_squared"] == pytest.approx(1.0, abs=1e-6)
    assert (exact["n_used"], exact["n_excluded"]) == (200, 0)
    # The prefactor the generator used: reward 0.85 at the last step's compute.
    last_compute = 200 * 8 * 8 * 2
    assert exact["prefactor"] == pytest.approx(0.85 / last_compute**0.35, rel=1e-3)
    # Default target: the largest reward seen, reached at about the last compute.
    assert exact["target_reward"] == pytest.approx(0.85, rel=1e-4)
    assert exact["compute_for_target"] == pytest.approx(last_compute, rel=1e-3)
    noisy = fits[("run", "clean")]
    assert abs(noisy["exponent"] - 0.5) < 0.02 and noisy["r_squared"] > 0.99
    # Two noiseless 14B runs of the same law, both tagged power-laws, pool to it.
    pooled = fits[("base_model", "Qwen/Qwen2.5-14B-Instruct")]
    assert pooled["runs"] == 2 and pooled["run_id"] is None and pooled["n_used"] == 400
    assert pooled["exponent"] == pytest.approx(0.35, abs=1e-4)
    # Untagged runs stay out of the pooled fits.
    assert fits[("base_model", "Qwen/Qwen2.5-7B-Instruct")]["runs"] == 1


# --------------------------------------------------------------------------- per-step marts


def test_throughput_extraction_and_reliability_equal_hand_computations(built: Built) -> None:
    history = {row["_step"]: row for row in built.export("infrastructure_bottleneck")["history"]}
    for step in (0, 37, 90, 199):
        logged = history[step]
        [row] = built.rows(
            "select * from fct_run_throughput where run_id = ? and step = ?",
            ["infrastructure_bottleneck", step],
        )
        trajectories = logged["benchmark/trajectories"]
        rollout = logged["benchmark/rollout_time_s"]
        training = logged["benchmark/training_time_s"]
        assert row["trajectories_per_second"] == pytest.approx(trajectories / rollout)
        assert row["training_rollout_ratio"] == pytest.approx(training / rollout)
        assert row["is_training_bound"] == (training > rollout)
        assert row["pipeline_overlap_s"] == pytest.approx(logged["benchmark/pipeline_overlap_s"])
        [quality] = built.rows(
            "select * from fct_extraction_quality where run_id = ? and step = ?",
            ["infrastructure_bottleneck", step],
        )
        expected = logged["extraction/orders_expected"]
        extracted = logged["extraction/orders_extracted"]
        assert quality["extraction_gap"] == expected - extracted
        assert quality["extraction_gap_share"] == pytest.approx((expected - extracted) / expected)
        assert quality["extracted_share"] == pytest.approx(logged["extraction/rate"], abs=1e-6)
        assert quality["is_below_target"] == (logged["extraction/rate"] < 0.95)
    # The run-level rate is the sum of trajectories over the sum of rollout time.
    [last] = built.rows(
        "select cumulative_trajectories_per_second as rate from fct_run_throughput "
        "where run_id = 'infrastructure_bottleneck' and step = 199"
    )
    total = sum(r["benchmark/trajectories"] for r in history.values())
    seconds = sum(r["benchmark/rollout_time_s"] for r in history.values())
    assert last["rate"] == pytest.approx(total / seconds)
    # The planted failures, and the z-score of the planted slow game by hand.
    start = PLANTS["infrastructure_bottleneck"]
    failures = built.rows(
        "select step from fct_rollout_reliability "
        "where run_id = 'infrastructure_bottleneck' and is_failure order by step"
    )
    assert [r["step"] for r in failures] == [start, start + 4, start + 7, start + 11]
    # The same z as the findings' (int_metric_scores), by hand: log space,
    # against the median of the 20 points before, over the series' noise.
    logs = [math.log(history[s]["rollout/max_total_s"]) for s in sorted(history)]
    residuals = [
        logs[i] - statistics.median(logs[max(0, i - 20) : i]) if i >= 10 else None
        for i in range(len(logs))
    ]
    scored = [r for r in residuals if r is not None]

    def mad(values: list[float]) -> float:
        middle = statistics.median(values)
        return statistics.median(abs(v - middle) for v in values)

    noise = max(1.4826 * mad(scored), float(np.quantile(np.abs(scored), 0.95)) / 1.96)
    index = sorted(history).index(start)
    before = [r for r in residuals[max(0, index - 20) : index] if r is not None]
    expected_z = residuals[index] / max(noise, 1.4826 * mad(before))
    [spike] = built.rows(
        "select * from fct_rollout_reliability where run_id = 'infrastructure_bottleneck' "
        "and step = ?",
        [start],
    )
    assert spike["max_total_s_z"] == pytest.approx(expected_z)
    assert spike["max_total_s_trailing_median"] == pytest.approx(
        math.exp(statistics.median(logs[index - 20 : index]))
    )
    assert spike["is_total_spike"]


def test_cache_stats_equal_hand_computations(built: Built) -> None:
    history = built.export("clean")["history"]
    rates = [row["cache/hit_rate"] for row in history]
    [row] = built.rows("select * from fct_cache_stats where run_id = 'clean'")
    assert row["cache_enabled"] and row["data_points"] == 200
    assert row["avg_hit_rate"] == pytest.approx(sum(rates) / len(rates))
    assert row["final_hit_rate"] == pytest.approx(rates[-1])
    assert row["peak_hit_rate"] == pytest.approx(max(rates))
    assert row["hit_rate_after_warmup"] == pytest.approx(sum(rates[5:]) / len(rates[5:]))
    last = history[-1]
    assert row["overall_hit_rate"] == pytest.approx(
        last["cache/total_hits"] / last["cache/total_queries"]
    )
    assert row["total_prompt_tokens"] == last["cache/prompt_tokens"]
    assert row["estimated_tokens_saved"] == pytest.approx(
        sum(rates) / len(rates) * last["cache/prompt_tokens"]
    )
    assert row["status"] == "good"
    [low] = built.rows("select * from fct_cache_stats where run_id = 'prefix_cache_inefficiency'")
    # Broken at step 130: the run-level status still averages the good part
    # (the finding dates the break); the last rate and the slope show it.
    assert low["final_hit_rate"] < 0.3 and low["hit_rate_slope"] < 0
    [off] = built.rows("select * from fct_cache_stats where run_id = 'nocache'")
    assert (off["cache_enabled"], off["status"], off["data_points"]) == (False, "disabled", 0)


def test_league_and_eval_results_read_the_evaluator_keys(built: Built) -> None:
    history = {row["_step"]: row for row in built.export("clean")["history"]}
    league = built.rows("select * from fct_league where run_id = 'clean' order by step")
    assert [r["step"] for r in league] == list(range(5, 200, 10))
    for row in league:
        assert row["evaluation_step"] == row["step"] - 5
        assert row["elo"] == pytest.approx(history[row["step"]]["elo/challenger"])
        assert row["league_checkpoints"] == history[row["step"]]["league/num_checkpoints"]
    evals = built.rows(
        "select * from fct_eval_results where run_id = 'clean' order by step, opponent"
    )
    assert {r["opponent"] for r in evals} == {"random", "rule_based"}
    assert {r["step"] for r in evals if r["is_latest"]} == {190}
    first = evals[0]
    assert first["win_rate"] == pytest.approx(history[10]["eval/vs_random/win_rate"])
    assert first["avg_centers"] == pytest.approx(history[10]["eval/vs_random/avg_centers"])


# --------------------------------------------------------------------------- generator


def test_synthetic_runs_are_seeded_and_check_their_arguments(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert write_seed_export(a, run_id="r", seed=5, patterns=["kl_runaway"]) == {
        "kl_runaway": (100, 199)
    }
    write_seed_export(b, run_id="r", seed=5, patterns=["kl_runaway"])
    assert a.read_bytes() == b.read_bytes()
    export = json.loads(a.read_text())
    assert set(export) == {
        "id",
        "name",
        "state",
        "created_at",
        "tags",
        "config",
        "summary",
        "history",
        "artifacts",
    }
    assert export["config"]["batch_size"] == 64 and len(export["history"]) == 200
    with pytest.raises(ValueError, match="unknown pattern"):
        write_seed_export(a, run_id="r", patterns=["nope"])
    with pytest.raises(ValueError, match="outside"):
        write_seed_export(a, run_id="r", patterns={"kl_runaway": 500})


def test_a_long_healthy_run_reports_few_lone_excursions(built: Built) -> None:
    """2,000 steps of noise give many z > 3 points; only those beyond sqrt(2 ln n) show."""
    excursions = built.rows(
        "select pattern, first_step, summary from fct_run_findings where run_id = 'long' "
        "and pattern in ('training_instability', 'infrastructure_bottleneck')"
    )
    noisy = built.rows(
        "select count(*) as n from (select step, abs(max_total_s_z) as z from "
        "fct_rollout_reliability where run_id = 'long') where z > 3"
    )[0]["n"]
    assert noisy >= 3  # the noise is there ...
    assert len(excursions) <= 3, excursions  # ... and is not a list of findings
    assert all(f["severity"] == "info" for f in _findings(built, "long") if f["pattern"] in (
        "training_instability", "infrastructure_bottleneck"))  # fmt: skip
