"""Run names, gzip damage, file identity, retries and reporting.

Issue cases 5 (run ids), 6 (corrupt and truncated gzip), 7 (a failed ingest
remembered as done), 8 (identity by path), 12 (reporting).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import pytest
from obs.ingest.errors import IngestError
from obs.ingest.rollouts import ingest_rollouts

from tests.conftest import Invoke, lake_rows
from tests.faults.conftest import assert_lake_sound, line, write_dump

# --------------------------------------------------------------------------- run ids


@pytest.mark.parametrize(
    "name",
    ["a/b", "k=v", "x/../../..", "%41", "r" * 300, ".", "..", "a b", "", "tab\tname", "é"],
)
def test_invalid_run_id_is_refused_before_anything_is_written(
    invoke: Invoke, data_dir: Path, lake: Path, tmp_path: Path, name: str
) -> None:
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    result = invoke(["ingest", "rollouts", data_dir / "ifeval_small", "--run", name], exit_code=2)
    [message] = result.stderr.strip().splitlines()[-1:]
    assert message.startswith("Error: Invalid value for '--run'")
    assert "is not a valid run id: use 1 to 128 letters, digits and . _ - + @ :" in message
    assert "Traceback" not in result.stderr
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before
    assert not lake.exists()


def test_folder_name_that_is_no_run_id_asks_for_run(invoke: Invoke, tmp_path: Path) -> None:
    dumps = tmp_path / "my run"
    write_dump(dumps / "0.jsonl", [line("a")])
    result = invoke(["ingest", "rollouts", dumps], exit_code=2)
    assert "is not a valid run id" in result.stderr and "pass --run NAME" in result.stderr


@pytest.mark.integration
def test_odd_valid_run_id_round_trips_through_the_build(
    invoke: Invoke, data_dir: Path, warehouse: Path
) -> None:
    name = "grpo+kl@0.1:seed-7_v2.a"
    invoke(["ingest", "rollouts", data_dir / "ifeval_small", "--run", name, "-q"])
    invoke(["build", "--select", "+fct_prompt_iteration"])
    out = invoke(["sql", "--format", "csv", "select distinct run_id from fct_prompt_iteration"])
    assert out.stdout.splitlines() == ["run_id", name]


# --------------------------------------------------------------------------- gzip


def _gzip_rows(count: int) -> bytes:
    return "".join(line(f"p{i}", i % 2) + "\n" for i in range(count)).encode()


def test_truncated_gzip_lands_what_it_can_then_the_rest(tmp_path: Path, lake: Path) -> None:
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    whole = gzip.compress(_gzip_rows(80), compresslevel=1)
    path = dumps / "0.jsonl.gz"
    path.write_bytes(whole[: int(len(whole) * 0.6)])
    first = ingest_rollouts(dumps, lake=lake, run_id="r")
    [file] = first.files
    assert 0 < first.rows_landed < 80
    assert "gzip stream ends early" in file.note and "bytes read so far" in file.note
    path.write_bytes(whole)  # the live writer finished the file
    second = ingest_rollouts(dumps, lake=lake, run_id="r")
    assert first.rows_landed + second.rows_landed == 80
    assert second.files[0].status == "appended"
    assert_lake_sound(lake, 80)
    assert [r["source_line"] for r in lake_rows(lake)] == list(range(1, 81))


@pytest.mark.parametrize("damage", ["checksum", "middle", "not-gzip"])
def test_damaged_gzip_is_named_and_not_remembered_as_done(
    tmp_path: Path, lake: Path, damage: str
) -> None:
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    whole = gzip.compress(_gzip_rows(50))
    broken = bytearray(whole)
    if damage == "checksum":
        broken[-8] ^= 0xFF
    elif damage == "middle":
        for at in range(len(whole) // 2, len(whole) // 2 + 8):
            broken[at] ^= 0x5A
    else:
        broken = bytearray(_gzip_rows(50))
    path = dumps / "0.jsonl.gz"
    path.write_bytes(bytes(broken))
    write_dump(dumps / "1.jsonl", [line("the other file")])
    first = ingest_rollouts(dumps, lake=lake, run_id="r")
    damaged, other = first.files
    assert damaged.status == "damaged" and damaged.rows_landed == 0
    assert damaged.note.startswith("nothing could be read; damaged gzip (")
    assert other.rows_landed == 1  # the rest of the folder lands
    # Not remembered as done: the repaired file lands whole.
    path.write_bytes(whole)
    second = ingest_rollouts(dumps, lake=lake, run_id="r")
    assert second.rows_landed == 50
    assert_lake_sound(lake, 51)


def test_gzip_damaged_in_a_later_member_keeps_the_earlier_members(
    tmp_path: Path, lake: Path
) -> None:
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    first_member = gzip.compress(_gzip_rows(10))
    second_member = bytearray(gzip.compress(b"".join(_gzip_rows(20).splitlines(True)[10:])))
    second_member[-8] ^= 0xFF
    (dumps / "0.jsonl.gz").write_bytes(first_member + bytes(second_member))
    result = ingest_rollouts(dumps, lake=lake, run_id="r")
    assert result.rows_landed == 10
    assert "member 2 fails its checksum" in result.files[0].note


# --------------------------------------------------------------------------- identity


def test_copied_folder_lands_nothing_again(data_dir: Path, lake: Path, tmp_path: Path) -> None:
    original = data_dir / "ifeval_small"
    copy = tmp_path / "copy" / "ifeval_small"
    shutil.copytree(original, copy)
    ingest_rollouts(original, lake=lake, run_id="s")
    again = ingest_rollouts(copy, lake=lake, run_id="s")
    assert again.rows_landed == 0
    assert {f.status for f in again.files} == {"copy"}
    assert (
        f"already landed for run s from {(original / '0.jsonl').resolve()}" in again.files[0].note
    )
    assert len(lake_rows(lake)) == 16


@pytest.mark.parametrize("other", ["0.jsonl.gz", "00.jsonl"])
def test_two_files_claiming_one_iteration_are_refused(
    tmp_path: Path, lake: Path, other: str
) -> None:
    dumps = tmp_path / "dumps"
    write_dump(dumps / "0.jsonl", [line("a")])
    if other.endswith(".gz"):
        (dumps / other).write_bytes(gzip.compress((dumps / "0.jsonl").read_bytes()))
    else:
        write_dump(dumps / other, [line("b")])
    with pytest.raises(IngestError) as raised:
        ingest_rollouts(dumps, lake=lake, run_id="r")
    message = str(raised.value)
    assert "claims iteration 0 of run r" in message and "keep one of the two files" in message
    assert "\n" not in message
    assert not lake.exists() or not list(lake.rglob("*.parquet"))


def test_other_content_for_a_landed_iteration_is_refused(tmp_path: Path, lake: Path) -> None:
    write_dump(tmp_path / "a" / "3.jsonl", [line("first try")])
    write_dump(tmp_path / "b" / "3.jsonl", [line("second try")])
    ingest_rollouts(tmp_path / "a", lake=lake, run_id="r")
    result = ingest_rollouts(tmp_path / "b", lake=lake, run_id="r")
    assert result.files[0].status == "refused"
    assert "iteration 3 of run r already landed from" in result.files[0].note
    assert [r["prompt"] for r in lake_rows(lake)] == ["first try"]


def test_copy_taken_mid_write_then_the_original_grows(tmp_path: Path, lake: Path) -> None:
    original = write_dump(tmp_path / "live" / "0.jsonl", [line(f"p{i}") for i in range(5)])
    snapshot_copy = tmp_path / "backup" / "0.jsonl"
    snapshot_copy.parent.mkdir()
    shutil.copy(original, snapshot_copy)
    ingest_rollouts(snapshot_copy.parent, lake=lake, run_id="r")
    with original.open("a") as handle:
        handle.writelines(line(f"p{i}") + "\n" for i in range(5, 9))
    result = ingest_rollouts(original.parent, lake=lake, run_id="r")
    assert (result.files[0].status, result.rows_landed) == ("appended", 4)
    assert_lake_sound(lake, 9)


def test_second_file_of_a_group_numbers_samples_on(tmp_path: Path, lake: Path) -> None:
    write_dump(tmp_path / "t1.jsonl", [line("g", step=1), line("g", step=1)])
    write_dump(tmp_path / "t2.jsonl", [line("g", 0.5, step=1), line("h", step=1)])
    ingest_rollouts(tmp_path / "t1.jsonl", lake=lake, run_id="r")
    ingest_rollouts(tmp_path / "t2.jsonl", lake=lake, run_id="r")
    rows = lake_rows(lake, where="prompt = 'g'")
    assert sorted(r["sample_idx"] for r in rows) == [0, 1, 2]
    assert_lake_sound(lake, 4)


# --------------------------------------------------------------------------- retries, reports


def test_all_rejected_for_a_missing_option_is_retried(
    invoke: Invoke, tmp_path: Path, lake: Path
) -> None:
    table = write_dump(
        tmp_path / "t.jsonl", [json.dumps({"prompt": "q", "response": "r", "reward": 1})]
    )
    failed = invoke(["ingest", "rollouts", table, "--run", "t"], exit_code=1)
    assert failed.stderr.strip().splitlines()[-1] == (
        f"Error: {table}: every row was rejected (no iteration: no 'step' or 'iteration' "
        "field, none in the file name); pass --iteration N and ingest it again (nothing of "
        "the file landed or was recorded, so the retry lands it)"
    )
    landed = invoke(["ingest", "rollouts", table, "--run", "t", "--iteration", "4"])
    assert landed.stdout.startswith("run t: 1 row landed, 0 rejected, from 1 file")
    assert [r["iteration"] for r in lake_rows(lake)] == [4]


def test_rewritten_file_is_reported_and_fails_strict(invoke: Invoke, tmp_path: Path) -> None:
    dumps = tmp_path / "dumps"
    path = write_dump(dumps / "0.jsonl", [line("old")])
    invoke(["ingest", "rollouts", dumps, "--run", "r", "-q"])
    write_dump(dumps / "0.jsonl", [line("new"), line("newer")])
    loose = invoke(["ingest", "rollouts", dumps, "--run", "r", "--json"])
    [file] = json.loads(loose.stdout)["file_results"]
    assert file["status"] == "rewritten" and file["rows_landed"] == 0
    assert file["path"] == str(path)
    strict = invoke(["ingest", "rollouts", dumps, "--run", "r", "--strict", "--json"], exit_code=1)
    assert json.loads(strict.stdout)["strict_failed"] is True
    assert "nothing landed" in strict.stderr
    warned = invoke(["ingest", "rollouts", dumps, "--run", "r"])
    assert f"warning: {path}: changed since it was ingested (not an append)" in warned.stderr
    assert "ingest it under a new --run to keep both" in warned.stderr


def test_report_counts_are_singular_and_plural(invoke: Invoke, tmp_path: Path) -> None:
    write_dump(tmp_path / "one" / "0.jsonl", [line("a")])
    result = invoke(["ingest", "rollouts", tmp_path / "one", "--run", "one"])
    assert result.stdout.startswith("run one: 1 row landed, 0 rejected, from 1 file (0 already")


def test_killed_ingest_debris_is_removed(tmp_path: Path, lake: Path) -> None:
    """What kill -9 leaves at each step, laid out by hand, is cleaned by the next ingest."""
    dumps = tmp_path / "dumps"
    write_dump(dumps / "0.jsonl", [line("a"), line("b")])
    ingest_rollouts(dumps, lake=lake, run_id="r")
    part = next((lake / "rollouts").rglob("part.parquet"))
    # A part published but never recorded, a staging folder, a temporary manifest.
    orphan = part.parent.with_name("ingested_at=20200101T000000000000Z")
    shutil.copytree(part.parent, orphan)
    staging = lake / "_staging" / f"r.{os.getpid() + 1}.deadbeef" / "x" / "rollouts.abc"
    staging.mkdir(parents=True)
    (staging / "part.parquet").write_bytes(b"half a parquet")
    manifest_tmp = lake / "_manifest" / "run_id=r" / ".dead.parquet.tmp"
    manifest_tmp.write_bytes(b"half")
    write_dump(dumps / "1.jsonl", [line("c")])
    ingest_rollouts(dumps, lake=lake, run_id="r")
    assert not orphan.exists() and not manifest_tmp.exists()
    assert_lake_sound(lake, 3)


def test_manifest_is_compacted_and_still_complete(tmp_path: Path, lake: Path) -> None:
    dumps = tmp_path / "dumps"
    for iteration in range(40):
        write_dump(dumps / f"{iteration}.jsonl", [line(f"p{iteration}")])
        ingest_rollouts(dumps, lake=lake, run_id="r", iterations=[iteration])
    folder = lake / "_manifest" / "run_id=r"
    assert len(list(folder.glob("*.parquet"))) <= 33
    again = ingest_rollouts(dumps, lake=lake, run_id="r")
    assert again.rows_landed == 0 and {f.status for f in again.files} == {"unchanged"}
    assert_lake_sound(lake, 40)


def test_build_refuses_a_lake_in_the_old_layout(invoke: Invoke, lake: Path) -> None:
    old = lake / "rollouts" / "run_id=r" / "0-abc-L1.parquet"
    old.parent.mkdir(parents=True)
    old.write_bytes(b"PAR1")
    result = invoke(["build"], exit_code=1)
    assert result.stderr == (
        f"Error: {old}: this lake was written by an older obs (parts directly under run_id=); "
        "ingest the source files again into a new lake (--lake)\n"
    )
