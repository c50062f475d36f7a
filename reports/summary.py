"""The run summary behind ``obs summary``: counts and rankings read from the marts."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
from obs.reports.headline import Success, solved_line
from obs.reports.resolve import WITH_ROLLOUTS, holdings, notes_for, resolve_run
from obs.reports.sql import query_rows
from obs.reports.warehouse import connect, require_tables

MARTS = ("fct_iteration_summary", "fct_prompt_learning", "dim_prompts", "rpt_dashboard_settings")


@dataclass
class RunSummary:
    run_id: str
    iterations: int
    first_iteration: int
    last_iteration: int
    prompts: int
    rollouts: int
    prompts_learned: int
    prompts_forgotten: int
    forgetting_events: int
    prompts_plateaued: int
    prompts_never_solved: int
    prompts_stuck_solved: int
    prompts_stuck_failed: int
    # What "solved" and "learned" counted (fct_iteration_summary.solved_by), the
    # threshold a score had to reach, and the run's score range.
    solved_by: str = "instructions"
    pass_threshold: float = 0.5
    min_score: float | None = None
    max_score: float | None = None
    # The build's success rule (var success: strict, 'score >= X' or
    # '<reward function> >= X') and the range of the values it compared.
    success: str = "auto"
    success_kind: str = "auto"
    success_function: str | None = None
    success_threshold: float | None = None
    min_success_value: float | None = None
    max_success_value: float | None = None
    by_iteration: list[dict[str, Any]] = field(default_factory=list)
    upsampling: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Summaries:
    """``obs summary``'s answer: a summary per run with rollouts, and a line per set of
    runs without any, saying what they hold and what would land their prompts."""

    runs: list[RunSummary]
    notes: list[str] = field(default_factory=list)


def read_summaries(warehouse: Path, run: str | None = None, top: int = 10) -> Summaries:
    """A summary of each run with rollouts (only ``run`` when given), read from the built
    marts; a run given without rollouts is a one-line error saying what it holds."""
    con = connect(warehouse)
    try:
        require_tables(con, warehouse, *MARTS)
        if run is not None:
            run_id = resolve_run(con, warehouse, run, WITH_ROLLOUTS, by_name="unique").run_id
            return Summaries([_one_run(con, run_id, top)])
        found = holdings(con)
        with_rollouts = [r for r, kinds in found.items() if WITH_ROLLOUTS in kinds]
        return Summaries(
            [_one_run(con, run_id, top) for run_id in with_rollouts],
            notes_for(found, found, WITH_ROLLOUTS),
        )
    finally:
        con.close()


def load_summary(warehouse: Path, run: str | None = None, top: int = 10) -> list[RunSummary]:
    """One summary per run with rollouts (only ``run`` when given), read from the marts."""
    return read_summaries(warehouse, run, top).runs


def _one_run(con: Any, run_id: str, top: int) -> RunSummary:
    counts = query_rows(con, "summary_counts", run=run_id)[0]
    scale = query_rows(con, "summary_scale", run=run_id)[0]
    prompts = query_rows(con, "summary_prompts", run=run_id)[0]
    by_iteration = query_rows(con, "summary_iterations", run=run_id)
    upsampling = query_rows(con, "summary_upsampling", run=run_id, top=top)
    return RunSummary(
        run_id=run_id,
        **{k: int(v) if v is not None else 0 for k, v in counts.items()},
        **{k: int(v) for k, v in prompts.items()},
        solved_by=str(scale["solved_by"]),
        pass_threshold=float(scale["pass_threshold"]),
        min_score=scale["min_score"],
        max_score=scale["max_score"],
        success=str(scale["success"]),
        success_kind=str(scale["success_kind"]),
        success_function=scale["success_function"],
        success_threshold=scale["success_threshold"],
        min_success_value=scale["min_success_value"],
        max_success_value=scale["max_success_value"],
        by_iteration=by_iteration,
        upsampling=upsampling,
    )


def _num(value: object, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def format_summary(run: RunSummary) -> str:
    """The plain-text block for one run."""
    lines = [
        f"== run {run.run_id} ==",
        f"iterations {run.iterations} ({run.first_iteration}..{run.last_iteration})  "
        f"prompts {run.prompts}  rollouts {run.rollouts}",
        f"prompts learned {run.prompts_learned}  never solved {run.prompts_never_solved}  "
        f"forgotten {run.prompts_forgotten} ({run.forgetting_events} events)  "
        f"plateaued {run.prompts_plateaued}",
        f"dead prompts (no GRPO signal lately): stuck solved {run.prompts_stuck_solved}  "
        f"stuck failed {run.prompts_stuck_failed}",
        solved_line(
            run.solved_by,
            run.pass_threshold,
            run.min_score,
            run.max_score,
            Success(run.success_kind, run.success_function, run.success_threshold),
            run.min_success_value,
            run.max_success_value,
        ),
        "",
        # solved: the share of the iteration's prompts solved under the rule in force
        # (the solved line above says which), as every count above is
        f"{'iter':>5} {'prompts':>8} {'rollouts':>9} {'mean':>7} {'solved':>7} "
        f"{'zv_solved':>10} {'zv_failed':>10}",
    ]
    for row in run.by_iteration:
        lines.append(
            f"{row['iteration']:>5} {row['n_prompts']:>8} {row['n_rollouts']:>9} "
            f"{_num(row['mean_score']):>7} {_num(row['solved_share']):>7} "
            f"{row['n_zero_variance_solved']:>10} {row['n_zero_variance_failed']:>10}"
        )
    lines += ["", "top upsampling candidates (score on the run's scores scaled to 0..1):"]
    lines.append(
        f"{'prompt_hash':<17} {'score':>6} {'final':>6} {'slope':>7} {'forgot':>6}  prompt"
    )
    for row in run.upsampling:
        preview = (row["prompt_preview"] or "").replace("\n", " ")[:48]
        lines.append(
            f"{row['prompt_hash']:<17} {_num(row['upsampling_score_scaled'], 2):>6} "
            f"{_num(row['final_score'], 2):>6} {_num(row['learning_rate'], 3):>7} "
            f"{row['num_forgetting_events']:>6}  {preview}"
        )
    return "\n".join(lines) + "\n"


def iteration_coverage(con: duckdb.DuckDBPyConnection, runs: list[str]) -> list[tuple]:
    """(run, iterations, first, last) in fct_iteration_summary for each of ``runs``."""
    return [tuple(r.values()) for r in query_rows(con, "iteration_coverage", runs=runs)]
