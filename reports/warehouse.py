"""Read-only access to the built warehouse."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import duckdb
from obs.core.places import no_warehouse
from obs.reports.errors import ReportError
from obs.reports.sql import query_rows

# How many runs a one-line error names before it says how many there are in all.
RUNS_LISTED = 10


def connect(warehouse: Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection, with a one-line error when there is nothing to read."""
    if not warehouse.is_file():
        raise ReportError(no_warehouse(warehouse))
    try:
        return duckdb.connect(str(warehouse), read_only=True)
    except duckdb.Error as exc:
        message = str(exc).splitlines()[0]
        raise ReportError(f"{warehouse}: cannot open ({message})") from exc


def table_names(con: duckdb.DuckDBPyConnection) -> set[str]:
    """Every table and view the warehouse holds."""
    return {row["table_name"] for row in query_rows(con, "table_names")}


def require_tables(con: duckdb.DuckDBPyConnection, warehouse: Path, *names: str) -> None:
    present = table_names(con)
    missing = [n for n in names if n not in present]
    if missing:
        raise ReportError(
            f"{warehouse}: marts {', '.join(missing)} are missing; run `obs build` first"
        )


def run_list(known: Iterable[str]) -> str:
    """The runs ``known`` for a one-line error: sorted, the first ``RUNS_LISTED`` and how
    many there are in all when there are more, ``none`` when there are none."""
    names = sorted(set(known))
    if not names:
        return "none"
    shown = ", ".join(names[:RUNS_LISTED])
    if len(names) > RUNS_LISTED:
        return f"{shown}, ... ({len(names)} in all)"
    return shown


def unknown_run(
    warehouse: Path, run: str, known: Iterable[str], what: str = "runs", hint: str = ""
) -> ReportError:
    """The one-line error for a run the warehouse does not have:
    ``<warehouse>: no run '<run>' (<what>: a, b, c)``, then ``; <hint>`` when given.

    Raise what it returns (``raise unknown_run(...)``), so the caller's line shows in
    tracebacks and type checkers see the branch end.
    """
    message = f"{warehouse}: no run '{run}' ({what}: {run_list(known)})"
    return ReportError(f"{message}; {hint}" if hint else message)


def open_runs(warehouse: Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection to a warehouse whose run marts are built."""
    con = connect(warehouse)
    try:
        require_tables(con, warehouse, "dim_runs", "fct_metric_summary")
    except ReportError:
        con.close()
        raise
    return con
