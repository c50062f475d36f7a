"""`obs show advantages|step|eval` on a multi-turn agent run written for them.

One warehouse for the module, through the real `obs ingest` and `obs build`:
- agent-1: two iterations of rollout dumps. Iteration 0 has three groups of
  three rollouts: g-given (turn_advantages given, the trainer's values,
  rollout 2 one turn short), g-rewards (turn_rewards only: obs computes the
  advantages) and g-flat (every score 0.5: zero variance, filtered). Four
  rollouts finish early (answered 2, idk 1, error 1); each rollout has 500
  tokens, 135 trainable. Iteration 1 is one zero-variance group (all groups
  filtered). A metrics.jsonl gives iteration 0's rollout and training times.
  Eval files: the trainer's example at step 10, an earlier step 0
  and a baseline (step -1).
- plain: rollouts with exit reasons and no turn data (a group summary but no
  turn advantages).
The expected text is written out by hand from the trainer's layouts
 and the marts' rules, not computed with obs.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from tests.conftest import Invoke, run_cli

pytestmark = pytest.mark.integration

RULE = "─" * 80

# The trainer's eval file and an earlier eval and a baseline beside it.
EXAMPLE_EVAL = {
    "step": 10,
    "accuracy": 0.85,
    "correct_answers": 85,
    "total_samples": 100,
    "attempted_answer": 95,
    "avg_reward": 0.723,
    "median_reward": 0.850,
    "std_reward": 0.312,
    "min_reward": -1.200,
    "max_reward": 1.500,
    "found_correct_email": 87,
    "read_correct_email": 82,
    "total_repeated_searches": 15,
    "total_unique_searches": 230,
    "total_searches": 245,
    "avg_turns_correct": 3.45,
    "avg_turns_idk": 4.20,
    "avg_search_attempts": 2.45,
    "num_idk": 5,
    "eval_time": 234.5,
    "beat_rate": 0.78,
}
FIRST_EVAL = EXAMPLE_EVAL | {
    "step": 0,
    "accuracy": 0.83,
    "correct_answers": 83,
    "attempted_answer": 93,
    "found_correct_email": 86,
    "read_correct_email": 80,
    "total_repeated_searches": 20,
    "total_unique_searches": 220,
    "total_searches": 240,
    "num_idk": 7,
    "avg_reward": 0.65,
    "beat_rate": 0.70,
}
BASELINE_EVAL = {k: v for k, v in EXAMPLE_EVAL.items() if k != "beat_rate"} | {
    "step": -1,
    "is_baseline": True,
    "accuracy": 0.70,
    "correct_answers": 70,
    "control_reward_map": {"q1": [0.1, 0.2]},
}


def _rollout(group: str, prompt: str, score: float, **fields: Any) -> dict[str, Any]:
    return {
        "input": prompt,
        "output": f"answer scored {score}",
        "score": score,
        "group_id": group,
        "total_tokens": 500,
        "trainable_tokens": 135,
        **fields,
    }


def _iteration_0() -> list[dict[str, Any]]:
    given, rewards, flat = "Who sent the invoice?", "When is the meeting?", "Where is the office?"
    return [
        _rollout(
            "g-given",
            given,
            1.0,
            turn_advantages=[0.35, 0.42, 0.8, 1.2],
            num_turns=4,
            max_turns=5,
            exit_reason="answered",
        ),
        _rollout(
            "g-given",
            given,
            0.5,
            turn_advantages=[-0.2, -0.15, 0.3],
            num_turns=3,
            max_turns=5,
            exit_reason="idk",
        ),
        _rollout(
            "g-given",
            given,
            0.0,
            turn_advantages=[0.15, 0.25, -0.3, -0.45],
            num_turns=4,
            max_turns=4,
            exit_reason="exhausted",
        ),
        _rollout(
            "g-rewards", rewards, 1.0, turn_rewards=[0.0, 1.0], max_turns=5, exit_reason="answered"
        ),
        _rollout(
            "g-rewards",
            rewards,
            0.0,
            turn_rewards=[0.5, 0.0, 1.0],
            max_turns=5,
            exit_reason="error",
        ),
        _rollout(
            "g-rewards",
            rewards,
            0.5,
            turn_rewards=[1.0, 0.5, 0.5, 0.0, 0.2],
            max_turns=5,
            exit_reason="exhausted",
        ),
        *[
            _rollout("g-flat", flat, 0.5, num_turns=5, max_turns=5, exit_reason="exhausted")
            for _ in range(3)
        ],
    ]


def _iteration_1() -> list[dict[str, Any]]:
    return [
        _rollout(
            "g-one", "Who approved it?", 0.0, num_turns=5, max_turns=5, exit_reason="exhausted"
        )
        for _ in range(3)
    ]


def _write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


@dataclass
class Built:
    lake: Path
    warehouse: Path

    def invoke(self, args: list[object], exit_code: int = 0) -> Result:
        return run_cli(["--lake", self.lake, "--warehouse", self.warehouse, *args], exit_code)

    def error(self, args: list[object]) -> str:
        """The one line an expected error prints (exit 1, nothing on stdout)."""
        result = self.invoke(args, exit_code=1)
        assert result.stdout == "" and "Traceback" not in result.stderr
        assert result.stderr.count("\n") == 1, result.stderr
        return result.stderr


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    root = tmp_path_factory.mktemp("agent_cli")
    state = Built(root / "lake", root / "warehouse" / "obs.duckdb")
    _write_jsonl(root / "agent-1" / "dumps" / "0.jsonl", _iteration_0())
    _write_jsonl(root / "agent-1" / "dumps" / "1.jsonl", _iteration_1())
    evals = root / "agent-1" / "eval_logs"
    evals.mkdir()
    for name, record in (
        ("eval_step_0000.json", FIRST_EVAL),
        ("eval_step_0010.json", EXAMPLE_EVAL),
        ("baseline_eval.json", BASELINE_EVAL),
    ):
        (evals / name).write_text(json.dumps(record, indent=2))
    times = {"step": 0, "train/rollout_time": 45.3, "train/training_time": 2.1}
    _write_jsonl(root / "agent-1" / "metrics.jsonl", [times])
    _write_jsonl(
        root / "plain" / "dumps" / "0.jsonl",
        [_rollout("p", "Any mail?", s, exit_reason="answered") for s in (0.0, 1.0)],
    )
    state.invoke(["ingest", "rollouts", root / "agent-1" / "dumps", "--run", "agent-1", "-q"])
    state.invoke(["ingest", "eval-logs", evals, "--run", "agent-1", "-q"])
    state.invoke(
        ["ingest", "metrics", root / "agent-1" / "metrics.jsonl", "--run", "agent-1", "-q"]
    )
    state.invoke(["ingest", "rollouts", root / "plain" / "dumps", "--run", "plain", "-q"])
    state.invoke(["build"])
    yield state


# --------------------------------------------------------------------------- obs show eval


def test_show_eval_step_prints_the_trainers_block(built: Built) -> None:
    out = built.invoke(["show", "eval", "--run", "agent-1", "--step", "10"]).stdout
    assert out.splitlines() == [
        "Step 10: accuracy 85.0% (85/100), avg reward 0.723 (std 0.312), median 0.850, "
        "range [-1.200, 1.500], eval 234.5 s",
        "📊 Detailed Rubric Statistics:",
        "   Attempted answers: 95/100 (95.0%)",
        "   Found correct email: 87/100 (87.0%)",
        "   Read correct email: 82/100 (82.0%)",
        "   Repeated searches: 15 (total: 245, unique: 230)",
        "   Avg turns (correct): 3.45 turns",
        "   Avg turns (I don't know): 4.20 turns (count: 5)",
        "   Avg search attempts: 2.45",
        # 83 -> 85, 93 -> 95, 86 -> 87, 80 -> 82; repeats 20/240 -> 15/245; idk 7 -> 5
        "Change since step 0: accuracy +2.0 pts, attempted +2.0 pts, found +1.0 pts, "
        "read +2.0 pts, repeats share -2.2 pts, idk -2.0 pts, avg reward +0.073",
        "Beat control: 78.0% of queries",
    ]


def test_show_eval_first_step_has_no_change_line(built: Built) -> None:
    lines = built.invoke(["show", "eval", "--run", "agent-1", "--step", "0"]).stdout.splitlines()
    assert lines[0].startswith("Step 0: accuracy 83.0% (83/100), avg reward 0.650")
    assert lines[-1] == "Beat control: 70.0% of queries"
    assert not any(line.startswith("Change since") for line in lines)


def test_show_eval_trend_prints_a_line_per_step(built: Built) -> None:
    out = built.invoke(["show", "eval", "--run", "agent-1"]).stdout
    assert out.splitlines() == [
        "Baseline:  Acc= 70.0%, Found=87/100, Read=82/100, Repeats=15",
        "Step    0: Acc= 83.0%, Found=86/100, Read=80/100, Repeats=20",
        "Step   10: Acc= 85.0%, Found=87/100, Read=82/100, Repeats=15",
    ]


def test_show_eval_json_holds_the_rows(built: Built) -> None:
    rows = json.loads(built.invoke(["show", "eval", "--run", "agent-1", "--format", "json"]).stdout)
    assert [(r["step"], r["is_baseline"]) for r in rows] == [(-1, True), (0, False), (10, False)]
    step = rows[2]
    for key, value in EXAMPLE_EVAL.items():
        assert step[key] == pytest.approx(value), key
    assert step["has_baseline"] is True and step["previous_step"] == 0
    assert step["found_rate"] == pytest.approx(0.87)
    assert step["accuracy_change"] == pytest.approx(0.02)
    (one,) = json.loads(
        built.invoke(
            ["show", "eval", "--run", "agent-1", "--step", "10", "--format", "json"]
        ).stdout
    )
    assert one == step


# --------------------------------------------------------------------------- obs show advantages


def test_show_advantages_given_group_is_the_trainer_table(built: Built) -> None:
    args = ["show", "advantages", "--run", "agent-1", "--iteration", "0", "--group", "g-given"]
    assert built.invoke(args).stdout == "\n".join(
        [
            "Group g-given · iteration 0 · 3 rollouts · given",
            RULE,
            "📊 Turn-by-Turn Advantage Table:",
            RULE,
            "Rollout | Turn  1 | Turn  2 | Turn  3 | Turn  4 |",
            RULE,
            "    1  | +0.350 | +0.420 | +0.800 | +1.200 |",
            "    2  | -0.200 | -0.150 | +0.300 |   ---  |",
            "    3  | +0.150 | +0.250 | -0.300 | -0.450 |",
            RULE,
            "",
        ]
    )


# From turn rewards: (r - mean_t) / (std_t + 1e-8) over the rollouts that reached
# turn t, population std, 0 when only one did.
#   turn 1: 0.0, 0.5, 1.0 -> mean 0.5, std sqrt(1/6) = 0.408 -> -1.225, +0.000, +1.225
#   turn 2: 1.0, 0.0, 0.5 -> the same spread                 -> +1.225, -1.225, +0.000
#   turn 3: rollouts 2 and 3, 1.0, 0.5 -> mean 0.75, std 0.25 -> +1.000, -1.000
#   turns 4, 5: rollout 3 alone                               -> +0.000
REWARDS_TABLE = [
    "Group g-rewards · iteration 0 · 3 rollouts · computed from turn rewards",
    RULE,
    "📊 Turn-by-Turn Advantage Table:",
    RULE,
    "Rollout | Turn  1 | Turn  2 | Turn  3 | Turn  4 | Turn  5 |",
    RULE,
    "    1  | -1.225 | +1.225 |   ---  |   ---  |   ---  |",
    "    2  | +0.000 | -1.225 | +1.000 |   ---  |   ---  |",
    "    3  | +1.225 | +0.000 | -1.000 | +0.000 | +0.000 |",
    RULE,
]


def test_show_advantages_computes_them_from_turn_rewards(built: Built) -> None:
    args = ["show", "advantages", "--run", "agent-1", "--iteration", "0", "--group", "g-rewards"]
    assert built.invoke(args).stdout.splitlines() == REWARDS_TABLE


def test_show_advantages_shows_the_first_groups_then_how_many_more(built: Built) -> None:
    args = ["show", "advantages", "--run", "agent-1", "--iteration", "0"]
    both = built.invoke(args).stdout.splitlines()
    assert both[0] == "Group g-given · iteration 0 · 3 rollouts · given"
    assert both[11:] == REWARDS_TABLE  # the given table (10 lines) and a blank line first
    one = built.invoke([*args, "--groups", "1"]).stdout.splitlines()
    assert one[:10] == both[:10]
    assert one[10:] == [
        "",
        "1 more group at iteration 0 (2 in all): g-rewards; show one with --group ID, "
        "or more with --groups K",
    ]


def test_show_advantages_json_holds_the_cells(built: Built) -> None:
    args = ["show", "advantages", "--run", "agent-1", "--iteration", "0", "--format", "json"]
    payload = json.loads(built.invoke(args).stdout)
    assert (payload["run_id"], payload["iteration"], payload["groups_total"]) == ("agent-1", 0, 2)
    given, computed = payload["groups"]
    assert (given["group_id"], given["is_given"], given["turns"]) == ("g-given", True, 4)
    assert given["rollouts"][1] == {
        "rollout": 2,
        "is_given": True,
        "advantages": [-0.2, -0.15, 0.3, None],
    }
    spread = 0.5 / (math.sqrt(1 / 6) + 1e-8)
    assert (computed["group_id"], computed["is_given"], computed["turns"]) == (
        "g-rewards",
        False,
        5,
    )
    assert [r["advantages"] for r in computed["rollouts"]] == [
        pytest.approx([-spread, spread, None, None, None]),
        pytest.approx([0.0, -spread, 0.25 / (0.25 + 1e-8), None, None]),
        pytest.approx([spread, 0.0, -0.25 / (0.25 + 1e-8), 0.0, 0.0]),
    ]


# --------------------------------------------------------------------------- obs show step


def test_show_step_prints_a_concise_line_per_iteration(built: Built) -> None:
    out = built.invoke(["show", "step", "--run", "agent-1"]).stdout
    assert out.splitlines() == [
        "Step     0:  Groups: 2/3 kept (1 filtered), 4/9 finished early",
        "Step     1:  Groups: 0/1 kept (1 filtered), 0/3 finished early"
        "  ⚠️  all groups filtered (step skipped)",
    ]


@pytest.mark.parametrize(
    ("iteration", "expected"),
    [
        (0, "  Groups: 2/3 kept (1 filtered), 4/9 finished early\n"),
        (
            1,
            "  Groups: 0/1 kept (1 filtered), 0/3 finished early\n"
            "⚠️  All groups filtered out! Skipping training step.\n",
        ),
    ],
)
def test_show_step_concise_is_the_trainer_line(built: Built, iteration: int, expected: str) -> None:
    out = built.invoke(["show", "step", "--run", "agent-1", "--iteration", iteration]).stdout
    assert out == expected


def test_show_step_verbose_is_the_group_summary_block(built: Built) -> None:
    args = ["show", "step", "--run", "agent-1", "--iteration", "0", "--verbose"]
    assert built.invoke(args).stdout.splitlines() == [
        "📊 Group Summary:",
        "  - Total groups: 3",
        "  - Groups kept for training: 2",
        "  - Groups filtered (low variance): 1",
        "  - Rollouts that finished early (didn't exhaust turns): 4/9",
        "  - Total rollout time: 45.3s",
        "  - Total training time: 2.1s",
        "  - Total tokens: 4,500",
        "  - Trainable tokens: 1,215 (27.0%)",
        "  - Early exits by reason: answered 2, idk 1, error 1",
        "  (from rollouts; filtered = score std < 1e-06)",
    ]


def test_show_step_verbose_warns_when_every_group_was_filtered(built: Built) -> None:
    args = ["show", "step", "--run", "agent-1", "--iteration", "1", "--verbose"]
    assert built.invoke(args).stdout.splitlines() == [
        "📊 Group Summary:",
        "  - Total groups: 1",
        "  - Groups kept for training: 0",
        "  - Groups filtered (low variance): 1",
        "  - Rollouts that finished early (didn't exhaust turns): 0/3",
        "  - Total tokens: 1,500",
        "  - Trainable tokens: 405 (27.0%)",
        "  (from rollouts; filtered = score std < 1e-06)",
        "⚠️  All groups filtered out! Skipping training step.",
    ]


def test_show_step_json_holds_the_rows(built: Built) -> None:
    rows = json.loads(built.invoke(["show", "step", "--run", "agent-1", "--format", "json"]).stdout)
    assert [r["iteration"] for r in rows] == [0, 1]
    first = rows[0]
    expected = {
        "basis": "rollouts",
        "groups_total": 3,
        "groups_kept": 2,
        "groups_filtered": 1,
        "rollouts": 9,
        "finished_early": 4,
        "early_answered": 2,
        "early_idk": 1,
        "early_error": 1,
        "total_tokens": 4500,
        "trainable_tokens": 1215,
        "rollout_time_s": 45.3,
        "training_time_s": 2.1,
        "all_groups_filtered": False,
    }
    assert {k: first[k] for k in expected} == expected
    assert first["trainable_token_share"] == pytest.approx(0.27)
    assert rows[1]["all_groups_filtered"] is True


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["advantages", "--run", "nope", "--iteration", "0"],
            "{warehouse}: no run 'nope' (runs: agent-1, plain)",
        ),
        (["step", "--run", "nope"], "{warehouse}: no run 'nope' (runs: agent-1, plain)"),
        (["eval", "--run", "nope"], "{warehouse}: no run 'nope' (runs: agent-1, plain)"),
        (
            ["advantages", "--run", "agent-1", "--iteration", "7"],
            "{warehouse}: run agent-1 has no turn advantages at iteration 7 (it has 0); pick one"
            " of those",
        ),
        (
            ["advantages", "--run", "agent-1", "--iteration", "0", "--group", "g-flat"],
            "{warehouse}: run agent-1 has no group 'g-flat' with turn advantages at iteration 0 "
            "(it has g-given, g-rewards); pick one of those",
        ),
        (
            ["step", "--run", "agent-1", "--iteration", "7"],
            "{warehouse}: run agent-1 has no group summary at iteration 7 (it has 0, 1); pick"
            " one of those",
        ),
        (
            ["eval", "--run", "agent-1", "--step", "5"],
            "{warehouse}: run agent-1 has no eval at step 5 (it has steps 0, 10 and a baseline"
            " (step -1)); pick one of those",
        ),
        (
            ["advantages", "--run", "plain", "--iteration", "0"],
            "plain: rollouts and agent data; land rollouts with `turn_advantages` or"
            " `turn_rewards` (obs ingest rollouts DIR --run plain) or the trainer's console log"
            " (obs ingest trainer-log FILE --run plain) to see its turn advantages",
        ),
        (
            ["eval", "--run", "plain"],
            "plain: rollouts and agent data; land the eval files (obs ingest eval-logs DIR"
            " --run plain) to see its eval steps",
        ),
    ],
    ids=[
        "advantages-run",
        "step-run",
        "eval-run",
        "iteration",
        "group",
        "step-iteration",
        "eval-step",
        "no-turn-data",
        "no-evals",
    ],
)
def test_show_errors_name_what_exists(built: Built, args: list[str], message: str) -> None:
    expected = message.format(warehouse=built.warehouse)
    assert built.error(["show", *args]) == f"Error: {expected}\n"


def test_show_without_a_warehouse_says_how_to_make_one(invoke: Invoke, warehouse: Path) -> None:
    result = invoke(["show", "eval", "--run", "agent-1"], exit_code=1)
    assert result.stderr == (
        f"Error: {warehouse}: no warehouse yet (the default, warehouse/obs.duckdb, is relative"
        " to the current folder; --warehouse FILE or OBS_WAREHOUSE points elsewhere); run `obs"
        " ingest rollouts ...` then `obs build`\n"
    )


def test_show_groups_must_be_positive(invoke: Invoke) -> None:
    args = ["show", "advantages", "--run", "agent-1", "--iteration", "0", "--groups", "0"]
    assert "Invalid value for '--groups'" in invoke(args, exit_code=2).stderr
