"""``obs build``: build what changed in the lake since the last build, and test it."""

from __future__ import annotations

import time

import click
from obs.cli.errors import friendly_errors
from obs.cli.options import Settings, echo_err, pass_settings
from obs.runner.build import BuildFailed, check_lake
from obs.runner.build import run_build as build_what_changed
from obs.runner.dbt import Dbt


def run_build(dbt: Dbt, settings: Settings, dbt_args: tuple[str, ...], unit_tests: bool) -> int:
    """One ``obs build`` (``obs.runner.build``): the models that ran (0: up to date).

    A failed build prints a line per broken rule before its one-line error.
    """
    try:
        return build_what_changed(dbt, dbt_args, unit_tests)
    except BuildFailed as failed:
        for line in failed.failures:
            echo_err(f"  {line}")
        raise click.ClickException(str(failed)) from failed


@click.command(context_settings={"ignore_unknown_options": True})
@click.option(
    "--unit-tests",
    is_flag=True,
    help="Also run dbt's unit tests (the SQL on hand-made rows; `make test` runs them).",
)
@click.argument("dbt_args", nargs=-1, type=click.UNPROCESSED)
@pass_settings
def build(settings: Settings, unit_tests: bool, dbt_args: tuple[str, ...]) -> None:
    """Build the models downstream of what landed since the last build, and test them.

    The first build of a warehouse builds every model; later ones build only
    the models downstream of the lake tables that received parts, and
    incremental models recompute only the iterations (or runs) that changed.
    Nothing landed: nothing runs. Changed model files, vars, or a warehouse
    another program changed: everything is rebuilt from scratch. Data tests
    (keys, nulls, ranges) run on every model built. Extra arguments go to dbt
    build; with --select or --exclude they choose what runs, --full-refresh
    rebuilds from scratch.

    dbt's log goes to stderr; stdout gets the warehouse path. The exit code
    follows dbt: 1 when a model or test fails, with one line per broken rule.

    \b
    Example:
      obs build
      obs build --full-refresh
      obs build --unit-tests
      obs build --select fct_prompt_learning+
      obs --warehouse /data/obs.duckdb --lake /data/lake build
    """
    started = time.perf_counter()
    with friendly_errors(settings.debug):
        check_lake(settings.lake)
        ran = run_build(Dbt(settings.warehouse, settings.lake), settings, dbt_args, unit_tests)
    if ran == 0:
        echo_err(
            "up to date: nothing landed since the last build "
            "(obs build --full-refresh rebuilds every model)"
        )
    else:
        echo_err(f"built in {time.perf_counter() - started:.1f} s")
    click.echo(str(settings.warehouse))
