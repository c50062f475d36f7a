"""prime-rl's episode traces: planning from the run folder, and what each record lands as.

The records are written the way prime-rl's file monitor writes verifiers'
episodes (tests/data/run_writers.py); every value below is worked out by hand
from tests/data/run_writers.toy_prime_run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from obs.ingest.errors import IngestError
from obs.ingest.keyed import ingest_metrics
from obs.ingest.rollout_plan import default_run_id, plan_rollouts
from obs.ingest.rollouts import ingest_rollouts
from obs.ingest.trackers import jsonl_metrics

from tests.conftest import lake_query, lake_rows, prompt_hash
from tests.data.run_writers import (
    ADD,
    ADD_PROMPT,
    ADD_TASK,
    SUM_PROMPT,
    SYSTEM,
    chat,
    episode,
    node,
    task,
    toy_prime_run,
    trace,
    traces_path,
    write_traces,
)


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return toy_prime_run(tmp_path / "outputs" / "prime-gsm8k")


# --------------------------------------------------------------------------- planning


@pytest.mark.parametrize("target", ["", "rollouts"])
def test_traces_are_found_from_the_run_folder_or_its_rollouts(run_dir: Path, target: str) -> None:
    path = run_dir / target if target else run_dir
    assert default_run_id(path) == "prime-gsm8k"
    plan = plan_rollouts(path, "prime-gsm8k")
    found = [(s.path.relative_to(run_dir).as_posix(), s.run_id, s.claimed_iteration) for s in plan]
    # all, not effective, for step 0's training episodes; eval into the :val run
    assert found == [
        ("rollouts/step_0/train/all/traces.jsonl", "prime-gsm8k", 0),
        ("rollouts/step_1/eval/all/traces.jsonl", "prime-gsm8k:val", 1),
        ("rollouts/step_1/train/all/traces.jsonl", "prime-gsm8k", 1),
    ]
    assert {s.format for s in plan} == {"traces"}


def test_one_traces_file_names_its_run_and_step(run_dir: Path) -> None:
    path = traces_path(run_dir, 1, "eval")
    assert default_run_id(path) == "prime-gsm8k"
    [source] = plan_rollouts(path, "prime-gsm8k")
    assert (source.run_id, source.claimed_iteration, source.format) == (
        "prime-gsm8k:val",
        1,
        "traces",
    )


def test_iterations_pick_steps_of_a_run_folder(run_dir: Path) -> None:
    plan = plan_rollouts(run_dir, "r", iterations=[1])
    assert [s.claimed_iteration for s in plan] == [1, 1]


def test_effective_lands_when_a_step_has_no_all_file(tmp_path: Path, lake: Path) -> None:
    run_dir = toy_prime_run(tmp_path / "run")
    traces_path(run_dir, 0).unlink()
    result = ingest_rollouts(run_dir, lake=lake, workers=1)
    step0 = lake_rows(lake, where="iteration = 0")
    assert len(step0) == 3 and result.rows_rejected == 1
    assert {json.loads(r["extra"])["subset"] for r in step0} == {"effective"}
    assert {json.loads(r["extra"])["subset"] for r in lake_rows(lake, where="iteration = 1")} == {
        "all"
    }


def test_reward_option_is_refused_for_traces(run_dir: Path, lake: Path) -> None:
    with pytest.raises(IngestError, match="prime-rl traces carry their own"):
        ingest_rollouts(run_dir, lake=lake, reward="gsm8k", workers=1)
    assert not lake.exists()


# --------------------------------------------------------------------------- the toy run


def test_every_trace_of_the_policy_lands_once(run_dir: Path, lake: Path) -> None:
    result = ingest_rollouts(run_dir, lake=lake, workers=1)
    assert result.run_ids == ["prime-gsm8k", "prime-gsm8k:val"]
    # 6 episodes at step 0 (not the 3 of effective again), 4 of 5 at step 1, 1 eval
    assert (result.rows_landed, result.rows_rejected) == (11, 1)
    rows = lake_rows(lake, where="run_id = 'prime-gsm8k'")
    assert [(r["iteration"], r["source_line"]) for r in rows] == [
        *((0, line) for line in range(1, 7)),
        *((1, line) for line in range(1, 5)),
    ]


def test_scores_are_the_weighted_totals_and_rewards_each_functions(
    run_dir: Path, lake: Path
) -> None:
    ingest_rollouts(run_dir, lake=lake, workers=1)
    rows = lake_rows(lake, where="run_id = 'prime-gsm8k'")
    # correct x 1 + format x 0.5
    assert [r["score"] for r in rows] == [1.5, 0.5, 1.0, 0.0, 0.0, 0.0, 1.5, 1.5, 1.5, 0.0]
    assert rows[1]["rewards"] == {"correct": 0.0, "format": 1.0}
    assert rows[2]["rewards"] == {"correct": 1.0, "format": 0.0}
    assert json.loads(rows[1]["extra"])["reward_weights"] == {"correct": 1.0, "format": 0.5}
    # the trace that timed out was never scored: no rewards, the trainer's 0
    assert rows[-1]["rewards"] is None
    assert "reward_weights" not in json.loads(rows[-1]["extra"])


def test_groups_prompts_and_steps(run_dir: Path, lake: Path) -> None:
    ingest_rollouts(run_dir, lake=lake, workers=1)
    rows = lake_rows(lake, where="run_id = 'prime-gsm8k'")
    assert [r["group_id"] for r in rows] == ["g-0a"] * 3 + ["g-0b"] * 3 + ["g-1a"] * 2 + [
        "g-1b"
    ] * 2
    assert [r["prompt"] for r in rows] == [ADD_PROMPT] * 3 + [SUM_PROMPT] * 3 + [ADD_PROMPT] * 2 + [
        SUM_PROMPT
    ] * 2
    assert rows[0]["prompt_hash"] == prompt_hash(f"[system]\n{SYSTEM}\n\n[user]\n{ADD}")
    assert [r["response"] for r in rows[:3]] == [
        "[assistant]\n4",
        "[assistant]\n5",
        "[assistant]\n4.",
    ]
    assert [r["sample_idx"] for r in rows] == [0, 1, 2, 0, 1, 2, 0, 1, 0, 1]
    # task.key "0" and "1" are whole numbers: the rollout's data_idx
    assert [r["data_idx"] for r in rows] == [0] * 3 + [1] * 3 + [0] * 2 + [1] * 2
    # the iteration is the folder's step, not the step the episode was dispatched at
    extra = json.loads(rows[7]["extra"])
    assert rows[7]["iteration"] == 1 and extra["episode"]["run"]["work"]["step"] == 0


def test_the_record_is_kept_in_extra(run_dir: Path, lake: Path) -> None:
    ingest_rollouts(run_dir, lake=lake, workers=1)
    first = lake_rows(lake, where="run_id = 'prime-gsm8k'")[0]
    extra = json.loads(first["extra"])
    assert extra["task"] == ADD_TASK and extra["task"]["key"] == "0"
    assert extra["subset"] == "all" and extra["trace_index"] == 0
    assert extra["episode"] == {
        "id": "e0",
        "env": {"id": "gsm8k", "name": "gsm8k"},
        "run": {
            "type": "train",
            "id": "run-7f3a",
            "name": "toy",
            "work": {"type": "train", "step": 0, "policy": {"start": 0, "end": 0}},
        },
        "ok": True,
        "errors": [],
    }
    assert [n["message"]["role"] for n in extra["nodes"]] == ["system", "user", "assistant"]
    # the per-token fields land in rollout_tokens, not in extra
    assert all(not {"token_ids", "mask", "logprobs", "is_content"} & set(n) for n in extra["nodes"])
    [tokens] = lake_query(
        lake,
        "rollout_tokens",
        "select rollout_logprobs, loss_mask, policy_start, policy_end from t "
        f"where run_id = 'prime-gsm8k' and source_line = {first['source_line']} "
        f"and source_file = '{first['source_file']}'",
    )
    assert tokens == ([0.0] * 6 + [-0.5] * 3, [False] * 6 + [True] * 3, 0, 0)
    assert extra["metrics"] == {"num_turns": 1.0} and extra["ok"] is True
    assert "rewards" not in extra and "group" not in extra["episode"]


def test_a_trace_that_failed_lands_with_its_errors(run_dir: Path, lake: Path) -> None:
    ingest_rollouts(run_dir, lake=lake, workers=1)
    failed = lake_rows(lake, where="run_id = 'prime-gsm8k'")[-1]
    extra = json.loads(failed["extra"])
    assert (failed["prompt"], failed["response"], failed["score"]) == (SUM_PROMPT, "", 0.0)
    assert extra["ok"] is False and extra["stop_condition"] == "error"
    assert extra["errors"] == [{"type": "SandboxTimeout", "message": "timed out after 30 s"}]
    assert extra["episode"]["ok"] is False


def test_an_episode_without_traces_is_rejected_with_its_error(run_dir: Path, lake: Path) -> None:
    ingest_rollouts(run_dir, lake=lake, workers=1)
    [reject] = lake_rows(lake, "_rejects")
    assert (reject["source_file"], reject["source_line"]) == (
        str(traces_path(run_dir, 1).resolve()),
        5,
    )
    assert reject["reason"] == (
        "episode has no trace to land (it failed before any message: "
        "EnvServerError: connection reset)"
    )


def test_eval_episodes_land_in_the_val_run(run_dir: Path, lake: Path) -> None:
    ingest_rollouts(run_dir, lake=lake, workers=1)
    [row] = lake_rows(lake, where="run_id = 'prime-gsm8k:val'")
    assert (row["iteration"], row["prompt"], row["score"], row["group_id"]) == (
        1,
        ADD_PROMPT,
        1.0,
        "g-e1",
    )
    assert json.loads(row["extra"])["episode"]["run"]["work"]["type"] == "eval"


def test_ingesting_the_run_twice_adds_nothing(run_dir: Path, lake: Path) -> None:
    first = ingest_rollouts(run_dir, lake=lake, workers=1)
    second = ingest_rollouts(run_dir, lake=lake, workers=1)
    assert first.rows_landed == 11 and second.rows_landed == 0
    assert {f.status for f in second.files} == {"unchanged"}


# --------------------------------------------------------------------------- record shapes


def _land_one(tmp_path: Path, lake: Path, record: dict, **options: object) -> list[dict]:
    write_traces(tmp_path / "run", 4, [record])
    ingest_rollouts(tmp_path / "run", lake=lake, workers=1, **options)  # type: ignore[arg-type]
    return lake_rows(lake)


def test_tools_and_turns_are_written_into_the_response(tmp_path: Path, lake: Path) -> None:
    nodes = [
        node(
            "user",
            [
                {"type": "text", "text": "Weather in Paris?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ],
        ),
        node(
            "assistant",
            parent=0,
            sampled=True,
            tool_calls=[{"id": "c1", "name": "weather", "arguments": '{"city": "Paris"}'}],
        ),
        node("tool", "18 C, cloudy", parent=1, tool_call_id="c1", name="weather"),
        node("assistant", "It is 18 C.", parent=2, sampled=True, reasoning_content="Use it."),
    ]
    the_task = task({"city": "Paris"}, "paris-weather")
    record = episode(
        [trace(nodes, {"judge": (0.5, 2.0)}, the_task=the_task)],
        the_task=the_task,
        group="g",
        step=4,
    )
    [row] = _land_one(tmp_path, lake, record)
    assert row["prompt"] == "[user]\nWeather in Paris?\n[image]"
    assert row["response"] == (
        '[assistant]\n[tool_call weather({"city": "Paris"})]\n\n'
        "[tool weather]\n18 C, cloudy\n\n[assistant]\nIt is 18 C."
    )
    assert (row["score"], row["rewards"], row["data_idx"]) == (1.0, {"judge": 0.5}, None)
    assert json.loads(row["extra"])["task"]["key"] == "paris-weather"


def test_the_final_branch_is_the_path_to_the_last_leaf(tmp_path: Path, lake: Path) -> None:
    """Two branches after one prompt (a compaction, say): the last leaf's path is the rollout."""
    nodes = [
        node("user", "Q"),
        node("assistant", "first try", parent=0, sampled=True),
        node("user", "summary of the first try"),
        node("assistant", "second try", parent=2, sampled=True),
    ]
    the_task = task({"q": "Q"}, None)
    record = episode(
        [trace(nodes, {"r": (1.0, 1.0)}, the_task=the_task)], the_task=the_task, group=None, step=4
    )
    [row] = _land_one(tmp_path, lake, record)
    assert (row["prompt"], row["response"]) == (
        "[user]\nsummary of the first try",
        "[assistant]\nsecond try",
    )
    assert row["group_id"] is None and row["data_idx"] is None


