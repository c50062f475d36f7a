"""Reward monitoring read back from the marts: ``obs rewards`` and ``obs alerts``.

Every number is computed by the dbt models under models/marts/rewards
(fct_reward_quality, fct_reward_function_importance, fct_reward_hacking,
fct_alerts); this module selects rows and words them the way the GRPO reward
monitor does (``Quality Score: 72.4/100``, ``[CRITICAL] Step 19: ...``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
from obs.reports.errors import ReportError
from obs.reports.resolve import WITH_REWARDS, resolve_run
from obs.reports.runs_format import table, to_json
from obs.reports.sql import query_rows
from obs.reports.warehouse import connect, require_tables, table_names

MARTS = (
    "fct_reward_steps",
    "fct_reward_quality",
    "fct_reward_function_importance",
    "fct_reward_hacking",
    "fct_alerts",
)
LEVELS = ("info", "warning", "error", "critical")
# The reward monitor's icons by alert level (info: U+2139 INFORMATION SOURCE, written
# escaped because it reads like an i), and for the quality report's three lists.
ICONS = {"info": "\u2139\ufe0f", "warning": "⚠️", "error": "❌", "critical": "🚨"}
ISSUE, WARNING, RECOMMENDATION = "❌", "⚠️", "💡"
SUSPICIOUS = ("high", "medium")
# How many of a run's alerts `obs rewards` shows (the latest ones).
LATEST_ALERTS = 10

AlertKey = tuple[str, str, int]


@dataclass
class RewardAnalysis:
    run_id: str
    quality: dict[str, Any] | None
    functions: list[dict[str, Any]]
    hacking: list[dict[str, Any]]  # scope 'run': the total (reward_function null) first
    windows: list[dict[str, Any]]  # scope 'window', the total's, in order
    suspicious_windows: list[dict[str, Any]]  # high/medium windows, total and functions
    alerts: list[dict[str, Any]] = field(default_factory=list)
    steps: int = 0
    basis: str | None = None
    # The run's reward functions (``functions`` holds the first 20 by rank, as the rewards
    # page draws them: reward_importance.sql; a run can log thousands, a column per test
    # case, and the rest are one SQL query away).
    functions_total: int = 0
    # fct_reward_pair_selection's note: which functions the pairwise marts cover (None: all).
    pair_note: str | None = None

    @property
    def performance_metric(self) -> str | None:
        return next((h["performance_metric"] for h in self.hacking), None)


@dataclass
class AlertSelection:
    alerts: list[dict[str, Any]]
    level: str
    run_id: str | None = None
    since_step: int | None = None
    run_has_rewards: bool = True

    @property
    def critical(self) -> int:
        return sum(1 for a in self.alerts if a["level"] == "critical")


# --------------------------------------------------------------------------- reading


def _open(warehouse: Path) -> duckdb.DuckDBPyConnection:
    con = connect(warehouse)
    try:
        require_tables(con, warehouse, *MARTS)
    except ReportError:
        con.close()
        raise
    return con


def _resolve(
    con: duckdb.DuckDBPyConnection, warehouse: Path, run: str, *, need_rewards: bool
) -> tuple[str, bool]:
    """The run id of ``run`` (an id, else a unique run name) and whether it has reward
    data; a run that is not there at all is a one-line ReportError, and so is one
    without reward data when ``need_rewards``."""
    return resolve_run(con, warehouse, run, WITH_REWARDS, by_name="strict", required=need_rewards)


def alerts_from(
    con: duckdb.DuckDBPyConnection,
    run_id: str | None = None,
    level: str = "info",
    since_step: int | None = None,
) -> list[dict[str, Any]]:
    """fct_alerts rows at or above ``level`` (alerts.sql), with the findings that are
    reward alerts too (finding_alerts.sql), each run's oldest first."""
    if level not in LEVELS:
        raise ReportError(f"unknown alert level '{level}' (levels: {', '.join(LEVELS)})")
    params = {"run": run_id, "level_rank": LEVELS.index(level) + 1, "since_step": since_step}
    found = query_rows(con, "alerts", **params)
    if "fct_run_findings" in table_names(con):
        found += query_rows(con, "finding_alerts", **params)
    # as alerts.sql orders its rows (a step-less row last in its run)
    return sorted(
        found,
        key=lambda a: (
            a["run_id"],
            a["step"] is None,
            a["step"] or 0,
            -a["level_rank"],
            a["rule_name"],
        ),
    )


