"""prime-rl traces with their token arrays (tests/data/prime_rl_tokens.py), landed.

Each trace of the policy lands as a rollout and, from its final branch, as a
row of ``rollout_tokens``: the nodes' arrays widened to the sequence and the
episode's policy span. The landed arrays are compared with the file's values,
and the rows landed with the rows written.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from obs.ingest.rollouts import ingest_rollouts

from tests.conftest import lake_query, run_cli
from tests.data.prime_rl_tokens import expected_arrays, write_tool_run

pytestmark = pytest.mark.integration

COLUMNS = (
    "token_ids",
    "loss_mask",
    "rollout_logprobs",
    "advantages",
    "reference_logprobs",
)


def test_traces_land_their_arrays_beside_their_rollouts(tmp_path: Path) -> None:
    run_dir = tmp_path / "outputs" / "prime-calc"
    written = write_tool_run(run_dir)
    lake = tmp_path / "lake"
    result = ingest_rollouts(run_dir, lake=lake, workers=1)
    traces = sum(len(records) for records in written.values())  # one trace an episode
    assert (result.rows_landed, result.companion_rows, result.rows_rejected) == (traces, traces, 0)
    rows = lake_query(
        lake,
        "rollout_tokens",
        "select iteration, source_line, source_file, policy_start, policy_end, "
        "sequence_tokens, trainer_logprobs, sample_loss_mask, " + ", ".join(COLUMNS) + " from t "
        "order by iteration, source_line",
    )
    assert [(r[0], r[1]) for r in rows] == [(s, n) for s in (0, 1) for n in (1, 2, 3)]
    for step, line, path, start, end, length, trainer, weight, *arrays in rows:
        assert Path(path).parent.name == ("all" if step == 0 else "effective")
        record = written[step][line - 1]
        assert (start, end) == (
            record["run"]["work"]["policy"]["start"],
            record["run"]["work"]["policy"]["end"],
        )
        expected = expected_arrays(record["traces"][0]["nodes"])
        assert dict(zip(COLUMNS, arrays, strict=True)) == expected
        assert length == len(expected["token_ids"]) == 28
        assert (trainer, weight) == (None, None)  # prime-rl logs neither
    # step 0 lands `all`, written before the advantages were assigned
    assert [r[0] for r in rows if r[11] is None] == [0, 0, 0]
    assert [r[0] for r in rows if r[12] is not None] == [1, 1, 1]


def test_the_arrays_leave_the_nodes_kept_in_extra(tmp_path: Path) -> None:
    run_dir = tmp_path / "outputs" / "prime-calc"
    write_tool_run(run_dir)
    lake = tmp_path / "lake"
    ingest_rollouts(run_dir, lake=lake, workers=1)
    extras = [json.loads(e) for (e,) in lake_query(lake, "rollouts", "select extra from t")]
    assert len(extras) == 6
    for extra in extras:
        assert [sorted(n) for n in extra["nodes"]][:2] == [
            ["message", "sampled", "timestamp"],
            ["message", "parent", "sampled", "timestamp"],
        ]
        assert all(
            not {"token_ids", "mask", "logprobs", "loss_weights", "is_content"} & set(n)
            for n in extra["nodes"]
        )
        # a call's policy is a request rewrite, not a version: it stays
        assert extra["calls"][0]["policy"] == {"code": "strip_reasoning", "paths": ["messages"]}


def test_stg_rollout_tokens_reads_the_policy_span(tmp_path: Path) -> None:
    run_dir = tmp_path / "outputs" / "prime-calc"
    write_tool_run(run_dir)
    lake, warehouse = tmp_path / "lake", tmp_path / "warehouse" / "obs.duckdb"
    base = ["--lake", str(lake), "--warehouse", str(warehouse)]
    run_cli([*base, "ingest", "rollouts", str(run_dir)])
    run_cli([*base, "build", "--select", "stg_rollout_tokens"])
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        rows = con.execute(
            "select run_id, iteration, policy_start, policy_end, "
            "len(reference_logprobs) from stg_rollout_tokens order by iteration, source_line"
        ).fetchall()
    finally:
        con.close()
    assert rows == [
        ("prime-calc", 0, 0, 0, None),
        ("prime-calc", 0, 0, 0, None),
        ("prime-calc", 0, 0, 0, None),
        ("prime-calc", 1, 1, 1, 28),
        ("prime-calc", 1, 0, 1, 28),
        ("prime-calc", 1, 0, 1, 28),
    ]
