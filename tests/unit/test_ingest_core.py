"""The landing core's machinery: the caller reading too, group counts, the manifest, buffers."""

from __future__ import annotations

import operator
import pickle
from datetime import datetime
from pathlib import Path

import pyarrow as pa
import pytest
from obs.ingest.appended import SourceFile, _group_counts, _Job
from obs.ingest.lake import ManifestEntry, read_manifest, write_manifest
from obs.ingest.readers import count_lines, last_line_end, read_buffer
from obs.ingest.workers import WorkerPool


def test_the_caller_reads_jobs_no_worker_has_taken() -> None:
    pool = WorkerPool(1)
    try:
        futures = [pool.submit(operator.neg, number) for number in range(8)]
        # The worker is still starting: the caller runs the first job itself.
        pool.run_here(futures[0])
        assert futures[0].done()
        for future in futures[1:]:
            pool.run_here(future)
        assert [f.result(timeout=60) for f in futures] == [-n for n in range(8)]
    finally:
        pool.shutdown()


def test_a_job_sent_to_a_worker_leaves_a_plain_file_behind(tmp_path: Path) -> None:
    source = SourceFile(tmp_path / "0.jsonl", "r", "jsonl", "dump", 0)
    job = _Job(source, b"{}\n", "digest", 0, 3, 1, None, tmp_path, ship=False)  # type: ignore[arg-type]
    assert pickle.loads(pickle.dumps(job)).content is None  # the worker reads it again
    assert job.content == b"{}\n"  # the caller keeps its snapshot
    job.ship = True  # decompressed gzip: sent as it is
    assert pickle.loads(pickle.dumps(job)).content == b"{}\n"


@pytest.mark.parametrize(
    "columns",
    [
        pytest.param({"i": [0, 0, 1, 1, 1], "h": ["a", "b", "a", "a", "b"]}, id="plain"),
        pytest.param({"i": [3, 3, 3], "h": ["x", "x", "x"]}, id="one-group"),
        pytest.param({"i": [0, None, 0], "h": ["a", "a", None]}, id="nulls"),
    ],
)
def test_group_counts_are_group_by_counts(columns: dict[str, list[object]]) -> None:
    table = pa.table(columns)
    expected = table.group_by(["i", "h"]).aggregate([([], "count_all")])
    keys = zip(expected.column("i").to_pylist(), expected.column("h").to_pylist(), strict=True)
    assert _group_counts(table, ["i", "h"]) == dict(
        zip(keys, expected.column("count_all").to_pylist(), strict=True)
    )


def test_manifest_round_trips_every_kind_of_value(tmp_path: Path) -> None:
    entries = [
        ManifestEntry(
            "rollouts", "/d/caf\u00e9/0.jsonl", 10, 1_700_000_000_123_456_789, "ab" * 20,
            10, 3, 2, 1, None, 0, 5, ["rollouts/run_id=r/x/part.parquet", "_rejects/y"],
            "complete", datetime(2024, 5, 6, 7, 8, 9, 123456),
        ),
        ManifestEntry(
            "rollouts", "/d/1.jsonl.gz", 0, 0, "", 0, 0, 0, 0, 7, None, None, [],
            "truncated", datetime(1999, 12, 31, 23, 59, 59),
        ),
    ]  # fmt: skip
    write_manifest(tmp_path, "r", entries)
    assert read_manifest(tmp_path, "r") == sorted(entries, key=lambda e: e.recorded_at)


