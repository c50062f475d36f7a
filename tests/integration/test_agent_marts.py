"""Agentic-run marts against values worked out by hand.

Runs are real files landed with `obs ingest` and built with `obs build`:

* ``hand``: two iterations of rollouts written here, whose group summary,
  turn advantages and turn summary are worked out below by hand (a group
  named by group_id with turn rewards, a zero-variance group with given
  advantages and a turn count taken from messages, a one-rollout group,
  each exit reason once);
* ``hand`` also has the trainer's eval file (its example numbers), a second
  eval step under the source's other spellings, a baseline and a damaged
  file that must be named while the others land;
* ``gen``: the synthetic agent run's rollouts (known zero-variance groups
  and early exits per step) and eval logs (planted trends);
* ``console``: the same run's console log only (advantage tables, group
  summaries and eval blocks behind logging prefixes);
* ``tracked``: a JSON-lines metric log with the trainer's W&B keys;
* ``plain``: a single-turn run, which must stay out of the agent marts.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import duckdb
import pytest
from obs.demo.agent import AgentSpec, write_agent_run

from tests.conftest import prompt_hash, run_cli

pytestmark = pytest.mark.integration

PROMPT_A = "Find the budget meeting date."
PROMPT_B = "Who sent the offsite invite?"
PROMPT_C = "When is the launch review?"
SPEC = AgentSpec(steps=10, queries=6, rollouts=4, eval_every=2, zero_variance_groups=1)


def _assistants(turns: int) -> list[dict[str, str]]:
    messages = [{"role": "user", "content": "q"}]
    for turn in range(turns):
        messages += [{"role": "assistant", "content": f"a{turn}"}, {"role": "tool", "content": "r"}]
    return messages[:-1]


# fmt: off
HAND_ROLLOUTS = {
    1: [
        # group q1 (named): turn rewards only
        {"input": PROMPT_A, "output": "the 4th", "score": 1.0, "group_id": "q1",
         "turn_rewards": [0.3, 0.3, 1.0], "num_turns": 3, "max_turns": 5,
         "exit_reason": "answered", "total_tokens": 600, "trainable_tokens": 200},
        {"input": PROMPT_A, "output": "the 9th", "score": -0.5, "group_id": "q1",
         "turn_rewards": [0.0, -0.5], "num_turns": 2, "max_turns": 5,
         "exit_reason": "answered", "total_tokens": 400, "trainable_tokens": 100},
        {"input": PROMPT_A, "output": "", "score": -0.5, "group_id": "q1",
         "turn_rewards": [0.3, 0.0, 0.0, 0.0, -0.5], "num_turns": 5, "max_turns": 5,
         "exit_reason": "Exhausted ", "total_tokens": 1000, "trainable_tokens": 250},
        # the prompt's group (no group_id): zero variance, given advantages
        {"input": PROMPT_B, "output": "I don't know", "score": 0.0,
         "turn_advantages": [0.5, -0.25], "num_turns": 2, "max_turns": 5,
         "exit_reason": "idk"},
        {"input": PROMPT_B, "output": "error", "score": 0.0, "turn_advantages": [-1.0],
         "messages": _assistants(1), "max_turns": 5, "exit_reason": "error"},
        # a one-rollout group: no max_turns, no exit reason
        {"input": PROMPT_C, "output": "friday", "score": 0.5, "group_id": 3,
         "turn_rewards": [0.5]},
    ],
    2: [
        {"input": PROMPT_A, "output": "the 4th", "score": 1.0, "num_turns": 2,
         "max_turns": 2, "exit_reason": "answered", "turn_rewards": [0.3, 1.0]},
        {"input": PROMPT_A, "output": "the 4th", "score": 1.0, "num_turns": 2,
         "max_turns": 2, "exit_reason": "answered", "turn_rewards": [0.3, 1.0]},
    ],
}

# The trainer's example eval file (its 21 keys and numbers).
EXAMPLE_EVAL = {
    "step": 10, "accuracy": 0.85, "correct_answers": 85, "total_samples": 100,
    "attempted_answer": 95, "avg_reward": 0.723, "median_reward": 0.850, "std_reward": 0.312,
    "min_reward": -1.200, "max_reward": 1.500, "found_correct_email": 87,
    "read_correct_email": 82, "total_repeated_searches": 15, "total_unique_searches": 230,
    "total_searches": 245, "avg_turns_correct": 3.45, "avg_turns_idk": 4.20,
    "avg_search_attempts": 2.45, "num_idk": 5, "eval_time": 234.5, "beat_rate": 0.78,
}
# The next eval, in the trainer's source-field spellings, with a rubric of its own.
NEXT_EVAL = {
    "step": 20, "accuracy": 0.87, "correct_answers": 87, "total_samples": 100,
    "attempted_answer": 96, "ever_found_right_email": 90, "ever_read_right_email": 85,
    "num_repeated_searches": 10, "total_unique_searches": 240, "total_searches": 250,
    "num_idk": 4, "avg_reward": 0.8, "my_rubric_score": 0.4,
}
BASELINE = {"step": -1, "is_baseline": True, "accuracy": 0.6, "correct_answers": 60,
            "total_samples": 100, "control_reward_map": {"q1": [0.1, 0.5]}}
# fmt: on


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("agent")
    lake, warehouse = root / "lake", root / "wh.duckdb"
    base = ["--lake", lake, "--warehouse", warehouse]
    outputs: dict[str, str] = {}

    for iteration, rows in HAND_ROLLOUTS.items():
        _write_jsonl(root / "hand" / "rollouts" / f"{iteration}.jsonl", rows)
    bad = [
        {"input": "p", "output": "o", "score": 1.0, "turn_rewards": [1.0, "x"]},
        {"input": "p", "output": "o", "score": 1.0, "num_turns": -1},
        {"input": "p", "output": "o", "score": 1.0, "exit_reason": 5},
        {"input": "p", "output": "o", "score": 1.0, "turn_advantages": [0.1, None]},
    ]
    _write_jsonl(root / "hand" / "rollouts" / "3.jsonl", bad)
    outputs["rollouts"] = run_cli(
        [*base, "ingest", "rollouts", root / "hand" / "rollouts", "--run", "hand"]
    ).output
    evals = root / "hand" / "eval_logs"
    evals.mkdir()
    (evals / "eval_step_0010.json").write_text(json.dumps(EXAMPLE_EVAL, indent=2))
    (evals / "eval_step_0020.json").write_text("\ufeff" + json.dumps(NEXT_EVAL))
    (evals / "baseline_eval_0.json").write_text(json.dumps(BASELINE))
    (evals / "eval_step_0005.json").write_text('{"step": 5, "accuracy": 0.8,, }')
    result = run_cli([*base, "ingest", "eval-logs", evals, "--run", "hand"])
    outputs["eval-logs"] = result.output + result.stderr

    gen = write_agent_run(root / "gen", SPEC)
    run_cli([*base, "ingest", "rollouts", root / "gen" / "rollouts", "--run", "gen"])
    run_cli([*base, "ingest", "eval-logs", root / "gen" / "eval_logs", "--run", "gen"])
    result = run_cli(
        [*base, "ingest", "trainer-log", root / "gen" / "train.log", "--run", "console"]
    )
    outputs["trainer-log"] = result.output + result.stderr

    _write_jsonl(
        root / "tracked" / "metrics.jsonl",
        [
            {"step": 1, "train/groups_kept": 6, "train/groups_filtered": 2,
             "train/num_early_exit": 18, "train/rollout_time": 45.3,
             "train/training_time": 2.1, "train/total_tokens": 45678,
             "train/trainable_tokens": 12345},
            {"step": 10, "eval/accuracy": 0.85, "eval/attempted_answer": 0.95,
             "eval/found_email": 0.87, "eval/read_email": 0.82, "eval/total_searches": 245,
             "eval/total_unique_searches": 230, "eval/num_idk": 5},
        ],
    )  # fmt: skip
    run_cli([*base, "ingest", "metrics", root / "tracked" / "metrics.jsonl", "--run", "tracked"])
    _write_jsonl(
        root / "plain" / "0.jsonl",
        [{"input": "p", "output": "o", "score": s, "extra_field": 1} for s in (0, 1)],
    )
    run_cli([*base, "ingest", "rollouts", root / "plain", "--run", "plain"])
    # a trainer that logs tokens and times, as many do, is no agent for all that
    _write_jsonl(
        root / "plain-metrics" / "metrics.jsonl",
        [{"step": 0, "train/total_tokens": 100, "train/rollout_time": 1.0}],
    )
    run_cli(
        [*base, "ingest", "metrics", root / "plain-metrics" / "metrics.jsonl", "--run", "plain"]
    )
    run_cli([*base, "build"])
    return {"warehouse": warehouse, "lake": lake, "gen": gen, "root": root, "out": outputs}


def _rows(built: dict, sql: str) -> list[dict]:
    with duckdb.connect(str(built["warehouse"]), read_only=True) as con:
        cursor = con.execute(sql)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


# --------------------------------------------------------------------------- ingest


def test_bad_agent_fields_are_rejected_with_reasons_while_good_rows_land(built: dict) -> None:
    out = built["out"]["rollouts"]
    assert "8 rows landed, 4 rejected" in out, out
    rejects = duckdb.sql(
        f"select source_line, reason from read_parquet('{built['lake']}/_rejects/*/*/*.parquet', "
        "hive_partitioning = true) where run_id = 'hand' and table_name = 'rollouts' order by 1"
    ).fetchall()
    assert [line for line, _ in rejects] == [1, 2, 3, 4]
    reasons = [reason for _, reason in rejects]
    assert "turn_rewards[1]" in reasons[0] and "must be a number" in reasons[0]
    assert "'num_turns' must not be negative" in reasons[1]
    assert "'exit_reason' must be text" in reasons[2]
    assert "null at turn 2" in reasons[3]


def test_a_damaged_eval_file_is_named_while_the_others_land(built: dict) -> None:
    out = built["out"]["eval-logs"]
    assert "3 eval steps" in out, out
    assert "eval_step_0005.json: malformed JSON" in out
    assert "fix or remove the file" in out
    steps = _rows(built, "select step from fct_eval_steps where run_id = 'hand' order by step")
    assert [r["step"] for r in steps] == [-1, 10, 20]


# --------------------------------------------------------------------------- group summary


def test_group_summary_of_the_hand_run(built: dict) -> None:
    rows = _rows(built, "select * from fct_group_summary where run_id = 'hand' order by iteration")
    first, second = rows
    # groups: q1 (scores 1, -0.5, -0.5), the prompt B group (0, 0), "3" (0.5 alone)
    assert first["basis"] == "rollouts"
    assert (first["groups_total"], first["groups_kept"], first["groups_filtered"]) == (3, 1, 2)
    assert first["filtered_share"] == pytest.approx(2 / 3)
    assert first["rollouts"] == 6
    # early: q1's first two (answered at turn 3 and 2 of 5), B's idk and error; q1's
    # third exhausted its turns; C has no max_turns and no reason, so cannot be told
    assert first["finished_early"] == 4
    assert (first["early_answered"], first["early_idk"], first["early_error"]) == (2, 1, 1)
    assert first["early_other"] == 0
    assert first["early_exit_rate"] == pytest.approx(4 / 5)  # over the 5 that can be told
    assert first["mean_turns"] == pytest.approx((3 + 2 + 5 + 2 + 1 + 1) / 6)
    assert (first["total_tokens"], first["trainable_tokens"]) == (2000, 550)
    assert first["trainable_token_share"] == pytest.approx(0.275)
    assert first["all_groups_filtered"] is False
    # iteration 2: one group, both scores 1.0; answered at the last turn counts as early
    # (an exit reason other than exhausted)
    assert (second["groups_total"], second["groups_kept"], second["groups_filtered"]) == (1, 0, 1)
    assert second["finished_early"] == 2
    assert second["all_groups_filtered"] is True


def test_group_summary_of_the_generated_run_equals_its_truth(built: dict) -> None:
    gen = built["gen"]
    rows = _rows(built, "select * from fct_group_summary where run_id = 'gen' order by iteration")
    assert [r["iteration"] for r in rows] == list(range(1, SPEC.steps + 1))
    for row in rows:
        step = row["iteration"]
        assert row["groups_filtered"] == gen.zero_variance[step], step
        assert row["groups_total"] == SPEC.queries
        assert row["rollouts"] == SPEC.queries * SPEC.rollouts
        truth = gen.early[step]
        assert row["early_answered"] == truth["answered"]
        assert row["early_idk"] == truth["idk"]
        assert row["early_error"] == truth["error"]
        assert row["finished_early"] == sum(truth.values())


def test_group_summary_from_the_console_log_equals_the_trainers_numbers(built: dict) -> None:
    """The console run has no rollouts: its summary is the log's, worked out here again
    from the rollouts the log was written with (the trainer's own filter, std < 0.05)."""
    rows = _rows(
        built, "select * from fct_group_summary where run_id = 'console' order by iteration"
    )
    assert [r["iteration"] for r in rows] == list(range(1, SPEC.steps + 1))
    for row in rows:
        dump = built["root"] / "gen" / "rollouts" / f"{row['iteration']}.jsonl"
        lines = [json.loads(line) for line in dump.read_text().splitlines()]
        groups: dict[str, list[float]] = {}
        for line in lines:
            groups.setdefault(line["input"], []).append(line["score"])
        filtered = sum(
            math.sqrt(sum((s - sum(v) / len(v)) ** 2 for s in v) / len(v)) < 0.05
            for v in groups.values()
        )
        assert row["basis"] == "trainer-log"
        assert row["groups_filtered"] == filtered
        assert row["groups_kept"] == len(groups) - filtered
        assert row["rollouts"] == len(lines)
        assert row["total_tokens"] == sum(line["total_tokens"] for line in lines)
        assert row["trainable_tokens"] == sum(line["trainable_tokens"] for line in lines)
        assert row["grad_norm"] is not None and row["rollout_time_s"] > 0


def test_group_summary_from_tracker_keys(built: dict) -> None:
    (row,) = _rows(built, "select * from fct_group_summary where run_id = 'tracked'")
    assert row["basis"] == "tracker"
    assert (row["groups_total"], row["groups_kept"], row["groups_filtered"]) == (8, 6, 2)
    assert row["finished_early"] == 18
    assert row["rollout_time_s"] == pytest.approx(45.3)
    assert row["trainable_token_share"] == pytest.approx(12345 / 45678)


def test_a_single_turn_run_stays_out_of_the_agent_marts(built: dict) -> None:
    for table in ("fct_group_summary", "fct_turn_advantages", "fct_eval_steps"):
        assert not _rows(built, f"select * from {table} where run_id = 'plain'"), table


# --------------------------------------------------------------------------- turn advantages


def _rule(rewards: list[float]) -> list[float]:
    """obs's rule for one turn: (r - mean) / (std + 1e-8), population std; 0 alone."""
    if len(rewards) == 1:
        return [0.0]
    mean = sum(rewards) / len(rewards)
    std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / len(rewards))
    return [(r - mean) / (std + 1e-8) for r in rewards]