def load_alerts(
    warehouse: Path, run: str | None = None, level: str = "info", since_step: int | None = None
) -> AlertSelection:
    """The alerts behind ``obs alerts``."""
    con = _open(warehouse)
    try:
        run_id, has_rewards = (
            _resolve(con, warehouse, run, need_rewards=False) if run is not None else (None, True)
        )
        found = alerts_from(con, run_id, level, since_step)
    finally:
        con.close()
    return AlertSelection(found, level, run_id, since_step, has_rewards)


def unseen_alerts(
    con: duckdb.DuckDBPyConnection, runs: Iterable[str] | None, seen: set[AlertKey]
) -> list[dict[str, Any]]:
    """The alerts of ``runs`` (every run when None) whose (run_id, rule_name, step) is not
    in ``seen``, oldest first; they are added to ``seen``. Nothing when fct_alerts is
    not built (a warehouse without reward data)."""
    if "fct_alerts" not in table_names(con):
        return []
    found = alerts_from(con)
    if runs is not None:
        wanted = set(runs)
        found = [a for a in found if a["run_id"] in wanted]
    fresh = [a for a in found if (a["run_id"], a["rule_name"], a["step"]) not in seen]
    seen.update((a["run_id"], a["rule_name"], a["step"]) for a in fresh)
    return fresh


def load_rewards(warehouse: Path, run: str) -> RewardAnalysis:
    """Everything ``obs rewards`` shows for one run."""
    con = _open(warehouse)
    try:
        run_id, _ = _resolve(con, warehouse, run, need_rewards=True)
        # the rewards page's queries, for the one run (without its run_id column)
        quality = _of_run(query_rows(con, "reward_quality", runs=[run_id]))
        functions = _of_run(query_rows(con, "reward_importance", runs=[run_id]))
        total = functions[0]["functions_total"] if functions else 0
        for function in functions:
            del function["functions_total"]
        pairing = (
            query_rows(con, "rewards_pair_note", run=run_id)
            if "fct_reward_pair_selection" in table_names(con)
            else []
        )
        hacking = query_rows(con, "rewards_hacking", run=run_id, scope="run")
        windows = query_rows(con, "rewards_hacking", run=run_id, scope="window")
        steps = query_rows(con, "rewards_steps", run=run_id)[0]
        alerts = alerts_from(con, run_id)
    finally:
        con.close()
    for row in quality:
        for name in ("issues", "warnings", "recommendations"):
            row[name] = list(row[name] or [])
    return RewardAnalysis(
        run_id=run_id,
        quality=quality[0] if quality else None,
        functions=functions,
        hacking=hacking,
        windows=[w for w in windows if w["reward_function"] is None],
        suspicious_windows=[w for w in windows if w["verdict"] in SUSPICIOUS],
        alerts=alerts,
        steps=int(steps["steps"]),
        basis=steps["basis"],
        functions_total=int(total),
        pair_note=pairing[0]["note"] if pairing else None,
    )