@pytest.mark.parametrize(
    "content",
    [b"", b"no newline", b"a\n", b"a\nb", b"\n\n", b"x" * 200_000 + b"\n" + b"y" * 300_000],
)
def test_a_buffer_read_answers_as_bytes_do(content: bytes, tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(content)
    with path.open("rb") as handle:
        whole = read_buffer(handle, len(content) + 10)  # the file ends first
    assert whole.to_pybytes() == content
    assert last_line_end(whole) == last_line_end(content) == content.rfind(b"\n") + 1
    for start, end in [(0, len(content)), (1, len(content) // 2), (len(content), len(content))]:
        assert count_lines(whole, start, end) == content.count(b"\n", start, end)
        assert count_lines(content, start, end) == content.count(b"\n", start, end)


def test_files_landed_at_their_size_and_time_are_not_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from obs.demo.rollouts import DemoSpec, write_demo_run
    from obs.ingest import appended
    from obs.ingest.rollouts import ingest_rollouts

    dumps, lake = tmp_path / "dumps", tmp_path / "lake"
    write_demo_run(dumps, DemoSpec(prompts=4, iterations=3, samples_per_prompt=2, seed=1))
    assert ingest_rollouts(dumps, lake=lake, run_id="r").rows_landed == 24
    read: list[str] = []
    real = appended.snapshot

    def counting(path: Path, **kwargs: bool) -> object:
        read.append(path.name)
        return real(path, **kwargs)

    monkeypatch.setattr(appended, "snapshot", counting)
    again = ingest_rollouts(dumps, lake=lake, run_id="r")
    assert [f.status for f in again.files] == ["unchanged"] * 3 and read == []
    # A file whose time moved is read and found the same; one that grew, appended.
    os.utime(dumps / "0.jsonl", ns=(1, 1))
    with (dumps / "1.jsonl").open("ab") as grown:
        grown.write((dumps / "2.jsonl").read_bytes().splitlines(keepends=True)[0])
    third = ingest_rollouts(dumps, lake=lake, run_id="r", iteration=None)
    assert sorted(read) == ["0.jsonl", "1.jsonl"]
    assert [f.status for f in third.files] == ["unchanged", "appended", "unchanged"]
    # The touched file was found the same and is indexed at its new time: not read again.
    read.clear()
    fourth = ingest_rollouts(dumps, lake=lake, run_id="r")
    assert read == [] and [f.status for f in fourth.files] == ["unchanged"] * 3
    # A run whose lake was removed by hand lands again, whatever the index says.
    import shutil

    shutil.rmtree(lake / "_manifest")
    assert ingest_rollouts(dumps, lake=lake, run_id="r").rows_landed == 25


def _locked(lake: Path, run_id: str) -> bool:
    """Whether some open file description holds the run's ingest lock."""
    import fcntl

    path = lake / "_locks" / f"{run_id}.lock"
    if not path.exists():
        return False
    with path.open("a+") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        return False


def test_the_writer_holds_one_run_lock_at_a_time_unless_strict(tmp_path: Path) -> None:
    from obs.ingest.writer import FileResult, LakeWriter

    lake = tmp_path / "lake"
    with LakeWriter(lake, ["b", "a"]) as writer:
        assert not _locked(lake, "a") and not _locked(lake, "b")
        with writer.run("a") as landing:
            assert _locked(lake, "a") and not _locked(lake, "b")
            assert landing.staging.root.is_dir()
        assert not _locked(lake, "a") and not landing.staging.root.exists()
        with writer.run("b"):
            assert _locked(lake, "b") and not _locked(lake, "a")
        assert not writer.finish([FileResult(tmp_path, "b", rows_rejected=1)])
    with LakeWriter(lake, ["b", "a"], strict=True) as writer:
        assert _locked(lake, "a") and _locked(lake, "b")
        with writer.run("a") as landing:
            pass
        assert _locked(lake, "a") and landing.staging.root.is_dir()  # held until finish
        bad = FileResult(tmp_path, "a", rows_landed=3, rows_rejected=1)
        assert writer.finish([bad]) and bad.rows_landed == 0
        assert bad.note.endswith("nothing published (--strict)")
    assert not _locked(lake, "a") and not landing.staging.root.exists()


def test_a_killed_ingests_half_written_index_record_is_removed(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from obs.ingest.writer import SOURCES, SourceIndex

    folder = tmp_path / "lake" / SOURCES
    folder.mkdir(parents=True)
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead = folder / f".{'a' * 32}.json.{gone.stdout.strip()}.0badf00d.tmp"
    live = folder / f".{'b' * 32}.json.{os.getpid()}.0badf00d.tmp"
    for path in (dead, live):
        path.write_text("{")
    SourceIndex(tmp_path / "lake")
    assert not dead.exists() and live.exists()
