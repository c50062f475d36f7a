"""What a headline count of solved or learned prompts stands on, in words.

A prompt is solved at an iteration when a rollout followed all its
instructions (the rollout's own ``prompt_strict_acc``) or, for a rollout
without that flag, scored at least the ``pass_threshold`` var: a threshold
for scores from 0 to 1, one number for every run (its yml in
models/reports says why it is not fitted to each run's scale). Every
headline that counts prompts solved or learned (``obs summary``, the
dashboard) says which it counted by, and a run whose scores leave 0..1
is told that its threshold may not fit (``scale_note``).
"""

from __future__ import annotations

import math


def _number(value: float) -> str:
    return f"{value:.3g}"


def solved_means(solved_by: str | None, threshold: float) -> str:
    """What "solved" counted (fct_iteration_summary.solved_by): ``every instruction
    followed``, ``a rollout scoring at least 0.5``, or both."""
    by_score = f"a rollout scoring at least {_number(threshold)}"
    if solved_by == "instructions":
        return "every instruction followed"
    if solved_by == "both":
        return f"every instruction followed, or without that flag {by_score}"
    return by_score


def scale_note(
    solved_by: str | None, threshold: float, low: float | None, high: float | None
) -> str:
    """For a run judged by the threshold whose scores leave 0..1: the clause saying so and
    how to set another (``scores run from -1 to 1, not 0 to 1: ...``); else ``""``."""
    if solved_by == "instructions" or low is None or high is None:
        return ""
    if any(isinstance(v, float) and not math.isfinite(v) for v in (low, high)):
        return ""
    if low >= 0 and high <= 1:
        return ""
    return (
        f"scores run from {_number(low)} to {_number(high)}, not 0 to 1: set a threshold for"
        " this scale with obs build --vars '{pass_threshold: X}'"
    )


def solved_line(
    solved_by: str | None, threshold: float, low: float | None, high: float | None
) -> str:
    """``solved: ...`` for a run's summary: what solved counted, and a scale it may not fit."""
    line = f"solved: {solved_means(solved_by, threshold)}"
    if solved_by != "instructions":
        line += " (var pass_threshold)"
    note = scale_note(solved_by, threshold, low, high)
    return f"{line}, but {note}" if note else line
