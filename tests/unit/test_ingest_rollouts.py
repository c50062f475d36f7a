"""Rollout ingest: what lands, what is rejected and why, idempotence and growth."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from obs.ingest.errors import IngestError
from obs.ingest.rollouts import ingest_rollouts

from tests.conftest import lake_rows


def _line(prompt: str = "p", score: object = 1.0, **fields: object) -> str:
    return json.dumps({"input": prompt, "output": f"answer to {prompt}", "score": score, **fields})


def _write(path: Path, lines: list[str], tail: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n" + tail)
    return path


def test_ingest_dumps_lands_every_row_with_identity(data_dir: Path, lake: Path) -> None:
    result = ingest_rollouts(data_dir / "ifeval_small", lake=lake, run_id="small")
    rows = lake_rows(lake)
    # 4 + 6 + 6 good lines; 2.jsonl has two bad lines and a truncated tail.
    assert result.rows_landed == 16 == len(rows)
    assert result.rows_rejected == 2
    assert {r["run_id"] for r in rows} == {"small"}
    assert sorted({r["iteration"] for r in rows}) == [0, 1, 2]
    for row in rows:
        expected = hashlib.sha256(row["prompt"].encode()).hexdigest()[:16]
        assert row["prompt_hash"] == expected
        assert row["response_chars"] == len(row["response"])


def test_ingest_dumps_keeps_line_numbers_and_sample_order(data_dir: Path, lake: Path) -> None:
    ingest_rollouts(data_dir / "ifeval_small", lake=lake, run_id="small")
    rows = lake_rows(lake, where="iteration = 2")
    # Lines 3 and 6 of 2.jsonl were rejected, so the good ones keep their own numbers.
    assert [r["source_line"] for r in rows] == [1, 2, 4, 5, 7, 8]
    assert [r["sample_idx"] for r in rows] == [0, 1, 0, 1, 0, 1]
    assert all(r["source_file"].endswith("ifeval_small/2.jsonl") for r in rows)


def test_ingest_dumps_maps_ifeval_fields(data_dir: Path, lake: Path) -> None:
    ingest_rollouts(data_dir / "ifeval_small", lake=lake, run_id="small")
    row = lake_rows(lake, where="iteration = 1 and score = 0.25")[0]
    assert row["instruction_ids"] == ["detectable_format:json_format", "startend:end_checker"]
    assert row["instruction_followed"] == [True, False]
    assert json.loads(row["instruction_kwargs"]) == [{}, {}]
    assert json.loads(row["ground_truth"])["instruction_id_list"] == row["instruction_ids"]
    assert row["num_instructions"] == 2 and row["num_followed"] == 1
    assert row["inst_strict_acc"] == 0.5
    assert row["extra"] is None


def test_ingest_keeps_unknown_fields_in_extra(data_dir: Path, lake: Path) -> None:
    ingest_rollouts(data_dir / "ifeval_small", lake=lake, run_id="small")
    extras = [r["extra"] for r in lake_rows(lake, where="iteration = 0")]
    assert json.loads(extras[0]) == {"response_tokens": 12}
    assert extras[1:] == [None, None, None]


def test_ingest_rejects_record_file_line_reason_and_raw(data_dir: Path, lake: Path) -> None:
    ingest_rollouts(data_dir / "ifeval_small", lake=lake, run_id="small")
    rejects = lake_rows(lake, "_rejects")
    assert [(r["source_line"], r["reason"].split(":")[0]) for r in rejects] == [
        (3, "malformed JSON"),
        (6, "missing required field 'score' (or 'reward')"),
    ]
    assert rejects[0]["raw"] == '{"input": "broken line", "output": '
    assert all(r["source_file"].endswith("2.jsonl") for r in rejects)


@pytest.mark.parametrize(
    ("bad_line", "reason"),
    [
        ('{"input": "x", "output": "y", "score": ', "malformed JSON"),
        ('["a", "list"]', "not a JSON object (list)"),
        ('{"output": "y", "score": 1}', "missing required field 'input' (the prompt)"),
        ('{"input": "x", "score": 1}', "missing required field 'output' (the response)"),
        (
            '{"input": "x", "output": "y", "score": "high"}',
            "field 'score' must be a number, got text 'high'",
        ),
        ('{"input": 7, "output": "y", "score": 1}', "field 'input' must be text, got number"),
        (
            '{"input": "x", "output": "y", "score": 1, "num_followed": "two"}',
            "field 'num_followed' must be a whole number, got text 'two'",
        ),
        (
            '{"input": "x", "output": "y", "score": 1, "follow_instruction_list": ["maybe"]}',
            "field 'follow_instruction_list' must be a list of true/false (or 0/1)",
        ),
        (
            '{"input": "x", "output": "y", "score": 1, "num_instructions": 1.5}',
            "field 'num_instructions' must be a whole number, got 1.5",
        ),
    ],
)
def test_ingest_bad_line_is_rejected_and_neighbours_land(
    tmp_path: Path, lake: Path, bad_line: str, reason: str
) -> None:
    dumps = tmp_path / "dumps"
    _write(dumps / "0.jsonl", [_line("first"), bad_line, _line("third")])
    result = ingest_rollouts(dumps, lake=lake, run_id="r")
    assert result.rows_landed == 2
    assert [r["prompt"] for r in lake_rows(lake)] == ["first", "third"]
    [reject] = lake_rows(lake, "_rejects")
    assert reject["source_line"] == 2
    assert reject["reason"].startswith(reason)


def test_ingest_lossless_conversions_land_the_same_on_both_paths(
    tmp_path: Path, lake: Path
) -> None:
    lenient = _line("lenient", "0.5", follow_instruction_list=[1, 0], num_followed=1.0)
    # 0.jsonl is clean (fast path); 1.jsonl has a blank line (careful path).
    _write(tmp_path / "d" / "0.jsonl", [lenient])
    _write(tmp_path / "d" / "1.jsonl", ["", lenient])
    ingest_rollouts(tmp_path / "d", lake=lake, run_id="r")
    rows = lake_rows(lake)
    picked = [(r["score"], r["instruction_followed"], r["num_followed"]) for r in rows]
    assert picked == [(0.5, [True, False], 1), (0.5, [True, False], 1)]


def test_ingest_blank_lines_keep_true_line_numbers(tmp_path: Path, lake: Path) -> None:
    dumps = tmp_path / "dumps"
    _write(dumps / "0.jsonl", [_line("a"), "", _line("b"), "   ", _line("c")])
    result = ingest_rollouts(dumps, lake=lake, run_id="r")
    assert [(r["prompt"], r["source_line"]) for r in lake_rows(lake)] == [
        ("a", 1),
        ("b", 3),
        ("c", 5),
    ]
    # Blank lines are skipped, not rejected: no reject written anywhere in the lake.
    assert result.rows_rejected == 0
    assert list(lake.glob("_rejects/**/*.parquet")) == []


def test_ingest_same_files_twice_adds_nothing(data_dir: Path, lake: Path) -> None:
    first = ingest_rollouts(data_dir / "ifeval_small", lake=lake, run_id="small")
    second = ingest_rollouts(data_dir / "ifeval_small", lake=lake, run_id="small")
    assert first.rows_landed == 16
    assert second.rows_landed == 0 and second.rows_rejected == 0
    assert second.files_skipped == 3
    assert len(lake_rows(lake)) == 16
    assert len(lake_rows(lake, "_rejects")) == 2


def test_ingest_grown_dump_lands_only_new_complete_lines(data_dir: Path, lake: Path) -> None:
    dumps = data_dir / "ifeval_small"
    ingest_rollouts(dumps, lake=lake, run_id="small")
    # The live run finishes the truncated line and appends one more sample.
    with (dumps / "2.jsonl").open("a") as handle:
        handle.write('ten", "output": "o", "score": 0.5, "step": 2}\n')
        handle.write(_line("a line still being written", 0.25, step=2) + "\n")
    result = ingest_rollouts(dumps, lake=lake, run_id="small")
    assert result.rows_landed == 2 and result.rows_rejected == 0
    grown = lake_rows(lake, where="prompt = 'a line still being written'")
    assert [(r["source_line"], r["sample_idx"], r["score"]) for r in grown] == [
        (9, 0, 0.5),
        (10, 1, 0.25),
    ]
    assert len(lake_rows(lake)) == 18


def test_ingest_grown_group_continues_sample_numbering(tmp_path: Path, lake: Path) -> None:
    dumps = tmp_path / "dumps"
    path = _write(dumps / "0.jsonl", [_line("g"), _line("g")])
    ingest_rollouts(dumps, lake=lake, run_id="r")
    with path.open("a") as handle:
        handle.write(_line("g") + "\n")
    ingest_rollouts(dumps, lake=lake, run_id="r")
    assert [r["sample_idx"] for r in lake_rows(lake)] == [0, 1, 2]


def test_ingest_rewritten_file_is_skipped_not_duplicated(tmp_path: Path, lake: Path) -> None:
    dumps = tmp_path / "dumps"
    _write(dumps / "0.jsonl", [_line("old", 1.0)])
    ingest_rollouts(dumps, lake=lake, run_id="r")
    _write(dumps / "0.jsonl", [_line("new", 0.0), _line("newer", 0.0)])
    result = ingest_rollouts(dumps, lake=lake, run_id="r")
    assert result.rows_landed == 0
    assert "changed since it was ingested" in result.files[0].note
    assert [r["prompt"] for r in lake_rows(lake)] == ["old"]


def test_ingest_gzip_dump(tmp_path: Path, lake: Path) -> None:
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    payload = "\n".join([_line("a", 1.0), _line("b", 0.0)]) + "\n"
    (dumps / "3.jsonl.gz").write_bytes(gzip.compress(payload.encode()))
    result = ingest_rollouts(dumps, lake=lake, run_id="r")
    assert result.rows_landed == 2
    assert [(r["iteration"], r["prompt"]) for r in lake_rows(lake)] == [(3, "a"), (3, "b")]


def test_ingest_iterations_subset(data_dir: Path, lake: Path) -> None:
    result = ingest_rollouts(data_dir / "ifeval_small", lake=lake, run_id="s", iterations=[0, 2])
    assert len(result.files) == 2
    assert sorted({r["iteration"] for r in lake_rows(lake)}) == [0, 2]


def test_ingest_rollout_table_parquet(tmp_path: Path, lake: Path) -> None:
    table = pa.table(
        {
            "prompt": ["q1", "q1", "q2"],
            "response": ["#### 4", "#### 5", "#### 9"],
            "data_idx": [10, 10, 11],
            "sample_idx": [0, 1, 0],
            "reward": [1.0, 0.0, 1.0],
            "original_answer": ["#### 4", "#### 4", "#### 9"],
        }
    )
    path = tmp_path / "rollouts_gsm8k.parquet"
    pq.write_table(table, path)
    result = ingest_rollouts(path, lake=lake, iteration=5)
    assert result.run_id == "rollouts_gsm8k"
    rows = lake_rows(lake)
    assert [(r["data_idx"], r["sample_idx"], r["score"], r["iteration"]) for r in rows] == [
        (10, 0, 1.0, 5),
        (10, 1, 0.0, 5),
        (11, 0, 1.0, 5),
    ]
    # obs numbers samples itself; the table's own sample_idx is kept in extra.
    assert json.loads(rows[1]["extra"]) == {"sample_idx": 1, "original_answer": "#### 4"}
    assert [r["source_line"] for r in rows] == [1, 2, 3]
    again = ingest_rollouts(path, lake=lake, iteration=5)
    assert again.rows_landed == 0 and again.files_skipped == 1


def test_ingest_rollout_table_jsonl_uses_step_for_iteration(tmp_path: Path, lake: Path) -> None:
    path = _write(
        tmp_path / "table.jsonl",
        [
            json.dumps({"prompt": "q", "response": "r", "reward": 1, "step": 4}),
            json.dumps({"prompt": "q", "response": "r2", "reward": 0, "step": 5}),
        ],
    )
    ingest_rollouts(path, lake=lake, run_id="t")
    assert [(r["iteration"], r["sample_idx"]) for r in lake_rows(lake)] == [(4, 0), (5, 0)]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d / "missing", "no such file or folder"),
        (lambda d: (d / "empty").mkdir() or d / "empty", "no rollout files here"),
        (
            lambda d: (d / "notes.txt").write_text("hi") and d / "notes.txt",
            "unknown format",
        ),
    ],
)
def test_ingest_unusable_path_raises_one_line(tmp_path: Path, lake: Path, make, message) -> None:
    path = make(tmp_path)
    with pytest.raises(IngestError) as raised:
        ingest_rollouts(path, lake=lake, run_id="r")
    assert message in str(raised.value)
    assert str(path) in str(raised.value)
    assert "\n" not in str(raised.value)


def test_ingest_table_without_iteration_asks_for_one_and_is_not_remembered(
    tmp_path: Path, lake: Path
) -> None:
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"prompt": ["q"], "response": ["r"], "reward": [1.0]}), path)
    first = ingest_rollouts(path, lake=lake)
    assert first.files[0].status == "retry"
    assert "pass --iteration N" in first.files[0].note
    assert first.rows_landed == 0 and first.rows_rejected == 1
    # Nothing was recorded, so the corrected retry lands the row.
    again = ingest_rollouts(path, lake=lake, iteration=3)
    assert again.rows_landed == 1
    assert [(r["iteration"], r["prompt"]) for r in lake_rows(lake)] == [(3, "q")]
    assert not (lake / "_rejects").exists()


def test_ingest_crash_leaves_no_parquet(
    tmp_path: Path, lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from obs.ingest import lake as lake_module

    dumps = tmp_path / "dumps"
    _write(dumps / "0.jsonl", [_line("a"), _line("b")])

    def crash(*args: object) -> str:
        raise KeyboardInterrupt("killed mid-ingest")

    monkeypatch.setattr(lake_module, "publish", crash)
    with pytest.raises(KeyboardInterrupt):
        ingest_rollouts(dumps, lake=lake, run_id="r")
    assert list((lake / "rollouts").rglob("*.parquet")) == []
    monkeypatch.undo()
    # Nothing was recorded either, so the next ingest lands the file whole.
    assert ingest_rollouts(dumps, lake=lake, run_id="r").rows_landed == 2
    assert [p.name for p in lake.rglob("*") if ".tmp" in p.name or "_staging/" in str(p)] == []
