"""``obs summary``: the headline numbers of each run, from the marts."""

from __future__ import annotations

import dataclasses
import json

import click
from obs.cli.errors import friendly_errors
from obs.cli.options import Settings, format_option, pass_settings
from obs.reports.summary import RunSummary, load_summary


@click.command()
@click.option("--run", "run_id", help="Only this run (default: every run).")
@click.option("--top", default=10, show_default=True, help="How many upsampling candidates.")
@format_option("table", "json", default="table")
@pass_settings
def summary(settings: Settings, run_id: str | None, top: int, output_format: str) -> None:
    """Print runs, iterations, prompts, rollouts, learning and the upsampling candidates.

    \b
    Example:
      obs summary
      obs summary --run grpo-ifeval --format json
    """
    with friendly_errors(settings.debug):
        runs = load_summary(settings.warehouse, run_id, top)
    if output_format == "json":
        click.echo(json.dumps([dataclasses.asdict(r) for r in runs], default=str))
        return
    for run in runs:
        click.echo(format_run(run))


def _num(value: object, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def format_run(run: RunSummary) -> str:
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
        "",
        f"{'iter':>5} {'prompts':>8} {'rollouts':>9} {'mean':>7} {'strict':>7} "
        f"{'zv_solved':>10} {'zv_failed':>10}",
    ]
    for row in run.by_iteration:
        lines.append(
            f"{row['iteration']:>5} {row['n_prompts']:>8} {row['n_rollouts']:>9} "
            f"{_num(row['mean_score']):>7} {_num(row['prompt_strict_acc']):>7} "
            f"{row['n_zero_variance_solved']:>10} {row['n_zero_variance_failed']:>10}"
        )
    lines += ["", "top upsampling candidates:"]
    lines.append(
        f"{'prompt_hash':<17} {'score':>6} {'final':>6} {'slope':>7} {'forgot':>6}  prompt"
    )
    for row in run.upsampling:
        preview = (row["prompt_preview"] or "").replace("\n", " ")[:48]
        lines.append(
            f"{row['prompt_hash']:<17} {_num(row['upsampling_score'], 2):>6} "
            f"{_num(row['final_score'], 2):>6} {_num(row['learning_rate'], 3):>7} "
            f"{row['num_forgetting_events']:>6}  {preview}"
        )
    return "\n".join(lines) + "\n"
