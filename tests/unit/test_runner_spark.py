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


def test_runner_spark_marts_read_a_spark_layout_through_duckdb(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The views over a Spark warehouse's tables: a table folder laid out as Spark writes
    one (partition folders with %XX escapes, _SUCCESS and .crc files beside the parquet),
    the partition columns typed as the DuckDB marts have them, empty tables left out,
    and the project's views (staging here) made from its DuckDB SQL. The parity test
    reads a real Spark build through it."""
    import duckdb
    from obs.runner.spark import spark_marts

    monkeypatch.delenv("OBS_SPARK_WAREHOUSE", raising=False)
    warehouse = tmp_path / "obs.duckdb"
    tables = tmp_path / "obs.duckdb.spark" / "obs.db"
    con = duckdb.connect()
    # a partitioned table: run_id=r:1 as Spark escapes it, two iterations
    for run, iteration, score in [("r%3A1", 0, 0.25), ("r%3A1", 1, 0.5), ("b", 0, 1.0)]:
        part = tables / "int_prompt_iteration" / f"run_id={run}" / f"iteration={iteration}"
        part.mkdir(parents=True)
        con.execute(
            f"copy (select 'p' as prompt_hash, {score}::double as mean_score) "
            f"to '{part / 'part-00000-x.c000.snappy.parquet'}' (format parquet)"
        )
        (part / ".part-00000-x.c000.snappy.parquet.crc").write_bytes(b"\0")
    (tables / "int_prompt_iteration" / "_SUCCESS").touch()
    # an unpartitioned table, and an empty one (no parquet file)
    (tables / "rpt_run_settings").mkdir(parents=True)
    con.execute(
        f"copy (select 'b' as run_id, 0.5::double as pass_threshold) "
        f"to '{tables / 'rpt_run_settings' / 'part-0.parquet'}' (format parquet)"
    )
    (tables / "fct_prompt_run_diff").mkdir()
    (tables / "fct_prompt_run_diff" / "_SUCCESS").touch()

    marts = spark_marts(warehouse, tmp_path / "lake")
    assert marts == tmp_path / "obs.duckdb.spark" / "marts.duckdb"
    read = duckdb.connect(str(marts), read_only=True)
    rows = read.execute(
        "select run_id, iteration, mean_score from int_prompt_iteration order by all"
    ).fetchall()
    assert rows == [("b", 0, 1.0), ("r:1", 0, 0.25), ("r:1", 1, 0.5)]
    types = dict(
        read.execute(
            "select column_name, column_type from (describe int_prompt_iteration)"
        ).fetchall()
    )
    assert types["run_id"] == "VARCHAR" and types["iteration"] == "BIGINT"
    assert read.execute("select * from rpt_run_settings").fetchall() == [("b", 0.5)]
    names = {
        row[0]
        for row in read.execute(
            "select view_name from duckdb_views() where not internal"
        ).fetchall()
    }
    assert "fct_prompt_run_diff" not in names
    # the staging views read the (empty) lake as their typed empty rows
    assert read.execute("select count(*) from stg_rollouts").fetchone() == (0,)
    read.close()
    # written anew at every call, by a rename: a second call while a reader holds the
    # file open is fine, and leaves no staged file behind
    held = duckdb.connect(str(marts), read_only=True)
    spark_marts(warehouse, tmp_path / "lake")
    held.close()
    assert sorted(p.name for p in marts.parent.iterdir()) == ["marts.duckdb", "obs.db"]


def test_runner_spark_marts_without_a_spark_build_say_so_in_one_line(tmp_path: Path) -> None:
    args = ["--warehouse", tmp_path / "obs.duckdb", "sql", "--target", "spark", "select 1"]
    result = run_cli(args, exit_code=1)
    assert "no Spark build here yet; run `obs build --target spark` first" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