def test_traces_of_agents_not_trained_ride_with_the_first_rollout(
    tmp_path: Path, lake: Path
) -> None:
    the_task = task({"q": ADD}, "3")
    solvers = [
        trace(
            chat(None, ADD, answer),
            {"judged": (score, 1.0)},
            the_task=the_task,
            trace_id=f"s{i}",
            agent="solver",
        )
        for i, (answer, score) in enumerate([("4", 1.0), ("5", 0.0)])
    ]
    judge = trace(
        chat(None, "Judge: 4 vs 5", "4 wins"),
        {},
        the_task=the_task,
        trace_id="j",
        agent="judge",
        trainable=False,
    )
    record = episode([solvers[0], judge, solvers[1]], the_task=the_task, group="g", step=4)
    rows = _land_one(tmp_path, lake, record)
    assert [(r["response"], r["score"], r["sample_idx"]) for r in rows] == [
        ("[assistant]\n4", 1.0, 0),
        ("[assistant]\n5", 0.0, 1),
    ]
    extras = [json.loads(r["extra"]) for r in rows]
    assert [e["trace_index"] for e in extras] == [0, 2]
    assert [t["id"] for t in extras[0]["untrained_traces"]] == ["j"]
    assert "untrained_traces" not in extras[1]
    assert {r["prompt"] for r in rows} == {f"[user]\n{ADD}"}


