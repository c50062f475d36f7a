"""Odd bytes and values: each costs exactly its own row (or, for a BOM, nothing).

Issue cases 3 (one odd value aborted the file and the folder), 4 (NaN, Infinity,
1e308 broke every build), 10 (two parsers disagreed) and 11 (fields dropped).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from obs.ingest.rollouts import ingest_rollouts

from tests.conftest import lake_rows, run_cli
from tests.faults.conftest import line, write_dump

GOOD = line("first")
LAST = line("third")


@pytest.mark.parametrize(
    ("odd", "reason"),
    [
        pytest.param(
            b'{"input": "\\ud800", "output": "o", "score": 1}',
            "lone surrogate",
            id="lone-surrogate-in-prompt",
        ),
        pytest.param(
            b'{"input": "x", "output": "o", "score": 1, "note": "a\\udfffb"}',
            "lone surrogate",
            id="lone-surrogate-in-unknown-field",
        ),
        pytest.param(
            b'{"input": "x", "input": "y", "output": "o", "score": 1}',
            "duplicate key 'input'",
            id="duplicate-key",
        ),
        pytest.param(
            b'{"input": "x", "output": "o", "score": 1, "gts": {"kwargs": [], "kwargs": [1]}}',
            "duplicate key 'kwargs'",
            id="duplicate-nested-key",
        ),
        pytest.param(
            b'{"input": "x", "output": "o", "score": 1, "data_idx": 1e20}',
            "field 'data_idx' is out of range for a 64-bit integer",
            id="int-beyond-bigint",
        ),
        pytest.param(
            b'{"input": "x", "output": "o", "score": 1, "data_idx": 100000000000000000000}',
            "field 'data_idx' is out of range for a 64-bit integer",
            id="long-int-beyond-bigint",
        ),
        pytest.param(
            b'{"input": "x", "output": "o", "score": 1, "num_followed": "1_000"}',
            "field 'num_followed' must be a whole number, got text '1_000'",
            id="underscore-number-text",
        ),
        pytest.param(
            b'{"input": "caf\xe9", "output": "o", "score": 1}',
            "not valid UTF-8 text",
            id="latin-1-byte",
        ),
        pytest.param(b'{"input": "x", "output": "o", "score": NaN}', "not a finite", id="nan"),
        pytest.param(
            b'{"input": "x", "output": "o", "score": Infinity}', "not a finite", id="infinity"
        ),
        pytest.param(
            b'{"input": "x", "output": "o", "score": -Infinity}', "not a finite", id="-infinity"
        ),
        pytest.param(
            b'{"input": "x", "output": "o", "score": 1e308}',
            "field 'score' is out of range",
            id="1e308",
        ),
        pytest.param(
            b'{"input": "x", "output": "o", "score": 1e400}', "not a finite", id="1e400-overflows"
        ),
        pytest.param(
            b'{"input" : 123, "output": "o", "score": 1}',
            "field 'input' must be text, got number",
            id="space-before-colon-number-prompt",
        ),
        pytest.param(
            b'{"input": "x", "output": "o", "score": 1, "follow_instruction_list": [2]}',
            "must be a list of true/false (or 0/1)",
            id="flag-2",
        ),
        pytest.param(
            b'{"input": "x", "output": "o", "score": true}',
            "field 'score' must be a number, got boolean",
            id="boolean-score",
        ),
        pytest.param(
            b'{"input": "x", "output": "o", "score": 1}{"input": "y"}',
            "malformed JSON: Extra data",
            id="two-objects-on-one-line",
        ),
    ],
)
def test_odd_value_costs_exactly_its_row(
    tmp_path: Path, lake: Path, odd: bytes, reason: str
) -> None:
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    path = dumps / "0.jsonl"
    path.write_bytes(GOOD.encode() + b"\n" + odd + b"\n" + LAST.encode() + b"\n")
    # A second file of the folder must land whatever the first holds.
    write_dump(dumps / "1.jsonl", [line("next file")])
    result = ingest_rollouts(dumps, lake=lake, run_id="r")
    assert (result.rows_landed, result.rows_rejected) == (3, 1)
    assert [r["prompt"] for r in lake_rows(lake)] == ["first", "third", "next file"]
    [reject] = lake_rows(lake, "_rejects")
    assert (reject["source_file"], reject["source_line"]) == (str(path.resolve()), 2)
    assert reason in reject["reason"]
    assert reject["raw"]  # the line as read, for the user to look at


def test_step_with_a_fraction_is_rejected_in_a_table(tmp_path: Path, lake: Path) -> None:
    path = write_dump(tmp_path / "table.jsonl", [line("a", step=2), line("b", step=2.5)])
    result = ingest_rollouts(path, lake=lake, run_id="t")
    assert result.rows_landed == 1
    [reject] = lake_rows(lake, "_rejects")
    assert reject["source_line"] == 2
    assert reject["reason"] == "field 'step' must be a whole number, got 2.5"


def test_byte_order_mark_and_crlf_cost_nothing(tmp_path: Path, lake: Path) -> None:
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    body = "\r\n".join([GOOD, line("second"), LAST]) + "\r\n"
    (dumps / "0.jsonl").write_bytes(b"\xef\xbb\xbf" + body.encode())
    result = ingest_rollouts(dumps, lake=lake, run_id="r")
    assert (result.rows_landed, result.rows_rejected) == (3, 0)
    rows = lake_rows(lake)
    assert [(r["prompt"], r["source_line"]) for r in rows] == [
        ("first", 1),
        ("second", 2),
        ("third", 3),
    ]


def test_escaped_key_is_the_same_key(tmp_path: Path, lake: Path) -> None:
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    (dumps / "0.jsonl").write_bytes(b'{"\\u0069nput": "escaped", "output": "o", "score": 0.5}\n')
    assert ingest_rollouts(dumps, lake=lake, run_id="r").rows_landed == 1
    [row] = lake_rows(lake)
    assert (row["prompt"], row["score"], row["extra"]) == ("escaped", 0.5, None)


def test_lossless_conversions_are_the_same_in_every_file(tmp_path: Path, lake: Path) -> None:
    lenient = line("lenient", "0.5", follow_instruction_list=[1, 0], num_followed=1.0)
    write_dump(tmp_path / "d" / "0.jsonl", [lenient])
    write_dump(tmp_path / "d" / "1.jsonl", ["", "   ", lenient])
    ingest_rollouts(tmp_path / "d", lake=lake, run_id="r")
    picked = [
        (r["score"], r["instruction_followed"], r["num_followed"], r["source_line"])
        for r in lake_rows(lake)
    ]
    assert picked == [(0.5, [True, False], 1, 1), (0.5, [True, False], 1, 3)]


def test_non_finite_values_in_unknown_fields_are_kept_as_text(tmp_path: Path, lake: Path) -> None:
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    (dumps / "0.jsonl").write_bytes(
        b'{"input": "x", "output": "o", "score": 1, "kl": NaN, "ratio": [Infinity, 1]}\n'
    )
    assert ingest_rollouts(dumps, lake=lake, run_id="r").rows_landed == 1
    assert json.loads(lake_rows(lake)[0]["extra"]) == {"kl": "NaN", "ratio": ["Infinity", 1]}


def test_secondary_fields_are_kept_not_dropped(tmp_path: Path, lake: Path) -> None:
    dumps = tmp_path / "dumps"
    fields = {"reward": 0.25, "gts": "4", "step": 7, "acc": True, "sample_idx": 3}
    write_dump(dumps / "0.jsonl", [line("q", 1.0, **fields)])
    ingest_rollouts(dumps, lake=lake, run_id="r")
    [row] = lake_rows(lake)
    assert row["score"] == 1.0 and row["iteration"] == 0
    # A bare-string gts is the ground truth: the JSON string "4".
    assert json.loads(row["ground_truth"]) == "4"
    # reward beside score, a step that disagrees with the file name, the
    # source's own sample_idx: all kept in extra.
    assert json.loads(row["extra"]) == {"reward": 0.25, "step": 7, "acc": True, "sample_idx": 3}


@pytest.mark.integration
def test_build_stays_green_after_non_finite_scores(tmp_path: Path) -> None:
    lake, warehouse = tmp_path / "lake", tmp_path / "w.duckdb"
    base = ["--lake", lake, "--warehouse", warehouse]
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "0.jsonl").write_bytes(
        b'{"input": "p", "output": "o", "score": NaN}\n'
        b'{"input": "p", "output": "o", "score": 1e308}\n'
        b'{"input": "p", "output": "o", "score": -Infinity}\n'
        b'{"input": "p", "output": "o", "score": 0.5}\n'
        b'{"input": "p", "output": "o", "score": 1.0}\n'
    )
    write_dump(tmp_path / "good" / "0.jsonl", [line("g", 1.0), line("g", 0.0)])
    landed = run_cli([*base, "ingest", "rollouts", bad, "--run", "bad", "-q"])
    assert landed.stdout == ""  # quiet: no summary, but the rejects still say so
    assert "run bad: 3 rejected, from 1 file" in landed.stderr
    run_cli([*base, "ingest", "rollouts", tmp_path / "good", "--run", "good", "-q"])
    run_cli([*base, "build"])
    out = run_cli(
        [
            *base,
            "sql",
            "--format",
            "csv",
            "select run_id, n_samples, mean_score, round(std_score, 12) as std_score "
            "from fct_prompt_iteration order by 1",
        ]
    )
    assert out.stdout.splitlines()[1:] == [
        "bad,2,0.75,0.353553390593",
        "good,2,0.5,0.707106781187",
    ]
