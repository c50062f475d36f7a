"""prime-rl traces and verl V1 dumps -> obs build -> fct_prompt_iteration, worked out by hand.

The two toy runs (tests/data/run_writers.py), with the pass threshold 0.5:

prime-gsm8k (score = correct x 1 + format x 0.5):
    2+2  step 0 [1.5, 0.5, 1.0]   (its effective file repeats them: not counted)
         step 1 [1.5, 1.5]         zero variance, all solved
    3+5  step 0 [0, 0, 0]          zero variance, all failed
         step 1 [1.5, 0.0]         the 0 is a trace that timed out unscored
    prime-gsm8k:val  2+2 step 1 [1.0]
verl-v1:
    6*7  step 1 [1, 0]   step 2 [1, 1]
    2+3  step 1 [1, 1]   step 2 [0, 0]
"""

from __future__ import annotations

import math
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from tests.conftest import DATA, prompt_hash, run_cli
from tests.data.run_writers import ADD_PROMPT, SUM_PROMPT, toy_prime_run, toy_verl_run, verl_group

pytestmark = pytest.mark.integration

NAMES = {
    prompt_hash(ADD_PROMPT): "2+2",
    prompt_hash(SUM_PROMPT): "3+5",
    prompt_hash("Q: 6*7?"): "6*7",
    prompt_hash("Q: 2+3?"): "2+3",
}


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sources")
    prime = toy_prime_run(root / "outputs" / "prime-gsm8k")
    verl = toy_verl_run(root / "verl-v1")
    lake, warehouse = root / "lake", root / "warehouse" / "obs.duckdb"
    base = ["--lake", lake, "--warehouse", warehouse]
    landed = run_cli([*base, "ingest", "rollouts", prime])
    assert "11 rows and 11 token rows landed, 1 rejected" in landed.stdout
    assert "8 rows landed, 0 rejected" in run_cli([*base, "ingest", "rollouts", verl]).stdout
    assert "6 points landed" in run_cli([*base, "ingest", "metrics", prime]).stdout
    run_cli([*base, "build"])
    return warehouse


def _query(warehouse: Path, sql: str) -> list[dict]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        cursor = con.execute(sql)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    finally:
        con.close()


def _cells(warehouse: Path, run: str) -> dict[tuple[int, str], dict]:
    rows = _query(warehouse, f"select * from fct_prompt_iteration where run_id = '{run}'")
    cells = {(r["iteration"], NAMES[r["prompt_hash"]]): r for r in rows}
    assert len(cells) == len(rows)
    return cells


def test_prime_run_prompt_iterations(warehouse: Path) -> None:
    cells = _cells(warehouse, "prime-gsm8k")
    assert {cell: (r["n_samples"], r["mean_score"]) for cell, r in cells.items()} == {
        (0, "2+2"): (3, 1.0),
        (0, "3+5"): (3, 0.0),
        (1, "2+2"): (2, 1.5),
        (1, "3+5"): (2, 0.75),
    }
    add0 = cells[(0, "2+2")]
    assert (add0["min_score"], add0["max_score"], add0["std_score"]) == (0.5, 1.5, 0.5)
    assert (add0["pass_rate"], add0["prompt_strict_acc"], add0["strict_success_rate"]) == (1, 1, 1)
    assert (add0["mean_at_1"], add0["mean_at_3"], add0["best_mean_gap"]) == (1.5, 1.0, 0.5)
    assert add0["consistency_score"] == pytest.approx(1 / 1.5)
    assert (add0["is_zero_variance"], add0["zero_variance_outcome"]) == (False, None)
    sum0 = cells[(0, "3+5")]
    assert (sum0["is_zero_variance"], sum0["zero_variance_outcome"], sum0["pass_rate"]) == (
        True,
        "all_failed",
        0,
    )
    add1 = cells[(1, "2+2")]
    assert (add1["is_zero_variance"], add1["zero_variance_outcome"]) == (True, "all_solved")
    sum1 = cells[(1, "3+5")]
    assert sum1["std_score"] == pytest.approx(0.75 * math.sqrt(2))
    assert (sum1["min_score"], sum1["max_score"], sum1["pass_rate"]) == (0.0, 1.5, 0.5)
    assert (sum1["prompt_strict_acc"], sum1["strict_success_rate"], sum1["mean_at_1"]) == (
        1,
        0.5,
        1.5,
    )


