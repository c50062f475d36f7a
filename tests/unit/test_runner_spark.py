"""``--target spark`` without Spark: where it builds, what it refuses (no JVM started)."""

from __future__ import annotations

from pathlib import Path

import pytest
from obs.runner.dbt import Dbt, state_dir
from obs.runner.errors import DbtError
from obs.runner.spark import check_target, spark_warehouse

from tests.conftest import run_cli


def test_runner_spark_warehouse_sits_beside_the_duckdb_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OBS_SPARK_WAREHOUSE", raising=False)
    warehouse = tmp_path / "warehouse" / "obs.duckdb"
    assert spark_warehouse(warehouse) == tmp_path / "warehouse" / "obs.duckdb.spark"
    monkeypatch.setenv("OBS_SPARK_WAREHOUSE", str(tmp_path / "elsewhere"))
    assert spark_warehouse(warehouse) == tmp_path / "elsewhere"


def test_runner_spark_dbt_runs_the_spark_output_with_state_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dbt's target/ and obs's build record for Spark never mix with DuckDB's."""
    monkeypatch.delenv("OBS_SPARK_WAREHOUSE", raising=False)
    warehouse = tmp_path / "obs.duckdb"
    spark = Dbt(warehouse, tmp_path / "lake", target="spark")
    duckdb = Dbt(warehouse, tmp_path / "lake")
    args = spark._args("build", ["--quiet"])
    assert args[args.index("--target") + 1] == "spark"
    assert "--target" not in duckdb._args("build", [])
    assert spark.built_warehouse == tmp_path / "obs.duckdb.spark"
    assert duckdb.built_warehouse == warehouse
    assert str(state_dir(spark.built_warehouse) / "target") in args
    assert str(state_dir(warehouse) / "target") not in args


def test_runner_spark_an_unknown_target_is_refused() -> None:
    with pytest.raises(DbtError, match=r"--target oracle: not a target of the obs project"):
        check_target("oracle")


def test_runner_spark_without_java_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no java there
    lake, warehouse = tmp_path / "lake", tmp_path / "obs.duckdb"
    failed = run_cli(
        ["--lake", lake, "--warehouse", warehouse, "build", "--target", "spark"], exit_code=1
    )
    assert failed.stderr.strip().splitlines() == [
        "Error: Spark needs a Java runtime (17 or later) on the PATH: "
        "apt-get install openjdk-17-jre-headless"
    ]
