"""The GRPO reward monitor's files: their names, their keys, and the writer that makes them.

A training loop hands ``RewardTracker.track_step`` each reward function's
per-sample rewards of a step; the tracker writes one file per step into a
folder (default ``monitoring_data/``) and two files when it is closed:

* ``step_{step:06d}.json``: ``{"step": 42, "timestamp": 12.3, "metrics": {...},
  "reward_scores": {fn: [per-sample rewards]}}``; ``timestamp`` is seconds since
  the tracker started (not epoch), ``reward_scores`` is ``{}`` unless
  distributions are tracked;
* ``final_metrics.json``: ``{"config": {...}, "metrics_history": [...],
  "summary": {...}}``; the history holds the last ``window_size`` steps in the
  dataclass vocabulary (``mean_reward``, ``function_means``, ...);
* ``summary.json``: the summary object.

``obs ingest monitoring`` (reader: ``obs.ingest.trackers.reward_monitor``)
lands the folder; it takes its file names and key names from this module, so
the writer and the reader cannot drift apart. Metric keys are W&B style
(``rewards/mean``, ``rewards/functions/{fn}``, ``contributions/{fn}``,
``training/kl_divergence``, ``batch/size``, ...); the older flat "dataclass
vocabulary" (``mean_reward``, ``function_means{fn: x}``, ...) maps onto them
through ``DATACLASS_SCALARS`` and ``DATACLASS_MAPS``.

This module needs only the standard library and numpy (``import obs.monitor``
must stay cheap inside a training process: no pyarrow, duckdb or pandas).
Every file is written to a temporary file in the same folder and moved into
place with ``os.replace``, so a reader never sees half a file (no fsync: a
crash of the machine, not of the process, may lose the newest files).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import operator
import os
import re
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

# --------------------------------------------------------------------------- files

DEFAULT_DIR = "monitoring_data"
STEP_FILE = re.compile(r"^step_(\d+)\.json$")
FINAL_METRICS = "final_metrics.json"
SUMMARY = "summary.json"
FORMAT_NAME = "reward-monitor"


def step_file_name(step: int) -> str:
    """``step_000042.json`` for step 42 (more digits past 999999)."""
    return f"step_{step:06d}.json"


# --------------------------------------------------------------------------- keys

# Top-level fields of a step file.
STEP = "step"
TIMESTAMP = "timestamp"
METRICS = "metrics"
REWARD_SCORES = "reward_scores"

REWARDS_MEAN = "rewards/mean"
REWARDS_STD = "rewards/std"
REWARDS_MIN = "rewards/min"
REWARDS_MAX = "rewards/max"
REWARDS_TOTAL = "rewards/total"
REWARDS_SNR = "rewards/signal_to_noise"
REWARDS_ENTROPY = "rewards/entropy"
REWARDS_VARIANCE = "rewards/variance"
KL_DIVERGENCE = "training/kl_divergence"
POLICY_ENTROPY = "training/policy_entropy"
ADVANTAGE_MEAN = "training/advantage_mean"
ADVANTAGE_STD = "training/advantage_std"
VALUE_ESTIMATE = "training/value_estimate"
BATCH_SIZE = "batch/size"
NUM_GENERATIONS = "batch/num_generations"

FUNCTION_PREFIX = "rewards/functions/"
FUNCTION_STD_SUFFIX = "_std"
CONTRIBUTION_PREFIX = "contributions/"

# The first segment of every key the monitor writes; a file whose keys all
# start with one other segment (``train/rewards/mean``) carries a prefix.
FAMILIES = frozenset(
    {"rewards", "training", "contributions", "batch", "anomalies", "summary", "distributions"}
)


def function_key(fn: str) -> str:
    """``rewards/functions/{fn}``: the function's mean reward at the step."""
    return f"{FUNCTION_PREFIX}{fn}"


def function_std_key(fn: str) -> str:
    """``rewards/functions/{fn}_std``: the function's population std at the step."""
    return f"{FUNCTION_PREFIX}{fn}{FUNCTION_STD_SUFFIX}"


def contribution_key(fn: str) -> str:
    """``contributions/{fn}``: percent of the step's total reward from the function."""
    return f"{CONTRIBUTION_PREFIX}{fn}"