def _of_run(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of a query of one run without its ``run_id`` (an answer names the run once)."""
    for row in rows:
        del row["run_id"]
    return rows


# --------------------------------------------------------------------------- wording


def alert_line(alert: dict[str, Any]) -> str:
    """``🚨 [CRITICAL] Step 19: message``, as the GRPO reward monitor prints an alert."""
    level = str(alert["level"])
    return f"{ICONS.get(level, '')} [{level.upper()}] Step {alert['step']}: {alert['message']}"


def window_spans(windows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Runs of consecutive windows (in window order) with the same high or medium verdict."""
    spans: list[dict[str, Any]] = []
    previous = None
    for window in windows:
        verdict = window["verdict"]
        if verdict in SUSPICIOUS and previous == verdict:
            span = spans[-1]
            span["windows"] += 1
            span["last_end_step"] = window["window_end_step"]
            span["end_step"] = window["window_end_step"]
        elif verdict in SUSPICIOUS:
            spans.append(
                {
                    "verdict": verdict,
                    "windows": 1,
                    "first_end_step": window["window_end_step"],
                    "last_end_step": window["window_end_step"],
                    "start_step": window["window_start_step"],
                    "end_step": window["window_end_step"],
                }
            )
        previous = verdict
    return spans


def _num(value: Any, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _quality_lines(quality: dict[str, Any] | None, basis: str | None) -> list[str]:
    if quality is None:
        return ["Quality Score: n/a (no per-function rewards: the score judges reward functions)"]
    if quality["quality_score"] is None:
        reason = (
            "needs per-sample rewards; the run logged aggregates only"
            if (quality["basis"] or basis) == "logged"
            else "not computed"
        )
        lines = [f"Quality Score: n/a ({reason})"]
    else:
        lines = [f"Quality Score: {quality['quality_score']:.1f}/100"]
    lines.append(
        "  "
        + "  ".join(
            f"{name} {_num(quality[name], '.2f')}"
            for name in ("consistency", "discriminability", "stability", "coverage")
        )
    )
    lines += [f"{ISSUE} {text}" for text in quality["issues"]]
    lines += [f"{WARNING} {text}" for text in quality["warnings"]]
    lines += [f"{RECOMMENDATION} {text}" for text in quality["recommendations"]]
    return lines


def function_line(function: dict[str, Any], performance_metric: str | None = None) -> str:
    """``format_exact: 41.2% contribution (impact 19.9, variability 0.44, ...)``."""
    name, contribution = function["reward_function"], function["contribution"]
    weight = function.get("weight")
    if function.get("is_logged_only"):
        head = f"{name}: logged only (weight 0: not part of the reward the trainer optimised)"
    elif contribution is not None:
        head = f"{name}: {contribution:.1f}% contribution"
    else:
        head = f"{name}: contribution n/a (the run's total reward sums to 0 or less)"
    if weight is not None and weight != 1 and not function.get("is_logged_only"):
        head += f" at weight {weight:g}"
    parts = [
        f"impact {_num(function['impact_score'], '.1f')}",
        f"variability {_num(function['variability'], '.2f')}",
    ]
    if function["correlation_with_total"] is not None:
        parts.append(f"r with total {function['correlation_with_total']:.2f}")
    if function["correlation_with_performance"] is not None:
        parts.append(
            f"r with {performance_metric or 'performance'} "
            f"{function['correlation_with_performance']:.2f}"
        )
    return f"{head} ({', '.join(parts)})"


def _span_text(span: dict[str, Any]) -> str:
    ends = (
        f"step {span['first_end_step']}"
        if span["first_end_step"] == span["last_end_step"]
        else f"steps {span['first_end_step']}-{span['last_end_step']}"
    )
    count = f"{span['windows']} window{'s' if span['windows'] != 1 else ''}"
    return (
        f"{span['verdict']} in the windows ending at {ends} "
        f"({count}, covering steps {span['start_step']}-{span['end_step']})"
    )


def _hacking_lines(analysis: RewardAnalysis) -> list[str]:
    total = next((h for h in analysis.hacking if h["reward_function"] is None), None)
    if total is None:
        return ["Reward hacking: no verdict (no performance metric rows for this run)"]
    if total["verdict"] == "no_performance_metric":
        return [f"Reward hacking: {total['message']}"]
    head = (
        f"Reward hacking (performance metric {total['performance_metric']}): "
        f"verdict {total['verdict']} over the run"
    )
    if total["verdict"] == "insufficient_data":
        head += (
            f" ({total['points']} points of the performance metric and"
            f" {total['reward_points']} of the reward in the span;"
            " a verdict needs var hacking_min_steps of each)"
        )
    if total["verdict"] in SUSPICIOUS:
        head += f"; suspected: {', '.join(total['suspected_functions'] or []) or 'none named'}"
    if total["seed_verdict"] != total["verdict"]:
        head += f" (the reward monitor's plain slope rule says {total['seed_verdict']})"
    lines = [head]
    if total.get("message") and "Logged-only check" in total["message"]:
        lines.append("  " + total["message"].split(". ")[-1])
    functions = [h for h in analysis.hacking if h["reward_function"] is not None]
    if functions:
        lines.append(
            "  functions over the run: "
            + ", ".join(f"{h['reward_function']} {h['verdict']}" for h in functions)
        )
    if not analysis.windows:
        lines.append("  windows: none (the run has fewer points than one window)")
        return lines
    spans = window_spans(analysis.windows)
    if not spans:
        lines.append(f"  windows: none high or medium ({len(analysis.windows)} windows)")
    else:
        lines.append("  windows: " + "; ".join(_span_text(s) for s in spans))
    return lines


def _alert_section(analysis: RewardAnalysis) -> list[str]:
    if not analysis.alerts:
        return ["Latest alerts: none"]
    latest = analysis.alerts[-LATEST_ALERTS:]
    lines = ["Latest alerts:"]
    lines += [f"  {alert_line(a)}" for a in latest]
    earlier = len(analysis.alerts) - len(latest)
    if earlier:
        lines.append(f"  ({earlier} earlier; `obs alerts --run {analysis.run_id}` lists every one)")
    return lines


def rewards_text(analysis: RewardAnalysis) -> str:
    quality = analysis.quality
    functions = quality["reward_functions"] if quality else len(analysis.functions)
    basis = (quality or {}).get("basis") or analysis.basis
    lines = [
        f"Reward analysis: {analysis.run_id} (basis {basis}, {analysis.steps} steps, "
        f"{functions} reward function{'s' if functions != 1 else ''})"
    ]
    lines += _quality_lines(quality, analysis.basis)
    lines.append(_importance_head(analysis))
    lines += [f"  {function_line(f, analysis.performance_metric)}" for f in analysis.functions]
    if analysis.pair_note:
        lines.append(f"Pairs: {analysis.pair_note}")
    lines += _hacking_lines(analysis)
    lines += _alert_section(analysis)
    return "\n".join(lines) + "\n"


def _importance_head(analysis: RewardAnalysis) -> str:
    if not analysis.functions:
        return "Function importance: none"
    if analysis.functions_total > len(analysis.functions):
        return (
            f"Function importance (the first {len(analysis.functions)} of "
            f'{analysis.functions_total} by rank; every one: obs sql "from '
            f"fct_reward_function_importance where run_id = '{analysis.run_id}' order by rank\"):"
        )
    return "Function importance:"


def rewards_json(analysis: RewardAnalysis) -> str:
    return to_json(
        {
            "run_id": analysis.run_id,
            "basis": (analysis.quality or {}).get("basis") or analysis.basis,
            "steps": analysis.steps,
            "quality": analysis.quality,
            "functions": analysis.functions,
            "functions_total": analysis.functions_total,
            "pair_note": analysis.pair_note,
            "hacking": {
                "performance_metric": analysis.performance_metric,
                "run": analysis.hacking,
                "windows": analysis.suspicious_windows,
                "spans": window_spans(analysis.windows),
            },
            "alerts": analysis.alerts,
        }
    )


def alerts_text(selection: AlertSelection) -> str:
    """Each run's alerts in the reward monitor's line format, then the counts by level."""
    if not selection.alerts:
        scope = f" for run {selection.run_id}" if selection.run_id else ""
        since = f" from step {selection.since_step}" if selection.since_step is not None else ""
        why = "" if selection.run_has_rewards else " (the run has no reward data)"
        return f"no alerts at or above {selection.level}{scope}{since}{why}\n"
    lines: list[str] = []
    counts: dict[str, dict[str, int]] = {}
    for alert in selection.alerts:
        if alert["run_id"] not in counts:
            counts[alert["run_id"]] = dict.fromkeys(LEVELS, 0)
            lines.append(f"run {alert['run_id']}")
        by_level = counts[alert["run_id"]]
        by_level[alert["level"]] = by_level.get(alert["level"], 0) + 1
        lines.append(f"  {alert_line(alert)}")
    lines.append("")
    lines += table(
        ["run", *LEVELS, "total"],
        [
            [run, *(by_level[name] for name in LEVELS), sum(by_level.values())]
            for run, by_level in counts.items()
        ],
    )
    return "\n".join(lines) + "\n"


def alerts_json(selection: AlertSelection) -> str:
    return to_json(selection.alerts)
