"""Hostile input to ingest: a gzip bomb, lines nested thousands deep, files that are no files.

Each case lands what it can, names the file and the reason in one line, and
loses no good row.
"""

from __future__ import annotations

import gzip
import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from obs.ingest import appended
from obs.ingest.readers import GzipLimit
from obs.ingest.rollouts import ingest_rollouts

from tests.conftest import lake_query, lake_rows
from tests.faults.conftest import OBS, assert_lake_sound, line, write_dump

# --------------------------------------------------------------------------- gzip bomb

BOMB_LINE = (json.dumps({"input": "prompt", "output": "answer", "score": 1.0}) + "\n").encode()


def _gzip_bomb(path: Path, expanded: int) -> int:
    """A one-member gzip of ``expanded`` bytes of one valid line repeated; its line count.

    One 16 MiB piece is compressed once, flushed so that the next piece starts
    afresh, and its bytes written again and again: a second to make however
    large the expansion.
    """
    piece = BOMB_LINE * ((16 << 20) // len(BOMB_LINE))
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    block = compressor.compress(piece) + compressor.flush(zlib.Z_FULL_FLUSH)
    pieces = expanded // len(piece)
    crc = 0
    for _ in range(pieces):
        crc = zlib.crc32(piece, crc)
    with path.open("wb") as out:
        out.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff")
        for _ in range(pieces):
            out.write(block)
        out.write(compressor.flush())
        out.write(struct.pack("<II", crc, (pieces * len(piece)) & 0xFFFFFFFF))
    return pieces * len(piece) // len(BOMB_LINE)


def _peak_rss_of(command: list[str]) -> tuple[subprocess.CompletedProcess, int]:
    """Run ``command`` under a fresh Python parent; its result and its peak RSS in bytes."""
    parent = (
        "import resource, subprocess, sys\n"
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "sys.stdout.write(done.stdout)\n"
        "sys.stderr.write(done.stderr)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
        "sys.exit(done.returncode)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", parent, *command], capture_output=True, text=True, timeout=600
    )
    *rest, peak = done.stderr.rstrip("\n").split("\n")
    done.stderr = "\n".join(rest)
    return done, int(peak) * 1024  # Linux reports KiB


@pytest.mark.slow  # expands 150 MiB of a 1 GiB bomb: about 10 s
def test_gzip_bomb_is_cut_at_its_limit_in_bounded_memory(tmp_path: Path) -> None:
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    bomb = dumps / "0.jsonl.gz"
    written = _gzip_bomb(bomb, 1 << 30)  # 1 GiB of lines in about 3 MB
    compressed = bomb.stat().st_size
    assert compressed < 4 << 20 and written * len(BOMB_LINE) > 1_000_000_000
    write_dump(dumps / "1.jsonl", [line("the other file")])
    lake, warehouse = tmp_path / "lake", tmp_path / "w.duckdb"
    command = [OBS, "--lake", str(lake), "--warehouse", str(warehouse)]
    done, peak = _peak_rss_of([*command, "ingest", "rollouts", str(dumps), "--run", "r"])
    assert done.returncode == 0, done.stderr
    cap = max(64 << 20, 50 * compressed)  # the default limit: 50 times, past 64 MiB
    landed = cap // len(BOMB_LINE)  # the complete lines before the cut
    assert f"{landed + 1:,} rows landed" in done.stdout
    warnings = [x for x in done.stderr.splitlines() if x.startswith("warning:")]
    assert warnings == [
        f"warning: {bomb}: gzip expands past its "
        f"limit of {cap:,} bytes (50 times its {compressed:,} compressed bytes, at least 64 "
        "MiB); only the lines before the limit land (a gzip bomb? if not, raise the limit "
        "with --gzip-max-ratio or OBS_GZIP_MAX_RATIO and ingest again)"
    ]
    assert peak < 600 << 20, f"peak RSS {peak / 2**20:.0f} MiB"
    assert_lake_sound(lake, landed + 1)  # samples numbered 0.. across the bulk slices
    [(last,)] = lake_query(
        lake, "rollouts", f"select max(source_line) from t where source_file = '{bomb}'"
    )
    assert last == landed
    # Ingested again: nothing more lands (the same cut, already landed).
    again = subprocess.run(
        [*command, "ingest", "rollouts", str(dumps), "--run", "r"], capture_output=True, text=True
    )
    assert again.returncode == 0 and "0 rows landed" in again.stdout


