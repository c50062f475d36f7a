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
import json
import os
import re
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


# ---------------------------------------------------------------------- reading the marts

# The file of DuckDB views over a Spark build's tables, inside the Spark warehouse.
MARTS_FILE = "marts.duckdb"
# Partition columns that are integers in every mart (the other ones are text).
INTEGER_PARTITIONS = frozenset({"iteration", "step"})


def spark_marts(warehouse: Path, lake: Path) -> Path:
    """A DuckDB file of views over the tables a Spark build wrote (read with DuckDB).

    The marts of ``obs build --target spark`` are parquet tables, a folder each under
    the Spark warehouse's ``obs.db/``; partitioned ones hold their grain in the folder
    names (``run_id=a/iteration=3/``). This writes, anew at each call (cheap: no data
    is read), ``<spark warehouse>/marts.duckdb`` with one view per table over its
    parquet files, the partition columns typed as the DuckDB marts type them (run ids
    as text, ``iteration`` and ``step`` as BIGINT) and Spark's escaping of partition
    values undone; the file is replaced by a rename, so a reader never sees it half
    written. A table with no parquet file yet (an empty model) is left out. The
    models dbt builds as views (the staging views, marts such as
    ``fct_prompt_iteration`` that are views of an ``int_`` table) live only in
    Spark's metastore: they are made here from the project's DuckDB SQL over those
    tables and ``lake`` (each one whose parents are there). The reporting commands'
    ``--target spark`` read through the file, and so can the DuckDB shell
    (``duckdb -readonly <spark warehouse>/marts.duckdb``).
    """
    import duckdb
    from obs.runner.engine import get_plan
    from obs.runner.executor import MARKER, list_lake
    from obs.runner.plan import DATABASE_PLACEHOLDER, LAKE_PLACEHOLDER

    root = spark_warehouse(warehouse)
    schema = root / "obs.db"
    if not schema.is_dir():
        raise DbtError(f"{root}: no Spark build here yet; run `obs build --target spark` first")
    target = root / MARTS_FILE
    staged = root / f".{MARTS_FILE}.{os.getpid()}"
    staged.unlink(missing_ok=True)
    con = duckdb.connect(str(staged))
    try:
        tables = set()
        for folder in sorted(schema.iterdir()):
            view = _marts_view(folder)
            if view is not None:
                con.execute(view)
                tables.add(folder.name)
        plan = get_plan([], quiet=True)
        views = [
            node
            for node in (plan.nodes.values() if plan else [])
            if node.kind == "model" and node.materialized == "view" and node.name not in tables
        ]
        lake_path = str(lake.absolute()).replace("'", "''")
        database = con.execute("select current_database()").fetchone()[0]  # type: ignore[index]
        listing = list_lake(lake, plan.lake_tables if plan else [])

        def lake_part(match: re.Match[str]) -> str:
            # a view reads a lake table where it has parts, else its typed empty rows
            if match["kind"] != "lake":
                raise ValueError(match["kind"])
            return (
                match["present"]
                if listing.get(json.loads(match["spec"])["table"])
                else match["absent"]
            )

        for node in views:  # in DAG order: a view's parents come before it
            try:
                sql = MARKER.sub(lake_part, node.sql)
            except ValueError:
                continue  # an incremental marker: no view has one
            sql = sql.replace(LAKE_PLACEHOLDER, lake_path)
            sql = sql.replace(DATABASE_PLACEHOLDER, database)
            try:
                con.execute(f'create view "{node.name}" as {sql}')
            except duckdb.Error:
                continue  # a parent the Spark build does not have (not ported, or empty)
    finally:
        con.close()
    os.replace(staged, target)
    return target


def _marts_view(folder: Path) -> str | None:
    """The view over one Spark table's folder, or None when it holds no parquet file."""
    if not folder.is_dir() or folder.name.startswith((".", "_")):
        return None
    partitions: list[str] = []
    level = folder
    while True:
        below = [p for p in level.iterdir() if p.is_dir() and "=" in p.name]
        if not below:
            break
        partitions.append(below[0].name.split("=", 1)[0])
        level = below[0]
    if not any(folder.rglob("*.parquet")):
        return None
    name = folder.name.replace('"', '""')
    files = str(folder / "**" / "*.parquet").replace("'", "''")
    if not partitions:
        return f"create view \"{name}\" as select * from read_parquet('{files}')"
    typed = ", ".join(
        f'cast("{p}" as bigint) as "{p}"'
        if p in INTEGER_PARTITIONS
        # Spark writes a partition value with %XX escapes (a run id's ':' as %3A)
        else f'url_decode("{p}") as "{p}"'
        for p in partitions
    )
    return (
        f'create view "{name}" as select * replace ({typed}) from '
        f"read_parquet('{files}', hive_partitioning = true, hive_types_autocast = false)"
    )
