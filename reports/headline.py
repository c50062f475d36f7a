"""What a headline count of solved or learned prompts stands on, in words.

One definition of success per build (dbt var ``success``, ``obs build
--success``): ``strict`` (the default), where a rollout is solved when it
followed all its instructions (its own ``prompt_strict_acc``) or, without
that flag, scored at least the ``pass_threshold`` var; ``score >= X``; or
``<reward function> >= X`` on that function's own value. A prompt is solved
at an iteration when any of its rollouts is. Every headline that counts
prompts solved or learned (``obs summary``, the dashboard) says which rule it
counted by (``solved_means``), and a threshold that cannot separate what the
run's rollouts reached (none reaches it, or every one does), or a
pass_threshold meant for scores from 0 to 1 on a run whose scores leave
0..1, is named (``scale_note``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Success:
    """The build's rule (rpt_dashboard_settings' success columns)."""

    kind: str = "auto"
    function: str | None = None
    threshold: float | None = None

    @classmethod
    def of(cls, settings: Mapping[str, object]) -> Success:
        """From a row of rpt_dashboard_settings (an older warehouse without the
        columns: the default)."""
        kind = settings.get("success_kind")
        threshold = settings.get("success_threshold")
        function = settings.get("success_function")
        return cls(
            str(kind) if isinstance(kind, str) else "auto",
            function if isinstance(function, str) else None,
            float(threshold) if isinstance(threshold, int | float) else None,
        )


def _number(value: float) -> str:
    return f"{value:.3g}"


def _finite(*values: float | None) -> bool:
    return all(v is not None and math.isfinite(v) for v in values)


def solved_means(solved_by: str | None, threshold: float, rule: Success | None = None) -> str:
    """What "solved" counted (fct_iteration_summary.solved_by): ``every instruction
    followed``, ``a rollout scoring at least 0.5``, both, or the build's rule
    (``a rollout whose check_answer is at least 3``)."""
    rule = rule or Success()
    if solved_by == "function" and rule.threshold is not None:
        return f"a rollout whose {rule.function} is at least {_number(rule.threshold)}"
    if solved_by == "score" and rule.threshold is not None:
        return f"a rollout scoring at least {_number(rule.threshold)}"
    by_score = f"a rollout scoring at least {_number(threshold)}"
    if solved_by == "instructions":
        return "every instruction followed"
    if solved_by == "both":
        return f"every instruction followed, or without that flag {by_score}"
    return by_score


def edge_note(threshold: float, low: float | None, high: float | None, what: str) -> str:
    """The clause for a threshold that cannot separate the values the run's rollouts
    reached (``low``..``high``): every one falls on one side of it (none reaches it, or
    all do); else ``""``.

    A threshold equal to the highest value reached is not named: it still splits the
    rollouts at the top from the rest, and for a function scored 0 or 3 a threshold of
    3 is the one cut that means "right"."""
    if low is None or high is None or not _finite(low, high, threshold):
        return ""
    span = f"the run's {what} run from {_number(low)} to {_number(high)}"
    if threshold > high:
        return f"no rollout reaches {_number(threshold)}: {span}"
    if threshold <= low:
        return f"every rollout reaches {_number(threshold)}: {span}"
    return ""


def scale_note(
    solved_by: str | None,
    threshold: float,
    low: float | None,
    high: float | None,
    rule: Success | None = None,
    value_low: float | None = None,
    value_high: float | None = None,
) -> str:
    """For a run judged by the pass_threshold whose scores leave 0..1: the clause saying
    so and how to set another (``scores run from -1 to 1, not 0 to 1: ...``); for a
    rule's threshold that cannot separate the values the rule reads
    (``value_low``..``value_high``), that (``edge_note``); else ``""``."""
    rule = rule or Success()
    if solved_by in ("score", "function") and rule.threshold is not None:
        what = "scores" if solved_by == "score" else f"{rule.function} values"
        if solved_by == "function" and (value_low is None or value_high is None):
            return f"no rollout carries a {rule.function} value: set another with --success"
        return edge_note(rule.threshold, value_low, value_high, what)
    if solved_by == "instructions" or low is None or high is None:
        return ""
    if not _finite(low, high):
        return ""
    if low >= 0 and high <= 1:
        return edge_note(threshold, low, high, "scores")
    return (
        f"scores run from {_number(low)} to {_number(high)}, not 0 to 1: set a threshold for"
        " this scale with obs build --vars '{pass_threshold: X}'"
    )


def solved_line(
    solved_by: str | None,
    threshold: float,
    low: float | None,
    high: float | None,
    rule: Success | None = None,
    value_low: float | None = None,
    value_high: float | None = None,
) -> str:
    """``solved: ...`` for a run's summary: what solved counted (the var behind it), and
    a scale or range its threshold may not fit."""
    line = f"solved: {solved_means(solved_by, threshold, rule)}"
    if solved_by in ("score", "function"):
        line += " (var success)"
    elif solved_by != "instructions":
        line += " (var pass_threshold)"
    note = scale_note(solved_by, threshold, low, high, rule, value_low, value_high)
    return f"{line}, but {note}" if note else line