def test_a_plain_traces_file_takes_the_dispatch_step_or_the_option(
    tmp_path: Path, lake: Path
) -> None:
    """verifiers' own eval writes traces.jsonl with no step folder around it."""
    the_task = task({"q": ADD}, "3")
    stepped = episode(
        [trace(chat(None, ADD, "4"), {}, the_task=the_task)], the_task=the_task, group="g", step=9
    )
    plain = tmp_path / "eval-run" / "traces.jsonl"
    plain.parent.mkdir()
    plain.write_bytes(json.dumps(stepped).encode() + b"\n")
    assert default_run_id(plain) == "eval-run"
    result = ingest_rollouts(plain, lake=lake, workers=1)
    assert [r["iteration"] for r in lake_rows(lake)] == [9] and result.run_ids == ["eval-run"]
    unstepped = {k: v for k, v in stepped.items() if k != "run"}
    other = tmp_path / "other" / "traces.jsonl"
    other.parent.mkdir()
    other.write_bytes(json.dumps(unstepped).encode() + b"\n")
    waiting = ingest_rollouts(other, lake=lake, workers=1)
    assert waiting.rows_landed == 0 and waiting.files[0].status == "retry"
    assert "--iteration N" in waiting.files[0].note
    ingest_rollouts(other, lake=lake, workers=1, iteration=2)
    assert [r["iteration"] for r in lake_rows(lake, where="run_id = 'other'")] == [2]


