"""Run histories read back from the marts: ``obs runs``, ``analyze``, ``findings``, ``export run``.

Every number here is computed by a dbt model; this module only selects rows,
arranges them into the sections of the analyze-experiment workflow and
formats them. A section without data says so rather than vanish.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
from obs.reports.compare import TRAINING, compare_runs
from obs.reports.resolve import WITH_HISTORY, holdings, missing_note, resolve_run
from obs.reports.sql import query_row, query_rows
from obs.reports.warehouse import open_runs, require_tables, table_names

SEVERITIES = ("info", "warning", "critical")
# Why a tracker run has no created time.
NO_CLOCK = "no source of this run carries a clock time"
# The section of every finding, with its evidence and hypotheses.
FINDINGS = "Findings and hypotheses"


def known_names(warehouse: Path, names: list[str]) -> tuple[set[str], set[str]]:
    """Which of ``names`` name runs (ids or names), and which name metrics."""
    con = open_runs(warehouse)
    try:
        found = query_rows(con, "known_runs", names=names)
        metrics = query_rows(con, "known_metrics", names=names)
    finally:
        con.close()
    runs = {v for row in found for v in row.values() if v in names}
    return runs, {v for row in metrics for v in row.values() if v in names}


# --------------------------------------------------------------------------- obs runs


def list_runs(
    warehouse: Path,
    *,
    project: str | None = None,
    tag: str | None = None,
    state: str | None = None,
    config: list[tuple[str, str]] | None = None,
) -> list[dict[str, Any]]:
    """Runs matching every filter (config values compare as numbers when both are), each
    with what it holds (``holds``: rollouts, history, rewards, agent).

    With no filter, every run of the warehouse: a run without a tracker history (its
    rollouts or an agent's records only) has no name, state, source or steps. A filter
    reads the tracker's attributes, so only tracker runs match one.
    """
    con = open_runs(warehouse)
    try:
        found = holdings(con)
        pairs = config or []
        listed = query_rows(
            con,
            "runs_list",
            project=project,
            tag=tag,
            state=state,
            config_keys=[key for key, _ in pairs],
            config_values=[value for _, value in pairs],
        )
    finally:
        con.close()
    filtered = project is not None or tag is not None or state is not None or bool(pairs)
    if not filtered:
        tracked = {row["run_id"] for row in listed}
        listed += [
            {
                "run_id": run_id,
                **dict.fromkeys(
                    (
                        "name",
                        "state",
                        "source",
                        "sources",
                        "project",
                        "created_at",
                        "created_from",
                        "last_landed_at",
                    )
                ),
                "tags": [],
                **dict.fromkeys(("steps", "last_step", "metrics")),
            }
            for run_id in found
            if run_id not in tracked
        ]
    for row in listed:
        row["holds"] = [kind.key for kind in found.get(row["run_id"], ())]
    return sorted(
        listed, key=lambda r: (r["created_at"] is None, r["created_at"] or 0, r["run_id"])
    )


# --------------------------------------------------------------------------- obs analyze


@dataclass
class Section:
    number: int | None
    title: str
    data: Any = None
    note: str = ""  # why a section has no data

    @property
    def available(self) -> bool:
        return bool(self.data)


@dataclass
class Analysis:
    run_id: str
    name: str
    sections: list[Section] = field(default_factory=list)
    # What the run lacks, one line each (a run of rollouts without a tracker history).
    missing: list[str] = field(default_factory=list)


def analyze(warehouse: Path, run: str) -> Analysis:
    """The analyze-experiment workflow for one run, section by section.

    It reads the run's tracker history. A run without one (its rollouts only)
    is analysed on what it holds: the reward is its rollouts' mean score by
    iteration, the sections a history would fill say why they are empty, and
    ``missing`` says what would land the history.
    """
    con = open_runs(warehouse)
    try:
        found = resolve_run(con, warehouse, run, WITH_HISTORY, by_name="strict", required=False)
        run_id = found.run_id
        present = table_names(con)
        missing: list[str] = []
        if found.has_data:
            info = query_rows(con, "run_info", run=run_id)[0]
            training = _training(con, run_id)
        else:
            held = holdings(con)[run_id]
            missing.append(missing_note([run_id], held, [WITH_HISTORY], LACKS_HISTORY))
            info = _info_without_history(con, run_id, held, present)
            training = _training_from_rollouts(con, run_id, present)
        analysis = Analysis(run_id, info["name"], missing=missing)
        add = analysis.sections.append
        add(_run_info(info))
        if missing:
            analysis.sections[0].data["missing"] = missing[0]
        add(training)
        add(_summary(con, run_id, present, SUMMARIES["throughput"]))
        add(_summary(con, run_id, present, SUMMARIES["extraction"]))
        add(_summary(con, run_id, present, SUMMARIES["reliability"]))
        add(_cache(con, run_id, present))
        add(_power_law(con, run_id, info, present))
        add(_summary(con, run_id, present, SUMMARIES["league"]))
        add(_evaluation(con, run_id, present))
        add(_closest(con, run_id))
        add(_findings_section(con, run_id, present))
        if found.has_data:
            command = {"command": f"obs export run {run_id} --out analysis_{run_id}.json"}
            add(Section(12, "Export", command))
        else:
            add(Section(12, "Export", None, "obs export run needs the run's tracker history"))
        return analysis
    finally:
        con.close()


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _run_info(info: dict[str, Any]) -> Section:
    data = {
        "run_id": info["run_id"],
        "name": info["name"],
        "state": info["state"],
        # a stated state names its source; an unknown one says when data last came
        **(
            {"state_from": info["state_source"]}
            if info["state_source"]
            else {"last_data_landed": info["last_landed_at"]}
        ),
        "sources": list(info["sources"] or []),
        "project": info["project"],
        "tags": list(info["tags"] or []),
        "created_at": info["created_at"],
        "created_from": info["created_from"] or NO_CLOCK,
        "steps": info["steps"],
        "last_step": info["last_step"],
        "metrics": info["metrics"],
        "config": _json(info["config"]),
        "summary": _json(info["summary"]),
    }
    return Section(1, "Run info", data)


def _trend(first: Any, last: Any, lower_better: bool | None) -> str:
    if first is None or last is None or first == last:
        return "flat"
    rising = last > first
    if lower_better is None:
        return "rising" if rising else "falling"
    good = rising != lower_better
    return ("rising" if rising else "falling") + (" (good)" if good else " (worse)")


def _held_out(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any] | None:
    """The run's held-out metric (the key reward hacking is judged against) and its summary."""
    if "fct_reward_hacking" not in table_names(con):
        return None
    judged = query_row(con, "run_held_out", run=run_id)
    if not judged or judged["verdict"] == "no_performance_metric":
        return None
    summary = query_row(
        con, "run_metric_summaries", run=run_id, metric=judged["performance_metric"]
    )
    return {**judged, "summary": summary}


def _training(con: duckdb.DuckDBPyConnection, run_id: str) -> Section:
    found = {
        r["canonical_metric"]: r
        for r in query_rows(con, "run_metric_summaries", run=run_id, metric=None)
        if r["canonical_metric"] is not None
    }
    held_out = _held_out(con, run_id)
    data: list[dict[str, Any]] = []
    held_out_key = None
    if held_out and held_out["summary"]:
        first = _training_row("held_out", held_out["summary"], False)
        first["trend"] += f"; reward hacking: {held_out['verdict']}"
        data.append(first)
        held_out_key = held_out["performance_metric"]
    for name, lower in TRAINING:
        row = found.get(name)
        if row is None or row["metric"] == held_out_key:
            continue
        data.append(_training_row(name, row, lower))
    # A training reward that rises while the held-out metric falls is not progress.
    if data and data[0]["metric"] == "held_out" and data[0]["trend"].startswith("falling"):
        for entry in data:
            if entry["metric"] == "reward_mean" and entry["trend"].startswith("rising"):
                entry["trend"] = f"rising (but held-out {data[0]['key']} is falling)"
    return Section(2, "Training metrics", data, "" if data else "no loss, KL or reward logged")


# What a run without a tracker history lacks, after "land its tracker history ... to".
LACKS_HISTORY = "see loss, KL, gradient norm, the held-out metric and config"


def _info_without_history(
    con: duckdb.DuckDBPyConnection, run_id: str, held: Any, present: set[str]
) -> dict[str, Any]:
    """Run info for a run with no tracker history: what its rollouts say, the rest unknown."""
    span = {"iterations": None, "last_iteration": None}
    if "fct_iteration_summary" in present:
        span = query_row(con, "run_rollout_span", run=run_id) or span
    return {
        "run_id": run_id,
        "name": run_id,
        "state": "unknown",
        "state_source": None,
        "last_landed_at": None,
        "sources": [kind.key for kind in held],
        "project": None,
        "tags": [],
        "created_at": None,
        "created_from": "no tracker history: rollouts carry no clock time",
        "steps": span["iterations"],
        "last_step": span["last_iteration"],
        "metrics": 0,
        "config": None,
        "summary": None,
    }


def _training_from_rollouts(
    con: duckdb.DuckDBPyConnection, run_id: str, present: set[str]
) -> Section:
    """Section 2 of a run without a tracker history: the reward as its rollouts scored it,
    their mean score at each iteration (fct_iteration_summary)."""
    note = "no tracker history: no loss, KL or grad norm, and no rollout scores"
    if "fct_iteration_summary" not in present:
        return Section(2, "Training metrics", None, note)
    row = query_row(con, "run_rollout_reward", run=run_id)
    if not row or not row["points"]:
        return Section(2, "Training metrics", None, note)
    entry = _training_row(
        "reward_mean",
        {**row, "metric": "rollouts' mean score", "recent_slope": None, "non_finite_points": 0},
        False,
    )
    return Section(2, "Training metrics", [entry])


def _training_row(name: str, row: dict[str, Any], lower: bool | None) -> dict[str, Any]:
    return {
        "metric": name,
        "key": row["metric"],
        "first": row["first"],
        "last": row["last"],
        "min": row["min"],
        "max": row["max"],
        "mean": row["mean"],
        "recent_slope": row["recent_slope"],
        "non_finite": row["non_finite_points"],
        "trend": _trend(row["first"], row["last"], lower),
    }


@dataclass(frozen=True)
class _Summary:
    """A section that sums one per-step mart over the run (finite values only)."""

    number: int
    title: str
    mart: str
    query: str  # its aggregates (reports/queries/); the first counts the rows that say anything
    empty: str  # why the section has no data


SUMMARIES = {
    "throughput": _Summary(
        3,
        "Performance",
        "fct_run_throughput",
        "run_throughput",
        "no trajectories or rollout/training times logged",
    ),
    "extraction": _Summary(
        4, "Extraction", "fct_extraction_quality", "run_extraction", "no extraction metrics logged"
    ),
    "reliability": _Summary(
        5,
        "Rollout reliability",
        "fct_rollout_reliability",
        "run_reliability",
        "no rollout failures or times logged",
    ),
    "league": _Summary(
        8,
        "League",
        "fct_league",
        "run_league",
        "no Elo or league metrics logged (league not enabled)",
    ),
}


def _summary(
    con: duckdb.DuckDBPyConnection, run_id: str, present: set[str], spec: _Summary
) -> Section:
    if spec.mart not in present:
        return Section(spec.number, spec.title, None, f"{spec.mart} is not built")
    row = query_row(con, spec.query, run=run_id)
    if not row or not next(iter(row.values())):
        return Section(spec.number, spec.title, None, spec.empty)
    return Section(spec.number, spec.title, row)


def _cache(con: duckdb.DuckDBPyConnection, run_id: str, present: set[str]) -> Section:
    if "fct_cache_stats" not in present:
        return Section(6, "Prefix cache", None, "fct_cache_stats is not built")
    row = query_row(con, "run_cache", run=run_id)
    if not row:
        return Section(6, "Prefix cache", None, "no cache metrics logged")
    row.pop("run_id", None)
    if not row.get("cache_enabled"):
        return Section(
            6,
            "Prefix cache",
            None,
            "no cache metrics found: the run may not have prefix caching enabled "
            "(prefix_cache_optimized=False)",
        )
    return Section(6, "Prefix cache", row)


def _power_law(
    con: duckdb.DuckDBPyConnection, run_id: str, info: dict[str, Any], present: set[str]
) -> Section:
    if "fct_power_law_fit" not in present:
        return Section(7, "Power law", None, "fct_power_law_fit is not built")
    fits = query_rows(con, "run_power_law", run=run_id)
    fits = [f for f in fits if f.get("exponent") is not None or f.get("scope") == "run"]
    if not fits or all(f.get("exponent") is None for f in fits):
        return Section(
            7, "Power law", None, "no fit: needs at least 3 steps with positive reward and compute"
        )
    return Section(7, "Power law", fits)


def _evaluation(con: duckdb.DuckDBPyConnection, run_id: str, present: set[str]) -> Section:
    """The league's evaluations against opponents (the held-out metric leads section 2)."""
    if "fct_eval_results" not in present:
        return Section(9, "Evaluation results", None, "fct_eval_results is not built")
    data = query_rows(con, "run_evaluations", run=run_id)
    return Section(
        9,
        "Evaluation results",
        data,
        "" if data else "no eval/vs_* opponents logged (a held-out metric leads section 2)",
    )


def _closest(con: duckdb.DuckDBPyConnection, run_id: str) -> Section:
    """Runs sharing the most config values with this one, and how the finals compare."""
    similar = query_rows(con, "run_closest", run=run_id)
    if not similar:
        return Section(10, "Compare with similar runs", None, "no other run shares a config value")
    compared = []
    for other in similar:
        result = compare_runs(con, [run_id, other["run_id"]], None, {})
        compared.append(
            {
                "run_id": other["run_id"],
                "same_config_values": other["same"],
                "config_differences": result["config_differences"],
                "metrics": result["metrics"],
            }
        )
    return Section(10, "Compare with similar runs", compared)


def _findings_section(con: duckdb.DuckDBPyConnection, run_id: str, present: set[str]) -> Section:
    if "fct_run_findings" not in present:
        return Section(11, FINDINGS, None, "fct_run_findings is not built")
    data = load_findings_from(con, run_id, None)
    return Section(
        11,
        FINDINGS,
        data,
        "" if data else "no pattern matched: nothing to warn about",
    )


# --------------------------------------------------------------------------- findings


# What a finding shows in `obs findings` and `obs analyze` (findings.sql reads more).
FINDING_KEYS = (
    "run_id",
    "pattern",
    "severity",
    "first_step",
    "last_step",
    "evidence",
    "hypotheses",
    "summary",
)


def load_findings_from(
    con: duckdb.DuckDBPyConnection, run_id: str | None, severity: str | None
) -> list[dict[str, Any]]:
    """The findings of the run (every run's when None) at or above ``severity``."""
    rank = SEVERITIES[::-1].index(severity) if severity is not None else len(SEVERITIES) - 1
    found = query_rows(con, "findings", run=run_id, severity_rank=rank)
    return [
        {
            **{key: row[key] for key in FINDING_KEYS},
            "evidence": _json(row["evidence"]),
            "hypotheses": list(row["hypotheses"] or []),
        }
        for row in found
    ]


def load_findings(
    warehouse: Path, run: str | None = None, severity: str | None = None
) -> list[dict[str, Any]]:
    con = open_runs(warehouse)
    try:
        require_tables(con, warehouse, "fct_run_findings")
        # a run of rollouts alone has findings too (those over its rollouts)
        run_id = (
            resolve_run(con, warehouse, run, WITH_HISTORY, by_name="strict", required=False).run_id
            if run is not None
            else None
        )
        return load_findings_from(con, run_id, severity)
    finally:
        con.close()


# --------------------------------------------------------------------------- export run


def export_run(warehouse: Path, run: str, out: Path) -> dict[str, Any]:
    """The run in the analyze-experiment export's shape, rebuilt from the warehouse."""
    con = open_runs(warehouse)
    try:
        run_id = resolve_run(con, warehouse, run, WITH_HISTORY, by_name="strict").run_id
        info = query_rows(con, "run_info", run=run_id)[0]
        points = query_rows(con, "run_history", run=run_id)
        summaries = query_rows(con, "run_metric_summaries", run=run_id, metric=None)
    finally:
        con.close()
    history: dict[int, dict[str, Any]] = {}
    series: dict[str, list[dict[str, Any]]] = {}
    for point in points:
        step, metric, value, wall = (point[k] for k in ("step", "metric", "value", "wall_time"))
        row = history.setdefault(step, {"_step": step})
        row[metric] = value
        if wall is not None:
            row.setdefault("_timestamp", wall)
        series.setdefault(metric, []).append({"_step": step, "value": value})
    stats = {s["metric"]: s for s in summaries}
    payload = {
        "id": run_id,
        "name": info["name"],
        "state": info["state"],
        "state_source": info["state_source"],
        "created_at": info["created_at"].isoformat() if info["created_at"] else None,
        "created_from": info["created_from"],
        "last_landed_at": info["last_landed_at"].isoformat() if info["last_landed_at"] else None,
        "sources": list(info["sources"] or []),
        "updated_at": info["updated_at"].isoformat() if info["updated_at"] else None,
        "tags": list(info["tags"] or []),
        "config": _json(info["config"]),
        "summary": _json(info["summary"]),
        "source": info["source"],
        "project": info["project"],
        "history": list(history.values()),
        "artifacts": _json(info["artifacts"]),
        "metrics": {
            metric: {
                "data_points": len(values),
                "values": values,
                "min": stats.get(metric, {}).get("min"),
                "max": stats.get(metric, {}).get("max"),
                "mean": stats.get(metric, {}).get("mean"),
                "std": stats.get(metric, {}).get("std"),
            }
            for metric, values in series.items()
        },
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    temporary = out.with_name(f".{out.name}.tmp")
    temporary.write_text(json.dumps(_plain(payload), allow_nan=True, indent=1))
    temporary.replace(out)
    return {
        "status": "success",
        "run_id": run_id,
        "run_name": info["name"],
        "output_path": str(out),
        "file_size": out.stat().st_size,
    }


def _plain(value: Any) -> Any:
    """JSON-ready values (datetimes as ISO text); NaN and Infinity kept as JSON tokens."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, float) and math.isnan(value):
        return value
    return value
