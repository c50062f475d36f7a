"""The build's one success rule beyond the learning counts: the accuracy and
forgetting heatmaps, obs summary's solved column, the pass_rate buckets, the
instruction marts' fallback, the metric audit's solve rates, the
sample-efficiency quadrant and obs watch --success.

The fixture: three iterations of four prompts, two rollouts each; every rollout
carries its prompt_strict_acc flag, a ``check_answer`` reward of 0 or 3, a score
of flag + check / 10 and the instructions ``a`` and ``b``; only P's rollouts carry
per-instruction flags (both followed). (flag, check_answer) by iteration 0, 1, 2:

- P: (1, 0) twice throughout: the format, never the answer.
- Q: it0 (0, 3) (0, 0); it1, it2 (0, 3) twice: right, the flags say not followed.
- R: it0 (0, 0) twice; it1 (1, 0) (0, 0); it2 (1, 3) (1, 0).
- S: it0 (1, 0) twice; it1 (1, 3) (0, 0); it2 (0, 3) (0, 0).

Worked out by hand, strict (the flags) | ``check_answer >= 3``:
- solved by iteration: P 1 1 1 | 0 0 0; Q 0 0 0 | 1 1 1; R 0 1 1 | 0 0 1;
  S 1 1 0 | 0 1 1. Shares of prompts solved: .5 .75 .5 | .25 .5 .75.
- solved changes at it1, it2: R +1 0, S 0 -1 | R 0 +1, S +1 0; P, Q 0 0.
- success rates: P 1 1 1 | 0 0 0; Q 0 0 0 | .5 1 1; R 0 .5 1 | 0 0 .5;
  S 1 .5 0 | 0 .5 .5; pass_rate buckets from them (0 very_hard, <= .5
  medium, above .75 very_easy).
- quadrant (learned within 3 iterations, last success rate >= .5): P
  fast_learner (learned at 0, ends 1) | hard_failed (never); Q hard_failed |
  fast_learner; R fast_learner (1, ends 1) | fast_learner (2, ends .5); S
  quick_failure (0, ends 0) | fast_learner (1, ends .5). S's final score (.15)
  is the same under both: the rule decides.
- instruction a's success rate by iteration (8 rollouts): P's own flags count 2
  under both; the others fall back to the rollout's success: flags 0+0+2 (it0),
  0+1+1, 0+2+0 -> .5 .5 .5 | answers 1+0+0, 2+0+1, 2+1+1 -> .375 .625 .75. The
  pair (a, b) over the run: 12 / 24 | 14 / 24 joint.
- curriculum: P has no GRPO signal for its 3 iterations (dead_prompt_streak):
  stuck solved, dropped by drop-solved | stuck failed, kept. Q's streak is 2.
- groups solved all / none by the rule: it0 0 / .75, it1 .25 / .5, it2 .25 /
  .25; the trainer logged those. Under strict (and at score >= 1) it0 is .5 /
  .5, it2's all .5: those steps disagree; it1's solve_all .25 agrees.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest
from click.testing import Result
from obs.reports import TrainingDashboard, boards, served

from tests.conftest import prompt_hash, run_cli

pytestmark = pytest.mark.integration

# (prompt_strict_acc flag, check_answer) per rollout, by iteration
ROLLOUTS: dict[str, list[list[tuple[int, int]]]] = {
    "P": [[(1, 0), (1, 0)]] * 3,
    "Q": [[(0, 3), (0, 0)], [(0, 3), (0, 3)], [(0, 3), (0, 3)]],
    "R": [[(0, 0), (0, 0)], [(1, 0), (0, 0)], [(1, 3), (1, 0)]],
    "S": [[(1, 0), (1, 0)], [(1, 3), (0, 0)], [(0, 3), (0, 0)]],
}
PROMPTS = {name: f"Problem {name}: answer it, in the format asked." for name in ROLLOUTS}
NAMES = {prompt_hash(text): name for name, text in PROMPTS.items()}
RULE = "check_answer >= 3"
# what the trainer logged: the groups solved all / none by the rule, steps 0..2
LOGGED = {"batch/solve_all": [0.0, 0.25, 0.25], "batch/solve_none": [0.75, 0.5, 0.25]}


@dataclass
class Built:
    """What one build under a rule gave, read before the next build replaces it."""

    accuracy: dict[str, list[float]] = field(default_factory=dict)
    accuracy_note: str = ""
    forgetting: dict[str, list[float]] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    summary_text: str = ""
    # the served run page's tiles (obs serve's /runs/<run>)
    tiles: dict[str, str] = field(default_factory=dict)
    # the served prompt page of S: its success rate by iteration
    prompt_page: list[float] = field(default_factory=list)
    queries: dict[str, list[tuple]] = field(default_factory=dict)


QUERIES = {
    "buckets": "select prompt_hash, iteration, bucket from fct_difficulty_buckets"
    " where strategy = 'pass_rate' order by 1, 2",
    "quadrant": "select prompt_hash, efficiency_quadrant, final_success_rate, final_score"
    " from fct_upsampling_candidates order by 1",
    "instruction": "select iteration, success_rate, flag_coverage from fct_instruction_iteration"
    " where instruction_id = 'a' order by 1",
    "pairs": "select n, joint_success_rate from fct_instruction_pairs",
    "dropped": "select prompt_hash from fct_curriculum where mode = 'drop-solved' and is_dropped",
    "stuck": "select prompt_hash, is_stuck_solved, is_stuck_failed from fct_upsampling_candidates"
    " where is_stuck_solved or is_stuck_failed",
    "audit": "select metric, step, verdict, convention from fct_metric_audit"
    " where canonical_metric = 'solve_all' order by 2",
}


def _write_dumps(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for iteration in range(3):
        lines = []
        for name, by_iteration in ROLLOUTS.items():
            for i, (flag, check) in enumerate(by_iteration[iteration]):
                row: dict[str, Any] = {
                    "input": PROMPTS[name],
                    "output": f"{name}{iteration}-{i}",
                    "score": flag + check / 10,
                    "prompt_strict_acc": flag,
                    "rewards": {"check_answer": check},
                    "gts": {"instruction_id_list": ["a", "b"], "kwargs": [{}, {}]},
                }
                if name == "P":
                    row["follow_instruction_list"] = [True, True]
                lines.append(json.dumps(row))
        (folder / f"{iteration}.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def _write_metrics(path: Path) -> Path:
    path.write_text(
        "".join(
            json.dumps({"step": step, **{key: values[step] for key, values in LOGGED.items()}})
            + "\n"
            for step in range(3)
        )
    )
    return path


def _heatmap_rows(figure: Any) -> dict[str, list[float]]:
    trace = figure.data[0]
    z = np.asarray(trace.z, dtype=float)
    return {NAMES[str(label).split()[0]]: z[i].tolist() for i, label in enumerate(trace.y)}


def _same(found: dict[str, list[float]], expected: dict[str, list[float]]) -> bool:
    return found.keys() == expected.keys() and all(
        all(
            (math.isnan(a) and math.isnan(e)) or math.isclose(a, e, abs_tol=1e-12)
            for a, e in zip(found[k], expected[k], strict=True)
        )
        for k in expected
    )


@dataclass
class Run:
    root: Path
    lake: Path
    warehouse: Path
    dumps: Path

    def invoke(self, args: list[object], exit_code: int = 0) -> Result:
        return run_cli(["--lake", self.lake, "--warehouse", self.warehouse, *args], exit_code)

    def read(self) -> Built:
        charts = TrainingDashboard(warehouse=self.warehouse, run="math").generate_all_charts()
        [summary] = json.loads(self.invoke(["summary", "--run", "math", "--format", "json"]).stdout)
        built = Built(
            accuracy=_heatmap_rows(charts["prompt_accuracy"]),
            accuracy_note=charts["prompt_accuracy"].layout.title.text,
            forgetting=_heatmap_rows(charts["forgetting_analysis"]),
            summary=summary,
            summary_text=self.invoke(["summary", "--run", "math"]).stdout,
        )
        con = duckdb.connect(str(self.warehouse), read_only=True)
        try:
            built.queries = {name: con.execute(sql).fetchall() for name, sql in QUERIES.items()}
            board = boards.training(con, {"run_id": "math", "has_rollouts": True}, None)
            built.tiles = dict(board.tiles)
            page = served.prompt_page(con, "math", prompt_hash(PROMPTS["S"]), None, 1)
            assert page is not None
            [rate] = [t for t in page.figure.data if t.name == "success rate"]
            built.prompt_page = list(rate.y)
        finally:
            con.close()
        return built


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    root = tmp_path_factory.mktemp("success_everywhere")
    state = Run(root, root / "lake", root / "warehouse" / "obs.duckdb", _write_dumps(root / "math"))
    state.invoke(["ingest", "rollouts", state.dumps, "--run", "math", "-q"])
    state.invoke(["ingest", "metrics", _write_metrics(root / "metrics.jsonl"), "--run", "math"])
    return state


@pytest.fixture(scope="module")
def built(run: Run) -> Iterator[dict[str, Built]]:
    """One build by the default (strict, from the flags), one by the rule."""
    run.invoke(["build"])
    strict = run.read()
    run.invoke(["build", "--success", RULE])
    yield {"strict": strict, "rule": run.read()}


def _by_name(rows: list[tuple]) -> dict[str, tuple]:
    return {NAMES[row[0]]: row[1:] for row in rows}


def test_the_accuracy_heatmap_colours_what_the_rule_solved(built: dict[str, Built]) -> None:
    assert _same(
        built["strict"].accuracy,
        {"P": [1, 1, 1], "Q": [0, 0, 0], "R": [0, 1, 1], "S": [1, 1, 0]},
    )
    assert _same(
        built["rule"].accuracy,
        {"P": [0, 0, 0], "Q": [1, 1, 1], "R": [0, 0, 1], "S": [0, 1, 1]},
    )
    assert "solved: every instruction followed" in built["strict"].accuracy_note
    assert "solved: a rollout whose check_answer is at least 3 (var success)" in (
        built["rule"].accuracy_note
    )


def test_the_forgetting_heatmap_changes_by_the_rule(built: dict[str, Built]) -> None:
    assert _same(
        built["strict"].forgetting,
        {"P": [0, 0], "Q": [0, 0], "R": [1, 0], "S": [0, -1]},
    )
    assert _same(
        built["rule"].forgetting,
        {"P": [0, 0], "Q": [0, 0], "R": [0, 1], "S": [1, 0]},
    )


@pytest.mark.parametrize(
    ("rule", "shares", "solved_line"),
    [
        ("strict", [0.5, 0.75, 0.5], "solved: every instruction followed"),
        (
            "rule",
            [0.25, 0.5, 0.75],
            "solved: a rollout whose check_answer is at least 3 (var success)",
        ),
    ],
)
def test_summary_solved_column_counts_by_the_rule_in_force(
    built: dict[str, Built], rule: str, shares: list[float], solved_line: str
) -> None:
    found = built[rule]
    assert [row["solved_share"] for row in found.summary["by_iteration"]] == pytest.approx(shares)
    lines = found.summary_text.splitlines()
    assert lines[4] == solved_line
    header = next(i for i, x in enumerate(lines) if x.split()[:1] == ["iter"])
    assert lines[header].split() == [
        "iter", "prompts", "rollouts", "mean", "solved", "zv_solved", "zv_failed"
    ]  # fmt: skip
    assert [float(x.split()[4]) for x in lines[header + 1 : header + 4]] == pytest.approx(
        shares, abs=5e-4
    )


def test_the_run_page_names_the_rule_in_force(built: dict[str, Built]) -> None:
    assert built["strict"].tiles["solved"] == "every instruction followed"
    assert (
        built["rule"].tiles["solved"] == "a rollout whose check_answer is at least 3 (var success)"
    )
    # and its share of prompts solved at the last iteration is the rule's
    assert built["strict"].tiles["last solved share"] == "0.5"
    assert built["rule"].tiles["last solved share"] == "0.75"


def test_the_prompt_page_plots_the_rules_success_rate(built: dict[str, Built]) -> None:
    assert built["strict"].prompt_page == pytest.approx([1.0, 0.5, 0.0])
    assert built["rule"].prompt_page == pytest.approx([0.0, 0.5, 0.5])


def test_pass_rate_buckets_follow_the_rule(built: dict[str, Built]) -> None:
    hard, medium, easy = "very_hard", "medium", "very_easy"
    expected = {
        "strict": {"P": [easy] * 3, "Q": [hard] * 3, "R": [hard, medium, easy],
                   "S": [easy, medium, hard]},
        "rule": {"P": [hard] * 3, "Q": [medium, easy, easy], "R": [hard, hard, medium],
                 "S": [hard, medium, medium]},
    }  # fmt: skip
    for rule, buckets in expected.items():
        found: dict[str, list[str]] = {}
        for h, _iteration, bucket in built[rule].queries["buckets"]:
            found.setdefault(NAMES[h], []).append(bucket)
        assert found == buckets, rule


def test_sample_efficiency_quadrant_by_the_rule(built: dict[str, Built]) -> None:
    strict = _by_name(built["strict"].queries["quadrant"])
    rule = _by_name(built["rule"].queries["quadrant"])
    assert {k: v[:2] for k, v in strict.items()} == {
        "P": ("fast_learner", 1.0),
        "Q": ("hard_failed", 0.0),
        "R": ("fast_learner", 1.0),
        "S": ("quick_failure", 0.0),
    }
    assert {k: v[:2] for k, v in rule.items()} == {
        "P": ("hard_failed", 0.0),
        "Q": ("fast_learner", 1.0),
        "R": ("fast_learner", 0.5),
        "S": ("fast_learner", 0.5),
    }
    # S's final score is the same under both rules: the rule's success decides
    assert strict["S"][2] == rule["S"][2] == pytest.approx(0.15)


def test_the_curriculum_drops_what_the_rule_calls_stuck_solved(built: dict[str, Built]) -> None:
    # P scores 1.0 twice at every iteration (no GRPO signal for 3 iterations): all
    # solved by its flags, all failed by its answers
    assert [NAMES[h] for (h,) in built["strict"].queries["dropped"]] == ["P"]
    assert built["rule"].queries["dropped"] == []
    assert _by_name(built["strict"].queries["stuck"]) == {"P": (True, False)}
    assert _by_name(built["rule"].queries["stuck"]) == {"P": (False, True)}


def test_instruction_fallback_is_the_rollouts_success_and_own_flags_stay(
    built: dict[str, Built],
) -> None:
    strict = built["strict"].queries["instruction"]
    rule = built["rule"].queries["instruction"]
    assert strict == [(0, 0.5, 0.25), (1, 0.5, 0.25), (2, 0.5, 0.25)]
    assert [(i, pytest.approx(r), c) for i, r, c in rule] == [
        (0, 0.375, 0.25),
        (1, 0.625, 0.25),
        (2, 0.75, 0.25),
    ]
    [(n, joint)] = built["strict"].queries["pairs"]
    assert (n, joint) == (24, pytest.approx(12 / 24))
    [(n, joint)] = built["rule"].queries["pairs"]
    assert (n, joint) == (24, pytest.approx(14 / 24))


def test_audit_recomputes_solve_rates_by_the_rule(built: dict[str, Built]) -> None:
    strict = built["strict"].queries["audit"]
    assert [(step, verdict) for _m, step, verdict, _c in strict] == [
        (0, "disagrees"),
        (1, "agrees"),
        (2, "disagrees"),
    ]
    rule = built["rule"].queries["audit"]
    assert [(step, verdict) for _m, step, verdict, _c in rule] == [
        (0, "agrees"),
        (1, "agrees"),
        (2, "agrees"),
    ]
    conventions = {step: convention for _m, step, _v, convention in rule}
    expected = "groups, solved as var success counts it (check_answer >= 3)"
    assert conventions[0] == conventions[2] == expected


def test_watch_builds_by_its_success_rule(run: Run, tmp_path: Path) -> None:
    warehouse = tmp_path / "watched.duckdb"
    base = ["--lake", run.lake, "--warehouse", warehouse]
    run_cli([*base, "watch", run.dumps, "--run", "math", "--rounds", "1", "--success", RULE])
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        learned = con.execute("select prompt_hash from fct_prompt_learning where is_learned")
        names = "".join(sorted(NAMES[h] for (h,) in learned.fetchall()))
        [(shown,)] = con.execute("select success from rpt_dashboard_settings").fetchall()
    finally:
        con.close()
    assert (names, shown) == ("QRS", RULE)


def test_watch_refuses_a_rule_that_is_not_one(run: Run, tmp_path: Path) -> None:
    base = ["--lake", run.lake, "--warehouse", tmp_path / "w.duckdb"]
    result = run_cli(
        [*base, "watch", run.dumps, "--rounds", "1", "--success", "check_answer > 3"], 2
    )
    [line] = [x for x in result.stderr.splitlines() if x.startswith("Error:")]
    assert line.startswith("Error: Invalid value for --success: 'check_answer > 3': expected")
    assert not (tmp_path / "w.duckdb").exists()