def test_turn_advantages_of_the_hand_run(built: dict) -> None:
    rows = _rows(
        built,
        "select group_id, sample_idx, turn, advantage, is_given, source from "
        "fct_turn_advantages where run_id = 'hand' and iteration = 1 order by all",
    )
    got = {(r["group_id"], r["sample_idx"], r["turn"]): r for r in rows}
    q1 = [[0.3, 0.3, 1.0], [0.0, -0.5], [0.3, 0.0, 0.0, 0.0, -0.5]]
    expected: dict[tuple[str, int, int], float] = {}
    for turn in range(1, 6):
        reached = [i for i, r in enumerate(q1) if len(r) >= turn]
        for i, value in zip(reached, _rule([q1[i][turn - 1] for i in reached]), strict=True):
            expected[("q1", i, turn)] = value
    # turn 3: 1.0 and 0.0 reached it: +-0.5 / (0.5 + 1e-8); turns 4 and 5: one rollout, 0
    assert expected[("q1", 0, 3)] == pytest.approx(0.99999998, abs=1e-9)
    assert expected[("q1", 2, 4)] == expected[("q1", 2, 5)] == 0.0
    # turn 1: 0.3, 0.0, 0.3: mean 0.2, std sqrt(0.02): 0.1 / 0.141421 = 0.7071
    assert expected[("q1", 1, 1)] == pytest.approx(-1.4142135, abs=1e-6)
    b = prompt_hash(PROMPT_B)
    expected.update({(b, 0, 1): 0.5, (b, 0, 2): -0.25, (b, 1, 1): -1.0, ("3", 0, 1): 0.0})
    assert set(got) == set(expected)
    for key, value in expected.items():
        # a float aggregate's last bits follow the order it added in
        assert got[key]["advantage"] == pytest.approx(value, abs=1e-11), key
        assert got[key]["is_given"] is (key[0] == b), key
        assert got[key]["source"] == "rollouts"