# The dataclass vocabulary (flat names, as older monitors and final_metrics'
# history write them) -> the W&B keys above.
DATACLASS_SCALARS: dict[str, str] = {
    "mean_reward": REWARDS_MEAN,
    "std_reward": REWARDS_STD,
    "min_reward": REWARDS_MIN,
    "max_reward": REWARDS_MAX,
    "total_reward": REWARDS_TOTAL,
    "signal_to_noise": REWARDS_SNR,
    "reward_entropy": REWARDS_ENTROPY,
    "reward_variance": REWARDS_VARIANCE,
    "kl_divergence": KL_DIVERGENCE,
    "policy_entropy": POLICY_ENTROPY,
    "value_estimate": VALUE_ESTIMATE,
    "advantage_mean": ADVANTAGE_MEAN,
    "advantage_std": ADVANTAGE_STD,
    "batch_size": BATCH_SIZE,
    "num_generations": NUM_GENERATIONS,
}
# {fn: x} fields -> how each function's key is made.
DATACLASS_MAPS = {
    "function_means": function_key,
    "function_stds": function_std_key,
    "function_contributions": contribution_key,
}
DATACLASS_KEYS = frozenset(DATACLASS_SCALARS) | frozenset(DATACLASS_MAPS)

# Of a step's sum of per-sample rewards: p_i = (R_i - min R) / sum(R - min R) + EPSILON.
ENTROPY_EPSILON = 1e-10
# A step whose mean reward is further than this many standard deviations from
# the mean of the window before it counts as an anomaly (after ANOMALY_WARMUP steps).
ANOMALY_SIGMAS = 3.0
ANOMALY_WARMUP = 10
RECENT_ANOMALIES = 20


# --------------------------------------------------------------------------- the writer


