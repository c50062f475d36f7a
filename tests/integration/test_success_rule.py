"""One definition of success per build (var success, ``obs build --success``).

The fixture is a math-like run with instruction tags: four iterations of five
prompts, two rollouts each, scores from -2.5 to 10, every rollout with its own
``prompt_strict_acc`` and a ``check_answer`` reward of 0 or 3. Per prompt, by
iteration 0..3 ((score, strict flag, check_answer) for each of two rollouts):

- A: (1, 1, 0) twice, every iteration: format always followed, never right.
- B: it0 (-2.5, 0, 0) (0, 0, 0); it1 (10, 1, 3) (0, 0, 0); it2 (8, 1, 3)
  (2, 1, 0); it3 (0, 1, 0) (-2.5, 0, 0): solved at 1..3 by the flags, at 1..2
  by the score and by check_answer.
- C: it0 (5, 0, 3) (2, 0, 0); it1..3 (10, 0, 3) twice: right, but the flags
  say not followed.
- D: score 1 throughout (zero variance), check 0; flags it0 (1, 0), it1
  (1, 1), it2 and it3 (0, 0): the seed's split called it all solved (score
  1 >= pass_threshold) while the flags forgot it.
- E: score 4 throughout, flags 0, check 3 twice: right, scored low.

Counts worked out by hand (learned, never solved, prompts forgotten with
their events, stuck solved, stuck failed; var dead_prompt_streak 3):
- strict: A B D learned; C E never; D forgotten (1 event, 1 -> 2); A stuck
  solved; C D E stuck failed.
- score >= 5: B C learned; A D E never; B forgotten (2 -> 3); C stuck
  solved; A D E stuck failed.
- check_answer >= 3: B C E learned; A D never; B forgotten; C E stuck
  solved; A D stuck failed.
Scaled upsampling (range -2.5..10, width 12.5; means by iteration: A 1, B
-1.25 5 5 -1.25 (slope 0), C 3.5 10 10 10 (slope 1.95), D 1, E 4), under
strict: A (1 - 3.5/12.5) * 2 = 1.44; B (1 - 1.25/12.5) * 2 = 1.8; C
-1.95/12.5 = -0.156; D 1.44 + 0.5 = 1.94; E (1 - 6.5/12.5) * 2 = 0.96. The
seed's formula gives B 4.5, C -19.95, E -6.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest
from click.testing import Result

from tests.conftest import prompt_hash, run_cli

pytestmark = pytest.mark.integration

ROLLOUTS: dict[str, list[list[tuple[float, int, float]]]] = {
    "A": [[(1.0, 1, 0.0), (1.0, 1, 0.0)]] * 4,
    "B": [
        [(-2.5, 0, 0.0), (0.0, 0, 0.0)],
        [(10.0, 1, 3.0), (0.0, 0, 0.0)],
        [(8.0, 1, 3.0), (2.0, 1, 0.0)],
        [(0.0, 1, 0.0), (-2.5, 0, 0.0)],
    ],
    "C": [[(5.0, 0, 3.0), (2.0, 0, 0.0)]] + [[(10.0, 0, 3.0), (10.0, 0, 3.0)]] * 3,
    "D": [
        [(1.0, 1, 0.0), (1.0, 0, 0.0)],
        [(1.0, 1, 0.0), (1.0, 1, 0.0)],
        [(1.0, 0, 0.0), (1.0, 0, 0.0)],
        [(1.0, 0, 0.0), (1.0, 0, 0.0)],
    ],
    "E": [[(4.0, 0, 3.0), (4.0, 0, 3.0)]] * 4,
}
PROMPTS = {name: f"Problem {name}: solve it and answer in the format asked." for name in ROLLOUTS}

# (learned, never solved, forgotten, events, stuck solved, stuck failed) and which prompts
COUNTS = {
    "strict": ((3, 2, 1, 1, 1, 3), {"learned": "ABD", "stuck_solved": "A", "forgotten": "D"}),
    "score >= 5": ((2, 3, 1, 1, 1, 3), {"learned": "BC", "stuck_solved": "C", "forgotten": "B"}),
    "check_answer >= 3": (
        (3, 2, 1, 1, 2, 2),
        {"learned": "BCE", "stuck_solved": "CE", "forgotten": "B"},
    ),
}


@dataclass
class Run:
    lake: Path
    warehouse: Path

    def invoke(self, args: list[object], exit_code: int = 0) -> Result:
        return run_cli(["--lake", self.lake, "--warehouse", self.warehouse, *args], exit_code)

    def query(self, sql: str) -> list[tuple]:
        con = duckdb.connect(str(self.warehouse), read_only=True)
        try:
            return con.execute(sql).fetchall()
        finally:
            con.close()


def _write_dumps(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for iteration in range(4):
        lines = [
            json.dumps({
                "input": PROMPTS[name],
                "output": f"{name}{iteration}-{i}",
                "score": score,
                "prompt_strict_acc": flag,
                "rewards": {"check_answer": check},
            })
            for name, by_iteration in ROLLOUTS.items()
            for i, (score, flag, check) in enumerate(by_iteration[iteration])
        ]  # fmt: skip
        (folder / f"{iteration}.jsonl").write_text("\n".join(lines) + "\n")
    return folder


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    root = tmp_path_factory.mktemp("success_rule")
    state = Run(root / "lake", root / "warehouse" / "obs.duckdb")
    state.invoke(["ingest", "rollouts", _write_dumps(root / "math"), "--run", "math", "-q"])
    yield state


def _counts(run: Run) -> tuple[int, ...]:
    [found] = json.loads(run.invoke(["summary", "--run", "math", "--format", "json"]).stdout)
    return tuple(
        found[key]
        for key in (
            "prompts_learned",
            "prompts_never_solved",
            "prompts_forgotten",
            "forgetting_events",
            "prompts_stuck_solved",
            "prompts_stuck_failed",
        )
    )


def _prompts(run: Run, where: str) -> str:
    found = run.query(f"select prompt_hash from fct_prompt_learning where {where}")
    names = {prompt_hash(text): name for name, text in PROMPTS.items()}
    return "".join(sorted(names[h] for (h,) in found))


def _solved_line(run: Run) -> str:
    return run.invoke(["summary", "--run", "math"]).stdout.splitlines()[4]


def test_each_rule_counts_by_hand_and_a_new_rule_rebuilds_the_counts(run: Run) -> None:
    """One module-long sequence of builds over the same lake: the default, each rule in
    turn, then the default again; each build's counts are the rule's own."""
    run.invoke(["build"])
    assert _counts(run) == COUNTS["strict"][0]
    assert _solved_line(run) == "solved: every instruction followed"
    for rule in ("score >= 5", "check_answer >= 3", "strict"):
        run.invoke(["build", "--success", rule])
        counts, which = COUNTS[rule]
        assert _counts(run) == counts, rule
        assert _prompts(run, "is_learned") == which["learned"], rule
        assert _prompts(run, "is_stuck_solved") == which["stuck_solved"], rule
        assert _prompts(run, "num_forgetting_events > 0") == which["forgotten"], rule
        # a prompt forgotten at its last visit is never also stuck solved
        assert run.query(
            "select count(*) from fct_prompt_learning where is_forgotten_at_end and is_stuck_solved"
        ) == [(0,)]
        [(shown,)] = run.query("select success from rpt_dashboard_settings")
        assert shown == rule
    # back to the default: a plain build after another rule rebuilds by strict
    run.invoke(["build", "--success", "check_answer >= 3"])
    run.invoke(["build"])
    assert _counts(run) == COUNTS["strict"][0]
    [(shown,)] = run.query("select success from rpt_dashboard_settings")
    assert shown == "auto"


@pytest.mark.parametrize(
    ("rule", "line"),
    [
        ("score >= 5", "solved: a rollout scoring at least 5 (var success)"),
        # 3 on a function scored 0 or 3 is the one cut that separates right from wrong
        ("check_answer >= 3", "solved: a rollout whose check_answer is at least 3 (var success)"),
        # a cut between the observed values says nothing either
        (
            "check_answer >= 1.5",
            "solved: a rollout whose check_answer is at least 1.5 (var success)",
        ),
        (
            "check_answer >= 3.5",
            "solved: a rollout whose check_answer is at least 3.5 (var success), but no rollout"
            " reaches 3.5: the run's check_answer values run from 0 to 3",
        ),
        (
            "check_answer >= 0",
            "solved: a rollout whose check_answer is at least 0 (var success), but every"
            " rollout reaches 0: the run's check_answer values run from 0 to 3",
        ),
        ("score >= 10", "solved: a rollout scoring at least 10 (var success)"),
        (
            "score >= 20",
            "solved: a rollout scoring at least 20 (var success), but no rollout reaches 20:"
            " the run's scores run from -2.5 to 10",
        ),
        (
            "score >= -3",
            "solved: a rollout scoring at least -3 (var success), but every rollout reaches"
            " -3: the run's scores run from -2.5 to 10",
        ),
    ],
)
def test_summary_names_the_rule_and_a_threshold_at_or_past_the_range(
    run: Run, rule: str, line: str
) -> None:
    run.invoke(["build", "--success", rule])
    assert _solved_line(run) == line


def test_upsampling_scores_on_the_score_scaled_to_the_run_range(run: Run) -> None:
    run.invoke(["build", "--success", "strict"])
    found = {
        h: (seed, scaled, final_scaled)
        for h, seed, scaled, final_scaled in run.query(
            "select prompt_hash, upsampling_score, upsampling_score_scaled, final_score_scaled"
            " from fct_prompt_learning"
        )
    }
    expected = {  # (seed, scaled, final scaled), worked out in the module docstring
        "A": (0.0, 1.44, 0.28),
        "B": (4.5, 1.8, 0.1),
        "C": (-19.95, -0.156, 1.0),
        "D": (0.5, 1.94, 0.28),
        "E": (-6.0, 0.96, 0.52),
    }
    for name, values in expected.items():
        assert found[prompt_hash(PROMPTS[name])] == pytest.approx(values, abs=1e-9), name
    ranked = run.query(
        "select prompt_hash, priority from fct_upsampling_candidates order by upsampling_rank"
    )
    names = {prompt_hash(text): name for name, text in PROMPTS.items()}
    assert [(names[h], p) for h, p in ranked] == [
        ("D", "high"),
        ("B", "high"),
        ("A", "medium"),
        ("E", "medium"),
        ("C", "low"),
    ]
    weights = dict(
        run.query("select prompt_hash, weight from fct_curriculum where mode = 'upsample'")
    )
    # 1 + max(scaled, 0), halved for A (stuck solved)
    assert weights[prompt_hash(PROMPTS["B"])] == pytest.approx(2.8)
    assert weights[prompt_hash(PROMPTS["A"])] == pytest.approx((1 + 1.44) / 2)
    assert weights[prompt_hash(PROMPTS["C"])] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ("score > 5", "'score > 5': expected strict, auto, 'score >= X' or"),
        ("x' or 1=1 -- >= 3", "expected strict, auto"),
        ("check_answer >= nan", "the threshold must be a finite number"),
        ("check_answer >= 3; drop table runs", "expected strict, auto"),
    ],
)
def test_a_rule_that_is_not_one_gets_one_line_and_builds_nothing(
    run: Run, rule: str, message: str
) -> None:
    result = run.invoke(["build", "--success", rule], exit_code=2)
    [line] = [x for x in result.stderr.splitlines() if x.startswith("Error:")]
    assert line.startswith("Error: Invalid value for --success: ") and message in line
