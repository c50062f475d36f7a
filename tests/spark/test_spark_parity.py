"""The dbt project on Spark builds the marts DuckDB builds, row for row.

One lake, two targets: ``obs build`` on DuckDB (obs's executor) and ``obs
build --target spark`` (dbt-spark on a local session, in this process). The
lake grows the ways a run grows (``tests.integration.growing_run``: a new
iteration, a grown dump, a new run, tracker histories, a reward monitor, an
agent's logs); after the cold build and after the incremental one, every
model built on Spark (the ported ones: the others are disabled there) holds
the rows of the DuckDB model of the same name: sorted rows, the same
columns, doubles within 1e-9 relative, texts the same with their numbers
read as numbers (within 1e-9: the engines write a double their own way,
``1e-05`` and ``1.0E-5``). One Spark session for the module.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml
from obs.runner.build import build
from obs.runner.dbt import Dbt
from obs.runner.spark import missing_for_spark

from tests.conftest import run_cli
from tests.integration.growing_run import GrowingRun, land_first, land_more
from tests.integration.test_run_findings import PLANTS, _diverged, _write_verl_lines
from tests.text_numbers import numbers_agree, rounded_text, texts_agree
from tests.unit.test_portable_sql import NOT_PORTED, ROOT, _models

pytestmark = [pytest.mark.spark, pytest.mark.integration]

RELATIVE = 1e-9

if missing_for_spark():
    pytest.skip(str(missing_for_spark()), allow_module_level=True)


def _value(value: Any) -> Any:
    """A value as both engines' Python rows can be compared: numbers as floats (a
    count may come back as int on one side and a whole float on the other), lists
    and maps element by element, NaN as itself."""
    if isinstance(value, bool) or value is None or isinstance(value, str | datetime):
        return value
    if isinstance(value, int | float | Decimal):
        return float(value)
    if isinstance(value, dict):
        return {key: _value(item) for key, item in sorted(value.items())}
    if hasattr(value, "asDict"):  # a Spark struct (a Row: a tuple, so before lists)
        return _value(value.asDict())
    if isinstance(value, list | tuple):
        return [_value(item) for item in value]
    return value


def _sort_key(row: tuple) -> tuple:
    return tuple((value is None, repr(value)) for value in row)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return numbers_agree(a, b, RELATIVE)
    if isinstance(a, str) and isinstance(b, str):
        return texts_agree(a, b, RELATIVE)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


def _table(model: str, path: Path) -> str:
    """The table a model builds: its config alias where it sets one, else its name."""
    alias = re.search(r"alias\s*=\s*['\"](\w+)['\"]", path.read_text())
    return alias.group(1) if alias else model


def _rounded(row: tuple) -> tuple:
    """A row with its floats, and the numbers in its texts, at 9 significant digits:
    the order rows sort in, so two rows equal within the tolerance meet."""
    return tuple(
        float(f"{v:.9g}")
        if isinstance(v, float) and math.isfinite(v)
        else rounded_text(v)
        if isinstance(v, str)
        else v
        for v in row
    )


def _spark_rows(spark: Any, name: str) -> tuple[list[str], list[Any]]:
    """A Spark table's column names and rows."""
    frame = spark.sql(f"select * from obs.{name}")
    return frame.columns, frame.collect()


