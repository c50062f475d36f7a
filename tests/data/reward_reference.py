"""The GRPO reward monitor's formulas in plain numpy, written apart from the SQL.

The reward-monitoring tests compute every mart value here from the same
per-sample rewards the warehouse landed, and compare. Each function follows
the monitor's definitions step by step (population std, the entropy of the
shifted totals, the quality parts with their defaults, the hacking rule),
so a mistake in the SQL shows as a difference.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

# history[step] = {function: np.array of per-sample rewards}
History = dict[int, dict[str, np.ndarray]]


def step_metrics(rewards: dict[str, np.ndarray]) -> dict[str, float]:
    """One step's `rewards/*` values and the per-function ones."""
    names = sorted(rewards)
    total = np.sum([rewards[f] for f in names], axis=0)
    mean, std = float(np.mean(total)), float(np.std(total))
    out: dict[str, float] = {
        "n": len(total),
        "mean": mean,
        "std": std,
        "min": float(np.min(total)),
        "max": float(np.max(total)),
        "total": float(np.sum(total)),
        "variance": float(np.var(total)),
        "signal_to_noise": abs(mean) / std if std > 0 else 0.0,
    }
    shifted = total - np.min(total)
    if len(total) > 1 and np.sum(shifted) > 0:
        p = shifted / np.sum(shifted) + 1e-10
        out["entropy"] = float(-np.sum(p * np.log(p)))
    else:
        out["entropy"] = 0.0
    whole = float(np.sum(total))
    for f in names:
        values = rewards[f]
        out[f"{f}/mean"] = float(np.mean(values))
        out[f"{f}/std"] = float(np.std(values))
        out[f"{f}/contribution"] = 100 * float(np.sum(values)) / whole if whole > 0 else None
    return out


def quality(history: History) -> dict[str, float]:
    """The quality report's four parts in [0, 1] and the score."""
    steps = sorted(history)
    names = sorted({f for s in steps for f in history[s]})
    cvs, discs, stabs, covs = [], [], [], []
    for f in names:
        means = np.array([np.mean(history[s][f]) for s in steps if f in history[s]])
        if len(steps) >= 2 and np.mean(means) != 0:
            cvs.append(np.std(means) / abs(np.mean(means)))
        pooled = np.concatenate([history[s][f] for s in steps if f in history[s]])
        if np.mean(pooled) != 0:
            discs.append(np.std(pooled) / abs(np.mean(pooled)))
        elif np.std(pooled) > 0:
            discs.append(1.0)
        variances = np.array(
            [np.var(history[s][f]) for s in steps if f in history[s] and len(history[s][f]) >= 2]
        )
        if len(variances) >= 2 and np.mean(variances) > 0:
            stabs.append(1 / (1 + np.sqrt(np.var(variances)) / np.mean(variances)))
        spread = np.max(pooled) - np.min(pooled)
        if len(pooled) > 1 and spread > 0:
            iqr = np.percentile(pooled, 75) - np.percentile(pooled, 25)
            covs.append(min(1.0, iqr / spread))
    c = 1 / (1 + np.mean(cvs)) if cvs and len(steps) >= 2 else 1.0
    d = min(1.0, np.mean(discs) / 2) if discs else 0.0
    s = np.mean(stabs) if stabs and len(steps) >= 3 else 1.0
    cov = np.mean(covs) if covs else 0.0
    return {
        "consistency": float(c),
        "discriminability": float(d),
        "stability": float(s),
        "coverage": float(cov),
        "quality_score": float(100 * (0.25 * c + 0.35 * d + 0.25 * s + 0.15 * cov)),
    }


def importance(history: History) -> dict[str, dict[str, float]]:
    steps = sorted(history)
    names = sorted({f for s in steps for f in history[s]})
    pooled = {f: np.concatenate([history[s][f] for s in steps]) for f in names}
    grand = sum(float(np.sum(v)) for v in pooled.values())
    out = {}
    for f in names:
        mean, std = float(np.mean(pooled[f])), float(np.std(pooled[f]))
        contribution = 100 * float(np.sum(pooled[f])) / grand if grand > 0 else None
        variability = std / abs(mean) if mean != 0 else 0.0
        out[f] = {
            "contribution": contribution,
            "mean": mean,
            "std": std,
            "variability": variability,
            "impact_score": None if contribution is None else contribution * variability,
        }
    return out


def correlations(history: History) -> dict[tuple[str, str], float | None]:
    steps = sorted(history)
    names = sorted({f for s in steps for f in history[s]})
    pooled = {f: np.concatenate([history[s][f] for s in steps]) for f in names}
    out: dict[tuple[str, str], float | None] = {}
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            if np.std(pooled[a]) > 0 and np.std(pooled[b]) > 0:
                out[(a, b)] = float(np.corrcoef(pooled[a], pooled[b])[0, 1])
            else:
                out[(a, b)] = None
    return out


def slope(values: list[float]) -> float:
    x = np.arange(len(values), dtype=float)
    return float(np.polyfit(x, np.asarray(values, dtype=float), 1)[0])


def seed_hacking(rewards: list[float], performance: list[float]) -> str:
    """The monitor's run verdict on aligned series."""
    if len(rewards) < 5:
        return "insufficient_data"
    r, p = slope(rewards), slope(performance)
    if r > 0 and p < 0:
        return "high"
    if r > 0 and abs(p) < 0.01:
        return "medium"
    return "aligned"


def anomalies(means: list[float], lookback: int = 50, minimum: int = 10) -> list[bool]:
    flags = []
    for i, value in enumerate(means):
        earlier = means[max(0, i - lookback) : i]
        if len(earlier) >= minimum and np.std(earlier) > 0:
            flags.append(abs(value - np.mean(earlier)) / np.std(earlier) > 3.0)
        else:
            flags.append(False)
    return flags


@dataclass
class Rule:
    name: str
    metric: str
    kind: str  # threshold | trend
    condition: str = ""
    threshold: float = 0.0
    min_slope: float | None = None
    window: int = 0
    level: str = "warning"


DEFAULT_RULES = [
    Rule("mean_reward_declining", "mean", "trend", min_slope=-0.01, window=10),
    Rule("low_signal_to_noise", "signal_to_noise", "threshold", "less", 0.5),
    Rule("high_kl_divergence", "kl_divergence", "threshold", "greater", 0.5, level="error"),
    Rule("high_reward_variance", "variance", "threshold", "greater", 100.0, level="critical"),
]


@dataclass
class Alerts:
    fired: list[tuple[str, int]] = field(default_factory=list)  # (rule, step)


def alerts(series: dict[str, list[tuple[int, float]]], rules: list[Rule] = DEFAULT_RULES) -> Alerts:
    """Episode starts of each rule over per-step series {metric: [(step, value)]}."""
    out = Alerts()
    for rule in rules:
        points = [(s, v) for s, v in series.get(rule.metric, []) if v is not None]
        before = False
        for i, (step, value) in enumerate(points):
            if rule.kind == "threshold":
                holds = (
                    value < rule.threshold if rule.condition == "less" else value > rule.threshold
                )
            else:
                window = [v for _, v in points[max(0, i - rule.window + 1) : i + 1]]
                holds = len(window) == rule.window and slope(window) < rule.min_slope
            if holds and not before:
                out.fired.append((rule.name, step))
            before = holds
    return out


def close(a: float | None, b: float | None, rel: float = 1e-9) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)
