"""``obs build``: build what changed in the lake since the last build, and test it."""

from __future__ import annotations

import time

import click
from obs.cli import build_state
from obs.cli.dbt import Dbt, project_dir
from obs.cli.errors import friendly_errors
from obs.cli.options import Settings, echo_err, pass_settings

# Tables of the lake that the dbt project declares as sources.
SOURCES_YML = "models/staging/lake/_lake__sources.yml"


def lake_sources() -> tuple[str, ...]:
    import yaml

    declared = yaml.safe_load((project_dir() / SOURCES_YML).read_text())
    return tuple(
        table["name"]
        for source in declared.get("sources", [])
        if source.get("name") == "lake"
        for table in source.get("tables", [])
    )


def check_lake(settings: Settings) -> None:
    if not any((settings.lake / table).is_dir() for table in ("rollouts", "metrics", "runs")):
        raise click.ClickException(
            f"{settings.lake}: nothing landed in this lake yet; run `obs ingest rollouts PATH` "
            "or `obs ingest metrics PATH` first"
        )
    old = next((settings.lake / "rollouts").glob("run_id=*/*.parquet"), None)
    if old is not None:
        raise click.ClickException(
            f"{old}: this lake was written by an older obs (parts directly under run_id=); "
            "ingest the source files again into a new lake (--lake)"
        )


def build_args(dbt_args: tuple[str, ...], unit_tests: bool) -> list[str]:
    """dbt's arguments: no JSON artefacts, no unit tests unless asked; the user's last.

    With a selection, a data test runs only when every model it reads is
    selected (dbt's "buildable" indirect selection, unless the user chose
    another): a test of two marts must not run beside one of them alone.
    """
    args = ["--no-write-json"]
    if not unit_tests:
        args += ["--exclude-resource-type", "unit_test"]
    chosen = any(a.split("=", 1)[0] == "--indirect-selection" for a in dbt_args)
    if build_state.selects(dbt_args) and not chosen:
        args += ["--indirect-selection", "buildable"]
    return [*args, *dbt_args]


def run_build(dbt: Dbt, settings: Settings, dbt_args: tuple[str, ...], unit_tests: bool) -> int:
    """One ``obs build``: plan, run dbt, record. Returns the models that ran (0: up to date)."""
    args = build_args(dbt_args, unit_tests)
    custom = build_state.selects(dbt_args)
    plan = build_state.plan(settings.warehouse, settings.lake, args, lake_sources())
    # obs watch keeps dbt's parsed project: parse again when the project changed.
    dbt.parsed_under(build_state.project_fingerprint([]))
    if build_state.full_refresh(dbt_args):
        plan = build_state.Plan(True, plan.tables, plan.marks, plan.fingerprint)
    if plan.nothing and not custom:
        return 0
    selection = [] if custom else plan.select_args()
    if plan.full and not custom and not build_state.full_refresh(dbt_args):
        # New project files, vars or warehouse: incremental rows built under
        # the old ones would stay as they were, so every model is rebuilt.
        selection.append("--full-refresh")
    result = dbt.invoke("build", [*selection, *args])
    if custom:
        # The user's own selection, perhaps under other vars: the next plain
        # build rebuilds from scratch rather than trust what this one left.
        build_state.forget(settings.warehouse)
    else:
        build_state.record(settings.warehouse, plan, succeeded=result.success)
    if not result.success:
        for line in result.failures:
            echo_err(f"  {line}")
        raise click.ClickException(
            f"dbt build failed ({result.failed} failed, {result.passed} passed); "
            "what broke is listed above, dbt's log above that"
        )
    return max(result.models_run, 1)


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
    check_lake(settings)
    started = time.perf_counter()
    with friendly_errors(settings.debug):
        ran = run_build(Dbt(settings.warehouse, settings.lake), settings, dbt_args, unit_tests)
    if ran == 0:
        echo_err(
            "up to date: nothing landed since the last build "
            "(obs build --full-refresh rebuilds every model)"
        )
    else:
        echo_err(f"built in {time.perf_counter() - started:.1f} s")
    click.echo(str(settings.warehouse))
