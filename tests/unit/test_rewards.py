"""Rewards at ingest: the GSM8K extractor, user functions, parallel scoring, token counts."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from obs.ingest.errors import IngestError
from obs.ingest.rewards import (
    extract_gsm8k_answer,
    gsm8k_reward,
    load_reward,
    parse_number,
    score_rows,
)
from obs.ingest.rollouts import ingest_rollouts

from tests.conftest import lake_rows


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("The answer is 1,234.", Decimal("1234")),
        ("So she has 18 apples.\n#### 18", Decimal("18")),
        ("#### -5", Decimal("-5")),
        ("#### $1,000", Decimal("1000")),
        ("It costs $12.50.", Decimal("12.50")),
        (r"Thus \boxed{42} is it, not 7", Decimal("42")),
        (r"\boxed{3.50}", Decimal("3.5")),
        ("first 3 then 7.", Decimal("7")),
        ("The change is \u22124.", Decimal("-4")),
        ("x = .5", Decimal("0.5")),
        ("He ran 1,000,000 meters", Decimal("1000000")),
        ("Working: 2 + 3 = 5 so #### 5 and later 9", Decimal("5")),
        ("no number here", None),
        ("", None),
    ],
)
def test_gsm8k_extractor_awkward_answers(response: str, expected: Decimal | None) -> None:
    assert extract_gsm8k_answer(response) == expected


@pytest.mark.parametrize(
    ("row", "reward"),
    [
        ({"response": "#### 72", "original_answer": "48 + 24 = 72\n#### 72"}, 1.0),
        ({"response": "The answer is 72.", "original_answer": "#### 72"}, 1.0),
        ({"response": "The answer is 72.00", "original_answer": "#### 72"}, 1.0),
        ({"response": "The answer is 1,234", "original_answer": "#### 1234"}, 1.0),
        ({"response": "#### 71", "original_answer": "#### 72"}, 0.0),
        ({"response": "nothing", "original_answer": "#### 72"}, 0.0),
        ({"response": r"\boxed{-3}", "reward_model": {"ground_truth": "-3"}}, 1.0),
        ({"response": "#### 5", "reward_model": json.dumps({"ground_truth": "5"})}, 1.0),
    ],
)
def test_gsm8k_reward_compares_numbers(row: dict, reward: float) -> None:
    assert gsm8k_reward(row) == reward


def test_gsm8k_reward_without_ground_truth_raises() -> None:
    with pytest.raises(ValueError, match="no ground truth"):
        gsm8k_reward({"response": "#### 1"})


def test_parse_number_keeps_decimals_exact() -> None:
    assert parse_number("$0.10") + parse_number("0.20") == Decimal("0.30")


def test_load_reward_rejects_unknown_names() -> None:
    with pytest.raises(IngestError, match="not a built-in"):
        load_reward("math500")
    with pytest.raises(IngestError, match="cannot import no_such_module"):
        load_reward("no_such_module:f")
    with pytest.raises(IngestError, match="has no function nope"):
        load_reward("tests.data.custom_rewards:nope")


def test_score_rows_parallel_keeps_row_order() -> None:
    rows = [{"response": f"#### {i % 7}", "original_answer": f"#### {i % 5}"} for i in range(5000)]
    scored = score_rows("gsm8k", rows, workers=2)
    assert [s.reward for s in scored] == [1.0 if i % 7 == i % 5 else 0.0 for i in range(5000)]
    assert all(s.error is None for s in scored)


def _gsm8k_table(path: Path) -> Path:
    table = pa.table(
        {
            "prompt": ["q1", "q1", "q2", "q3"],
            "response": ["#### 4", "I think 5.", r"\boxed{9}", ""],
            "data_idx": [0, 0, 1, 2],
            "sample_idx": [0, 1, 0, 0],
            "original_answer": ["2+2=4\n#### 4", "#### 4", "#### 9", "#### 1"],
        }
    )
    pq.write_table(table, path)
    return path


def test_ingest_with_gsm8k_reward_scores_every_row(tmp_path: Path, lake: Path) -> None:
    path = _gsm8k_table(tmp_path / "unscored.parquet")
    result = ingest_rollouts(path, lake=lake, run_id="g", iteration=0, reward="gsm8k")
    assert result.rows_landed == 4
    rows = lake_rows(lake)
    assert [(r["data_idx"], r["score"], r["source_line"]) for r in rows] == [
        (0, 1.0, 1),
        (0, 0.0, 2),
        (1, 1.0, 3),
        (2, 0.0, 4),
    ]
    assert json.loads(rows[0]["extra"])["original_answer"] == "2+2=4\n#### 4"


def test_ingest_custom_reward_that_raises_rejects_only_that_row(tmp_path: Path, lake: Path) -> None:
    path = _gsm8k_table(tmp_path / "unscored.parquet")
    result = ingest_rollouts(
        path, lake=lake, run_id="c", iteration=0, reward="tests.data.custom_rewards:length_reward"
    )
    assert (result.rows_landed, result.rows_rejected) == (3, 1)
    assert [(r["source_line"], r["score"]) for r in lake_rows(lake)] == [
        (1, 1.0),
        (2, 1.0),
        (3, 1.0),
    ]
    [reject] = lake_rows(lake, "_rejects")
    assert reject["source_line"] == 4
    assert reject["reason"] == (
        "reward function tests.data.custom_rewards:length_reward raised ValueError: empty response"
    )


def test_ingest_table_without_reward_names_the_fix(tmp_path: Path, lake: Path) -> None:
    path = _gsm8k_table(tmp_path / "unscored.parquet")
    result = ingest_rollouts(path, lake=lake, iteration=0)
    assert result.rows_landed == 0 and result.files[0].status == "retry"
    assert "pass --reward gsm8k (or package.module:function)" in result.files[0].note


def test_ingest_tokenizer_counts_response_tokens(tmp_path: Path, lake: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocabulary = {"[UNK]": 0, "####": 1, "4": 2, "I": 3, "think": 4, "5": 5, ".": 6}
    tokenizer = Tokenizer(models.WordLevel(vocabulary, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer_path = tmp_path / "tokenizer.json"
    tokenizer.save(str(tokenizer_path))
    path = _gsm8k_table(tmp_path / "unscored.parquet")
    ingest_rollouts(
        path, lake=lake, run_id="t", iteration=0, reward="gsm8k", tokenizer=tokenizer_path
    )
    counts = [json.loads(r["extra"])["response_tokens"] for r in lake_rows(lake)]
    # "#### 4" -> 2; "I think 5." -> 4; "\boxed{9}" -> \ boxed { 9 } -> 5; "" -> 0
    assert counts == [2, 4, 5, 0]