def test_turn_summary_of_the_hand_run(built: dict) -> None:
    rows = _rows(
        built,
        "select * from fct_turn_summary where run_id = 'hand' and iteration = 1 order by turn",
    )
    assert [r["rollouts_active"] for r in rows] == [6, 4, 2, 1, 1]
    assert all(r["rollouts"] == 6 for r in rows)
    assert rows[1]["active_share"] == pytest.approx(4 / 6)
    turn1 = [*_rule([0.3, 0.0, 0.3]), 0.5, -1.0, 0.0]
    assert rows[0]["mean_advantage"] == pytest.approx(sum(turn1) / 6, abs=1e-9)
    assert rows[0]["negative_share"] == pytest.approx(2 / 6)
    assert rows[0]["all_given"] is False


def test_turn_advantages_from_the_console_log(built: dict) -> None:
    """The log prints two groups' tables a step: one row per printed cell, as printed."""
    rows = _rows(
        built,
        "select iteration, group_id, count(*) as cells, bool_and(is_given) as given, "
        "min(source) as source from fct_turn_advantages where run_id = 'console' "
        "group by all order by all",
    )
    assert {r["group_id"] for r in rows} == {"1", "2"}
    assert all(r["given"] and r["source"] == "trainer-log" for r in rows)
    for row in rows:
        dump = built["root"] / "gen" / "rollouts" / f"{row['iteration']}.jsonl"
        lines = [json.loads(line) for line in dump.read_text().splitlines()]
        group = lines[(int(row["group_id"]) - 1) * SPEC.rollouts :][: SPEC.rollouts]
        turns = [
            line.get("num_turns") or sum(m["role"] == "assistant" for m in line["messages"])
            for line in group
        ]
        assert row["cells"] == sum(turns), row


