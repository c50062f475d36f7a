"""Faults that take real processes: builds during ingests, live writers, kill -9.

Issue cases 1 (a build during an ingest lost rows for good), 2 (a file growing
while read landed twice in part), 9 (a killed ingest left debris and shifted
keys) and 12 (two concurrent ingests both reported the full count).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import pytest
from obs.ingest.rollouts import ingest_rollouts
from obs.ingest.writer import FileResult

from tests.conftest import kill_when, lake_query, run_cli
from tests.faults.conftest import (
    OBS,
    assert_lake_sound,
    dump_folder,
    line,
    obs,
    write_dump,
)

pytestmark = pytest.mark.integration

COVER = ["build", "--select", "+fct_prompt_iteration", "assert_marts_cover_lake"]


def _marts(warehouse: Path) -> tuple[int, int]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        [(iterations, samples)] = con.execute(
            "select count(distinct iteration), sum(n_samples) from fct_prompt_iteration"
        ).fetchall()
        return iterations, int(samples)
    finally:
        con.close()


def test_build_between_two_published_files_misses_nothing(tmp_path: Path) -> None:
    """The observed loss, made deterministic: a build runs after file 20 of 40 landed."""
    dumps, lake, warehouse = tmp_path / "dumps", tmp_path / "lake", tmp_path / "w.duckdb"
    written = dump_folder(dumps, iterations=40, prompts=3, samples=2)
    base = ["--lake", lake, "--warehouse", warehouse]
    built_at: list[int] = []

    def build_midway(result: FileResult) -> None:
        if result.source.name == "20.jsonl":
            run_cli([*base, *COVER])
            built_at.append(_marts(warehouse)[0])

    ingest_rollouts(dumps, lake=lake, run_id="r", on_file=build_midway, workers=1)
    assert built_at == [21]  # the build saw files 0..20 only
    run_cli([*base, *COVER])  # green: assert_marts_cover_lake passes
    assert _marts(warehouse) == (40, written)


def test_marts_cover_lake_fails_on_a_part_the_marts_missed(tmp_path: Path) -> None:
    """The singular test can fail: a part that appears behind the watermark is caught."""
    lake, warehouse = tmp_path / "lake", tmp_path / "w.duckdb"
    base = ["--lake", lake, "--warehouse", warehouse]
    write_dump(tmp_path / "a" / "0.jsonl", [line("a"), line("a")])
    write_dump(tmp_path / "b" / "1.jsonl", [line("b")])
    ingest_rollouts(tmp_path / "a", lake=lake, run_id="r")
    run_cli([*base, *COVER])
    # What the old one-timestamp-per-call ingest did: a part whose ingested_at
    # is older than what the build already consumed.
    other = tmp_path / "other_lake"
    ingest_rollouts(tmp_path / "b", lake=other, run_id="r")
    [part] = (other / "rollouts").rglob("part.parquet")
    late = lake / "rollouts" / "run_id=r" / "ingested_at=20000101T000000000000Z"
    shutil.copytree(part.parent, late)
    failed = run_cli([*base, *COVER], exit_code=1)
    assert "dbt build failed (1 failed" in failed.stderr


@pytest.mark.slow
def test_ingests_and_builds_running_at_once_miss_nothing(tmp_path: Path) -> None:
    """Real processes: one ingest per iteration while builds keep running beside them."""
    dumps, lake, warehouse = tmp_path / "dumps", tmp_path / "lake", tmp_path / "w.duckdb"
    written = dump_folder(dumps, iterations=24, prompts=20, samples=4)
    script = " && ".join(
        f"{OBS} --lake {lake} --warehouse {warehouse} ingest rollouts {dumps} --run r "
        f"--iterations {i} -q"
        for i in range(24)
    )
    ingesting = subprocess.Popen(["bash", "-c", script], stdout=subprocess.DEVNULL)
    builds = 0
    while ingesting.poll() is None:
        if (lake / "rollouts").is_dir():
            obs(lake, warehouse, *COVER)
            builds += 1
    assert ingesting.returncode == 0
    assert builds >= 1
    obs(lake, warehouse, *COVER)
    assert _marts(warehouse) == (24, written)


def test_file_growing_while_ingested_lands_every_line_once(tmp_path: Path) -> None:
    """A writer appends (and leaves half-written lines) while ingests run in a loop."""
    dumps, lake = tmp_path / "dumps", tmp_path / "lake"
    dumps.mkdir()
    path = dumps / "0.jsonl"
    path.touch()
    total = 3000
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import json, time
                with open({str(path)!r}, "a") as out:
                    for i in range({total}):
                        text = json.dumps({{"input": f"p{{i % 7}}", "output": "o" * (i % 50),
                                           "score": i % 2}})
                        half = len(text) // 2
                        out.write(text[:half]); out.flush()
                        out.write(text[half:] + "\\n")
                        if i % 100 == 0:
                            out.flush(); time.sleep(0.01)
                """
            ),
        ]
    )
    rounds = 0
    while writer.poll() is None:
        ingest_rollouts(dumps, lake=lake, run_id="r", workers=1)
        rounds += 1
    assert writer.returncode == 0
    ingest_rollouts(dumps, lake=lake, run_id="r", workers=1)
    assert rounds >= 2
    assert_lake_sound(lake, total)
    lines = lake_query(lake, "rollouts", "select source_line from t order by 1")
    assert [n for (n,) in lines] == list(range(1, total + 1))


