"""The dbt project on Apache Spark (``--target spark``): where its tables live, what it needs.

The ``spark`` output of ``profiles.yml`` runs a local Spark session inside the
dbt process (dbt-spark's ``session`` method; a cluster by editing only the
profile). Its marts are parquet tables under the Spark warehouse, one folder
per model, beside a Derby metastore of its own: by default the DuckDB
warehouse's path plus ``.spark`` (``warehouse/obs.duckdb.spark/``), or
``OBS_SPARK_WAREHOUSE``. obs's own executor runs DuckDB only: on Spark, dbt
builds.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

from obs.runner.errors import DbtError

DUCKDB = "duckdb"
SPARK = "spark"
TARGETS = (DUCKDB, SPARK)


def spark_warehouse(warehouse: Path) -> Path:
    """The Spark warehouse folder that goes with a DuckDB warehouse file (absolute)."""
    chosen = os.environ.get("OBS_SPARK_WAREHOUSE")
    if chosen:
        return Path(chosen).absolute()
    warehouse = warehouse.absolute()
    return warehouse.with_name(f"{warehouse.name}.spark")


def missing_for_spark() -> str | None:
    """Why a local Spark build cannot run here (one line), or None when it can."""
    if shutil.which("java") is None:
        return (
            "Spark needs a Java runtime (17 or later) on the PATH: "
            "apt-get install openjdk-17-jre-headless"
        )
    for module in ("pyspark", "dbt.adapters.spark"):
        try:
            found = importlib.util.find_spec(module)
        except ModuleNotFoundError:
            found = None
        if found is None:
            return "--target spark needs the spark extra: pip install 'obs-warehouse[spark]'"
    return None


def check_target(target: str) -> None:
    """Refuse an unknown target, or Spark where it cannot run, in one line."""
    if target not in TARGETS:
        raise DbtError(f"--target {target}: not a target of the obs project ({', '.join(TARGETS)})")
    if target == SPARK:
        missing = missing_for_spark()
        if missing:
            raise DbtError(missing)