# --------------------------------------------------------------------------- eval steps


def test_eval_steps_of_the_seed_example(built: dict) -> None:
    rows = _rows(built, "select * from fct_eval_steps where run_id = 'hand' order by step")
    baseline, first, second = rows
    assert baseline["is_baseline"] is True and baseline["accuracy"] == 0.6
    assert json.loads(baseline["extra"]) == {"control_reward_map": {"q1": [0.1, 0.5]}}
    for key, value in EXAMPLE_EVAL.items():
        assert first[key] == pytest.approx(value), key
    assert first["basis"] == "eval-logs" and first["has_baseline"] is True
    assert first["attempted_rate"] == pytest.approx(0.95)
    assert first["found_rate"] == pytest.approx(0.87)
    assert first["read_rate"] == pytest.approx(0.82)
    assert first["repeated_search_share"] == pytest.approx(15 / 245)
    assert first["idk_share"] == pytest.approx(0.05)
    assert first["previous_step"] is None and first["accuracy_change"] is None
    # the other spellings land under the trainer's JSON keys; the rubric stays queryable
    assert (second["found_correct_email"], second["read_correct_email"]) == (90, 85)
    assert second["total_repeated_searches"] == 10
    assert json.loads(second["extra"]) == {"my_rubric_score": 0.4}
    assert second["previous_step"] == 10
    assert second["accuracy_change"] == pytest.approx(0.02)
    assert second["attempted_rate_change"] == pytest.approx(0.01)
    assert second["found_rate_change"] == pytest.approx(0.03)
    assert second["read_rate_change"] == pytest.approx(0.03)
    assert second["repeated_search_share_change"] == pytest.approx(10 / 250 - 15 / 245)
    assert second["idk_share_change"] == pytest.approx(-0.01)


