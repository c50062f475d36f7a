"""The one way obs reads the warehouse: the named queries of ``reports/queries/``.

Every query a consumer runs (the dashboards, the served pages, the console
answers, the exports) is a file ``reports/queries/<name>.sql``: plain DuckDB
SQL whose values arrive as named parameters (``$run``, ``$runs``), never as
text of the query. A consumer reads one through ``frame`` (a DataFrame),
``query_rows`` (a dict per row), ``query_arrow`` (an Arrow table),
``query_row`` (the first) or ``query_value`` (the first value of the first
row), and the relations each file reads (``relations_read``) are what the dbt
exposures (``reports.exposures``) depend on. ``tests/unit/test_queries.py``
keeps SQL out of the Python.
"""

from __future__ import annotations

import functools
import re
from importlib import resources
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa

# A parameter of a query: `$run`, not the `$run` inside `$runs`.
PARAMETER = re.compile(r"\$([a-z_][a-z0-9_]*)\b")
# The models a query reads: marts and rpt_ models, and the staging views and
# intermediate models docs/architecture.md names (a model's name: its layer's prefix,
# then lower-case words).
RELATION = re.compile(r"\b((?:fct|dim|rpt|stg|int)_[a-z0-9_]+)\b")


@functools.cache
def query_text(name: str) -> str:
    """The SQL of ``reports/queries/<name>.sql``."""
    return resources.files("obs.reports").joinpath("queries", f"{name}.sql").read_text()


def parameters(name: str) -> frozenset[str]:
    """The parameters query ``name`` takes."""
    return frozenset(PARAMETER.findall(query_text(name)))


@functools.cache
def relations_read(name: str) -> frozenset[str]:
    """The warehouse relations query ``name`` reads (not those its comments name)."""
    sql = re.sub(r"--[^\n]*", "", query_text(name))
    return frozenset(RELATION.findall(sql))


def _execute(
    con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any]
) -> duckdb.DuckDBPyConnection:
    """Run query ``name`` with the ``params`` it takes bound (the others left out, so one
    set of values can serve several queries)."""
    wanted = parameters(name)
    return con.execute(query_text(name), {k: v for k, v in params.items() if k in wanted})


def frame(con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any]) -> pd.DataFrame:
    """Query ``name``'s rows as a DataFrame."""
    return _execute(con, name, params).df()


def query_arrow(con: duckdb.DuckDBPyConnection, name: str, /, **params: Any) -> pa.Table:
    """Query ``name``'s rows as an Arrow table (what a parquet export writes)."""
    return _execute(con, name, params).to_arrow_table()


def query_rows(con: duckdb.DuckDBPyConnection, name: str, /, **params: Any) -> list[dict[str, Any]]:
    """Query ``name``'s rows, one dict per row keyed by column name."""
    cursor = _execute(con, name, params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def query_row(con: duckdb.DuckDBPyConnection, name: str, /, **params: Any) -> dict[str, Any] | None:
    """Query ``name``'s first row, or None when it has none."""
    found = query_rows(con, name, **params)
    return found[0] if found else None


def query_value(con: duckdb.DuckDBPyConnection, name: str, /, **params: Any) -> Any:
    """The first value of query ``name``'s first row (None when it has no row)."""
    found = _execute(con, name, params).fetchone()
    return None if found is None else found[0]
