"""A step that changes a run's top reward functions rebuilds the run's pairs.

The pairwise reward models pair a run's top ``reward_pair_max_functions``
functions (largest |weight|, then largest variance, then name). They build by
step, so a newly landed step that moves other functions to the top must have
every earlier step of the run paired again over the new top: after an
incremental build the pair rows must equal a build from scratch on the same
lake.

Run t: TRL ``completions_N.parquet`` files of four rows and four reward
columns (weights 1: TRL's default), paired two at a time. Step 1: a and b
score 0/4 (variance 4), c and d 0/1 (variance 1/4): a and b are paired. Step
2: a and b score 1 on every row, c and d 0/20: pooled over the eight samples
a's variance is 2.25 (mean 1.5) and c's 90.1875 (mean 5.25), so c and d are
the top two now.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from obs.runner import build_state

from tests.conftest import run_cli

pytestmark = pytest.mark.integration

# No look-back (recent parts would be read again anyway) and pairs of two.
VARS = ["--vars", "{incremental_lookback_seconds: 0, reward_pair_max_functions: 2}"]
STEPS = {
    1: {"a": [0, 4, 0, 4], "b": [4, 0, 4, 0], "c": [0, 1, 0, 1], "d": [1, 1, 0, 0]},
    2: {"a": [1, 1, 1, 1], "b": [1, 1, 1, 1], "c": [0, 20, 0, 20], "d": [20, 0, 0, 20]},
}
PAIR_TABLES = {
    "int_reward_pair_functions": "reward_function",
    "int_reward_sample_pair_steps": "step, function_a, function_b",
    "int_reward_pair_runs": "function_a, function_b",
    "fct_reward_correlations": "function_a, function_b",
    "fct_reward_pair_selection": "run_id",
}


def _land_step(folder: Path, base: list, step: int) -> None:
    (folder / "completions").mkdir(parents=True, exist_ok=True)
    columns = STEPS[step]
    table = {
        "step": pa.array([step] * 4, pa.int64()),
        "prompt": pa.array([f"prompt {i % 2}" for i in range(4)], pa.large_string()),
        "completion": pa.array([f"completion {step} {i}" for i in range(4)], pa.large_string()),
        **{name: pa.array(values, pa.float64()) for name, values in columns.items()},
        "advantage": pa.array([0.0] * 4, pa.float64()),
    }
    pq.write_table(pa.table(table), folder / "completions" / f"completions_{step:05d}.parquet")
    run_cli([*base, "ingest", "rollouts", folder, "--run", "t", "-q"])


def _rows(warehouse: Path, table: str) -> list[tuple[Any, ...]]:
    """The table's rows of run t, doubles rounded to 12 significant digits (sums may add in
    another order), ingest times left out (the cold build's lake parts are the same)."""
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        columns = con.execute(
            "select column_name, data_type from information_schema.columns "
            "where table_name = ? order by ordinal_position",
            [table],
        ).fetchall()
        parts = [
            f'round("{name}", 12 - cast(floor(log10(abs("{name}") + 1e-300)) as integer))'
            if kind == "DOUBLE"
            else f'"{name}"'
            for name, kind in columns
            if not kind.startswith("TIMESTAMP")
        ]
        order = PAIR_TABLES[table]
        query = f"select {', '.join(parts)} from {table} where run_id = 't' order by {order}"
        return con.execute(query).fetchall()
    finally:
        con.close()


def _query(warehouse: Path, sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _paired(warehouse: Path) -> set[str]:
    sql = "select reward_function from int_reward_pair_functions where run_id = 't' and is_paired"
    return {name for (name,) in _query(warehouse, sql)}


CORRELATIONS = (
    "select function_a, function_b, n, correlation from fct_reward_correlations where run_id = 't'"
)


def _pearson(x: list[float], y: list[float]) -> float:
    mx, my = math.fsum(x) / len(x), math.fsum(y) / len(y)
    cov = math.fsum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    vx = math.fsum((a - mx) ** 2 for a in x)
    vy = math.fsum((b - my) ** 2 for b in y)
    return cov / math.sqrt(vx * vy)


def test_a_step_that_changes_the_top_functions_rebuilds_the_run_pairs(tmp_path: Path) -> None:
    lake, warehouse = tmp_path / "lake", tmp_path / "inc" / "obs.duckdb"
    base = ["--lake", lake, "--warehouse", warehouse]
    _land_step(tmp_path / "run", base, 1)
    run_cli([*base, "build", *VARS])
    assert _paired(warehouse) == {"a", "b"}
    [(a, b, n, correlation)] = _query(warehouse, CORRELATIONS)
    assert (a, b, n, correlation) == ("a", "b", 4, pytest.approx(-1.0))  # 0/4 against 4/0

    _land_step(tmp_path / "run", base, 2)
    planned = build_state.what_to_rebuild(
        warehouse,
        lake,
        ["--no-write-json", "--exclude-resource-type", "unit_test", *VARS],
        ["rollouts", "metrics", "runs", "reward_samples"],
    )
    assert not planned.full  # the second build is incremental: only step 2 is new
    run_cli([*base, "build", *VARS])
    assert _paired(warehouse) == {"c", "d"}

    cold = tmp_path / "cold" / "obs.duckdb"
    run_cli(["--lake", lake, "--warehouse", cold, "build", *VARS])
    for table in PAIR_TABLES:
        assert _rows(warehouse, table) == _rows(cold, table), table
    # Both steps paired over c and d: the step-1 rows were built again.
    steps = _query(
        warehouse,
        "select step, function_a, function_b from int_reward_sample_pair_steps "
        "where run_id = 't' order by all",
    )
    assert steps == [
        (step, a, b) for step in (1, 2) for a, b in (("c", "c"), ("c", "d"), ("d", "d"))
    ]
    # The correlation of c and d over the run's eight samples, by hand.
    c = [float(x) for step in (1, 2) for x in STEPS[step]["c"]]
    d = [float(x) for step in (1, 2) for x in STEPS[step]["d"]]
    [(a, b, n, correlation)] = _query(warehouse, CORRELATIONS)
    assert (a, b, n) == ("c", "d", 8)
    assert correlation == pytest.approx(_pearson(c, d), abs=1e-9)
