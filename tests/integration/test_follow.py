"""obs.live.follow from Python: a round's line and counts, and a wait a new dump cuts short."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import duckdb
import pytest
from obs.demo.rollouts import DemoSpec, write_demo_run
from obs.live.follow import Follower, signature

pytestmark = pytest.mark.integration


def test_follower_lands_builds_and_waits_for_the_next_dump(tmp_path: Path) -> None:
    dumps, held = tmp_path / "dumps", tmp_path / "held"
    write_demo_run(dumps, DemoSpec(prompts=5, iterations=3, samples_per_prompt=2, seed=4))
    held.mkdir()
    (dumps / "2.jsonl").rename(held / "2.jsonl")
    warehouse, lake = tmp_path / "w" / "obs.duckdb", tmp_path / "lake"
    follower = Follower(warehouse, lake, dumps, run_id="f")

    first = follower.round()
    assert (first.number, first.failed, first.details) == (1, False, [])
    assert first.line.startswith("+20 rows from 2 file(s); f: 2 iterations (0-1)"), first.line
    again = follower.round()
    assert (again.number, again.line) == (2, "nothing new")

    # The wait ends when the next dump appears, not when the period is over.
    stop = threading.Event()
    threading.Timer(0.3, lambda: shutil.move(held / "2.jsonl", dumps / "2.jsonl")).start()
    began = time.monotonic()
    follower.wait(stop, 30.0)
    assert time.monotonic() - began < 5.0
    third = follower.round()
    assert third.line.startswith("+10 rows from 1 file(s); f: 3 iterations (0-2)"), third.line
    with duckdb.connect(str(warehouse), read_only=True) as con:
        counted = con.execute("select sum(n_rollouts) from fct_iteration_summary").fetchone()
    assert counted == (30,)
    # With nothing changing, a wait lasts its period; a stop ends it at once.
    began = time.monotonic()
    follower.wait(stop, 0.3)
    assert 0.25 <= time.monotonic() - began < 3.0
    stop.set()
    began = time.monotonic()
    follower.wait(stop, 30.0)
    assert time.monotonic() - began < 1.0


def test_signature_sees_a_new_and_a_grown_file(tmp_path: Path) -> None:
    (tmp_path / "0.jsonl").write_text("a\n")
    before = signature([tmp_path])
    with (tmp_path / "0.jsonl").open("a") as grown:
        grown.write("b\n")
    grown_once = signature([tmp_path])
    assert grown_once != before
    (tmp_path / "1.jsonl").write_text("c\n")
    assert signature([tmp_path]) != grown_once
    assert signature([tmp_path / "missing"]) == ()
