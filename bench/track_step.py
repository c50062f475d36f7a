"""The reward monitor's writer in the benchmark: ``RewardTracker.track_step`` per step.

A training loop calls ``track_step`` once per step, so its cost is paid by
the trainer: the goal is under 1 ms per step for 4 reward functions x 512
samples (GRPO's 64 prompts x 8 generations) with ``track_distributions`` off.
It is measured in this process (no obs command runs): ``--steps`` (default
300) steps after a few warm-up steps, rewards drawn beforehand (lists of
floats, as reward functions return them), into a temporary folder; the mean
microseconds per step, with and without ``track_distributions`` (which also
writes the 2,048 per-sample rewards of each step). A second or two.

    python bench/track_step.py            # alone
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from obs.monitor import RewardTracker

FUNCTIONS = ("format_exact", "answer_match", "length_penalty", "reasoning_steps")
SAMPLES = 512
STEPS = 300
WARMUP = 10
GOAL_US = 1000.0


def _rewards(rng: np.random.Generator, steps: int) -> list[dict[str, list[float]]]:
    """Each step's per-function rewards, as the Python lists reward functions return."""
    return [
        {
            "format_exact": (rng.integers(0, 2, SAMPLES) * 3.0).tolist(),
            "answer_match": rng.random(SAMPLES).tolist(),
            "length_penalty": (-rng.random(SAMPLES) * 0.5).tolist(),
            "reasoning_steps": rng.integers(0, 6, SAMPLES).astype(float).tolist(),
        }
        for _ in range(steps)
    ]


def _time(track_distributions: bool, rewards: list[dict[str, list[float]]], folder: Path) -> float:
    """Mean microseconds of one track_step over ``rewards`` (after WARMUP untimed steps)."""
    advantages = np.random.default_rng(1).normal(size=SAMPLES)
    with RewardTracker(
        FUNCTIONS, folder, window_size=100, track_distributions=track_distributions
    ) as tracker:
        for step in range(WARMUP):
            tracker.track_step(step, rewards[step % len(rewards)], kl_divergence=0.01)
        started = time.perf_counter()
        for n, step_rewards in enumerate(rewards):
            tracker.track_step(
                WARMUP + n,
                step_rewards,
                kl_divergence=0.01,
                policy_entropy=2.3,
                advantages=advantages,
                batch_size=SAMPLES,
                num_generations=8,
            )
        seconds = time.perf_counter() - started
    return seconds / len(rewards) * 1e6


def measure(steps: int = STEPS, seed: int = 7) -> dict[str, Any]:
    """Mean microseconds per track_step, with and without distributions."""
    rewards = _rewards(np.random.default_rng(seed), steps)
    with tempfile.TemporaryDirectory(prefix="obs-bench-track-") as tmp:
        plain = _time(False, rewards, Path(tmp) / "plain")
        distributions = _time(True, rewards, Path(tmp) / "distributions")
    return {
        "functions": len(FUNCTIONS),
        "samples": SAMPLES,
        "steps": steps,
        "us_per_step": plain,
        "us_per_step_distributions": distributions,
        "goal_us": GOAL_US,
    }


def report(found: dict[str, Any]) -> None:
    print(
        f"\nreward monitor: RewardTracker.track_step, {found['functions']} functions x "
        f"{found['samples']} samples, mean of {found['steps']} steps (in process):"
    )
    print(f"  track_distributions=False {found['us_per_step']:>8.0f} us/step (goal < 1 ms)")
    print(f"  track_distributions=True  {found['us_per_step_distributions']:>8.0f} us/step")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=STEPS)
    args = parser.parse_args()
    report(measure(args.steps))


if __name__ == "__main__":
    main()
