"""``obs build``: run ``dbt build`` on the obs project against this warehouse and lake."""

from __future__ import annotations

import click
from obs.cli.dbt import run_dbt
from obs.cli.options import Settings, pass_settings


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("dbt_args", nargs=-1, type=click.UNPROCESSED)
@pass_settings
def build(settings: Settings, dbt_args: tuple[str, ...]) -> None:
    """Build every model and run every test (extra arguments go to dbt build).

    dbt's log goes to stderr; stdout gets the warehouse path. The exit code
    follows dbt: 1 when a model or test fails.

    \b
    Example:
      obs build
      obs build --select fct_prompt_learning+
      obs --warehouse /data/obs.duckdb --lake /data/lake build
    """
    if not (settings.lake / "rollouts").is_dir():
        raise click.ClickException(
            f"{settings.lake}: no rollouts in this lake; run `obs ingest rollouts PATH` first"
        )
    old = next((settings.lake / "rollouts").glob("run_id=*/*.parquet"), None)
    if old is not None:
        raise click.ClickException(
            f"{old}: this lake was written by an older obs (parts directly under run_id=); "
            "ingest the source files again into a new lake (--lake)"
        )
    result = run_dbt("build", settings.warehouse, settings.lake, dbt_args)
    if not result.success:
        raise click.ClickException(
            f"dbt build failed ({result.failed} failed, {result.passed} passed); "
            "see the dbt log above"
        )
    click.echo(str(settings.warehouse))
