"""Read-only access to the built warehouse."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import duckdb
from obs.core.places import no_warehouse
from obs.reports.errors import ReportError

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
    found = con.execute("select table_name from information_schema.tables").fetchall()
    return {row[0] for row in found}


def require_tables(con: duckdb.DuckDBPyConnection, warehouse: Path, *names: str) -> None:
    present = table_names(con)
    missing = [n for n in names if n not in present]
    if missing:
        raise ReportError(
            f"{warehouse}: marts {', '.join(missing)} are missing; run `obs build` first"
        )


def rows(
    con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The result of ``sql`` as one dict per row, keyed by column name."""
    cursor = con.execute(sql, params or [])
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


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


def one_row(
    con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | dict[str, Any]
) -> dict[str, Any] | None:
    """The first row of ``sql``'s result as a dict, or None when it has none."""
    found = rows(con, sql, params)
    return found[0] if found else None


def finite_values(con: duckdb.DuckDBPyConnection, table: str) -> str:
    """``table`` with NaN and Infinity read as null: sums and means over finite values only
    (the marts keep what was logged; a summary line must not turn NaN)."""
    kinds = con.execute(
        "select column_name, data_type from information_schema.columns where table_name = ? "
        "order by ordinal_position",
        [table],
    ).fetchall()
    columns = [
        f'case when isfinite("{n}") then "{n}" end as "{n}"'
        if k in ("DOUBLE", "FLOAT")
        else f'"{n}"'
        for n, k in kinds
    ]
    return f"(select {', '.join(columns)} from {table})"


def open_runs(warehouse: Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection to a warehouse whose run marts are built."""
    con = connect(warehouse)
    try:
        require_tables(con, warehouse, "dim_runs", "fct_metric_summary")
    except ReportError:
        con.close()
        raise
    return con
