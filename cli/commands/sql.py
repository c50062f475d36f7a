"""``obs sql``: query the warehouse, or open the DuckDB shell on it."""

from __future__ import annotations

import csv
import io
import json
import math
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import click
import duckdb
from obs.cli.errors import friendly_errors
from obs.cli.options import (
    Settings,
    echo,
    format_option,
    marts_of,
    pass_settings,
    read_target_option,
)
from obs.core.places import no_warehouse
from obs.reports.warehouse import connect


def _duckdb_shell() -> str:
    beside = Path(sys.executable).parent / "duckdb"
    if beside.is_file():
        return str(beside)
    found = shutil.which("duckdb")
    if found is None:
        raise click.ClickException("no duckdb shell found; run `make install` (duckdb-cli)")
    return found


def _text(value: object) -> object:
    """A value for CSV or JSON: NULL stays null (an empty CSV field), NaN and infinities
    become the words NaN, Infinity and -Infinity (neither format has them)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


def _json_value(value: object) -> object:
    """Decimals as JSON numbers; dates, times and the rest as their text."""
    return float(value) if isinstance(value, Decimal) else str(value)


# What a query of `obs sql QUERY` may do beyond reading the warehouse: read files under
# these folders only (the lake, which the staging views read, and the warehouse's own
# folder), install and load no extension, and change none of that (the configuration
# is locked). Extensions statically linked into duckdb (parquet, json) still work.
CONFINED = (
    "set autoinstall_known_extensions = false",
    "set autoload_known_extensions = false",
    "set allow_community_extensions = false",
)


# Statements that write files (or open another database), refused before they run: the
# folders a query may read include the lake, and a COPY ... TO or EXPORT DATABASE there
# would plant files the staging views read.
WRITES_FILES = {
    duckdb.StatementType.COPY: "COPY",
    duckdb.StatementType.EXPORT: "EXPORT DATABASE",
    duckdb.StatementType.ATTACH: "ATTACH",
}


def _refuse_writes(con: duckdb.DuckDBPyConnection, query: str) -> None:
    try:
        statements = con.extract_statements(query)
    except duckdb.Error:
        return  # a syntax error: running the query reports it, with DuckDB's hints
    for statement in statements:
        name = WRITES_FILES.get(statement.type)
        if name is not None:
            raise click.ClickException(
                f"obs sql QUERY reads the warehouse only: {name} is refused (it writes "
                "files or opens another database); export with --format csv or json"
            )


def _confine(con: duckdb.DuckDBPyConnection, folders: list[Path]) -> None:
    for statement in CONFINED:
        con.execute(statement)
    allowed = [str(folder.resolve()) + "/" for folder in folders]
    con.execute("set allowed_directories = ?", [allowed])
    con.execute("set enable_external_access = false")
    con.execute("set lock_configuration = true")


@click.command()
@click.argument("query", required=False)
@format_option("table", "csv", "json", default="table")
@read_target_option
@pass_settings
def sql(settings: Settings, query: str | None, output_format: str, target: str) -> None:
    """Run QUERY on the warehouse and print the result; no QUERY opens the DuckDB shell.

    The table format is DuckDB's own (as its shell prints it): NULL shows as
    NULL, NaN as nan, an empty result as its header and "0 rows", a long one
    its first and last rows and how many there are (csv and json print every
    row). In csv a
    NULL is an empty field; in csv and json NaN and infinities are the words
    NaN, Infinity and -Infinity. An error is DuckDB's, with its suggestions
    (Did you mean ...?, Candidate bindings).

    QUERY reads the warehouse only: read-only, files under the lake and the
    warehouse's folder only (no read_csv of other files), no COPY, EXPORT
    DATABASE or ATTACH (they write files), no extension installed or loaded,
    and no SET that changes this.
    The DuckDB shell (no QUERY) is DuckDB's own, read-only and otherwise
    unrestricted.

    \b
    Example:
      obs sql "select iteration, mean_score from fct_iteration_summary"
      obs sql "select * from fct_prompt_learning limit 5" --format csv
      obs sql            # the DuckDB shell, read-only, on the warehouse
      obs sql --target spark "select count(*) from fct_prompt_iteration"
    """
    with friendly_errors(settings.debug):
        warehouse = marts_of(settings, target)
    if query is None:
        if not warehouse.is_file():
            raise click.ClickException(no_warehouse(warehouse, "run `obs build` first"))
        shell = _duckdb_shell()
        code = subprocess.call([shell, "-readonly", str(warehouse)])
        raise SystemExit(code)
    with friendly_errors(settings.debug):
        con = connect(warehouse)
    try:
        _confine(con, [settings.lake, warehouse.parent])
    except duckdb.Error as exc:
        con.close()
        raise click.ClickException(f"{warehouse}: {str(exc).strip()}") from exc
    try:
        _refuse_writes(con, query)
        relation = con.sql(query)
        if relation is None:
            return
        if output_format == "table":
            echo(str(relation).rstrip("\n"))  # DuckDB escapes C0 controls; echo the rest
            return
        names = relation.columns
        rows = relation.fetchall()
    except duckdb.Error as exc:
        raise click.ClickException(str(exc).strip()) from exc
    finally:
        con.close()
    if output_format == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(names)
        writer.writerows([_text(v) for v in row] for row in rows)
        click.echo(out.getvalue(), nl=False)
    else:
        records = [{n: _text(v) for n, v in zip(names, row, strict=True)} for row in rows]
        click.echo(json.dumps(records, default=_json_value, ensure_ascii=False))