def test_gzip_limit_comes_from_the_option_or_the_environment(tmp_path: Path) -> None:
    assert GzipLimit.from_env({}) == GzipLimit(ratio=50.0)
    assert GzipLimit.from_env({"OBS_GZIP_MAX_RATIO": "400"}).cap(1 << 20) == 400 << 20
    assert GzipLimit().cap(1000) == 64 << 20  # the first 64 MiB always read
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    _gzip_bomb(dumps / "0.jsonl.gz", 64 << 20)
    result = ingest_rollouts(
        dumps, lake=tmp_path / "lake", run_id="r", gzip_limit=GzipLimit(1.0, free_bytes=1 << 20)
    )
    [file] = result.files
    assert result.rows_landed == (1 << 20) // len(BOMB_LINE)
    assert "gzip expands past its limit of 1,048,576 bytes" in file.note
    assert file.is_problem  # a warning, and a failure under --strict


def test_bulk_slices_fall_back_to_the_rules_and_keep_numbering(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file read in bulk slices; a later slice needs the rules: one numbering throughout."""
    monkeypatch.setattr(appended, "BULK_BYTES", 200)
    lines = [line(f"p{i % 3}", i % 2 / 2) for i in range(30)]
    lines[20] = '{"input": "p0", "output": "x", "score": 1, "score": 2}'  # a key twice
    lines[25] = line("p1", 0.5, note=float("nan"))  # NaN in extra: the rules say how
    write_dump(tmp_path / "d" / "0.jsonl", lines)
    lake = tmp_path / "lake"
    result = ingest_rollouts(tmp_path / "d", lake=lake, run_id="r", workers=1)
    assert (result.rows_landed, result.rows_rejected) == (29, 1)
    assert_lake_sound(lake, 29)
    rows = lake_rows(lake)
    assert [r["source_line"] for r in rows] == [n for n in range(1, 31) if n != 21]
    assert json.loads(rows[24]["extra"]) == {"note": "NaN"}


# --------------------------------------------------------------------------- nesting, unreadable


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_line_nested_2000_deep_is_a_reject_and_the_rest_lands(tmp_path: Path) -> None:
    dumps = tmp_path / "dumps"
    deep = '{"input": "p9", "output": "o", "score": 1, "x": ' + _nested(2000) + "}"
    good = [line("p0"), line("p1", 0.0), line("p2", 0.5)]
    write_dump(dumps / "0.jsonl", [good[0], deep, *good[1:]])
    lake, warehouse = tmp_path / "lake", tmp_path / "w.duckdb"
    done = subprocess.run(
        [OBS, "--lake", lake, "--warehouse", warehouse, "ingest", "rollouts", dumps, "--run", "r"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("run r: 3 rows landed, 1 rejected, from 1 file (0 already")
    assert "Traceback" not in done.stderr
    assert_lake_sound(lake, 3)
    assert [r["source_line"] for r in lake_rows(lake)] == [1, 3, 4]
    [(row, reason, raw)] = lake_query(lake, "_rejects", "select source_line, reason, raw from t")
    assert (row, reason) == (2, "nested more than 200 deep (arrays and objects; flatten the value)")
    assert raw == deep


def test_corrupt_parquet_is_named_and_exits_1_when_nothing_landed(tmp_path: Path) -> None:
    table = tmp_path / "rollouts.parquet"
    table.write_bytes(b"PAR1" + bytes(range(256)) * 8 + b"PAR1")
    lake, warehouse = tmp_path / "lake", tmp_path / "w.duckdb"
    command = [OBS, "--lake", lake, "--warehouse", warehouse, "ingest", "rollouts"]
    done = subprocess.run(
        [*command, table, "--run", "r", "--iteration", "0"], capture_output=True, text=True
    )
    assert done.returncode == 1
    [error] = [x for x in done.stderr.splitlines() if x.startswith("Error:")]
    assert error.startswith(f"Error: {table}: not a readable parquet file (")
    assert error.endswith(
        "; nothing of it landed (if it is still being written, ingest it again once it is complete)"
    )
    assert "Traceback" not in done.stderr
    # Beside a good file: named in a warning, the good one lands, exit 0.
    folder = tmp_path / "tables"
    folder.mkdir()
    (folder / "completions_1.parquet").write_bytes(table.read_bytes())
    write_dump(folder / "0.jsonl", [line("p0")])
    done = subprocess.run([*command, folder, "--run", "r"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "1 row landed" in done.stdout
    assert f"warning: {folder / 'completions_1.parquet'}: not a readable parquet" in done.stderr


def test_metrics_jsonl_nested_5000_deep_rejects_the_line(tmp_path: Path) -> None:
    log = tmp_path / "metrics.jsonl"
    log.write_text(
        '{"step": 0, "loss": 0.5}\n'
        '{"step": 1, "loss": ' + _nested(5000) + "}\n"
        '{"step": 2, "loss": 0.25}\n'
    )
    lake, warehouse = tmp_path / "lake", tmp_path / "w.duckdb"
    done = subprocess.run(
        [OBS, "--lake", lake, "--warehouse", warehouse, "ingest", "metrics", log, "--run", "r"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    points = lake_query(lake, "metrics", "select step, key, value from t order by step")
    assert points == [(0, "loss", 0.5), (2, "loss", 0.25)]
    [(row, reason)] = lake_query(lake, "_rejects", "select source_line, reason from t")
    assert (row, reason) == (2, "nested more than 200 deep (arrays and objects; flatten the value)")


def test_wandb_export_nested_5000_deep_rejects_the_row(tmp_path: Path) -> None:
    export = tmp_path / "abc123.json"
    rows = ['{"_step": 0, "loss": 0.5}', '{"_step": 1, "loss": ' + _nested(5000) + "}"]
    rows.append('{"_step": 2, "loss": 0.25}')
    export.write_text('{"id": "abc123", "project": "p", "history": [' + ", ".join(rows) + "]}")
    lake, warehouse = tmp_path / "lake", tmp_path / "w.duckdb"
    done = subprocess.run(
        [OBS, "--lake", lake, "--warehouse", warehouse, "ingest", "metrics", export],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    points = lake_query(lake, "metrics", "select step, key, value from t order by step")
    assert points == [(0, "loss", 0.5), (2, "loss", 0.25)]
    [(row, reason)] = lake_query(lake, "_rejects", "select source_line, reason from t")
    assert (row, reason) == (2, "nested more than 200 deep (arrays and objects; flatten the value)")


# --------------------------------------------------------------------------- rejects as written


def test_rejected_line_keeps_its_text_as_written(tmp_path: Path) -> None:
    written = '{"input": "p1", "output": "o", "score": 1e999}'
    write_dump(tmp_path / "d" / "0.jsonl", [line("p0"), written])
    lake = tmp_path / "lake"
    result = ingest_rollouts(tmp_path / "d", lake=lake, run_id="r", workers=1)
    assert (result.rows_landed, result.rows_rejected) == (1, 1)
    [(raw,)] = lake_query(lake, "_rejects", "select raw from t")
    assert raw == written  # not re-rendered as Infinity


def test_lone_cr_line_ends_are_refused_with_the_fix(tmp_path: Path) -> None:
    dumps = tmp_path / "d"
    dumps.mkdir()
    (dumps / "0.jsonl").write_bytes("\r".join([line("p0"), line("p1")]).encode() + b"\r")
    write_dump(dumps / "1.jsonl", [line("p2")])
    lake = tmp_path / "lake"
    result = ingest_rollouts(dumps, lake=lake, run_id="r", workers=1)
    cr, other = result.files
    assert (cr.status, cr.rows_landed, other.rows_landed) == ("refused", 0, 1)
    assert cr.note.startswith("its lines end in a lone CR (no LF)")
    # Converted, it lands whole.
    (dumps / "0.jsonl").write_bytes((dumps / "0.jsonl").read_bytes().replace(b"\r", b"\n"))
    assert ingest_rollouts(dumps, lake=lake, run_id="r", workers=1).rows_landed == 2
    assert_lake_sound(lake, 3)


# ------------------------------------------------------------------ files that are no files


def test_fifo_given_as_the_path_is_one_line(tmp_path: Path) -> None:
    fifo = tmp_path / "0.jsonl"
    os.mkfifo(fifo)
    lake, warehouse = tmp_path / "lake", tmp_path / "w.duckdb"
    done = subprocess.run(
        [OBS, "--lake", lake, "--warehouse", warehouse, "ingest", "rollouts", fifo, "--run", "r"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"Error: {fifo}: not a regular file or a folder (a FIFO, socket or device); "
        "pass a dump folder or a rollout table file"
    ]


def test_links_out_of_the_folder_dangling_links_loops_and_fifos_are_named(
    tmp_path: Path,
) -> None:
    dumps = tmp_path / "dumps"
    write_dump(dumps / "0.jsonl", [line("p0")])
    outside = write_dump(tmp_path / "secret.jsonl", [line("secret"), "not json"])
    (dumps / "1.jsonl").symlink_to(outside)
    (dumps / "2.jsonl").symlink_to(dumps / "gone.jsonl")
    (dumps / "3.jsonl").symlink_to(dumps / "3.jsonl")
    os.mkfifo(dumps / "4.jsonl")
    (dumps / "5.jsonl").symlink_to(dumps / "0.jsonl")  # within the folder: followed
    lake, warehouse = tmp_path / "lake", tmp_path / "w.duckdb"
    done = subprocess.run(
        [OBS, "--lake", lake, "--warehouse", warehouse, "ingest", "rollouts", dumps, "--run", "r"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("run r: 1 row landed, 0 rejected, from 6 files")
    warnings = sorted(x for x in done.stderr.splitlines() if x.startswith("warning:"))
    assert warnings == [
        f"warning: {dumps / '1.jsonl'}: a link to {outside}, outside the folder; not followed",
        f"warning: {dumps / '2.jsonl'}: a dangling link (its target does not exist); not read",
        f"warning: {dumps / '3.jsonl'}: a link that loops; not read",
        f"warning: {dumps / '4.jsonl'}: not a regular file (a FIFO, socket or device); not read",
    ]
    assert [r["prompt"] for r in lake_rows(lake)] == ["p0"]  # 5.jsonl: the same content
    assert not (lake / "_rejects").exists()  # nothing of the outside file copied


def test_file_vanishing_mid_ingest_is_one_line_and_the_rest_lands(tmp_path: Path) -> None:
    dumps = tmp_path / "dumps"
    for i in range(6):
        write_dump(dumps / f"{i}.jsonl", [line(f"p{i}")])
    doomed = dumps / "5.jsonl"

    def delete_the_last(result: object) -> None:
        doomed.unlink(missing_ok=True)

    result = ingest_rollouts(dumps, lake=tmp_path / "lake", run_id="r", on_file=delete_the_last)
    assert result.rows_landed == 5
    gone = result.files[-1]
    assert (gone.source, gone.status) == (doomed, "unreadable")
    assert gone.note == "vanished before it was read (deleted or moved); nothing of it landed"


def test_metrics_jsonl_gz_lands(tmp_path: Path) -> None:
    lines = "".join(json.dumps({"step": s, "loss": 1 / (s + 1)}) + "\n" for s in range(50_000))
    log = tmp_path / "metrics.jsonl.gz"
    log.write_bytes(gzip.compress(lines.encode()))
    lake, warehouse = tmp_path / "lake", tmp_path / "w.duckdb"
    command = [OBS, "--lake", lake, "--warehouse", warehouse, "ingest", "metrics"]
    done = subprocess.run([*command, log, "--run", "r"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    [(points, last)] = lake_query(lake, "metrics", "select count(*), max(step) from t")
    assert (points, last) == (50_000, 49_999)


def test_yaml_side_files_nested_5000_deep_are_a_note(tmp_path: Path) -> None:
    from obs.ingest.trackers import mlflow_store, wandb_files
    from obs.ingest.trackers.base import RunHistory

    config = tmp_path / "config.yaml"
    config.write_text("lr: " + _nested(5000) + "\n")
    history = RunHistory(run_id="r", source="wandb", origin=tmp_path)
    assert wandb_files._load_side_file(history, config, wandb_files._load_yaml) is None
    assert history.notes == [
        "config.yaml is not readable (nested more than 200 deep (arrays and objects; flatten "
        "the value)); the log's values are kept"
    ]
    (tmp_path / "meta.yaml").write_text("run_id: " + _nested(5000) + "\n")
    assert mlflow_store._meta(tmp_path) == {}
