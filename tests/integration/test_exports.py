"""A GSM8K rollout table scored at ingest, built, and exported; files read back.

Six problems at iteration 3 (data_idx 0..5), answers scored by the built-in
gsm8k reward. Correct samples per problem, by hand:

    data_idx  samples  correct  pass_rate  mean@5  pass_rate bucket  percentile bucket
    0         4        4        1.0        1.0     very_easy         easy
    1         4        3        .75        .75     easy              medium-easy
    2         4        1        .25        .25     hard              hard
    3         4        0        0          0       very_hard         hard
    4         4        2        .5         .5      medium            medium-hard
    5         1        1        1.0        1.0     very_easy         easy

mean@5 sorted: 0, .25, .5, .75, 1, 1 -> continuous quartiles .3125, .625, .9375.

A seventh problem (data_idx 6) came earlier, at iterations 0, 1 and 2, and both
its samples were right every time: no GRPO signal for the last three
(dead_prompt_streak) of its iterations, so it is stuck solved, the only such
prompt. It is not in iteration 3, so the bucket files do not see it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.integration

LAST = 3  # the iteration of problems 0..5
CORRECT = {0: 4, 1: 3, 2: 1, 3: 0, 4: 2, 5: 1}
SAMPLES = {0: 4, 1: 4, 2: 4, 3: 4, 4: 4, 5: 1}
STUCK_SOLVED = 6  # two samples, both right, at iterations 0, 1 and 2


def _rows(problem: int, iteration: int, samples: int, correct: int) -> list[dict]:
    truth = 10 + problem
    return [
        {
            "prompt": f"Problem {problem}: what is 10 + {problem}?",
            "response": f"So the total is {truth}." if sample < correct else f"#### {truth + 1}",
            "data_idx": problem,
            "sample_idx": sample,
            "iteration": iteration,
            "original_question": f"what is 10 + {problem}?",
            "original_answer": f"10 + {problem} = {truth}\n#### {truth}",
        }
        for sample in range(samples)
    ]


def _table(path: Path) -> Path:
    rows = [row for it in range(LAST) for row in _rows(STUCK_SOLVED, it, 2, 2)]
    for problem, samples in SAMPLES.items():
        rows += _rows(problem, LAST, samples, CORRECT[problem])
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


@pytest.fixture(scope="module")
def gsm8k(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("gsm8k")
    table = _table(root / "rollouts.parquet")
    base = ["--lake", root / "lake", "--warehouse", root / "obs.duckdb"]
    landed = run_cli(
        [
            *base,
            "ingest",
            "rollouts",
            table,
            "--run",
            "gsm",
            "--reward",
            "gsm8k",
        ]
    )
    assert "27 rows landed, 0 rejected" in landed.stdout
    run_cli([*base, "build"])
    return {"root": root, "base": base}  # type: ignore[dict-item]


def test_export_buckets_pass_rate_files(gsm8k: dict, tmp_path: Path) -> None:
    out = tmp_path / "buckets"
    result = run_cli(
        [
            *gsm8k["base"],
            "export",
            "buckets",
            "--run",
            "gsm",
            "--strategy",
            "pass_rate",
            "--output-dir",
            out,
        ]
    )
    assert "ANALYSIS SUMMARY" in result.stderr
    assert "total problems: 6   (keyed by data_idx)" in result.stderr
    buckets = json.loads((out / "problem_buckets.json").read_text())
    assert buckets == {
        "0": "very_easy",
        "1": "easy",
        "2": "hard",
        "3": "very_hard",
        "4": "medium",
        "5": "very_easy",
    }
    metrics = json.loads((out / "problem_metrics.json").read_text())
    assert metrics["1"]["pass_rate"] == 0.75 and metrics["1"]["num_samples"] == 4
    assert metrics["1"]["mean@1"] == 1.0 and metrics["1"]["mean@5"] == 0.75
    assert (metrics["1"]["max_reward"], metrics["1"]["min_reward"]) == (1.0, 0.0)
    assert metrics["5"]["std_reward"] == 0.0 and metrics["5"]["num_samples"] == 1
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["total_problems"], summary["total_rollouts"]) == (6, 21)
    assert summary["bucket_distribution"] == {
        "very_easy": 2,
        "easy": 1,
        "hard": 1,
        "very_hard": 1,
        "medium": 1,
    }
    assert summary["overall_metrics"]["mean_reward"] == pytest.approx(11 / 21)
    everything = pq.read_table(out / "rollouts_with_rewards.parquet")
    assert everything.num_rows == 21
    assert sum(everything.column("reward").to_pylist()) == 11
    very_easy = pq.read_table(out / "rollouts_very_easy.parquet")
    assert sorted(set(very_easy.column("data_idx").to_pylist())) == [0, 5]
    assert very_easy.num_rows == 5
    printed = [Path(line) for line in result.stdout.splitlines()]
    # metrics, buckets, all rollouts, five bucket files, summary
    assert out / "summary.json" in printed and len(printed) == 9


def test_export_buckets_percentile_ties_share_bucket(gsm8k: dict, tmp_path: Path) -> None:
    out = tmp_path / "pct"
    run_cli(
        [
            *gsm8k["base"],
            "export",
            "buckets",
            "--run",
            "gsm",
            "--iteration",
            "3",
            "--strategy",
            "percentile",
            "--output-dir",
            out,
        ]
    )
    buckets = json.loads((out / "problem_buckets.json").read_text())
    assert buckets == {
        "0": "easy",
        "1": "medium-easy",
        "2": "hard",
        "3": "hard",
        "4": "medium-hard",
        "5": "easy",
    }


def test_export_buckets_unknown_iteration_is_one_line(gsm8k: dict, tmp_path: Path) -> None:
    result = run_cli(
        [
            *gsm8k["base"],
            "export",
            "buckets",
            "--run",
            "gsm",
            "--iteration",
            "4",
            "--output-dir",
            tmp_path,
        ],
        exit_code=1,
    )
    assert result.stderr.endswith("run 'gsm' has no iteration 4 (it has 0..3)\n")


@pytest.mark.parametrize(
    ("mode", "kept", "dropped"),
    [
        ("upsample", [0, 1, 2, 3, 4, 5, STUCK_SOLVED], 0),
        ("order", [0, 1, 2, 3, 4, 5, STUCK_SOLVED], 0),
        ("drop-solved", [0, 1, 2, 3, 4, 5], 1),
    ],
)
def test_export_curriculum_modes(
    gsm8k: dict, tmp_path: Path, mode: str, kept: list[int], dropped: int
) -> None:
    out = tmp_path / "next.parquet"
    result = run_cli(
        [*gsm8k["base"], "export", "curriculum", "--run", "gsm", "--out", out, "--mode", mode]
    )
    assert result.stderr == f"{len(kept)} prompts written ({dropped} dropped), mode {mode}\n"
    rows = pq.read_table(out).to_pylist()
    by_problem = {r["data_idx"]: r for r in rows}
    assert len(rows) == len(by_problem) and sorted(by_problem) == kept
    assert by_problem[3]["prompt"] == "Problem 3: what is 10 + 3?"
    if mode == "upsample":
        # One iteration: slope null (0), no forgetting; weight = 1 + (1 - final) * 2.
        assert by_problem[3]["weight"] == 3.0 and by_problem[0]["weight"] == 1.0
        assert by_problem[2]["weight"] == pytest.approx(1 + 0.75 * 2)
        assert by_problem[3]["reason"].startswith("priority high")
        # Final 1, flat slope, no forgetting: score 0, weight 1, halved when stuck solved.
        assert by_problem[STUCK_SOLVED]["weight"] == 0.5
        assert by_problem[STUCK_SOLVED]["reason"] == (
            "priority low: final 0.00 + slope 0.00 + forgetting 0.00; stuck solved"
        )
    if mode == "order":
        order = [r["data_idx"] for r in sorted(rows, key=lambda r: r["order"])]
        assert sorted(order[:3]) == [0, 5, STUCK_SOLVED] and order[-1] == 3
        assert order[3:6] == [1, 4, 2]
    if mode == "drop-solved":
        # Only the stuck-solved prompt goes; every other keeps weight 1 and says why.
        assert [r["weight"] for r in rows] == [1.0] * 6
        assert {r["reason"] for r in rows} == {"kept: still gives signal"}