def test_metrics_jsonl_beside_the_traces_is_a_run_history(run_dir: Path, lake: Path) -> None:
    result = ingest_metrics(run_dir, lake=lake)
    assert result.runs == ["prime-gsm8k"] and result.sources == 1  # no traces file read
    points = lake_query(
        lake, "metrics", "select step, key, value, wall_time, source from t order by step, key"
    )
    assert points == [
        (0, "optim/grad_norm", 0.5, 1754000010.0, "jsonl"),
        # logged by the trainer and the orchestrator at one step: the later line's value
        (0, "time/step", 11.0, 1754000011.0, "jsonl"),
        (0, "train/agg/all/agent/reward/mean", 0.5, 1754000011.0, "jsonl"),
        (1, "optim/grad_norm", 0.25, 1754000020.0, "jsonl"),
        (1, "time/step", 9.5, 1754000021.0, "jsonl"),
        (1, "train/agg/all/agent/reward/mean", 0.75, 1754000021.0, "jsonl"),
    ]


def test_metric_log_search_never_opens_episode_files(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step's episode file can be gigabytes; the search for metric logs skips it by name."""
    opened: list[str] = []
    real = jsonl_metrics._is_log

    def spy(path: Path) -> bool:
        opened.append(path.name)
        return real(path)

    monkeypatch.setattr(jsonl_metrics, "_is_log", spy)
    assert [path.name for _, path in jsonl_metrics.find(run_dir)] == ["metrics.jsonl"]
    assert opened == ["metrics.jsonl"]


def test_batches_end_at_a_byte_budget_and_land_the_same_rows(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trace lines can be megabytes each: a batch ends at BATCH_BYTES of source
    lines as well as at BATCH_ROWS rows. With a budget smaller than one line
    every record is its own batch; what lands is the same, row for row."""
    from obs.ingest import appended

    whole = tmp_path / "whole-lake"
    ingest_rollouts(run_dir, lake=whole, workers=1)
    seen: list[int] = []
    records = appended._records

    def counted(job: appended._Job):  # type: ignore[no-untyped-def]
        for batch in records(job):
            seen.append(len(batch))
            yield batch

    monkeypatch.setattr(appended, "BATCH_BYTES", 1)
    monkeypatch.setattr(appended, "_records", counted)
    split = tmp_path / "split-lake"
    result = ingest_rollouts(run_dir, lake=split, workers=1)
    assert (result.rows_landed, result.rows_rejected) == (11, 1)
    assert seen and set(seen) == {1}, seen
    columns = "run_id, iteration, source_line, prompt_hash, response, score"
    query = f"select {columns} from t order by all"
    landed = lake_query(split, "rollouts", query)
    assert len(landed) == 11
    assert landed == lake_query(whole, "rollouts", query)