def _differences(warehouse: Path, spark: Any) -> dict[str, str]:
    """Per model built on Spark whose rows differ from DuckDB's, how."""
    found: dict[str, str] = {}
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        listed = spark.sql("show tables in obs").collect()
        names = [row.tableName for row in listed if not row.isTemporary]
        # every ported model was built, and is compared
        ported = set(_models()) - NOT_PORTED
        # a model's table is its alias where it has one (stg_rejects builds rejects)
        built = {_table(model, path) for model, path in _models().items() if model in ported}
        # and the seeds they read, compared as well (their column types)
        seeds = {path.stem for path in (ROOT / "seeds").glob("*.csv")}
        assert sorted(set(names) - seeds) == sorted(built)
        # each table read once on Spark, four at a time: most of a read is its planning
        with ThreadPoolExecutor(max_workers=4) as pool:
            rows = pool.map(lambda name: _spark_rows(spark, name), names)
            read = dict(zip(names, rows, strict=True))
        for name in sorted(names):
            columns, spark_rows = read[name]
            cursor = con.execute(f"select * from {name}")
            ours_columns = [column[0] for column in cursor.description or []]
            if sorted(ours_columns) != sorted(columns):
                found[name] = f"columns: duckdb {ours_columns}, spark {columns}"
                continue
            ours = [tuple(_value(v) for v in row) for row in cursor.fetchall()]
            # Spark's values in DuckDB's column order
            at = [columns.index(c) for c in ours_columns]
            spark_values = [tuple(_value(row[i]) for i in at) for row in spark_rows]
            ours.sort(key=lambda row: _sort_key(_rounded(row)))
            spark_values.sort(key=lambda row: _sort_key(_rounded(row)))
            if len(ours) != len(spark_values):
                found[name] = f"{len(ours)} rows on duckdb, {len(spark_values)} on spark"
                continue
            for a, b in zip(ours, spark_values, strict=True):
                if not _same(list(a), list(b)):
                    diff = [
                        f"{c}: {x!r} != {y!r}"
                        for c, x, y in zip(ours_columns, a, b, strict=True)
                        if not _same(x, y)
                    ]
                    found[name] = "; ".join(diff[:4])
                    break
    finally:
        con.close()
    return found


# The profile's speed-only settings for a lake this small (profiles.yml): one shuffle
# partition, no whole-stage code generation, no adaptive re-planning, and a metastore
# that does not sync its files to disk. The rows are the same as under the defaults.
SMALL_LAKE_SETTINGS = {
    "OBS_SPARK_SHUFFLE_PARTITIONS": "1",
    "OBS_SPARK_CODEGEN": "false",
    "OBS_SPARK_ADAPTIVE": "false",
    "OBS_SPARK_JAVA_OPTIONS": "-Dderby.system.durability=test",
}


@pytest.fixture(scope="module")
def small_lake_settings() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        for name, value in SMALL_LAKE_SETTINGS.items():
            patch.setenv(name, value)
        yield


@pytest.fixture(scope="module")
def grown(
    tmp_path_factory: pytest.TempPathFactory, small_lake_settings: None
) -> Iterator[GrowingRun]:
    tmp_path = tmp_path_factory.mktemp("spark-parity")
    lake, warehouse = tmp_path / "lake", tmp_path / "warehouse" / "obs.duckdb"
    run = land_first(tmp_path, ["--lake", lake, "--warehouse", warehouse])
    _land_planted(tmp_path / "planted", lake)
    yield run
    shutil.rmtree(tmp_path, ignore_errors=True)


def _land_planted(folder: Path, lake: Path) -> None:
    """Tracker histories with a planted pattern each (test_run_findings' plants) and
    one whose reward turns NaN and KL infinite, so that every rule of the findings
    finds something on both engines (the demo run alone raises two patterns)."""
    from obs.demo.histories import write_seed_export
    from obs.ingest.keyed import ingest_metrics

    for index, (pattern, step) in enumerate(PLANTS.items()):
        write_seed_export(
            folder / "exports" / f"{pattern}.json",
            run_id=f"planted-{pattern}",
            seed=200 + index,
            patterns={pattern: step},
        )
    ingest_metrics(folder / "exports", lake=lake, fmt="wandb-export")
    (folder / "logs").mkdir(parents=True)
    _write_verl_lines(folder / "logs" / "diverged.jsonl", _diverged())
    ingest_metrics(folder / "logs", lake=lake)


def _build_both(run: GrowingRun, spark_args: list[str], unit_tests: bool) -> tuple[Path, Any, Any]:
    lake = run.tmp_path / "lake"
    warehouse = run.tmp_path / "warehouse" / "obs.duckdb"
    assert build(Dbt(warehouse, lake)).engine == "obs"
    done = build(Dbt(warehouse, lake, target="spark"), spark_args, unit_tests, dbt_log=False)
    assert done.engine == "dbt" and done.models > 0
    from pyspark.sql import SparkSession

    return warehouse, SparkSession.builder.getOrCreate(), done


@dataclass
class Compared:
    """The two Spark builds of the grown run and how each compared with DuckDB's."""

    cold: dict[str, str]  # model -> how its rows differ, after the cold build
    cold_build: Any
    cold_prompt_rows: int
    cold_patterns: set[str]
    grown: dict[str, str]  # the same after the lake grew and both built again
    grown_build: Any
    warehouse: Path
    spark: Any


