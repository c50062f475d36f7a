"""Two DuckDB warehouses compared relation by relation, row by row.

Shared by the engine-parity test (obs's executor against dbt) and the
builds-agree test (builds of one lake in different thread layouts): floats
within a tolerance, everything else (texts, labels, ranks, flags) exactly.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb

FloatsEqual = Callable[[float, float], bool]


def relative(tolerance: float, zero: float = 1e-15) -> FloatsEqual:
    """Floats equal when they differ by at most ``tolerance`` of the larger, or
    both lie within ``zero`` of 0 (a value 0 by the math comes out as float noise
    whose size and sign follow the order the engine added in)."""
    return lambda a, b: (
        a == b or abs(a - b) <= tolerance * max(abs(a), abs(b)) or max(abs(a), abs(b)) <= zero
    )


def within(tolerance: float) -> FloatsEqual:
    """Floats equal when they differ by at most ``tolerance``, relative above 1."""
    return lambda a, b: a == b or abs(a - b) <= tolerance * max(1.0, abs(a), abs(b))


def same(a: Any, b: Any, floats: FloatsEqual) -> bool:
    """Equal values, through lists and structs; floats by ``floats``, NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return floats(a, b)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(x, y, floats) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], floats) for k in a)
    return type(a) is type(b) and a == b


def relations(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """Every table and view of the warehouse's main schema, and which it is."""
    rows = con.execute(
        "select table_name, 'table' from duckdb_tables() where schema_name = 'main' "
        "union all select view_name, 'view' from duckdb_views() "
        "where schema_name = 'main' and not internal order by 1"
    ).fetchall()
    return dict(rows)


def differences(one: Path, other: Path, floats: FloatsEqual) -> dict[str, str]:
    """Per relation that differs, how: the columns whose values differ, and a row."""
    a = duckdb.connect(str(one), read_only=True)
    b = duckdb.connect(str(other), read_only=True)
    found: dict[str, str] = {}
    try:
        relations_a, relations_b = relations(a), relations(b)
        if relations_a != relations_b:
            found["(relations)"] = f"{sorted(set(relations_a.items()) ^ set(relations_b.items()))}"
        for name in sorted(set(relations_a) & set(relations_b)):
            columns_a = a.execute(f'describe "{name}"').fetchall()
            columns_b = b.execute(f'describe "{name}"').fetchall()
            if [c[:2] for c in columns_a] != [c[:2] for c in columns_b]:
                found[name] = f"columns {columns_a} != {columns_b}"
                continue
            query = f'select * from "{name}" order by all'
            rows_a, rows_b = a.execute(query).fetchall(), b.execute(query).fetchall()
            if len(rows_a) != len(rows_b):
                found[name] = f"{len(rows_a)} rows != {len(rows_b)}"
                continue
            columns = [c[0] for c in columns_a]
            pairs = [(x, y) for x, y in zip(rows_a, rows_b, strict=True) if not same(x, y, floats)]
            if pairs:
                unequal = {
                    columns[j]
                    for x, y in pairs
                    for j in range(len(columns))
                    if not same(x[j], y[j], floats)
                }
                x, y = pairs[0]
                found[name] = f"{sorted(unequal)} differ in {len(pairs)} rows, first {x} != {y}"
    finally:
        a.close()
        b.close()
    return found
