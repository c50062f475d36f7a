"""The run summary behind ``obs summary``: counts and rankings read from the marts."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
from obs.reports.headline import Success, solved_line
from obs.reports.resolve import WITH_ROLLOUTS, holdings, notes_for, resolve_run
from obs.reports.warehouse import connect, require_tables, rows

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
    counts = rows(
        con,
        """
        select
            count(*) as iterations,
            min(iteration) as first_iteration,
            max(iteration) as last_iteration,
            sum(n_rollouts) as rollouts
        from fct_iteration_summary
        where run_id = ?
        """,
        [run_id],
    )[0]
    scale = rows(
        con,
        """
        select
            case
                when any_value(solved_by) in ('score', 'function') then any_value(solved_by)
                when sum(n_judged_by_instructions) = 0 then 'pass_threshold'
                when sum(n_judged_by_instructions) = sum(n_rollouts) then 'instructions'
                else 'both'
            end as solved_by,
            any_value(rpt_dashboard_settings.pass_threshold) as pass_threshold,
            any_value(rpt_dashboard_settings.success) as success,
            any_value(rpt_dashboard_settings.success_kind) as success_kind,
            any_value(rpt_dashboard_settings.success_function) as success_function,
            any_value(rpt_dashboard_settings.success_threshold) as success_threshold,
            min(min_score) as min_score,
            max(max_score) as max_score,
            min(min_success_value) as min_success_value,
            max(max_success_value) as max_success_value
        from fct_iteration_summary
        cross join rpt_dashboard_settings
        where run_id = ?
        """,
        [run_id],
    )[0]
    prompts = rows(
        con,
        """
        select
            count(*) as prompts,
            count(*) filter (where is_learned) as prompts_learned,
            count(*) filter (where num_forgetting_events > 0) as prompts_forgotten,
            coalesce(sum(num_forgetting_events), 0) as forgetting_events,
            count(*) filter (where is_plateau) as prompts_plateaued,
            count(*) filter (where not is_learned) as prompts_never_solved,
            count(*) filter (where is_stuck_solved) as prompts_stuck_solved,
            count(*) filter (where is_stuck_failed) as prompts_stuck_failed
        from fct_prompt_learning
        where run_id = ?
        """,
        [run_id],
    )[0]
    by_iteration = rows(
        con,
        """
        select
            iteration, n_prompts, n_rollouts, mean_score, solved_share, prompt_strict_acc,
            strict_success_rate, n_zero_variance_solved, n_zero_variance_failed
        from fct_iteration_summary
        where run_id = ?
        order by iteration
        """,
        [run_id],
    )
    upsampling = rows(
        con,
        """
        select
            fct_prompt_learning.prompt_hash,
            dim_prompts.prompt_preview,
            fct_prompt_learning.upsampling_score,
            fct_prompt_learning.upsampling_score_scaled,
            fct_prompt_learning.final_score,
            fct_prompt_learning.learning_rate,
            fct_prompt_learning.num_forgetting_events
        from fct_prompt_learning
        left join dim_prompts
            on fct_prompt_learning.prompt_hash = dim_prompts.prompt_hash
        where fct_prompt_learning.run_id = ?
        order by
            fct_prompt_learning.upsampling_score_scaled desc, fct_prompt_learning.prompt_hash
        limit ?
        """,
        [run_id, top],
    )
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
    quoted = ", ".join("'" + run.replace("'", "''") + "'" for run in runs)
    return con.execute(
        "select run_id, count(*), min(iteration), max(iteration) "
        f"from fct_iteration_summary where run_id in ({quoted}) group by 1 order by 1"
    ).fetchall()