def test_eval_trends_planted_in_the_generated_run(built: dict) -> None:
    rows = _rows(built, "select * from fct_eval_steps where run_id = 'gen' order by step")
    assert [r["step"] for r in rows] == list(range(2, SPEC.steps + 1, 2))
    assert [r["accuracy"] for r in rows] == [built["gen"].eval_accuracy[r["step"]] for r in rows]
    later = rows[1:]
    assert all(r["accuracy_change"] > 0 for r in later)
    assert all(r["found_rate_change"] >= 0 for r in later)
    assert all(r["idk_share_change"] < 0 for r in later)
    assert rows[-1]["repeated_search_share"] < rows[0]["repeated_search_share"]
    assert all(r["has_baseline"] is None for r in rows)  # no baseline file: unknown


def test_eval_steps_from_the_console_log_equal_the_files(built: dict) -> None:
    files = _rows(built, "select * from fct_eval_steps where run_id = 'gen' order by step")
    logged = _rows(built, "select * from fct_eval_steps where run_id = 'console' order by step")
    assert [r["step"] for r in logged] == [r["step"] for r in files]
    for mine, theirs in zip(logged, files, strict=True):
        assert mine["basis"] == "trainer-log"
        for key in (
            "correct_answers", "total_samples", "attempted_answer", "found_correct_email",
            "read_correct_email", "total_repeated_searches", "total_unique_searches",
            "total_searches", "num_idk", "accuracy", "avg_reward", "median_reward",
            "std_reward", "min_reward", "max_reward", "avg_turns_correct", "avg_turns_idk",
            "avg_search_attempts", "eval_time",
        ):  # fmt: skip
            assert mine[key] == pytest.approx(theirs[key]), (mine["step"], key)


