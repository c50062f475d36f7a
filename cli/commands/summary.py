"""``obs summary``: the headline numbers of each run, from the marts."""

from __future__ import annotations

import dataclasses
import json

import click
from obs.cli.errors import friendly_errors
from obs.cli.options import Settings, format_option, pass_settings
from obs.reports.summary import format_summary, load_summary


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
        click.echo(format_summary(run), nl=False)
