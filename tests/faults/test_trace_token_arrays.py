"""prime-rl's token arrays under bad input and growing files: rows landed = rows written.

Every trace of the policy in a traces.jsonl line is one rollout (``rollouts``)
and, when its final branch's arrays align, one row of ``rollout_tokens`` keyed
as the rollout is (tests/data/prime_rl_tokens.py writes the files as prime-rl
does). A trace whose arrays cannot be aligned lands its rollout and rejects its
arrays, with the reason, in ``_rejects`` (table ``rollout_tokens``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from obs.ingest.rollouts import ingest_rollouts

from tests.conftest import lake_query, run_cli
from tests.data.prime_rl_tokens import write_tool_run
from tests.data.run_writers import record_line, traces_path
from tests.faults.conftest import assert_lake_sound
from tests.faults.test_token_arrays import _tokens_match_rollouts


def _rewrite(path: Path, records: list[dict]) -> None:
    path.write_bytes(b"".join(record_line(r) for r in records))


def test_misaligned_node_arrays_are_rejected_and_the_rollout_lands(tmp_path: Path) -> None:
    run_dir = tmp_path / "outputs" / "prime-bad"
    records = write_tool_run(run_dir)[1]
    path = traces_path(run_dir, 1, subset="effective")
    nodes = [r["traces"][0]["nodes"] for r in records]
    nodes[0][2]["mask"].append(True)  # one mask flag more than the node's tokens
    nodes[2][4]["logprobs"].pop()  # one logprob fewer than the node's sampled tokens
    _rewrite(path, records)
    lake = tmp_path / "lake"
    result = run_cli(["--lake", str(lake), "ingest", "rollouts", str(path)])
    assert "2 rejected" in result.output
    assert "rejected 2: token arrays of unequal lengths" in result.output
    [warning] = [x for x in result.output.splitlines() if x.startswith("warning:")]
    assert warning.startswith(f"warning: {path}: 2 of its rows landed without a rollout_tokens row")
    assert "(line 1, 3; first reason: token arrays of unequal lengths" in warning
    assert "ingest the file under a new --run" in warning
    assert_lake_sound(lake, 3)  # every rollout landed
    _tokens_match_rollouts(lake, 1)
    rejects = lake_query(
        lake, "_rejects", "select table_name, source_file, source_line, reason from t order by 3"
    )
    assert [(r[0], r[1], r[2]) for r in rejects] == [
        ("rollout_tokens", str(path.resolve()), 1),
        ("rollout_tokens", str(path.resolve()), 3),
    ]
    assert rejects[0][3].startswith(
        "token arrays of unequal lengths: traces[0].nodes[2] token_ids 7, mask 8"
    )
    assert rejects[1][3].startswith(
        "token arrays of unequal lengths: traces[0].nodes[4] logprobs 1, sampled tokens "
        "(mask true) 2"
    )
    # ingested again: nothing new, nothing counted twice
    again = ingest_rollouts(path, lake=lake, workers=1)
    assert (again.rows_landed, again.companion_rows) == (0, 0)
    _tokens_match_rollouts(lake, 1)


@pytest.mark.parametrize(
    ("node", "field", "value", "reason"),
    [
        (2, "token_ids", [1, 2, "x", 4, 5, 6, 7], "must be a list of numbers"),
        (2, "token_ids", [1, 2, 3.5, 4, 5, 6, 7], "must hold whole numbers"),
        (2, "mask", [0, 0, 0, 1, 1, 1, 1], "must be a list of true/false"),
        (4, "advantages", [0.5, float("nan")], "non-finite"),
        (4, "reference_logprobs", "none", "must be a list of numbers"),
    ],
)
def test_bad_node_values_reject_the_arrays_only(
    tmp_path: Path, node: int, field: str, value: object, reason: str
) -> None:
    run_dir = tmp_path / "outputs" / "prime-bad"
    records = write_tool_run(run_dir)[1]
    path = traces_path(run_dir, 1, subset="effective")
    records[1]["traces"][0]["nodes"][node][field] = value
    lines = [json.dumps(r, separators=(",", ":")) + "\n" for r in records]  # NaN as NaN
    path.write_text("".join(lines))
    lake = tmp_path / "lake"
    ingest_rollouts(path, lake=lake, workers=1)
    assert_lake_sound(lake, 3)
    _tokens_match_rollouts(lake, 2)
    [(table, line, text)] = lake_query(
        lake, "_rejects", "select table_name, source_line, reason from t"
    )
    assert (table, line) == ("rollout_tokens", 2) and reason in text
    assert f"traces[0].nodes[{node}].{field}" in text


def test_a_bad_policy_span_rejects_the_arrays_only(tmp_path: Path) -> None:
    run_dir = tmp_path / "outputs" / "prime-bad"
    records = write_tool_run(run_dir)[1]
    path = traces_path(run_dir, 1, subset="effective")
    records[0]["run"]["work"]["policy"] = {"start": 3, "end": 1}
    _rewrite(path, records)
    lake = tmp_path / "lake"
    ingest_rollouts(path, lake=lake, workers=1)
    assert_lake_sound(lake, 3)
    _tokens_match_rollouts(lake, 2)
    [(line, text)] = lake_query(lake, "_rejects", "select source_line, reason from t")
    assert line == 1 and "'run.work.policy': end (1) is before start (3)" in text


def test_a_growing_traces_file_lands_its_tokens_with_its_rollouts(tmp_path: Path) -> None:
    """The file monitor appends an episode at a time: the complete lines land, the
    partial one lands later, tokens numbered on with their rollouts."""
    run_dir = tmp_path / "outputs" / "prime-grow"
    write_tool_run(run_dir)
    path = traces_path(run_dir, 0)  # the `all` file
    text = path.read_bytes()
    cut = [i for i, c in enumerate(text) if c == ord("\n")][1] + 40  # 2 lines and a partial one
    path.write_bytes(text[:cut])
    lake = tmp_path / "lake"
    first = ingest_rollouts(path, lake=lake, workers=1)
    assert (first.rows_landed, first.companion_rows) == (2, 2)
    path.write_bytes(text)
    second = ingest_rollouts(path, lake=lake, workers=1)
    assert (second.rows_landed, second.companion_rows) == (1, 1)
    assert_lake_sound(lake, 3)
    _tokens_match_rollouts(lake, 3)
    numbers = lake_query(lake, "rollout_tokens", "select sample_idx from t order by source_line")
    assert [n for (n,) in numbers] == [0, 1, 0]  # two of the first task, one of the second
