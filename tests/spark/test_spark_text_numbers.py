"""Spark writes a JSON double as DuckDB does: the JSON writer's macro on Spark.

DuckDB's JSON writes a double with the shortest digits that read back
(`1e-7`, `1e21`, `NaN`); Java writes `1.0E-7`. The Spark form of the JSON
writer (`_json_double_text`, over the digit search `_spark_number_text`) is
rendered from the macro file with plain Jinja and run on a local Spark
session over edge values and thousands of random doubles (random bit
patterns and random magnitudes), and compared with DuckDB's own text for
each. (A number in a finding's sentence is a plain cast on each engine: the
parity test reads a text's numbers as numbers.) The one known difference: where two forms
of 16-17 digits, Java's %e rounds from its own digits, so Spark can write the
other of two equally short forms, or 17 digits where 16 read back (a few in
ten thousand random doubles, none among the edges): both read back as the
same double.

Named to run after the parity module: the first Spark session of a process
sets its JVM, and the parity builds want the profile's.
"""

from __future__ import annotations

import math
import os
import random
import struct
from collections.abc import Iterator
from typing import Any

import duckdb
import jinja2
import pytest
from obs.runner.spark import missing_for_spark

from tests.unit.test_portable_sql import ROOT

pytestmark = [pytest.mark.spark, pytest.mark.integration]

if missing_for_spark():
    pytest.skip(str(missing_for_spark()), allow_module_level=True)

EDGES = [
    0.0, -0.0, 1.0, -1.0, 0.1, 3.0, 1234.5, 1e-5, 1e-4, 1.5e-4, 1e-6, 1e-7, 1.5e-7,
    1e15, 1e16, 1.5e16, 1e20, 1e21, 123456789012345678901.0, 2e23, 5e-324,
    1.7976931348623157e308, 0.30000000000000004, 1 / 3, 2.0**53, 2.0**63, float("inf"),
    -float("inf"), float("nan"), 1e100, 1e-100, 1.2345e-300, 9.999999999999999e22,
]  # fmt: skip


class _Returned(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


def _return(value: Any) -> None:
    raise _Returned(value)


def _rendered(module: Any, name: str, *args: Any) -> str:
    try:
        text = str(getattr(module, name)(*args))
    except _Returned as returned:
        text = str(returned.value)
    return text


def _values() -> list[float]:
    rng = random.Random(20261126)
    values = list(EDGES)
    for _ in range(2500):
        values.append(struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0])
        values.append(rng.uniform(-1, 1) * 10.0 ** rng.randint(-12, 25))
    return values


@pytest.fixture(scope="module")
def spark_texts() -> Iterator[tuple[list[float], list[str]]]:
    from pyspark.sql import SparkSession

    source = (ROOT / "macros" / "json.sql").read_text()
    # a module does not export names that start with _: the JSON writer renamed
    source = source.replace("{% macro _json_double_text(", "{% macro json_double_text_(")
    env = jinja2.Environment(extensions=["jinja2.ext.do"])
    module = env.from_string(source, globals={"return": _return}).module
    written = _rendered(module, "json_double_text_", "x")
    values = _values()
    spark = (
        SparkSession.builder.master("local[1]")
        .appName("obs-number-text")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        # a first session fixes the JVM's heap for the process: the profile's size
        .config("spark.driver.memory", os.environ.get("OBS_SPARK_MEMORY", "4g"))
        .getOrCreate()
    )
    try:
        frame = spark.createDataFrame(list(enumerate(values)), "i int, x double")
        frame.createOrReplaceTempView("numbers")
        rows = spark.sql(f"select i, {written} as written from numbers order by i").collect()
        yield values, [row["written"] for row in rows]
    finally:
        spark.stop()


def _same_or_as_short(value: float, spark: str, duck: str) -> bool:
    """Equal, or what Java's rounding can do at 16-17 digits: both read back as the
    double, the same layout, and Spark's has at most one digit more."""
    if spark == duck:
        return True
    if math.isnan(value):
        return duck in ("nan", "-nan")  # DuckDB keeps a NaN's sign; Java has none
    digits = [
        text.split("e")[0].replace("-", "").replace(".", "").strip("0") for text in (spark, duck)
    ]
    layouts = [("e" in text, "." in text) for text in (spark, duck)]
    return (
        0 <= len(digits[0]) - len(digits[1]) <= 1
        and layouts[0] == layouts[1]
        and float(spark) == float(duck) == value
    )


def _duckdb_texts(values: list[float], expression: str) -> list[str]:
    """DuckDB's text of each value, one at a time (a list parameter turns NaN into null)."""
    con = duckdb.connect()
    try:
        return [con.execute(f"select {expression}", [v]).fetchone()[0] for v in values]
    finally:
        con.close()


def test_json_numbers_on_spark_are_duckdbs(spark_texts: tuple) -> None:
    values, texts = spark_texts
    ducks = _duckdb_texts(values, "cast(to_json(?::double) as varchar)")
    wrong = [
        (v, written, duck)
        for v, written, duck in zip(values, texts, ducks, strict=True)
        if not (written == duck or (not math.isnan(v) and _same_or_as_short(v, written, duck)))
    ]
    assert wrong == []
    edges = zip(values[: len(EDGES)], texts, ducks, strict=False)
    assert [v for v, written, duck in edges if written != duck] == []
    assert {texts[values.index(x)] for x in (1e21, 1e-7)} == {"1e21", "1e-7"}