@pytest.fixture(scope="module")
def compared(grown: GrowingRun) -> Compared:
    """Each kind of test once, each comparison once: the cold build runs every model with
    its dbt unit tests (dbt runs them before the model they test; a failing one fails
    the build) and no data test; the incremental build runs the models of the lake
    tables that grew with their data tests, on the grown lake."""
    warehouse, spark, cold_build = _build_both(
        grown, ["--exclude-resource-type", "test"], unit_tests=True
    )
    cold = _differences(warehouse, spark)
    prompt_rows = spark.sql("select count(*) from obs.fct_prompt_iteration").collect()[0][0]
    found = spark.sql(
        "select distinct pattern from obs.int_run_findings where pattern is not null"
    ).collect()
    land_more(grown)
    warehouse, spark, grown_build = _build_both(grown, [], unit_tests=False)
    return Compared(
        cold,
        cold_build,
        prompt_rows,
        {row[0] for row in found},
        _differences(warehouse, spark),
        grown_build,
        warehouse,
        spark,
    )


def test_spark_builds_the_duckdb_marts_cold_and_incrementally(
    grown: GrowingRun, compared: Compared
) -> None:
    differences = compared.cold
    assert not differences, "\n".join(f"{name}: {how}" for name, how in differences.items())
    # fct_prompt_iteration holds the rows, so the comparison compared something
    assert compared.cold_prompt_rows > 50
    # and the findings hold every rule's (the planted runs'), with sentences and evidence
    assert compared.cold_patterns >= {*PLANTS, "power_law_scaling"}

    differences = compared.grown
    assert not differences, "\n".join(f"{name}: {how}" for name, how in differences.items())
    # the incremental build ran the data tests of what it rebuilt
    assert compared.grown_build.tests_passed >= 50, compared.grown_build
    warehouse, spark = compared.warehouse, compared.spark
    runs = {
        row[0]
        for row in spark.sql("select distinct run_id from obs.fct_iteration_summary").collect()
    }
    assert {"a", "b"} <= runs
    # The reporting commands read the Spark build's marts through DuckDB (--target spark):
    # the same answers as from the DuckDB warehouse, views of int_ tables included.
    settings = ["--lake", grown.tmp_path / "lake", "--warehouse", warehouse]
    query = (
        "select run_id, iteration, count(*) as prompts, round(avg(mean_score), 9) as score "
        "from fct_prompt_iteration group by all order by all"
    )
    on_duckdb = run_cli([*settings, "sql", "--format", "json", query]).stdout
    on_spark = run_cli([*settings, "sql", "--format", "json", "--target", "spark", query]).stdout
    assert on_spark == on_duckdb and len(json.loads(on_spark)) > 4
    summary = run_cli([*settings, "summary"]).stdout
    assert run_cli([*settings, "summary", "--target", "spark"]).stdout == summary
    assert "prompts learned" in summary
    # (a mean over rows the engines store in another order: its last bits may differ)
    compared = json.loads(run_cli([*settings, "compare", "a", "b", "--format", "json"]).stdout)
    on_spark = run_cli([*settings, "compare", "a", "b", "--format", "json", "--target", "spark"])
    assert compared["prompt_diff"] and compared["metrics"], compared
    assert _same(_value(json.loads(on_spark.stdout)), _value(compared)), on_spark.stdout


def _ported_unit_tests() -> list[str]:
    """The dbt unit tests of the models that build on Spark (dbt leaves out the unit tests
    of a disabled model, and a unit test disabled on Spark: its config says why)."""
    ported = set(_models()) - NOT_PORTED
    found = []
    for path in sorted((ROOT / "models").rglob("*.yml")):
        for test in (yaml.safe_load(path.read_text()) or {}).get("unit_tests") or []:
            enabled = str((test.get("config") or {}).get("enabled", ""))
            if test["model"] in ported and "target.type != 'spark'" not in enabled:
                found.append(test["name"])
    return found


def test_spark_passes_the_unit_tests_of_every_ported_model(compared: Compared) -> None:
    """dbt's unit tests (a model's SQL on hand-made rows against hand-worked results) run
    on Spark too, in the cold build: a SQL fixture writes a list for the engine it runs on
    (`target.type`), and where the engines write a double's last bits or a number in a
    sentence their own way, the expectation says which engine writes what."""
    expected = _ported_unit_tests()
    assert len(expected) >= 14
    assert compared.cold_build.unit_tests_passed == len(expected)
