"""Zero-variance counts follow the trainer's GRPO groups where the rollouts name them.

A verl V1 run at step 1: "Q: 6*7?" is two groups (two uids' uuids, as a
multi-output session writes them): group A scores 1, 1 (zero-variance,
solved) and group B 1, 0 (signal); "Q: 2+3?" is one group scoring 0, 0
(zero-variance, failed). By hand: 2 prompts, 3 groups, 2 zero-variance
(1 solved, 1 failed), share 2/3; at the prompt grain 6*7 has signal
(scores 1, 1, 1, 0) and 2+3 is zero-variance.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from obs.core.identity import prompt_hash

from tests.conftest import run_cli
from tests.data.run_writers import verl_uid, write_verl_dump

pytestmark = pytest.mark.integration


def _rows(warehouse: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_zero_variance_counts_follow_trainer_groups(tmp_path: Path) -> None:
    dumps = tmp_path / "verl-groups"
    product, total = ("Q: 6*7?", "42"), ("Q: 2+3?", "5")
    groups = [(product, 0, (1.0, 1.0)), (product, 5, (1.0, 0.0)), (total, 1, (0.0, 0.0))]
    rows = [
        {
            "input": question,
            "output": f"answer {session}",
            "gts": answer,
            "score": score,
            "uid": verl_uid(uuid, session, 0, 1),
        }
        for (question, answer), uuid, scores in groups
        for session, score in enumerate(scores)
    ]
    write_verl_dump(dumps, 1, rows)
    lake, warehouse = tmp_path / "lake", tmp_path / "warehouse" / "obs.duckdb"
    base = ["--lake", lake, "--warehouse", warehouse]
    run_cli([*base, "ingest", "rollouts", dumps, "--run", "v", "-q"])
    run_cli([*base, "build"])

    assert _rows(
        warehouse,
        "select n_prompts, n_groups, n_zero_variance, n_zero_variance_solved, "
        "n_zero_variance_failed, zero_variance_share from fct_iteration_summary",
    ) == [(2, 3, 2, 1, 1, 2 / 3)]
    prompts = _rows(
        warehouse,
        "select prompt_hash, n_samples, is_zero_variance, n_groups, n_zero_variance_groups, "
        "n_zero_variance_groups_solved, n_zero_variance_groups_failed "
        "from fct_prompt_iteration order by 1",
    )
    assert sorted(prompts) == sorted(
        [
            (prompt_hash("Q: 6*7?"), 4, False, 2, 1, 1, 0),
            (prompt_hash("Q: 2+3?"), 2, True, 1, 1, 0, 1),
        ]
    )