@pytest.mark.parametrize("workers", [1, 2])
def test_kill_9_mid_ingest_then_ingest_again(tmp_path: Path, workers: int) -> None:
    dumps, lake, warehouse = tmp_path / "dumps", tmp_path / "lake", tmp_path / "w.duckdb"
    written = dump_folder(dumps, iterations=30, prompts=60, samples=8)
    command = [
        sys.executable,
        "-c",
        "from pathlib import Path; from obs.ingest.rollouts import ingest_rollouts; "
        f"ingest_rollouts(Path({str(dumps)!r}), lake=Path({str(lake)!r}), run_id='r', "
        f"workers={workers})",
    ]
    # the ingest and its worker processes, once five parts are published
    killed = kill_when(command, lambda: len(list((lake / "rollouts").rglob("part.parquet"))) >= 5)
    assert killed, "the ingest finished before it could be killed"
    landed_before = len(list((lake / "rollouts").rglob("part.parquet")))
    assert 5 <= landed_before < 30
    obs(lake, warehouse, "ingest", "rollouts", dumps, "--run", "r", "-q")
    assert_lake_sound(lake, written)
    again = obs(lake, warehouse, "ingest", "rollouts", dumps, "--run", "r", "--json")
    assert json.loads(again.stdout)["rows_landed"] == 0


def test_kill_9_while_an_appended_tail_lands_keeps_keys_unique(tmp_path: Path) -> None:
    """Kill at many moments of landing a tail; every retry numbers on from the manifest."""
    dumps, lake = tmp_path / "dumps", tmp_path / "lake"
    path = write_dump(dumps / "0.jsonl", [line(f"p{i % 5}") for i in range(2000)])
    ingest_rollouts(dumps, lake=lake, run_id="r", workers=1)
    with path.open("a") as handle:
        handle.writelines(line(f"p{i % 5}") + "\n" for i in range(20000))
    command = [
        sys.executable,
        "-c",
        "from pathlib import Path; from obs.ingest.rollouts import ingest_rollouts; "
        f"ingest_rollouts(Path({str(dumps)!r}), lake=Path({str(lake)!r}), run_id='r', workers=1)",
    ]
    for delay in (0.05, 0.3, 0.6, 0.9):
        process = subprocess.Popen(command)
        time.sleep(delay)
        process.kill()
        process.wait()
    ingest_rollouts(dumps, lake=lake, run_id="r", workers=1)
    assert_lake_sound(lake, 22000)


def test_two_ingests_at_once_land_and_report_each_row_once(tmp_path: Path) -> None:
    dumps, lake, warehouse = tmp_path / "dumps", tmp_path / "lake", tmp_path / "w.duckdb"
    written = dump_folder(dumps, iterations=8, prompts=50, samples=4)
    command = [OBS, "--lake", str(lake), "--warehouse", str(warehouse), "ingest", "rollouts"]
    command += [str(dumps), "--run", "r", "--json"]
    first = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    second = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    reports = [json.loads(p.communicate()[0]) for p in (first, second)]
    assert sorted(r["rows_landed"] for r in reports) == [0, written]
    assert_lake_sound(lake, written)


def test_a_worker_killed_mid_ingest_costs_nothing(tmp_path: Path) -> None:
    """A worker process dying (out of memory, say) has its file read by the ingest itself."""
    dumps, lake, warehouse = tmp_path / "dumps", tmp_path / "lake", tmp_path / "w.duckdb"
    padding = "x" * 4000  # 60 files of ~1 MB: enough for worker processes, and time
    for iteration in range(60):
        rows = [line(f"p{p}", p % 2, step=iteration, pad=padding) for p in range(250)]
        write_dump(dumps / f"{iteration}.jsonl", rows)
    command = [OBS, "--lake", str(lake), "--warehouse", str(warehouse), "ingest", "rollouts"]
    process = subprocess.Popen([*command, str(dumps), "--run", "r", "-q"])
    victim = None
    deadline = time.monotonic() + 30
    while victim is None and time.monotonic() < deadline and process.poll() is None:
        found = subprocess.run(
            ["pgrep", "-P", str(process.pid), "-f", "obs.ingest.workers"],
            capture_output=True,
            text=True,
        ).stdout.split()
        victim = int(found[0]) if found else None
    assert victim is not None, "no worker process was seen"
    time.sleep(0.05)  # it has taken a file by now (the ingest needs about a second)
    os.kill(victim, signal.SIGKILL)
    assert process.wait(timeout=120) == 0
    assert_lake_sound(lake, 60 * 250)
