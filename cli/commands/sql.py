"""``obs sql``: query the warehouse, or open the DuckDB shell on it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import click
import duckdb
from obs.cli.errors import friendly_errors
from obs.cli.options import Settings, format_option, pass_settings
from obs.reports.warehouse import connect


def _duckdb_shell() -> str:
    beside = Path(sys.executable).parent / "duckdb"
    if beside.is_file():
        return str(beside)
    found = shutil.which("duckdb")
    if found is None:
        raise click.ClickException("no duckdb shell found; run `make install` (duckdb-cli)")
    return found


@click.command()
@click.argument("query", required=False)
@format_option("table", "csv", "json", default="table")
@pass_settings
def sql(settings: Settings, query: str | None, output_format: str) -> None:
    """Run QUERY on the warehouse and print the result; no QUERY opens the DuckDB shell.

    \b
    Example:
      obs sql "select iteration, mean_score from fct_iteration_summary"
      obs sql "select * from fct_prompt_learning limit 5" --format csv
      obs sql            # the DuckDB shell, read-only, on the warehouse
    """
    if query is None:
        if not settings.warehouse.is_file():
            raise click.ClickException(
                f"{settings.warehouse}: no warehouse yet; run `obs build` first"
            )
        shell = _duckdb_shell()
        code = subprocess.call([shell, "-readonly", str(settings.warehouse)])
        raise SystemExit(code)
    with friendly_errors(settings.debug):
        con = connect(settings.warehouse)
    try:
        relation = con.sql(query)
        if relation is None:
            return
        frame = relation.df()
    except duckdb.Error as exc:
        raise click.ClickException(str(exc).splitlines()[0]) from exc
    finally:
        con.close()
    if output_format == "csv":
        click.echo(frame.to_csv(index=False), nl=False)
    elif output_format == "json":
        click.echo(frame.to_json(orient="records", date_format="iso"))
    else:
        with_width = frame.to_string(index=False, max_colwidth=60)
        click.echo(with_width)
