"""``obs build``: build what changed in the lake since the last build, and test it."""

from __future__ import annotations

import time

import click
from obs.cli.errors import friendly_errors
from obs.cli.options import Settings, echo, echo_err, pass_settings
from obs.core.success import SuccessError, parse_success, with_success_var
from obs.runner.build import BuildFailed, BuildSummary, check_lake
from obs.runner.build import build as build_what_changed
from obs.runner.dbt import Dbt
from obs.runner.spark import check_target


def run_build(dbt: Dbt, settings: Settings, dbt_args: tuple[str, ...], unit_tests: bool) -> int:
    """One ``obs build`` (``obs.runner.build``): the models that ran (0: up to date).

    A failed build prints a line per broken rule before its one-line error.
    """
    return build_summary(dbt, dbt_args, unit_tests).models


def build_summary(
    dbt: Dbt, dbt_args: tuple[str, ...], unit_tests: bool, dbt_log: bool = True
) -> BuildSummary:
    """``run_build`` with what the build did."""
    try:
        return build_what_changed(dbt, dbt_args, unit_tests, dbt_log)
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
@click.option(
    "--compile-only",
    is_flag=True,
    help="Compile the project for obs's executor and build nothing (the first build "
    "of each project version does this by itself).",
)
@click.option(
    "--target",
    type=click.Choice(["duckdb", "spark"]),
    default="duckdb",
    show_default=True,
    help="Where to build: the DuckDB warehouse, or the same project on Apache Spark "
    "(the spark extra and a Java runtime; its tables go to OBS_SPARK_WAREHOUSE, "
    "default the warehouse's path plus .spark).",
)
@click.option(
    "-v",
    "--verbose",
    is_flag=True,
    help="Show dbt's own log when dbt builds (by default only its errors).",
)
@click.option(
    "--success",
    "success",
    metavar="RULE",
    help="What a solved rollout is, for every count (learned, forgotten, never solved, "
    "stuck): strict (every instruction followed), 'score >= X', or "
    "'<reward function> >= X' on that function's own value (e.g. 'check_answer >= 3'). "
    "Default: strict where the dumps carry instruction flags, else "
    "score >= pass_threshold. Sets var success; another rule rebuilds every model.",
)
@click.argument("dbt_args", nargs=-1, type=click.UNPROCESSED)
@pass_settings
def build(
    settings: Settings,
    unit_tests: bool,
    compile_only: bool,
    target: str,
    verbose: bool,
    success: str | None,
    dbt_args: tuple[str, ...],
) -> None:
    """Build the models downstream of what landed since the last build, and test them.

    The first build of a warehouse builds every model; later ones build only
    the models downstream of the lake parts that landed, and incremental
    models recompute only the iterations (or runs) those parts hold. Nothing
    landed: nothing runs. Changed model files, vars, or a warehouse another
    program changed: everything is rebuilt from scratch. Data tests (keys,
    nulls, ranges) run on every model built.

    obs runs the project's compiled SQL itself, on one DuckDB connection (the
    first build of each project version compiles it with dbt, a few seconds).
    With --select, --exclude, --unit-tests or other dbt arguments, or
    OBS_ENGINE=dbt, dbt builds instead; --vars and --full-refresh work on
    either. --target spark builds the same models on a local Spark session
    with dbt (a cluster: edit the profile's spark output). A progress line
    (on a terminal) and a summary go to stderr; when dbt builds, the progress
    line and its errors (-v: its whole log). stdout gets the warehouse path
    (on Spark, its warehouse folder). Exit 1 when a model or test fails, with
    one line per broken rule.

    \b
    Example:
      obs build
      obs build --full-refresh
      obs build --vars '{pass_threshold: 0.7}'
      obs build --success 'check_answer >= 3'
      obs build --unit-tests
      obs build --select fct_prompt_learning+
      obs build --target spark
      obs --warehouse /data/obs.duckdb --lake /data/lake build
    """
    started = time.perf_counter()
    if success is not None:
        try:
            dbt_args = tuple(with_success_var(dbt_args, parse_success(success)))
        except SuccessError as error:
            raise click.BadParameter(str(error), param_hint="--success") from None
    if compile_only:
        from obs.runner.engine import prepare

        with friendly_errors(settings.debug):
            ready = prepare(dbt_args, quiet=bool({"-q", "--quiet"} & set(dbt_args)))
        echo_err(
            f"compiled in {time.perf_counter() - started:.1f} s"
            if ready
            else "these arguments build with dbt: nothing to compile"
        )
        return
    dbt = Dbt(settings.warehouse, settings.lake, target=target)
    with friendly_errors(settings.debug):
        check_target(target)
        check_lake(settings.lake)
        done = build_summary(dbt, dbt_args, unit_tests, dbt_log=verbose)
    if done.models == 0:
        echo_err(
            "up to date: nothing landed since the last build "
            "(obs build --full-refresh rebuilds every model)"
        )
    elif done.engine == "obs":
        warned = f", {done.tests_warned} warned" if done.tests_warned else ""
        echo_err(
            f"built {done.models} models, {done.tests_passed} data tests passed{warned}, "
            f"in {time.perf_counter() - started:.1f} s"
        )
    else:
        echo_err(f"built with dbt in {time.perf_counter() - started:.1f} s")
    echo(str(dbt.built_warehouse))
