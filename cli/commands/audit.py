"""``obs audit RUN``: the logged metrics of a run set against its rollouts (fct_metric_audit)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import duckdb
from obs.cli.errors import friendly_errors
from obs.cli.options import Settings, echo, pass_settings
from obs.reports.errors import ReportError
from obs.reports.resolve import (
    WITH_HISTORY,
    WITH_ROLLOUTS,
    find_run,
    holdings,
    missing_note,
)
from obs.reports.sql import query_row, query_rows
from obs.reports.warehouse import connect, require_tables


def _sides(con: duckdb.DuckDBPyConnection, run_id: str) -> tuple[int, int]:
    """How many rollout iterations and tracker steps the warehouse holds for the run."""
    found = query_row(con, "audit_sides", run=run_id) or {}
    return int(found.get("iterations") or 0), int(found.get("steps") or 0)


def load_audit(warehouse: Path, run: str) -> list[dict[str, Any]]:
    """The audit of one run, a row per logged key; a one-line error without both sides
    (what the run holds, and what would land the side it lacks)."""
    con = connect(warehouse)
    try:
        require_tables(
            con, warehouse, "fct_metric_audit", "fct_iteration_summary", "fct_metric_history"
        )
        found = holdings(con)
        run_id = find_run(con, warehouse, run, found, by_name="strict")
        lacking = [kind for kind in (WITH_ROLLOUTS, WITH_HISTORY) if kind not in found[run_id]]
        if lacking:
            raise ReportError(
                missing_note([run_id], found[run_id], lacking, "audit the logged metrics")
            )
        rows_found = query_rows(con, "audit_metrics", run=run_id)
        if not rows_found:
            iterations, steps = _sides(con, run_id)
            raise ReportError(
                f"run '{run_id}' holds rollouts ({iterations} iterations) and a tracker history "
                f"({steps} steps), but no logged metric obs can recompute at a step both hold"
            )
        return rows_found
    finally:
        con.close()


def _convention(row: dict[str, Any]) -> str:
    return str(row["agreeing_convention"] or row["any_convention"] or "")


def _table(run: str, found: list[dict[str, Any]]) -> list[str]:
    header = (
        "metric",
        "canonical",
        "steps",
        "agree",
        "disagree",
        "n/c",
        "worst step",
        "convention",
    )
    body = [
        (
            str(r["metric"]),
            str(r["canonical_metric"]),
            str(r["steps"]),
            str(r["agrees"]),
            str(r["disagrees"]),
            str(r["not_comparable"]),
            f"{r['worst_step']} ({r['worst_difference']:.3g})" if r["worst_difference"] else "",
            _convention(r),
        )
        for r in found
    ]
    widths = [max(len(line[i]) for line in (header, *body)) for i in range(len(header))]
    lines = [f"Metric audit: {run}"]
    for line in (header, *body):
        lines.append(
            "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
        )
    return lines


@click.command()
@click.argument("run")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="Output format (results on stdout).",
)
@pass_settings
def audit(settings: Settings, run: str, output_format: str) -> None:
    """Check a run's logged metrics against its rollouts; exit 1 when one disagrees.

    One line per logged metric obs can recompute (reward mean and std, per-function
    means, zero-std groups, response length, clip ratio, solve rates): steps that
    agree, disagree or cannot be compared, the worst step and the convention that
    matched (fct_metric_audit).

    \b
    Example:
      obs audit grpo-gsm8k
      obs audit grpo-gsm8k --format json
    """
    with friendly_errors(settings.debug):
        found = load_audit(settings.warehouse, run)
    if output_format == "json":
        metrics = [
            {
                "metric": r["metric"],
                "canonical_metric": r["canonical_metric"],
                "steps": r["steps"],
                "agrees": r["agrees"],
                "disagrees": r["disagrees"],
                "not_comparable": r["not_comparable"],
                "disagreeing_steps": list(r["disagreeing_steps"] or []),
                "worst_step": r["worst_step"],
                "worst_difference": r["worst_difference"],
                "convention": _convention(r),
            }
            for r in found
        ]
        disagrees = any(m["disagrees"] for m in metrics)
        echo(json.dumps({"run_id": run, "disagrees": disagrees, "metrics": metrics}))
    else:
        for line in _table(run, found):
            echo(line)
        disagrees = any(r["disagrees"] for r in found)
    if disagrees:
        raise click.exceptions.Exit(1)
