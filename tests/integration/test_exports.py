"""A GSM8K rollout table scored at ingest, built, and exported; files read back.

Six problems at iteration 0 (data_idx 0..5), answers scored by the built-in
gsm8k reward. Correct samples per problem, by hand:

    data_idx  samples  correct  pass_rate  mean@5  pass_rate bucket  percentile bucket
    0         4        4        1.0        1.0     very_easy         easy
    1         4        3        .75        .75     easy              medium-easy
    2         4        1        .25        .25     hard              hard
    3         4        0        0          0       very_hard         hard
    4         4        2        .5         .5      medium            medium-hard
    5         1        1        1.0        1.0     very_easy         easy

mean@5 sorted: 0, .25, .5, .75, 1, 1 -> continuous quartiles .3125, .625, .9375.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.integration

CORRECT = {0: 4, 1: 3, 2: 1, 3: 0, 4: 2, 5: 1}
SAMPLES = {0: 4, 1: 4, 2: 4, 3: 4, 4: 4, 5: 1}


def _table(path: Path) -> Path:
    rows = []
    for problem, samples in SAMPLES.items():
        truth = 10 + problem
        for sample in range(samples):
            right = sample < CORRECT[problem]
            answer = f"So the total is {truth}." if right else f"#### {truth + 1}"
            rows.append(
                {
                    "prompt": f"Problem {problem}: what is 10 + {problem}?",
                    "response": answer,
                    "data_idx": problem,
                    "sample_idx": sample,
                    "original_question": f"what is 10 + {problem}?",
                    "original_answer": f"10 + {problem} = {truth}\n#### {truth}",
                }
            )
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
            "--iteration",
            "0",
            "--reward",
            "gsm8k",
            "-q",
        ]
    )
    assert "21 rows landed, 0 rejected" in landed.stdout
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
            "0",
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
            "3",
            "--output-dir",
            tmp_path,
        ],
        exit_code=1,
    )
    assert result.stderr.endswith("run 'gsm' has no iteration 3 (it has 0..0)\n")


@pytest.mark.parametrize(
    ("mode", "expected_rows"),
    [("upsample", 6), ("order", 6), ("drop-solved", 6)],
)
def test_export_curriculum_modes(
    gsm8k: dict, tmp_path: Path, mode: str, expected_rows: int
) -> None:
    out = tmp_path / "next.parquet"
    run_cli([*gsm8k["base"], "export", "curriculum", "--run", "gsm", "--out", out, "--mode", mode])
    rows = pq.read_table(out).to_pylist()
    assert len(rows) == expected_rows
    by_problem = {r["data_idx"]: r for r in rows}
    assert by_problem[3]["prompt"] == "Problem 3: what is 10 + 3?"
    if mode == "upsample":
        # One iteration: slope null (0), no forgetting; weight = 1 + (1 - final) * 2.
        assert by_problem[3]["weight"] == 3.0 and by_problem[0]["weight"] == 1.0
        assert by_problem[2]["weight"] == pytest.approx(1 + 0.75 * 2)
        assert by_problem[3]["reason"].startswith("priority high")
    if mode == "order":
        order = [r["data_idx"] for r in sorted(rows, key=lambda r: r["order"])]
        assert order[:2] in ([0, 5], [5, 0]) and order[-1] == 3
        assert order[2:5] == [1, 4, 2]