class RewardTracker:
    """Per-step reward statistics of a GRPO run, written as the reward monitor's files.

    ``reward_function_names`` are the functions ``track_step`` may be given;
    ``window_size`` steps are kept for ``final_metrics.json``'s history and the
    summary; ``track_distributions`` also writes every sample's reward
    (``reward_scores``), which the ingest lands in the ``reward_samples`` table.
    """

    def __init__(
        self,
        reward_function_names: Iterable[str],
        output_dir: str | os.PathLike[str] = DEFAULT_DIR,
        window_size: int = 100,
        track_distributions: bool = False,
    ) -> None:
        names = list(reward_function_names)
        if not names or not all(isinstance(n, str) and n for n in names):
            raise ValueError("reward_function_names: give one or more non-empty names")
        if len(set(names)) != len(names):
            raise ValueError(f"reward_function_names: a name is given twice ({names})")
        bad = [n for n in names if "/" in n]
        if bad:
            raise ValueError(f"reward_function_names: {bad[0]!r} holds '/' (it splits metric keys)")
        if isinstance(window_size, bool) or not isinstance(window_size, int) or window_size < 1:
            raise ValueError(f"window_size must be a positive integer, not {window_size!r}")
        self.reward_function_names = names
        self.output_dir = Path(output_dir)
        self.window_size = window_size
        self.track_distributions = bool(track_distributions)
        self.output_dir.mkdir(parents=True, exist_ok=True)
        self._known = frozenset(names)
        self._started = time.monotonic()
        self._history: deque[dict[str, Any]] = deque(maxlen=window_size)
        self._latest: dict[str, float] = {}
        self._latest_step: int | None = None
        self._steps = 0
        self._means: deque[float] = deque(maxlen=window_size)
        self._sum = 0.0
        self._sum_squares = 0.0
        self._anomalies = 0
        self._recent_anomalies: deque[dict[str, Any]] = deque(maxlen=RECENT_ANOMALIES)
        self._counter = itertools.count()
        self._closed = False

    # ------------------------------------------------------------------ per step

    def track_step(
        self,
        step: int,
        rewards_by_function: Mapping[str, Sequence[float] | np.ndarray],
        kl_divergence: float | None = None,
        policy_entropy: float | None = None,
        advantages: Sequence[float] | np.ndarray | None = None,
        value_estimate: float | None = None,
        batch_size: int | None = None,
        num_generations: int | None = None,
    ) -> dict[str, float]:
        """Compute the step's metrics, write ``step_{step:06d}.json``; the metrics written.

        Every function's array must score the same samples (equal lengths):
        the per-sample total R_i is the sum over functions. Raises ValueError
        for unequal lengths, an unknown function, no samples or a bad step.
        """
        if self._closed:
            raise RuntimeError("this RewardTracker is closed; create a new one to track more steps")
        step = _step_number(step)
        names, matrix = self._matrix(rewards_by_function)
        n = matrix.shape[1]
        sums = matrix.sum(axis=1)
        means = sums / n
        deviations = matrix - means[:, None]
        stds = np.sqrt(np.einsum("ij,ij->i", deviations, deviations) / n)
        totals = matrix.sum(axis=0)
        total = float(totals.sum())
        mean = total / n
        centred = totals - mean
        variance = float(centred.dot(centred)) / n
        std = math.sqrt(variance) if variance >= 0 else math.nan
        lowest = float(totals.min())
        metrics: dict[str, float] = {
            REWARDS_MEAN: mean,
            REWARDS_STD: std,
            REWARDS_MIN: lowest,
            REWARDS_MAX: float(totals.max()),
            REWARDS_TOTAL: total,
            REWARDS_SNR: _signal_to_noise(mean, std),
            REWARDS_ENTROPY: _entropy(totals, lowest, n),
            REWARDS_VARIANCE: variance,
        }
        function_means = dict(zip(names, means.tolist(), strict=True))
        for fn, fn_mean, fn_std in zip(names, means.tolist(), stds.tolist(), strict=True):
            metrics[function_key(fn)] = fn_mean
            metrics[function_std_key(fn)] = fn_std
        contributions: dict[str, float] = {}
        if total > 0:
            for fn, fn_sum in zip(names, sums.tolist(), strict=True):
                contributions[fn] = 100.0 * fn_sum / total
                metrics[contribution_key(fn)] = contributions[fn]
        for key, value in (
            (KL_DIVERGENCE, kl_divergence),
            (POLICY_ENTROPY, policy_entropy),
            (VALUE_ESTIMATE, value_estimate),
        ):
            if value is not None:
                metrics[key] = float(value)
        if advantages is not None:
            values = np.asarray(advantages, dtype=np.float64).ravel()
            if values.size:
                centre = float(values.mean())
                spread = values - centre
                metrics[ADVANTAGE_MEAN] = centre
                metrics[ADVANTAGE_STD] = math.sqrt(float(spread.dot(spread)) / values.size)
        if batch_size is not None:
            metrics[BATCH_SIZE] = _count(batch_size, "batch_size")
        if num_generations is not None:
            metrics[NUM_GENERATIONS] = _count(num_generations, "num_generations")

        elapsed = time.monotonic() - self._started
        scores: dict[str, Any] = {}
        if self.track_distributions:
            finite = bool(np.isfinite(matrix).all())
            for fn, row in zip(names, matrix, strict=True):
                scores[fn] = row.tolist() if finite else [_finite(v) for v in row.tolist()]
        payload = {
            STEP: step,
            TIMESTAMP: elapsed,
            METRICS: {k: _finite(v) for k, v in metrics.items()},
            REWARD_SCORES: scores,
        }
        _write_json(
            self.output_dir / step_file_name(step),
            json.dumps(payload, separators=(",", ":"), allow_nan=False),
            next(self._counter),
        )
        self._remember(step, elapsed, metrics, function_means, contributions, kl_divergence)
        return metrics

    def _matrix(
        self, rewards_by_function: Mapping[str, Sequence[float] | np.ndarray]
    ) -> tuple[list[str], np.ndarray]:
        """The functions given and their rewards as one (functions x samples) array."""
        if not isinstance(rewards_by_function, Mapping) or not rewards_by_function:
            raise ValueError("rewards_by_function: give {function name: per-sample rewards}")
        names = list(rewards_by_function)
        unknown = [n for n in names if n not in self._known]
        if unknown:
            raise ValueError(
                f"rewards_by_function: {unknown[0]!r} is not one of the tracker's reward "
                f"functions ({', '.join(self.reward_function_names)})"
            )
        rows = [rewards_by_function[n] for n in names]
        lengths = [len(r) for r in rows]
        if len(set(lengths)) > 1:
            shown = ", ".join(f"{n}={size}" for n, size in zip(names, lengths, strict=True))
            raise ValueError(
                f"rewards_by_function: every function must score the same samples; "
                f"lengths differ ({shown})"
            )
        if lengths[0] == 0:
            raise ValueError("rewards_by_function: no samples (empty reward arrays)")
        try:
            matrix = np.array(rows, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"rewards_by_function: rewards must be numbers ({exc})") from exc
        if matrix.ndim != 2:
            raise ValueError("rewards_by_function: each function's rewards must be a flat sequence")
        return names, matrix

    def _remember(
        self,
        step: int,
        elapsed: float,
        metrics: dict[str, float],
        function_means: dict[str, float],
        contributions: dict[str, float],
        kl_divergence: float | None,
    ) -> None:
        mean = metrics[REWARDS_MEAN]
        window = len(self._means)
        if window >= ANOMALY_WARMUP and math.isfinite(mean):
            centre = self._sum / window
            spread = math.sqrt(max(self._sum_squares / window - centre * centre, 0.0))
            if spread > 0 and abs(mean - centre) > ANOMALY_SIGMAS * spread:
                self._anomalies += 1
                self._recent_anomalies.append(
                    {
                        "step": step,
                        "kind": "reward_mean_outlier",
                        "value": mean,
                        "window_mean": centre,
                        "window_std": spread,
                    }
                )
        if math.isfinite(mean):
            if window == self._means.maxlen:
                leaving = self._means[0]
                self._sum -= leaving
                self._sum_squares -= leaving * leaving
            self._means.append(mean)
            self._sum += mean
            self._sum_squares += mean * mean
        kl = None if kl_divergence is None else float(kl_divergence)
        self._history.append(
            {
                "step": step,
                "timestamp": elapsed,
                "mean_reward": mean,
                "std_reward": metrics[REWARDS_STD],
                "function_means": function_means,
                "function_contributions": contributions,
                "signal_to_noise": metrics[REWARDS_SNR],
                "kl_divergence": kl,
            }
        )
        self._latest = metrics
        self._latest_step = step
        self._steps += 1

    # ------------------------------------------------------------------ the end

    def summary(self) -> dict[str, Any]:
        """The run so far: latest step, steps tracked, per-function statistics, anomalies."""
        statistics: dict[str, dict[str, float]] = {}
        for fn in self.reward_function_names:
            values = [e["function_means"][fn] for e in self._history if fn in e["function_means"]]
            if values:
                array = np.asarray(values, dtype=np.float64)
                statistics[fn] = {
                    "mean": float(array.mean()),
                    "std": float(array.std()),
                    "min": float(array.min()),
                    "max": float(array.max()),
                    "latest": values[-1],
                }
        return {
            "latest_step": self._latest_step,
            "total_steps_tracked": self._steps,
            "elapsed_time": time.monotonic() - self._started,
            "window_size": self.window_size,
            "current_metrics": dict(self._latest),
            "function_statistics": statistics,
            "anomalies_detected": self._anomalies,
            "recent_anomalies": list(self._recent_anomalies),
        }

    def close(self) -> None:
        """Write ``final_metrics.json`` and ``summary.json`` (once; later calls do nothing)."""
        if self._closed:
            return
        self._closed = True
        summary = _finite_tree(self.summary())
        final = {
            "config": {
                "reward_function_names": list(self.reward_function_names),
                "window_size": self.window_size,
                "track_distributions": self.track_distributions,
            },
            "metrics_history": _finite_tree(list(self._history)),
            "summary": summary,
        }
        _write_json(
            self.output_dir / FINAL_METRICS,
            json.dumps(final, indent=2, allow_nan=False),
            next(self._counter),
        )
        _write_json(
            self.output_dir / SUMMARY,
            json.dumps(summary, indent=2, allow_nan=False),
            next(self._counter),
        )

    def __enter__(self) -> RewardTracker:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


