"""The ``obs`` command: ingest RL post-training logs, build the marts, look at them."""

from __future__ import annotations

import logging
from pathlib import Path

import click
from obs.cli.commands.build import build
from obs.cli.commands.demo import demo
from obs.cli.commands.export import export
from obs.cli.commands.ingest import ingest
from obs.cli.commands.render import render_dashboard_command
from obs.cli.commands.sql import sql
from obs.cli.commands.summary import summary
from obs.cli.commands.watch import watch
from obs.cli.options import Settings


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="obs")
@click.option(
    "--warehouse",
    envvar="OBS_WAREHOUSE",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("warehouse/obs.duckdb"),
    show_default=True,
    help="The DuckDB warehouse file (env OBS_WAREHOUSE).",
)
@click.option(
    "--lake",
    envvar="OBS_LAKE",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("lake"),
    show_default=True,
    help="The parquet lake root (env OBS_LAKE).",
)
@click.option("--debug", is_flag=True, help="Show tracebacks and debug logs.")
@click.pass_context
def cli(ctx: click.Context, warehouse: Path, lake: Path, debug: bool) -> None:
    """Land RL post-training logs as parquet, derive the analysis with dbt, query it.

    \b
    Example:
      obs ingest rollouts runs/grpo-ifeval/rollout_data --run grpo-ifeval
      obs build
      obs summary --run grpo-ifeval
      obs sql "select * from fct_iteration_summary"
      obs render-dashboard --run grpo-ifeval --out dashboard.html
    """
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING)
    ctx.obj = Settings(warehouse=warehouse, lake=lake, debug=debug)


cli.add_command(ingest)
cli.add_command(build)
cli.add_command(summary)
cli.add_command(sql)
cli.add_command(demo)
cli.add_command(export)
cli.add_command(render_dashboard_command)
cli.add_command(watch)
