"""The ``obs`` command: ingest RL post-training logs, build the marts, look at them."""

from __future__ import annotations

import difflib
import importlib
import logging
from pathlib import Path

import click
from obs.cli.options import Settings
from obs.core.places import DEFAULT_LAKE, DEFAULT_WAREHOUSE
from obs.core.text import console_line

# Each command's module is imported only when that command runs: `obs build`
# need not load the ingest readers, nor `obs ingest` the dashboards.
COMMANDS = {
    "ingest": "obs.cli.commands.ingest:ingest",
    "build": "obs.cli.commands.build:build",
    "watch": "obs.cli.commands.watch:watch",
    "summary": "obs.cli.commands.summary:summary",
    "sql": "obs.cli.commands.sql:sql",
    "demo": "obs.cli.commands.demo:demo",
    "export": "obs.cli.commands.export:export",
    "render-dashboard": "obs.cli.commands.render:render_dashboard_command",
    "runs": "obs.cli.commands.runs:runs",
    "analyze": "obs.cli.commands.runs:analyze",
    "compare": "obs.cli.commands.runs:compare",
    "findings": "obs.cli.commands.runs:findings",
    "rewards": "obs.cli.commands.rewards:rewards",
    "alerts": "obs.cli.commands.rewards:alerts",
    "audit": "obs.cli.commands.audit:audit",
    "show": "obs.cli.commands.show:show",
    "serve": "obs.cli.commands.serve:serve",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, name = target.split(":")
        command = getattr(importlib.import_module(module), name)
        assert isinstance(command, click.Command)
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """An unknown command's error names the closest one (``obs summery``: summary)."""
        name = args[0] if args else ""
        if name and not name.startswith("-") and name not in COMMANDS:
            close = difflib.get_close_matches(name, list(COMMANDS), n=1, cutoff=0.6)
            hint = f"; did you mean `obs {close[0]}`?" if close else "; see `obs --help`"
            raise click.UsageError(f"no command {name!r}{hint}", ctx)
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context) -> object:
        """Every error line is one line of plain text: a path or a name holding a newline
        or an escape sequence is written with escapes (``obs.core.text.console_line``)."""
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            exc.message = console_line(exc.message)  # type: ignore[misc]
            raise


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="obs-warehouse")
@click.option(
    "--warehouse",
    envvar="OBS_WAREHOUSE",
    type=click.Path(dir_okay=False, path_type=Path),
    default=DEFAULT_WAREHOUSE,
    show_default=True,
    help="The DuckDB warehouse file (env OBS_WAREHOUSE); relative to the current folder.",
)
@click.option(
    "--lake",
    envvar="OBS_LAKE",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_LAKE,
    show_default=True,
    help="The parquet lake root (env OBS_LAKE); relative to the current folder.",
)
@click.option("--debug", is_flag=True, help="Show tracebacks and debug logs.")
@click.pass_context
def cli(ctx: click.Context, warehouse: Path, lake: Path, debug: bool) -> None:
    """Land RL post-training logs as parquet, derive the analysis with dbt, query it.

    \b
    Example:
      obs ingest rollouts runs/grpo-ifeval/rollout_data --run grpo-ifeval
      obs ingest metrics runs/grpo-ifeval/wandb --run grpo-ifeval
      obs build
      obs summary --run grpo-ifeval
      obs analyze grpo-ifeval
      obs sql "select * from fct_iteration_summary"
      obs render-dashboard --run grpo-ifeval --out dashboard.html
    """
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING)
    ctx.obj = Settings(warehouse=warehouse, lake=lake, debug=debug)
