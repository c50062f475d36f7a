"""Faults of the two newer rollout sources: prime-rl's episode traces, verl's V1 dumps.

A traces file grows one episode at a time while the run trains (the file
monitor appends each as it arrives), and may end in a line still being
written; a damaged line costs its own episode and nothing else; the
effective file of a step whose all file landed never lands beside it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from obs.ingest.rollouts import ingest_rollouts

from tests.conftest import lake_query, lake_rows
from tests.data.run_writers import (
    ADD,
    ADD_TASK,
    chat,
    episode,
    node,
    record_line,
    toy_prime_run,
    trace,
    traces_path,
    verl_group,
    verl_uid,
    write_traces,
    write_verl_dump,
)
from tests.faults.conftest import assert_lake_sound


def _episode(number: int, score: float = 1.0, **trace_fields: object) -> dict:
    """Episode ``number`` of the 2+2 task (group by fours), one trace scored ``score``."""
    one = trace(
        chat(None, ADD, str(number)),
        {"correct": (score, 1.0)},
        the_task=ADD_TASK,
        trace_id=f"t{number}",
    )
    one.update(trace_fields)
    return episode(
        [one], the_task=ADD_TASK, group=f"g{number // 4}", step=3, episode_id=f"e{number}"
    )


# --------------------------------------------------------------------------- growing files


def test_traces_file_being_written_lands_complete_lines_then_the_rest(
    tmp_path: Path, lake: Path
) -> None:
    run_dir = tmp_path / "prime-run"
    lines = [record_line(_episode(n)) for n in range(5)]
    path = traces_path(run_dir, 3)
    path.parent.mkdir(parents=True)
    half = len(lines[2]) // 2
    path.write_bytes(lines[0] + lines[1] + lines[2][:half])
    first = ingest_rollouts(run_dir, lake=lake, workers=1)
    assert (first.rows_landed, first.rows_rejected) == (2, 0)
    assert [r["response"] for r in lake_rows(lake)] == ["[assistant]\n0", "[assistant]\n1"]
    with path.open("ab") as handle:  # the monitor finishes the line and appends two more
        handle.write(lines[2][half:] + lines[3] + lines[4])
    second = ingest_rollouts(run_dir, lake=lake, workers=1)
    assert (second.rows_landed, second.files[0].status) == (3, "appended")
    assert_lake_sound(lake, 5)
    rows = lake_rows(lake)
    assert [r["source_line"] for r in rows] == [1, 2, 3, 4, 5]
    assert [r["sample_idx"] for r in rows] == [0, 1, 2, 3, 4]
    assert [r["group_id"] for r in rows] == ["g0"] * 4 + ["g1"]


def test_verl_v1_dump_being_written_keeps_its_groups(tmp_path: Path, lake: Path) -> None:
    dumps = tmp_path / "rollout_data"
    rows = [
        {"input": f"q{p}", "output": f"a{s}", "score": float(s % 2), "uid": verl_uid(p, s, 0, 7)}
        for p in range(2)
        for s in range(3)
    ]
    path = write_verl_dump(dumps, 7, rows)
    whole = path.read_bytes()
    cut = whole.index(b"\n", len(whole) // 2) + 5  # mid-line
    path.write_bytes(whole[:cut])
    first = ingest_rollouts(dumps, lake=lake, run_id="r", workers=1)
    path.write_bytes(whole)
    second = ingest_rollouts(dumps, lake=lake, run_id="r", workers=1)
    assert first.rows_landed + second.rows_landed == 6 and second.files[0].status == "appended"
    assert_lake_sound(lake, 6)
    landed = lake_rows(lake)
    assert [r["group_id"] for r in landed] == [verl_group(0, 7)] * 3 + [verl_group(1, 7)] * 3
    assert [r["sample_idx"] for r in landed] == [0, 1, 2, 0, 1, 2]


@pytest.mark.integration
def test_traces_growing_while_ingested_land_every_episode_once(tmp_path: Path) -> None:
    """A writer appends episodes (and leaves half-written lines) while ingests run in a loop."""
    run_dir, lake = tmp_path / "prime-run", tmp_path / "lake"
    total = 400
    source = tmp_path / "episodes.bin"
    source.write_bytes(b"".join(record_line(_episode(n, n % 3 / 2)) for n in range(total)))
    path = traces_path(run_dir, 3)
    path.parent.mkdir(parents=True)
    path.touch()
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import time
                lines = open({str(source)!r}, "rb").read().splitlines(keepends=True)
                with open({str(path)!r}, "ab") as out:
                    for i, line in enumerate(lines):
                        half = len(line) // 2
                        out.write(line[:half]); out.flush()
                        out.write(line[half:])
                        if i % 20 == 0:
                            out.flush(); time.sleep(0.01)
                """
            ),
        ]
    )
    rounds = 0
    while writer.poll() is None:
        ingest_rollouts(run_dir, lake=lake, workers=1)
        rounds += 1
    assert writer.returncode == 0
    ingest_rollouts(run_dir, lake=lake, workers=1)
    assert rounds >= 2
    assert_lake_sound(lake, total)
    lines = lake_query(lake, "rollouts", "select source_line from t order by 1")
    assert [n for (n,) in lines] == list(range(1, total + 1))


# --------------------------------------------------------------------------- damaged lines


def _odd_trace(**fields: object) -> bytes:
    return record_line(_episode(9, **fields))


