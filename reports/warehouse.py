"""Read-only access to the built warehouse."""

from __future__ import annotations

from pathlib import Path

import duckdb
from obs.reports.errors import ReportError


def connect(warehouse: Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection, with a one-line error when there is nothing to read."""
    if not warehouse.is_file():
        raise ReportError(
            f"{warehouse}: no warehouse yet; run `obs ingest rollouts ...` then `obs build`"
        )
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
