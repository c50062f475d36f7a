"""Runs side by side: ``obs compare`` and the served comparison page.

Their metrics (final, best, steps to 90% of the way, when a target was reached),
throughput, the config keys whose values differ, and the prompt-level diff of
every pair that trained on the same prompts; every number comes from a mart.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import duckdb
from obs.reports.errors import ReportError
from obs.reports.resolve import WITH_HISTORY, WITH_ROLLOUTS, find_run, holdings, notes_for
from obs.reports.sql import query_row, query_rows
from obs.reports.warehouse import open_runs, table_names

# Training metrics shown in section 2, in this order, and whether lower is better: the
# held-out metrics first (eval_accuracy and eval_reward: every framework's held-out
# accuracy and reward).
TRAINING = (
    ("eval_accuracy", False),
    ("eval_reward", False),
    ("loss", True),
    ("kl", True),
    ("reward_mean", False),
    ("reward_std", None),
    ("grad_norm", True),
    ("entropy", None),
    ("response_length", None),
    ("clip_ratio", True),
    ("zero_std_frac", True),
)
LOWER_IS_BETTER = {name for name, lower in TRAINING if lower} | {
    "failed_rollouts",
    "empty_responses",
    "partial_responses",
    "rollout_time_s",
    "training_time_s",
    "step_time",
    "max_total_s",
    "max_volume_reload_s",
}


def lower_is_better(metric: str) -> bool:
    """Loss-like metrics improve downwards: the named ones, and any key naming a loss
    or an error (``eval_loss``, ``train/loss``, ``val/error_rate``)."""
    name = metric.lower()
    return metric in LOWER_IS_BETTER or "loss" in name or "error" in name or "perplexity" in name


def compare(
    warehouse: Path,
    runs: list[str],
    metrics: list[str] | None = None,
    targets: dict[str, float] | None = None,
) -> dict[str, Any]:
    """Compare runs, in the order given: their metrics and config (tracker histories)
    and their prompts (rollouts).

    Any run the warehouse has takes part. ``notes``: a line per set of runs that lack
    what another compared run has (a tracker history, rollouts), saying what they hold
    and what would land the rest.
    """
    con = open_runs(warehouse)
    try:
        found = holdings(con)
        ids = [find_run(con, warehouse, r, found, by_name="strict") for r in runs]
        if len(set(ids)) < 2:
            raise ReportError("compare needs at least two different runs")
        result = compare_runs(con, ids, metrics, targets or {})
    finally:
        con.close()
    result["notes"] = [
        note
        for kind, shows in (
            (WITH_HISTORY, "compare training metrics and config"),
            (WITH_ROLLOUTS, "compare prompts"),
        )
        if any(kind in found[run] for run in ids)
        for note in notes_for(found, ids, kind, shows)
    ]
    return result


def _metric_rows(con: duckdb.DuckDBPyConnection, run_id: str, metric: str) -> dict[str, Any] | None:
    """The summary of ``metric`` (a canonical name or a key as logged) in a run."""
    return query_row(con, "compare_metric", run=run_id, metric=metric)


def _reach(
    con: duckdb.DuckDBPyConnection, run_id: str, key: str, target: float, lower: bool
) -> dict[str, Any]:
    row = query_row(con, "compare_reach", run=run_id, key=key, target=target, lower=lower)
    step = row["step"] if row else None
    seconds = None
    if row and row["wall_time"] is not None and row["start"] is not None:
        seconds = (row["wall_time"] - row["start"]).total_seconds()
    return {"step": step, "seconds": seconds}


def compare_runs(
    con: duckdb.DuckDBPyConnection,
    ids: list[str],
    metrics: list[str] | None,
    targets: dict[str, float],
) -> dict[str, Any]:
    names = metrics or ["eval_accuracy", "eval_reward", "loss", "reward_mean", "elo"]
    names = list(dict.fromkeys([*names, *targets]))
    out: dict[str, Any] = {"runs": [], "metrics": [], "config_differences": []}
    for run_id in ids:
        found = query_rows(con, "compare_runs", run=run_id)
        no_history = {"name": run_id, "state": None, "steps": 0, "last_step": None}
        out["runs"].append(found[0] if found else {"run_id": run_id, **no_history})
    for metric in names:
        rows_found = {run_id: _metric_rows(con, run_id, metric) for run_id in ids}
        # Better is judged by what the metric is (train/loss is a loss), not how it was typed.
        canonical = next(
            (r["canonical_metric"] for r in rows_found.values() if r and r["canonical_metric"]),
            metric,
        )
        lower = lower_is_better(canonical) or lower_is_better(metric)
        entry: dict[str, Any] = {"metric": metric, "lower_is_better": lower, "values": []}
        for run_id in ids:
            row = rows_found[run_id]
            value: dict[str, Any] = {"run_id": run_id}
            if row is not None:
                value.update(
                    key=row["metric"],
                    final=row["last"],
                    best=row["min"] if lower else row["max"],
                    steps_to_90pct=row["steps_to_90pct"],
                )
                if metric in targets:
                    value["target"] = targets[metric]
                    value["reached"] = _reach(con, run_id, row["metric"], targets[metric], lower)
            entry["values"].append(value)
        if any(len(v) > 1 for v in entry["values"]):
            out["metrics"].append(entry)
    present = table_names(con)
    if "fct_run_throughput" in present:
        out["throughput"] = query_rows(con, "compare_throughput", runs=ids)
    # A run with no config landed differs from the others in nothing it says: it is named
    # apart, and the diff is between the runs that have one.
    configured = {r["run_id"] for r in query_rows(con, "compare_config", runs=ids)}
    out["runs_without_config"] = [r for r in ids if r not in configured]
    with_config = [r for r in ids if r in configured]
    out["config_differences"] = _config_diff(con, with_config) if len(with_config) > 1 else []
    out["prompt_diff"] = _prompt_diff(con, ids, present)
    return out


def _config_diff(con: duckdb.DuckDBPyConnection, ids: list[str]) -> list[dict[str, Any]]:
    """The config keys whose values differ between ``ids``, as people read them.

    A key is shown without the quotes the flattening puts around a name holding a dot
    (``actor.optim.lr``, not ``"actor.optim.lr"``) unless another key of the diff then
    reads the same; a number is shown one way whatever way its tracker wrote it (1e-06
    and 0.000001 are both ``1e-06``).
    """
    found = query_rows(con, "compare_config", runs=ids)
    by_key: dict[str, dict[str, Any]] = {}
    for row in found:
        by_key.setdefault(row["key"], {})[row["run_id"]] = row["value"]
    differing = [
        (key, [values.get(r) for r in ids])
        for key, values in by_key.items()
        if len({_as_number(values.get(r)) for r in ids}) > 1  # 7 and 7.0 are one value
    ]
    plain = [key.replace('"', "") for key, _ in differing]
    return [
        {
            "key": name if plain.count(name) == 1 else key,
            "values": dict(zip(ids, map(_config_value, shown), strict=True)),
        }
        for (key, shown), name in zip(differing, plain, strict=True)
    ]


NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def _config_value(value: Any) -> Any:
    """A config value as text, a number in one form: an integer as written, any other
    number as Python writes the float (the shortest text that reads back the same)."""
    if not isinstance(value, str) or not NUMBER.fullmatch(value.strip()):
        return value
    text = value.strip()
    if re.fullmatch(r"[-+]?\d+", text):
        return str(int(text))
    return repr(float(text))


def _as_number(value: Any) -> Any:
    try:
        return float(value)
    except (TypeError, ValueError):
        return value


def _prompt_diff(
    con: duckdb.DuckDBPyConnection, ids: list[str], present: set[str]
) -> list[dict[str, Any]]:
    """Each pair of runs that trained on the same prompts, in the order the runs were given
    (the mart holds each pair once, its runs sorted: a pair given the other way round reads
    its columns the other way round)."""
    if "fct_prompt_run_diff" not in present:
        return []
    out = []
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            first, second = sorted([a, b])
            row = query_row(con, "compare_prompt_pair", run_a=first, run_b=second)
            if not row or not row["shared_prompts"]:
                continue
            if first != a:
                row = {
                    "shared_prompts": row["shared_prompts"],
                    "learned_only_in_a": row["learned_only_in_b"],
                    "learned_only_in_b": row["learned_only_in_a"],
                    "forgotten_only_in_a": row["forgotten_only_in_b"],
                    "forgotten_only_in_b": row["forgotten_only_in_a"],
                    "mean_final_score_delta": None
                    if row["mean_final_score_delta"] is None
                    else -row["mean_final_score_delta"],
                }
            out.append({"run_a": a, "run_b": b, **row})
    return out