# --------------------------------------------------------------------------- helpers


def _step_number(step: Any) -> int:
    if isinstance(step, bool):
        raise ValueError(f"step must be a non-negative integer, not {step!r}")
    try:
        number = operator.index(step)
    except TypeError:
        raise ValueError(f"step must be a non-negative integer, not {step!r}") from None
    if number < 0:
        raise ValueError(f"step must be a non-negative integer, not {number}")
    return number


def _count(value: Any, name: str) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{name} must be an integer, not {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise ValueError(f"{name} must be an integer, not {value!r}") from None


def _signal_to_noise(mean: float, std: float) -> float:
    """|mean| / std; 0.0 when std is 0 (NaN when std is)."""
    if std > 0:
        return abs(mean) / std
    return 0.0 if std == 0 else math.nan


def _entropy(totals: np.ndarray, lowest: float, n: int) -> float:
    """-sum p_i ln p_i of the shifted totals; 0.0 when n <= 1 or they are all equal."""
    if n <= 1:
        return 0.0
    shifted = totals - lowest
    mass = float(shifted.sum())
    if mass == 0:
        return 0.0
    p = shifted / mass + ENTROPY_EPSILON
    return -float(p.dot(np.log(p)))


def _finite(value: float) -> float | None:
    """A number JSON can hold: NaN and Infinity become null (the reader skips nulls)."""
    return value if math.isfinite(value) else None


def _finite_tree(value: Any) -> Any:
    if isinstance(value, float):
        return _finite(value)
    if isinstance(value, dict):
        return {k: _finite_tree(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite_tree(v) for v in value]
    return value


def _write_json(path: Path, text: str, serial: int) -> None:
    """``text`` into ``path`` atomically: a hidden temp file beside it, then os.replace."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{serial}.tmp")
    try:
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