def test_eval_steps_from_tracker_keys(built: dict) -> None:
    (row,) = _rows(built, "select * from fct_eval_steps where run_id = 'tracked'")
    assert row["basis"] == "tracker" and row["step"] == 10
    assert row["attempted_rate"] == pytest.approx(0.95)
    assert row["found_rate"] == pytest.approx(0.87)
    assert row["total_repeated_searches"] == 15
    assert row["repeated_search_share"] == pytest.approx(15 / 245)


def test_watch_follows_an_agent_run(tmp_path: Path) -> None:
    """obs watch lands the rollouts, the eval logs and the console log of a live run."""
    write_agent_run(tmp_path / "run", AgentSpec(steps=4, queries=3, rollouts=3, eval_every=2))
    run = tmp_path / "run"
    base = ["--lake", tmp_path / "lake", "--warehouse", tmp_path / "w.duckdb"]
    result = run_cli(
        [*base, "watch", run / "rollouts", "--run", "live", "--rounds", "1",
         "--metrics", run / "eval_logs", "--metrics", run / "train.log"]
    )  # fmt: skip
    assert "+36 rows from 4 file(s)" in result.stderr, result.stderr
    assert "eval, step and advantage rows" in result.stderr
    with duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True) as con:
        evals = con.execute("select count(*) from fct_eval_steps where run_id = 'live'").fetchall()
        groups = con.execute(
            "select basis, count(*) from fct_group_summary where run_id = 'live' group by 1"
        ).fetchall()
    assert evals == [(2,)]
    assert groups == [("rollouts", 4)]  # the rollouts win over the log's summaries
