"""``obs summary``: the headline numbers of each run, from the marts."""

from __future__ import annotations

import dataclasses
import json

import click
from obs.cli.errors import friendly_errors
from obs.cli.options import (
    Settings,
    echo,
    echo_err,
    format_option,
    marts_of,
    pass_settings,
    read_target_option,
)
from obs.reports.summary import format_summary, read_summaries


@click.command()
@click.option("--run", "run_id", help="Only this run (default: every run).")
@click.option("--top", default=10, show_default=True, help="How many upsampling candidates.")
@format_option("table", "json", default="table")
@read_target_option
@pass_settings
def summary(
    settings: Settings, run_id: str | None, top: int, output_format: str, target: str
) -> None:
    """Print runs, iterations, prompts, rollouts, learning and the upsampling candidates.

    Covers the runs with rollouts. Runs without (a tracker history only, say)
    get a line on stderr saying what they hold and what would land their
    prompts; --run naming such a run exits 1 with that line.

    \b
    Example:
      obs summary
      obs summary --run grpo-ifeval --format json
    """
    with friendly_errors(settings.debug):
        found = read_summaries(marts_of(settings, target), run_id, top)
    if output_format == "json":
        echo(json.dumps([dataclasses.asdict(r) for r in found.runs], default=str))
    else:
        for run in found.runs:
            echo(format_summary(run), nl=False)
    for note in found.notes:
        echo_err(note)