ODD = {
    "cut-short": (record_line(_episode(9))[:150] + b"\n", "malformed JSON"),
    "nan-reward": (
        _odd_trace().replace(b'"score":1.0', b'"score":NaN'),
        "field 'traces[0].rewards.correct.score' is not a finite number",
    ),
    "text-reward": (
        _odd_trace().replace(b'"score":1.0', b'"score":"high"'),
        "field 'traces[0].rewards.correct.score' must be a number, got text 'high'",
    ),
    "weight-not-a-number": (
        _odd_trace().replace(b'"weight":1.0', b'"weight":[1]'),
        "field 'traces[0].rewards.correct.weight' must be a number, got list",
    ),
    "total-out-of-range": (
        _odd_trace().replace(b'"score":1.0,"weight":1.0', b'"score":1e100,"weight":1e100'),
        "field 'traces[0] weighted reward total' is out of range",
    ),
    "traces-not-a-list": (
        record_line({**_episode(9), "traces": {"0": {}}}),
        "field 'traces' must be a list of traces, got object",
    ),
    "failed-before-any-message": (
        _odd_trace(nodes=[], ok=False, errors=[{"type": "SandboxError", "message": "no box"}]),
        "traces[0] has no messages (it failed: SandboxError: no box)",
    ),
    "parent-out-of-range": (
        _odd_trace(nodes=[node("user", "q"), node("assistant", "a", parent=7, sampled=True)]),
        "traces[0].nodes[1].parent must be the index of a node, got 7",
    ),
    "parents-in-a-cycle": (
        _odd_trace(
            nodes=[node("user", "q", parent=1), node("assistant", "a", parent=0, sampled=True)]
        ),
        "parents form a cycle",
    ),
    "content-a-number": (
        _odd_trace(nodes=[node("user", 42), node("assistant", "a", parent=0, sampled=True)]),
        "a message's content must be text or a list of parts, got number",
    ),
    "group-id-a-list": (
        record_line({**_episode(9), "group": {"id": ["g"]}}),
        "field 'group.id' must be text, got list",
    ),
    "only-a-judge": (
        _odd_trace(agent={"config": {}, "name": "judge", "trainable": False}),
        "none of the episode's 1 traces is the policy's",
    ),
    "lone-surrogate": (
        _odd_trace().replace(b'"content":"What', b'"content":"\\ud800What'),
        "lone surrogate",
    ),
    "not-an-object": (b'["an", "array"]\n', "not a JSON object (list)"),
}


@pytest.mark.parametrize("name", sorted(ODD))
def test_odd_episode_costs_exactly_its_line(tmp_path: Path, lake: Path, name: str) -> None:
    odd, reason = ODD[name]
    run_dir = tmp_path / "prime-run"
    path = traces_path(run_dir, 3)
    path.parent.mkdir(parents=True)
    path.write_bytes(record_line(_episode(0)) + odd + record_line(_episode(2)))
    # another step's file lands whatever this one holds
    write_traces(run_dir, 4, [_episode(3)])
    result = ingest_rollouts(run_dir, lake=lake, workers=1)
    assert (result.rows_landed, result.rows_rejected) == (3, 1)
    assert [r["response"] for r in lake_rows(lake)] == [
        "[assistant]\n0",
        "[assistant]\n2",
        "[assistant]\n3",
    ]
    [reject] = lake_rows(lake, "_rejects")
    assert (reject["source_file"], reject["source_line"]) == (str(path.resolve()), 2)
    assert reason in reject["reason"], reject["reason"]
    assert reject["raw"]


# --------------------------------------------------------------------------- all and effective


def test_effective_file_of_a_landed_step_never_lands_beside_it(tmp_path: Path, lake: Path) -> None:
    run_dir = toy_prime_run(tmp_path / "prime-run")
    ingest_rollouts(run_dir, lake=lake, workers=1)
    before = lake_rows(lake)
    write_traces(run_dir, 1, [_episode(1)], subset="effective")  # written at the step's end
    again = ingest_rollouts(run_dir, lake=lake, workers=1)
    assert again.rows_landed == 0 and lake_rows(lake) == before


def test_all_file_after_its_effective_landed_is_refused_not_added(
    tmp_path: Path, lake: Path
) -> None:
    """Only when the all file was missing (moved away, say) and comes back later."""
    run_dir = tmp_path / "prime-run"
    all_file = write_traces(run_dir, 3, [_episode(n) for n in range(3)])
    # the effective records carry the advantages the trainer assigned before shipping
    trained = [_episode(n) for n in range(2)]
    for record in trained:
        record["traces"][0]["nodes"][-1]["advantages"] = [0.5, 0.5, 0.5]
    write_traces(run_dir, 3, trained, subset="effective")
    aside = tmp_path / "aside.jsonl"
    all_file.rename(aside)
    first = ingest_rollouts(run_dir, lake=lake, workers=1)
    assert first.rows_landed == 2
    aside.rename(all_file)
    second = ingest_rollouts(run_dir, lake=lake, workers=1)
    [file] = second.files
    assert (second.rows_landed, file.status) == (0, "refused")
    assert "iteration 3 of run prime-run already landed" in file.note
    assert_lake_sound(lake, 2)
    assert {json.loads(r["extra"])["subset"] for r in lake_rows(lake)} == {"effective"}
