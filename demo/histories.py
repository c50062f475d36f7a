"""Seeded synthetic W&B run exports of a GRPO Diplomacy run, with planted patterns.

``write_seed_export(path, run_id="r1", patterns=["kl_runaway"])`` writes one run
export JSON as the "analyze-experiment" workflow writes it (``id``, ``name``,
``state``, ``created_at``, ``tags``, ``config``, ``summary``, ``history``,
``artifacts``) and returns, for each planted pattern, the steps it covers.
It feeds the tests of ``fct_run_findings`` and its neighbours: the same
arguments always give the same bytes.

A clean run is healthy and noisy: reward follows a power law of the
cumulative compute (``reward = a * compute ** exponent`` times a lognormal
noise of about 1.2%), loss falls, KL stays small, the gradient norm is stable,
extraction holds about 98.5% and the prefix cache warms up to about 66% in
five steps. Compute is ``power_law/cumulative_simulated_years`` = (step + 1) x
num_groups_per_step x samples_per_group x rollout_horizon_years. League (Elo)
points come every 10 steps, at steps 5, 15, 25, ... with
``elo/evaluation_step`` naming the checkpoint they evaluated (5 steps
earlier, as a separate evaluation job would); evaluations against fixed
opponents come at steps 10, 20, ... Besides the workflow's own keys it logs
verl's ``actor/entropy``, ``response_length/mean`` and
``response_length/clip_ratio`` (two of obs's health signatures read them).

Each pattern of ``PATTERNS`` can be planted at a step ``s`` (default: half way).
The effects are sized like real incidents and close to obs's default
thresholds, not caricatures:

* ``training_instability``: gradient norm 1.6-1.9x its level at s, s+3, s+6;
  loss up by 0.07-0.09 at s+1 and s+4; reward swings of 5-8% (s .. s+8).
* ``performance_plateau``: from s the reward (and Elo) stops improving.
* ``infrastructure_bottleneck``: 1-3 failed rollouts at s, s+4, s+7, s+11;
  the slowest game 2.4x longer at s and s+7; volume reloads 2.8x at s+4, s+11.
* ``model_quality_degradation``: from s extraction falls 0.3 points a step
  for 30 steps (98.5% to 89.5%), empty responses rise from 0.3 to about 8 a
  step, and reward falls 0.5% of its level a step for 40 steps while the loss
  keeps falling.
* ``power_law_scaling``: always present when compute is logged (the whole run).
* ``prefix_cache_inefficiency``: from s the hit rate falls to about 0.22 (a
  prompt template that puts the variable part first). ``cache=False`` instead
  logs no cache metric at all.
* ``grad_spike_reward_collapse``: gradient norm 2x at s, then reward falls to
  68% of its level by s+3 and recovers over 40 steps.
* ``length_truncation``: from s responses grow towards the 1,024-token cap
  over 25 steps and the clipped share rises from about 2% to 32%.
* ``entropy_collapse_plateau``: from s entropy decays to about 22% of its
  level (time constant 5 steps) and the reward stops improving.
* ``kl_runaway``: from s KL rises 0.015 a step (0.5 about 30 steps later).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

PATTERNS: tuple[str, ...] = (
    "training_instability",
    "performance_plateau",
    "infrastructure_bottleneck",
    "model_quality_degradation",
    "power_law_scaling",
    "prefix_cache_inefficiency",
    "grad_spike_reward_collapse",
    "length_truncation",
    "entropy_collapse_plateau",
    "kl_runaway",
)
OPPONENTS: tuple[str, ...] = ("random", "rule_based")
NUM_GROUPS_PER_STEP = 8
SAMPLES_PER_GROUP = 8
ROLLOUT_HORIZON_YEARS = 2
MAX_RESPONSE_TOKENS = 1024
# Reward at the last step of a clean run (the power law's prefactor is set from it).
FINAL_REWARD = 0.85
# Relative (lognormal) reward noise of a clean run at noise=1.
REWARD_NOISE = 0.012
EPOCH = datetime(2025, 3, 1, tzinfo=UTC)


def write_seed_export(
    path: Path | str,
    *,
    run_id: str,
    steps: int = 200,
    patterns: Iterable[str] | Mapping[str, int] = (),
    seed: int = 0,
    base_model_id: str = "Qwen/Qwen2.5-7B-Instruct",
    tags: Sequence[str] = ("power-laws", "baseline"),
    exponent: float = 0.5,
    noise: float = 1.0,
    cache: bool = True,
    name: str | None = None,
    observed: Mapping[int, Mapping[str, float]] | None = None,
) -> dict[str, tuple[int, int]]:
    """Write one run export JSON to ``path``; return {pattern: (first, last) planted step}.

    ``patterns`` is a list of pattern ids (each planted half way through the
    run) or a mapping of pattern id to the step it starts at. ``noise`` scales
    every random fluctuation (0 gives exact trends: reward is exactly
    ``a * compute ** exponent``). ``cache=False`` logs no ``cache/*`` metric.

    ``observed``: what the run's own rollouts give at some steps (the demo's dumps:
    ``reward_mean``, ``reward_std``, ``response_length`` by step), logged at those
    steps instead of the generated values, every other step of those three series
    scaled to continue from the last observed one, so that a metric audit of the
    history against the rollouts finds them agreeing.
    """
    plants = _plants(patterns, steps)
    run = _Run(steps, np.random.default_rng(seed), noise, exponent, cache)
    planted = run.plant(plants)
    created = EPOCH + timedelta(hours=seed % 1000)
    history = run.history(created.timestamp())
    if observed:
        _log_observed(history, observed)
    export = {
        "id": run_id,
        "name": name or f"diplomacy-grpo-{run_id}",
        "state": "finished",
        "created_at": created.isoformat().replace("+00:00", "Z"),
        "tags": list(tags),
        "config": {
            "base_model_id": base_model_id,
            "lora_rank": 16,
            "learning_rate": 1e-5,
            "batch_size": NUM_GROUPS_PER_STEP * SAMPLES_PER_GROUP,
            "num_groups_per_step": NUM_GROUPS_PER_STEP,
            "samples_per_group": SAMPLES_PER_GROUP,
            "rollout_horizon_years": ROLLOUT_HORIZON_YEARS,
            "total_steps": steps,
            "prefix_cache_optimized": cache,
        },
        "summary": run.summary(history),
        "history": history,
        "artifacts": [
            {
                "name": f"eval-replays-{run_id}",
                "type": "replays",
                "version": "v0",
                "aliases": ["latest"],
                "size": 48_213,
                "created_at": (created + timedelta(hours=3)).isoformat().replace("+00:00", "Z"),
            }
        ],
    }
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(export, indent=None, separators=(",", ":")) + "\n")
    return planted


def _plants(patterns: Iterable[str] | Mapping[str, int], steps: int) -> dict[str, int]:
    if steps < 40:
        raise ValueError(f"steps={steps}: a run needs at least 40 steps")
    if isinstance(patterns, Mapping):
        chosen = dict(patterns)
    else:
        chosen = dict.fromkeys(patterns, steps // 2)
    for pattern, step in chosen.items():
        if pattern not in PATTERNS:
            raise ValueError(f"unknown pattern {pattern!r}; use one of {', '.join(PATTERNS)}")
        if not 0 < step < steps:
            raise ValueError(f"{pattern} planted at step {step}: outside the run's 0..{steps - 1}")
    return chosen


class _Run:
    """Trends of every metric, then the planted changes, then the noise."""

    def __init__(
        self, steps: int, rng: np.random.Generator, noise: float, exponent: float, cache: bool
    ) -> None:
        self.steps, self.rng, self.noise, self.cache = steps, rng, noise, cache
        t = np.arange(steps, dtype=float)
        self.t = t
        self.per_step = float(NUM_GROUPS_PER_STEP * SAMPLES_PER_GROUP * ROLLOUT_HORIZON_YEARS)
        self.compute = (t + 1) * self.per_step
        self.prefactor = FINAL_REWARD / self.compute[-1] ** exponent
        self.reward = self.prefactor * self.compute**exponent
        self.loss = 0.05 + 0.35 * np.exp(-t / 60)
        self.kl = 0.01 + 0.05 * t / steps
        self.grad = 0.8 + 0.4 * np.exp(-t / 50)
        self.entropy = 0.8 + 0.4 * np.exp(-t / 150)
        self.length = 380 + 60 * t / steps
        self.clip = 0.015 + 0.01 * t / steps
        self.extraction = np.full(steps, 0.985)
        self.empty = np.full(steps, 0.3)
        self.hit_rate = 0.66 * (1 - np.exp(-(t + 1) / 1.5))
        self.failed = np.zeros(steps)
        self.total_mult = np.ones(steps)
        self.reload_mult = np.ones(steps)
        self.rollout_mult = np.ones(steps)
        self.grad_mult = np.ones(steps)
        self.reward_mult = np.ones(steps)
        self.loss_add = np.zeros(steps)

    # ------------------------------------------------------------------ plants

    def plant(self, plants: dict[str, int]) -> dict[str, tuple[int, int]]:
        last = self.steps - 1
        planted: dict[str, tuple[int, int]] = {}
        for pattern, s in sorted(plants.items(), key=lambda item: item[1]):
            k = np.clip(self.t - s, 0, None)
            after = self.t >= s
            if pattern == "training_instability":
                for offset, factor in ((0, 1.7), (3, 1.9), (6, 1.6)):
                    self._scale(self.grad_mult, s + offset, factor)
                for offset, add in ((1, 0.07), (4, 0.09)):
                    if s + offset <= last:
                        self.loss_add[s + offset] += add
                for offset, factor in ((1, 0.93), (2, 1.05), (5, 0.92), (6, 1.06)):
                    self._scale(self.reward_mult, s + offset, factor)
                planted[pattern] = (s, min(s + 8, last))
            elif pattern in ("performance_plateau", "entropy_collapse_plateau"):
                self.reward = np.where(after, self.reward[s], self.reward)
                if pattern == "entropy_collapse_plateau":
                    level = self.entropy[s]
                    self.entropy = np.where(
                        after, level * (0.22 + 0.78 * np.exp(-k / 5)), self.entropy
                    )
                planted[pattern] = (s, last)
            elif pattern == "infrastructure_bottleneck":
                for offset, count in ((0, 2), (4, 1), (7, 3), (11, 1)):
                    if s + offset <= last:
                        self.failed[s + offset] += count
                        self.rollout_mult[s + offset] *= 1.3
                for offset in (0, 7):
                    self._scale(self.total_mult, s + offset, 2.4)
                for offset in (4, 11):
                    self._scale(self.reload_mult, s + offset, 2.8)
                planted[pattern] = (s, min(s + 11, last))
            elif pattern == "model_quality_degradation":
                self.extraction = np.where(after, 0.985 - 0.003 * np.minimum(k, 30), 0.985)
                self.empty = np.where(after, 0.3 + 0.25 * np.minimum(k, 30), self.empty)
                level = self.reward[s]
                self.reward = np.where(after, level * (1 - 0.005 * np.minimum(k, 40)), self.reward)
                planted[pattern] = (s, last)
            elif pattern == "power_law_scaling":
                planted[pattern] = (0, last)
            elif pattern == "prefix_cache_inefficiency":
                self.hit_rate = np.where(after, 0.22, self.hit_rate)
                planted[pattern] = (s, last)
            elif pattern == "grad_spike_reward_collapse":
                self._scale(self.grad_mult, s, 2.0)
                if s <= last:
                    self.loss_add[s] += 0.06
                profile = np.interp(k, [0, 1, 2, 3, 43], [1.0, 0.85, 0.72, 0.68, 1.0])
                self.reward_mult = self.reward_mult * np.where(after, profile, 1.0)
                planted[pattern] = (s, min(s + 3, last))
            elif pattern == "length_truncation":
                ramp = np.minimum(k / 25, 1.0)
                level = self.length[s]
                cap = MAX_RESPONSE_TOKENS * 0.97
                self.length = np.where(after, level + (cap - level) * ramp, self.length)
                self.clip = np.where(after, self.clip[s] + 0.3 * ramp, self.clip)
                planted[pattern] = (s, last)
            elif pattern == "kl_runaway":
                self.kl = np.where(after, self.kl[s] + 0.015 * k, self.kl)
                planted[pattern] = (s, last)
        return planted

    def _scale(self, series: np.ndarray, step: int, factor: float) -> None:
        if step < self.steps:
            series[step] *= factor

    # ------------------------------------------------------------------ noise

    def _normal(self, scale: float) -> np.ndarray:
        return self.rng.normal(0.0, 1.0, self.steps) * scale * self.noise

    def _poisson(self, mean: np.ndarray) -> np.ndarray:
        draws = self.rng.poisson(np.maximum(mean, 0.0))
        return draws if self.noise > 0 else np.round(mean)

    # ------------------------------------------------------------------ history

    def history(self, start: float) -> list[dict[str, Any]]:
        steps = self.steps
        reward = self.reward * self.reward_mult * np.exp(self._normal(REWARD_NOISE))
        reward_std = 0.15 - 0.03 * self.t / steps + self._normal(0.008)
        loss = self.loss + self.loss_add + self._normal(0.01)
        kl = np.maximum(self.kl * (1 + self._normal(0.05)), 0.0)
        grad = self.grad * self.grad_mult * np.exp(self._normal(0.08))
        entropy = self.entropy * (1 + self._normal(0.02))
        length = self.length * (1 + self._normal(0.03))
        clip = np.clip(self.clip + self._normal(0.004), 0.0, 1.0)
        rollout = 60 * self.rollout_mult * (1 + self._normal(0.05))
        training = 42 * (1 + self._normal(0.05))
        failed = self.failed
        trajectories = NUM_GROUPS_PER_STEP * SAMPLES_PER_GROUP - failed
        per_trajectory = 20 + np.round(self._normal(0.5))
        expected = trajectories * per_trajectory
        rate = np.clip(self.extraction + self._normal(0.004), 0.0, 1.0)
        extracted = np.round(expected * rate)
        empty = self._poisson(self.empty)
        partial = self._poisson(np.full(steps, 1.5))
        reload_s = 2.0 * self.reload_mult * np.exp(self._normal(0.1))
        total_s = 95 * self.total_mult * np.exp(self._normal(0.08))
        hit = np.clip(self.hit_rate + self._normal(0.02), 0.0, 1.0)
        queries_per_step = trajectories * 30
        queries = np.cumsum(queries_per_step)
        hits = np.cumsum(np.round(queries_per_step * hit))
        prompt_tokens = np.cumsum(queries_per_step * 1800)
        seconds = np.cumsum(rollout + 5)
        elo_trend = 1000 + 600 * (self.reward - self.reward[0]) / FINAL_REWARD
        elo = elo_trend + self._normal(12)
        best_elo = -math.inf
        overlap = np.maximum(training - rollout, 0.0)
        overlap[0] = 0.0
        rows = []
        for i in range(steps):
            row: dict[str, Any] = {
                "_step": i,
                "_timestamp": round(start + seconds[i], 3),
                "_runtime": round(seconds[i], 3),
                "benchmark/loss": _num(loss[i]),
                "benchmark/kl": _num(kl[i]),
                "benchmark/reward_mean": _num(reward[i]),
                "benchmark/reward_std": _num(reward_std[i]),
                "benchmark/grad_norm": _num(grad[i]),
                "benchmark/rollout_time_s": _num(rollout[i]),
                "benchmark/training_time_s": _num(training[i]),
                "benchmark/pipeline_overlap_s": _num(overlap[i]),
                "benchmark/trajectories": int(trajectories[i]),
                "extraction/rate": _num(extracted[i] / expected[i]),
                "extraction/orders_expected": int(expected[i]),
                "extraction/orders_extracted": int(extracted[i]),
                "extraction/empty_responses": int(empty[i]),
                "extraction/partial_responses": int(partial[i]),
                "rollout/max_volume_reload_s": _num(reload_s[i]),
                "rollout/max_total_s": _num(total_s[i]),
                "rollout/failed_count": int(failed[i]),
                "power_law/cumulative_simulated_years": int(self.compute[i]),
                "power_law/simulated_years_per_step": int(self.per_step),
                "power_law/reward_at_compute": _num(reward[i]),
                "actor/entropy": _num(entropy[i]),
                "response_length/mean": _num(length[i]),
                "response_length/clip_ratio": _num(clip[i]),
            }
            if self.cache:
                row["cache/hit_rate"] = _num(hit[i])
                row["cache/total_queries"] = int(queries[i])
                row["cache/total_hits"] = int(hits[i])
                row["cache/prompt_tokens"] = int(prompt_tokens[i])
            if i % 10 == 5:
                best_elo = max(best_elo, elo[i])
                row["elo/challenger"] = _num(elo[i])
                row["elo/win_rate"] = _num(1 / (1 + 10 ** ((1100 - elo[i]) / 400)))
                row["elo/games_played"] = 24
                row["league/num_checkpoints"] = i // 10 + 1
                row["league/best_elo"] = _num(best_elo)
                row["elo/evaluation_step"] = i - 5
            if i % 10 == 0 and i > 0:
                for offset, opponent in enumerate(OPPONENTS):
                    strength = 0.35 * offset
                    win = float(np.clip(reward[i] * (0.9 - strength), 0, 1))
                    row[f"eval/vs_{opponent}/win_rate"] = _num(win)
                    row[f"eval/vs_{opponent}/survival_rate"] = _num(min(1.0, 0.6 + 0.4 * win))
                    row[f"eval/vs_{opponent}/avg_centers"] = _num(3 + 9 * win)
            rows.append(row)
        return rows

    def summary(self, history: list[dict[str, Any]]) -> dict[str, Any]:
        last = history[-1]
        rewards = [row["benchmark/reward_mean"] for row in history]
        trajectories = sum(row["benchmark/trajectories"] for row in history)
        return {
            "_step": last["_step"],
            "_runtime": last["_runtime"],
            "final_loss": last["benchmark/loss"],
            "final_kl": last["benchmark/kl"],
            "final_reward_mean": last["benchmark/reward_mean"],
            "reward_mean": _num(sum(rewards) / len(rewards)),
            "reward_min": min(rewards),
            "reward_max": max(rewards),
            "total_trajectories": trajectories,
            "total_simulated_years": last["power_law/cumulative_simulated_years"],
            "trajectories_per_second": _num(trajectories / last["_runtime"]),
        }


# The history keys the demo's dumps give a value for, by the name ``observed`` uses.
OBSERVED_KEYS = {
    "reward_mean": "benchmark/reward_mean",
    "reward_std": "benchmark/reward_std",
    "response_length": "response_length/mean",
}


def _log_observed(
    history: list[dict[str, Any]], observed: Mapping[int, Mapping[str, float]]
) -> None:
    """Log the rollouts' own values at their steps (``write_seed_export``'s ``observed``)."""
    for name, key in OBSERVED_KEYS.items():
        steps = [s for s, values in observed.items() if name in values and s < len(history)]
        if not steps:
            continue
        # the series continues from the last step that observed it
        last = max(steps)
        generated = history[last][key]
        scale = observed[last][name] / generated if generated else 1.0
        for row in history:
            value = observed.get(row["_step"], {}).get(name)
            row[key] = _num(value if value is not None else row[key] * scale)


def _num(value: float) -> float:
    """A JSON number, rounded to 6 significant digits (keeps files small and stable)."""
    return float(f"{float(value):.6g}")


# ---------------------------------------------------------------------- GRPO logs

GRPO_STYLES: tuple[str, ...] = ("verl", "trl")


def write_grpo_log(
    path: Path | str,
    *,
    steps: int = 400,
    seed: int = 0,
    style: str = "verl",
    batch: int = 64,
    start: float = 0.25,
    ceiling: float = 0.7,
    scale: tuple[float, float] = (0.0, 1.0),
    pace: float = 1.5,
    beta: float = 0.0,
    eval_every: int = 0,
    eval_size: int = 200,
    eval_offset: float = -0.05,
    eval_follows: float = 1.0,
) -> None:
    """Write the metric log of one healthy GRPO run, with the noise real runs have.

    Unlike ``write_seed_export`` (a quiet run with planted incidents), this is
    a healthy run as trainers log it, for checking that findings stay quiet:

    * reward_mean is the mean of ``batch`` pass/fail rewards whose success
      probability rises from ``start`` towards ``ceiling`` (time constant
      ``steps / pace``), so its step-to-step noise is binomial (sd about
      0.06 at batch 64), not a smooth curve; ``scale`` = (offset, factor) maps
      the 0..1 pass rate to the logged reward (TRL runs with penalty rewards
      log -0.475..-0.275: offset -0.5, factor 0.25). At the default pace the
      reward still rises at the end; a larger ``pace`` converges early (a
      plateau), and a ``ceiling`` of 1 saturates: late steps log exactly the
      top reward.
    * grad_norm is lognormal (sd 0.3 in log space) with heavier tails
      (Student t, 6 degrees of freedom) around a slowly falling level.
    * loss is GRPO's: about 0 on policy. With ``beta`` 0 a TRL run logs
      exactly 0.0 at most steps and verl's pg_loss scatters around 0;
      otherwise it is beta x KL plus small noise.
    * kl grows slowly from 0 (lognormal noise, sigma 0.3); entropy falls from
      0.6 to about 0.4; response length drifts up with 5% noise.

    * with ``eval_every`` > 0, a held-out accuracy at step 0 and every
      ``eval_every`` steps: the share of ``eval_size`` pass/fail answers
      whose success probability is the training one's start plus
      ``eval_offset`` plus ``eval_follows`` x its gain since (1: the held-out
      set improves as training does; 0: it stays flat), so its noise is
      binomial too (sd about 0.032 at 200 answers). verl logs it as
      ``val-core/openai/gsm8k/acc/mean@1`` on the step's line (step 0 before
      training, as ``val_before_train``), TRL as ``eval_accuracy`` in an eval
      row of its own. It is drawn from a generator of its own, so a run
      without it has the same bytes as before.

    ``style`` "verl" writes verl's file-logger lines (``{"step": N, "data":
    {...}}``) under verl's keys; "trl" writes a ``trainer_state.json`` whose
    ``log_history`` uses TRL's keys. The same arguments give the same bytes.
    """
    if style not in GRPO_STYLES:
        raise ValueError(f"unknown style {style!r}; use one of {', '.join(GRPO_STYLES)}")
    if steps < 2:
        raise ValueError(f"steps={steps}: a run needs at least 2 steps")
    rng = np.random.default_rng(seed)
    t = np.arange(1, steps + 1, dtype=float)
    p = start + (ceiling - start) * (1 - np.exp(-pace * t / steps))
    passed = rng.binomial(batch, np.clip(p, 0.0, 1.0))
    rate = passed / batch
    offset, factor = scale
    reward = offset + factor * rate
    reward_std = factor * np.sqrt(np.clip(rate * (1 - rate), 0.0, None))
    zero_std = np.clip((p**8 + (1 - p) ** 8) + rng.normal(0, 0.03, steps), 0.0, 1.0)
    kl = (0.0005 + 0.02 * (t / steps) ** 0.7) * np.exp(rng.normal(0, 0.3, steps))
    level = 0.25 + 0.2 * np.exp(-t / (steps / 4))
    grad = level * np.exp(0.3 * rng.standard_t(6, steps) / math.sqrt(1.5))
    if beta > 0:
        loss = beta * kl + rng.normal(0, 0.002, steps)
    elif style == "verl":
        loss = rng.normal(0, 0.01, steps)
    else:
        loss = np.where(rng.random(steps) < 0.7, 0.0, np.round(rng.normal(0, 0.002, steps), 4))
    entropy = (0.4 + 0.2 * np.exp(-t / (steps / 3))) * np.exp(rng.normal(0, 0.05, steps))
    length = (300 + 150 * t / steps) * np.exp(rng.normal(0, 0.05, steps))
    clip = np.clip(0.01 + 0.01 * t / steps + rng.normal(0, 0.005, steps), 0.0, 1.0)
    step_time = 40 * np.exp(rng.normal(0, 0.08, steps))
    warmup = max(1, steps // 20)
    lr = np.where(
        t <= warmup, 1e-6 * t / warmup, 1e-6 * 0.5 * (1 + np.cos(math.pi * (t - warmup) / steps))
    )
    held_out: dict[int, float] = {}
    if eval_every > 0:
        eval_rng = np.random.default_rng([seed, 1])
        eval_steps = np.arange(0, steps + 1, eval_every)
        gain = (ceiling - start) * (1 - np.exp(-pace * eval_steps / steps))
        p_eval = np.clip(start + eval_offset + eval_follows * gain, 0.0, 1.0)
        held_out = {
            int(s): float(a)
            for s, a in zip(
                eval_steps, eval_rng.binomial(eval_size, p_eval) / eval_size, strict=True
            )
        }
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if style == "verl":
        lines = []
        if 0 in held_out:
            val = {"val-core/openai/gsm8k/acc/mean@1": _num(held_out[0])}
            lines.append(json.dumps({"step": 0, "data": val}))
        for i in range(steps):
            data = {
                "critic/score/mean": _num(reward[i]),
                "critic/score/std": _num(reward_std[i]),
                "actor/pg_loss": _num(loss[i]),
                "actor/kl_loss": _num(kl[i]),
                "actor/grad_norm": _num(grad[i]),
                "actor/entropy": _num(entropy[i]),
                "actor/lr": _num(lr[i]),
                "response_length/mean": _num(length[i]),
                "response_length/clip_ratio": _num(clip[i]),
                "timing_s/step": _num(step_time[i]),
            }
            if i + 1 in held_out:
                data["val-core/openai/gsm8k/acc/mean@1"] = _num(held_out[i + 1])
            lines.append(json.dumps({"step": i + 1, "data": data}))
        target.write_text("\n".join(lines) + "\n")
        return
    log_history = []
    for i in range(steps):
        log_history.append(
            {
                "step": i + 1,
                "epoch": _num((i + 1) / steps),
                "loss": _num(loss[i]),
                "reward": _num(reward[i]),
                "reward_std": _num(reward_std[i]),
                "kl": _num(kl[i]),
                "grad_norm": _num(grad[i]),
                "entropy": _num(entropy[i]),
                "learning_rate": _num(lr[i]),
                "completions/mean_length": _num(length[i]),
                "completions/clipped_ratio": _num(clip[i]),
                "frac_reward_zero_std": _num(zero_std[i]),
                "step_time": _num(step_time[i]),
            }
        )
        if i + 1 in held_out:
            log_history.append(
                {
                    "step": i + 1,
                    "epoch": _num((i + 1) / steps),
                    "eval_loss": _num(loss[i]),
                    "eval_accuracy": _num(held_out[i + 1]),
                }
            )
    state = {
        "global_step": steps,
        "max_steps": steps,
        "epoch": 1.0,
        "log_history": log_history,
        "logging_steps": 1,
        "train_batch_size": batch,
    }
    target.write_text(json.dumps(state, indent=2) + "\n")
