"""Edges a review found by reproducing them: each lost, doubled or aborted data before."""

from __future__ import annotations

import datetime
import decimal
import gzip
import json
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from obs.ingest import rollouts as rollouts_module
from obs.ingest.rollouts import ingest_rollouts

from tests.conftest import lake_rows
from tests.faults.conftest import OBS, assert_lake_sound, line, write_dump


def test_integer_too_large_for_a_double_is_a_reject_not_a_crash(tmp_path: Path, lake: Path) -> None:
    dumps = tmp_path / "dumps"
    huge = "1" + "0" * 400
    write_dump(dumps / "0.jsonl", [line("a"), f'{{"input": "b", "output": "o", "score": {huge}}}'])
    write_dump(dumps / "1.jsonl", [line("c", rewards={"f": int(huge)})])
    result = ingest_rollouts(dumps, lake=lake, run_id="r")
    assert (result.rows_landed, result.rows_rejected) == (1, 2)
    assert {r["reason"] for r in lake_rows(lake, "_rejects")} == {
        "field 'score' is out of range (at most 1e100 in size)",
        "field 'rewards.f' is out of range (at most 1e100 in size)",
    }


def test_unreadable_parquet_file_does_not_stop_the_folder(tmp_path: Path, lake: Path) -> None:
    folder = tmp_path / "out" / "completions"
    folder.mkdir(parents=True)
    good = pa.table({"step": [2], "prompt": ["p"], "completion": ["c"], "acc": [1.0]})
    pq.write_table(good, folder / "completions_00002.parquet")
    data = (folder / "completions_00002.parquet").read_bytes()
    (folder / "completions_00001.parquet").write_bytes(data[: len(data) // 2])
    result = ingest_rollouts(folder, lake=lake, run_id="r")
    broken, landed = result.files
    assert broken.status == "unreadable" and "not a readable parquet file" in broken.note
    assert landed.rows_landed == 1
    # Not remembered: once whole, it lands.
    pq.write_table(good.set_column(0, "step", pa.array([1])), folder / "completions_00001.parquet")
    assert ingest_rollouts(folder, lake=lake, run_id="r").rows_landed == 1


def test_rows_kept_back_for_an_option_are_not_lost_beside_a_bad_line(
    tmp_path: Path, lake: Path
) -> None:
    table = tmp_path / "table.jsonl"
    table.write_text(
        json.dumps({"prompt": "p", "response": "r", "reward": 1})
        + "\nnot json\n"
        + json.dumps({"prompt": "q", "response": "r", "reward": 0, "step": 5})
        + "\n"
    )
    first = ingest_rollouts(table, lake=lake, run_id="t")
    assert first.files[0].status == "retry" and first.rows_landed == 0
    assert (
        "1 rows were rejected" in first.files[0].note or "pass --iteration N" in first.files[0].note
    )
    again = ingest_rollouts(table, lake=lake, run_id="t", iteration=3)
    assert sorted((r["prompt"], r["iteration"]) for r in lake_rows(lake)) == [("p", 3), ("q", 5)]
    assert again.rows_rejected == 1


def test_dump_starting_like_another_iteration_is_no_append(tmp_path: Path, lake: Path) -> None:
    dumps = tmp_path / "dumps"
    write_dump(dumps / "0.jsonl", [line("a")])
    write_dump(dumps / "1.jsonl", [line("a"), line("b")])
    result = ingest_rollouts(dumps, lake=lake, run_id="r")
    assert [f.status for f in result.files] == ["landed", "landed"]
    rows = [(r["iteration"], r["prompt"], r["source_line"]) for r in lake_rows(lake)]
    assert sorted(rows) == [(0, "a", 1), (1, "a", 1), (1, "b", 2)]


def test_table_grown_from_another_of_the_same_call_numbers_lines_right(
    tmp_path: Path, lake: Path
) -> None:
    first = write_dump(tmp_path / "a" / "t.jsonl", [line("a", step=1), line("b", step=1)])
    second = write_dump(tmp_path / "b" / "t.jsonl", [line("a", step=1), line("b", step=1)])
    with second.open("a") as handle:
        handle.write(line("c", step=1) + "\n")
    ingest_rollouts(first, lake=lake, run_id="r")
    ingest_rollouts(second, lake=lake, run_id="r")
    rows = lake_rows(lake, where="prompt = 'c'")
    assert [(r["source_line"], r["source_file"]) for r in rows] == [(3, str(second.resolve()))]
    assert_lake_sound(lake, 3)


def test_null_spelling_does_not_erase_the_other(tmp_path: Path, lake: Path) -> None:
    write_dump(tmp_path / "d" / "0.jsonl", [line("a", 1, V_i=0.7, v_i=None)])
    ingest_rollouts(tmp_path / "d", lake=lake, run_id="r")
    assert lake_rows(lake)[0]["v_i"] == 0.7


@pytest.mark.parametrize(
    "lines",
    [
        pytest.param([line("a", Tag="a", tag="b")], id="keys-differing-by-case"),
        pytest.param([line("a", n=1), line("b", n=2.5)], id="ints-beside-floats"),
        pytest.param(
            [line("a", n=99999999999999999999), line("b", n=0.5)], id="big-int-beside-float"
        ),
        pytest.param(
            [line("a", gts={"kwargs": [{"n": 1}, {"n": 0.5}]})], id="kwargs-ints-beside-floats"
        ),
        pytest.param([line("a", x=1.0)], id="whole-valued-float"),
        pytest.param(
            [line("a", note="esc \x1b vt \x0b", gts={"kwargs": [{"s": "\x1f"}]})],
            id="control-characters",
        ),
    ],
)
def test_bulk_path_and_rules_agree_where_they_once_differed(
    tmp_path: Path, lines: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_dump(tmp_path / "d" / "0.jsonl", lines)
    ingest_rollouts(tmp_path / "d", lake=tmp_path / "bulk", run_id="r", workers=1)
    monkeypatch.setattr(rollouts_module, "fast_rollouts", lambda *a, **k: None)
    ingest_rollouts(tmp_path / "d", lake=tmp_path / "rules", run_id="r", workers=1)
    picked = ("extra", "instruction_kwargs", "ground_truth")
    bulk = [tuple(r[c] for c in picked) for r in lake_rows(tmp_path / "bulk")]
    rules = [tuple(r[c] for c in picked) for r in lake_rows(tmp_path / "rules")]
    assert bulk == rules  # the same text, not only the same JSON values


def test_typed_parquet_columns_without_a_json_form_land(tmp_path: Path, lake: Path) -> None:
    path = tmp_path / "table.parquet"
    pq.write_table(
        pa.table(
            {
                "prompt": ["p"],
                "response": ["r"],
                "reward": pa.array([decimal.Decimal("0.25")], pa.decimal128(5, 2)),
                "step": [1],
                "at": [datetime.datetime(2026, 1, 2, 3, 4, 5)],
                "day": [datetime.date(2026, 1, 2)],
                "blob": [b"\x00\x01"],
            }
        ),
        path,
    )
    result = ingest_rollouts(path, lake=lake, run_id="t")
    assert result.rows_landed == 1
    [row] = lake_rows(lake)
    assert row["score"] == 0.25
    assert json.loads(row["extra"]) == {
        "at": "2026-01-02T03:04:05",
        "day": "2026-01-02",
        "blob": "AAE=",
    }


def test_ingests_locking_a_run_and_its_validation_run_do_not_deadlock(tmp_path: Path) -> None:
    dumps, lake, warehouse = tmp_path / "dumps", tmp_path / "lake", tmp_path / "w.duckdb"
    for n in range(6):
        write_dump(dumps / f"{n}.jsonl", [line(f"p{i}") for i in range(300)])
        write_dump(dumps / f"val_{n}.jsonl", [line(f"v{i}") for i in range(300)])
    base = [OBS, "--lake", str(lake), "--warehouse", str(warehouse), "ingest", "rollouts"]
    both = subprocess.Popen([*base, str(dumps), "--run", "r", "-q"])
    some = subprocess.Popen([*base, str(dumps), "--run", "r", "--iterations", "1", "-q"])
    assert both.wait(timeout=120) == 0 and some.wait(timeout=120) == 0
    assert_lake_sound(lake, 12 * 300)


def test_gzip_member_whose_header_is_being_written_is_truncated_not_damaged(
    tmp_path: Path, lake: Path
) -> None:
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    first = gzip.compress((line("a") + "\n").encode())
    second = gzip.compress((line("b") + "\n").encode())
    path = dumps / "0.jsonl.gz"
    path.write_bytes(first + second[:5])
    result = ingest_rollouts(dumps, lake=lake, run_id="r")
    assert result.rows_landed == 1 and "gzip stream ends early" in result.files[0].note
    path.write_bytes(first + second)
    assert ingest_rollouts(dumps, lake=lake, run_id="r").rows_landed == 1
    assert_lake_sound(lake, 2)
