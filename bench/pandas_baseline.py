"""The straightforward pandas script obs is measured against.

Reads every ``{iteration}.jsonl`` dump of a folder and computes what
``fct_prompt_iteration`` and ``fct_prompt_learning`` hold, the way a
researcher would write it by hand: load everything, then groupby.

    python bench/pandas_baseline.py DUMPS_DIR OUT_DIR
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import numpy as np
import pandas as pd

PASS_THRESHOLD = 0.5
RECENT_WINDOW = 3
PLATEAU_THRESHOLD = 0.001


def load(folder: Path) -> pd.DataFrame:
    frames = []
    for path in sorted(folder.glob("*.jsonl"), key=lambda p: int(p.stem)):
        frame = pd.read_json(path, lines=True)
        frame["iteration"] = int(path.stem)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def prompt_iteration(rollouts: pd.DataFrame) -> pd.DataFrame:
    rollouts["prompt_hash"] = rollouts["input"].map(
        lambda p: hashlib.sha256(p.encode()).hexdigest()[:16]
    )
    rollouts["strict"] = (rollouts["prompt_strict_acc"] >= 1).astype(float)
    rollouts["passed"] = (rollouts["score"] >= PASS_THRESHOLD).astype(float)
    keys = ["iteration", "prompt_hash"]
    grouped = rollouts.groupby(keys)
    metrics = grouped.agg(
        n_samples=("score", "size"),
        mean_score=("score", "mean"),
        std_score=("score", "std"),
        min_score=("score", "min"),
        max_score=("score", "max"),
        mean_v_i=("V_i", "mean"),
        mean_s_i=("S_i", "mean"),
        prompt_strict_acc=("strict", "max"),
        strict_success_rate=("strict", "mean"),
        pass_rate=("passed", "mean"),
    )
    metrics["std_score"] = metrics["std_score"].fillna(0.0)
    metrics["best_mean_gap"] = metrics["max_score"] - metrics["mean_score"]
    metrics["consistency_score"] = 1 / (1 + metrics["std_score"])
    ranked = rollouts.sort_values([*keys, "score"], ascending=[True, True, False])
    ranked["rank"] = ranked.groupby(keys).cumcount() + 1
    for k in (1, 3, 5, 10, 20):
        metrics[f"mean_at_{k}"] = ranked[ranked["rank"] <= k].groupby(keys)["score"].mean()
    metrics["is_zero_variance"] = metrics["min_score"] == metrics["max_score"]
    return metrics.reset_index()


def prompt_learning(per_iteration: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for prompt_hash, group in per_iteration.sort_values("iteration").groupby("prompt_hash"):
        x = group["iteration"].to_numpy(dtype=float)
        y = group["mean_score"].to_numpy()
        solved = group["prompt_strict_acc"].to_numpy()
        successes = group.loc[group["prompt_strict_acc"] == 1, "iteration"]
        first_seen = int(x.min())
        first_success = int(successes.min()) if len(successes) else None
        slope = float(np.polyfit(x, y, 1)[0]) if len(x) > 1 else None
        recent = y[-RECENT_WINDOW:]
        recent_variance = float(np.var(recent, ddof=1)) if len(recent) > 1 else None
        forgetting = int(((solved[:-1] == 1) & (solved[1:] == 0)).sum())
        final = float(y[-1])
        rows.append(
            {
                "prompt_hash": prompt_hash,
                "first_seen_iter": first_seen,
                "first_success_iter": first_success,
                "iterations_to_learn": None
                if first_success is None
                else first_success - first_seen,
                "num_forgetting_events": forgetting,
                "learning_rate": slope,
                "recent_variance": recent_variance,
                "is_plateau": len(y) >= RECENT_WINDOW
                and recent_variance is not None
                and recent_variance < PLATEAU_THRESHOLD,
                "final_score": final,
                "upsampling_score": (1 - final) * 2 - (slope or 0.0) + forgetting * 0.5,
            }
        )
    return pd.DataFrame(rows)


def main() -> None:
    folder, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    per_iteration = prompt_iteration(load(folder))
    learning = prompt_learning(per_iteration)
    per_iteration.to_parquet(out / "prompt_iteration.parquet")
    learning.to_parquet(out / "prompt_learning.parquet")


if __name__ == "__main__":
    main()