def test_prime_eval_lands_as_its_own_run(warehouse: Path) -> None:
    [(cell, row)] = _cells(warehouse, "prime-gsm8k:val").items()
    assert cell == (1, "2+2")
    assert (row["n_samples"], row["mean_score"], row["std_score"]) == (1, 1.0, 0)


def test_verl_v1_run_prompt_iterations(warehouse: Path) -> None:
    cells = _cells(warehouse, "verl-v1")
    assert {cell: (r["n_samples"], r["mean_score"]) for cell, r in cells.items()} == {
        (1, "6*7"): (2, 0.5),
        (1, "2+3"): (2, 1.0),
        (2, "6*7"): (2, 1.0),
        (2, "2+3"): (2, 0.0),
    }
    assert cells[(1, "6*7")]["std_score"] == pytest.approx(math.sqrt(0.5))
    assert cells[(1, "6*7")]["pass_rate"] == 0.5
    assert cells[(2, "2+3")]["zero_variance_outcome"] == "all_failed"


def test_group_ids_reach_the_warehouse(warehouse: Path) -> None:
    rows = _query(
        warehouse,
        "select run_id, iteration, prompt_hash, list(distinct group_id order by group_id) as g "
        "from stg_rollouts group by all order by all",
    )
    groups = {(r["run_id"], r["iteration"], NAMES[r["prompt_hash"]]): r["g"] for r in rows}
    assert groups == {
        ("prime-gsm8k", 0, "2+2"): ["g-0a"],
        ("prime-gsm8k", 0, "3+5"): ["g-0b"],
        ("prime-gsm8k", 1, "2+2"): ["g-1a"],
        ("prime-gsm8k", 1, "3+5"): ["g-1b"],
        ("prime-gsm8k:val", 1, "2+2"): ["g-e1"],
        ("verl-v1", 1, "6*7"): [verl_group(0, 1)],
        ("verl-v1", 1, "2+3"): [verl_group(1, 1)],
        ("verl-v1", 2, "6*7"): [verl_group(0, 2)],
        ("verl-v1", 2, "2+3"): [verl_group(1, 2)],
    }


def test_prime_metrics_share_the_rollouts_run(warehouse: Path) -> None:
    rows = _query(
        warehouse,
        "select run_id, step, value from stg_metrics "
        "where metric = 'optim/grad_norm' order by step",
    )
    assert [(r["run_id"], r["step"], r["value"]) for r in rows] == [
        ("prime-gsm8k", 0, 0.5),
        ("prime-gsm8k", 1, 0.25),
    ]


def test_a_lake_landed_before_group_id_still_builds(tmp_path: Path) -> None:
    """Parts written before the column existed read it as null, even when none has it."""
    lake, warehouse = tmp_path / "lake", tmp_path / "obs.duckdb"
    base = ["--lake", lake, "--warehouse", warehouse]
    run_cli([*base, "ingest", "rollouts", DATA / "ifeval_small", "--run", "old", "-q"])
    for part in (lake / "rollouts").rglob("*.parquet"):
        pq.write_table(pq.read_table(part).drop_columns(["group_id"]), part)
    run_cli([*base, "build", "--select", "+fct_prompt_iteration"])
    [row] = _query(warehouse, "select count(*) as n, count(group_id) as g from stg_rollouts")
    assert (row["n"], row["g"]) == (16, 0)
    [cells] = _query(warehouse, "select count(*) as n from fct_prompt_iteration")
    assert cells["n"] == 8
