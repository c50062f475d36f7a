"""`obs watch` on a folder that gains files and lines while it runs.

A real `obs watch` process follows a dump folder while the test writes to it
the way a trainer does: new iteration files, a file growing line by line
(its last line unfinished for a while), a round that fails because another
process holds the warehouse, then SIGTERM. Rows in the marts are counted
against rows written, and the warehouse must be readable between rounds.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from obs.demo.rollouts import DemoSpec, write_demo_run
from obs.runner.dbt import LOCK_WAIT_SECONDS

pytestmark = pytest.mark.integration

EVERY = 0.5


def _rollouts_in_marts(warehouse: Path) -> dict[int, int] | None:
    """Rollouts per iteration in fct_iteration_summary, or None while the file is busy."""
    try:
        with duckdb.connect(str(warehouse), read_only=True) as con:
            rows = con.execute(
                "select iteration, n_rollouts from fct_iteration_summary where run_id = 'live'"
            ).fetchall()
    except duckdb.Error:
        return None
    return dict(rows)


def _wait_for(warehouse: Path, expected: dict[int, int], timeout: float = 90) -> float:
    """Seconds until the marts hold exactly ``expected`` (read between rounds)."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if _rollouts_in_marts(warehouse) == expected:
            return time.monotonic() - started
        time.sleep(0.3)
    raise AssertionError(f"marts never held {expected}: {_rollouts_in_marts(warehouse)}")


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def test_watch_follows_a_growing_folder(tmp_path: Path) -> None:
    source, dumps = tmp_path / "source", tmp_path / "dumps"
    write_demo_run(source, DemoSpec(prompts=8, iterations=4, samples_per_prompt=4, seed=9))
    dumps.mkdir()
    (dumps / "0.jsonl").write_bytes((source / "0.jsonl").read_bytes())
    lake, warehouse = tmp_path / "lake", tmp_path / "w" / "obs.duckdb"
    command = [
        str(Path(sys.executable).parent / "obs"),
        *("--lake", str(lake), "--warehouse", str(warehouse)),
        *("watch", str(dumps), "--run", "live", "--every", str(EVERY)),
    ]
    log = (tmp_path / "watch.log").open("w")
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=log, env=os.environ | {"NO_COLOR": "1"}
    )
    try:
        _wait_for(warehouse, {0: 32})
        # A new iteration file.
        (dumps / "1.jsonl").write_bytes((source / "1.jsonl").read_bytes())
        _wait_for(warehouse, {0: 32, 1: 32})
        # A file growing while it is read: half its lines, then a cut line.
        lines = _lines(source / "2.jsonl")
        with (dumps / "2.jsonl").open("wb") as growing:
            growing.write(b"".join(lines[:10]) + lines[10][:25])
            growing.flush()
            _wait_for(warehouse, {0: 32, 1: 32, 2: 10})
            growing.write(lines[10][25:] + b"".join(lines[11:]))
        _wait_for(warehouse, {0: 32, 1: 32, 2: 32})
        # Rounds fail while another process holds the warehouse for writing
        # (longer than a build waits for it); the rows they landed reach the
        # marts in a later round.
        holder = None
        while holder is None:
            try:
                holder = duckdb.connect(str(warehouse))
            except duckdb.Error:
                time.sleep(0.05)
        (dumps / "3.jsonl").write_bytes((source / "3.jsonl").read_bytes())
        time.sleep(LOCK_WAIT_SECONDS + 3)
        holder.close()
        _wait_for(warehouse, {0: 32, 1: 32, 2: 32, 3: 32})
        # Then a round with nothing to land and nothing to build.
        deadline = time.monotonic() + 60
        while "nothing new" not in (tmp_path / "watch.log").read_text():
            assert time.monotonic() < deadline, "no round found nothing new"
            time.sleep(0.3)
    finally:
        process.send_signal(signal.SIGTERM)
        stdout, _ = process.communicate(timeout=120)
        log.close()
    output = (tmp_path / "watch.log").read_text()
    assert process.returncode == 0, output
    assert stdout.decode().strip() == str(warehouse)
    rounds = [line for line in output.splitlines() if " round " in line]
    assert any("+32 rows from 1 file(s); live: 2 iterations (0-1)" in r for r in rounds), rounds
    assert any("+10 rows from 1 file(s)" in r for r in rounds), rounds
    failed = [r for r in rounds if "error:" in r]
    held = re.compile(r"another process \(PID \d+\) has it open")
    assert failed and all(held.search(r) for r in failed), failed
    assert any("marts caught up with rows landed earlier" in r for r in rounds), rounds
    assert any("nothing new" in r for r in rounds), rounds
    assert "SIGTERM: stopping after this step" in output
    # Nothing half-written is left behind, and every row written landed once.
    assert list(lake.glob("_staging/*")) == []  # also when the folder is gone
    with duckdb.connect(str(warehouse), read_only=True) as con:
        landed = con.execute("select count(*) from stg_rollouts").fetchone()
    assert landed == (128,)
