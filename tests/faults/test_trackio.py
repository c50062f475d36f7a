"""Trackio databases under stress: written while ingested, locked, cut short, odd rows.

The projects are written by trackio itself (``write_project``: a process of
its own, offline); odd rows are then added with sqlite3 the way a damaged or
hand-edited database would hold them. Every test counts the points that
landed against the points logged.
"""

from __future__ import annotations

import json
import math
import shutil
import sqlite3
import time
from pathlib import Path

import pytest
from obs.ingest.keyed import ingest_metrics
from obs.ingest.trackers import trackio as tio

from tests.conftest import lake_query
from tests.sources.test_trackers_trackio import write_project

SMALL = """
start("small", "r", config={"lr": 0.1})
for step in range(3):
    trackio.log({"loss": 1.0 / (step + 1), "reward": float(step)})
trackio.finish()
start("other", "o")
trackio.log({"acc": 0.5})
trackio.finish()
"""
SMALL_POINTS = 7  # small: 3 steps x 2 keys; other: 1


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    trackio_dir = tmp_path_factory.mktemp("written") / "trackio"
    write_project(trackio_dir, SMALL)
    return trackio_dir


@pytest.fixture
def trackio_dir(pristine: Path, tmp_path: Path) -> Path:
    target = tmp_path / "trackio"
    shutil.copytree(pristine, target)
    return target


def landed(lake: Path, where: str = "true") -> list[tuple[str, int, str, float]]:
    rows = lake_query(
        lake, "metrics", f"select run_id, step, key, value from t where {where} order by all"
    )
    return [(r, s, k, v) for r, s, k, v in rows]


def assert_one_value_per_key(lake: Path) -> None:
    [(rows, keys)] = lake_query(
        lake, "metrics", "select count(*), count(distinct (run_id, step, key)) from t"
    )
    assert rows == keys


def add_row(db: Path, step: object, metrics: object, run_id: str | None = None) -> int:
    """A metrics row added by hand to run ``r``'s rows; its id."""
    with sqlite3.connect(db) as con:
        row = con.execute("select run_id, run_name, timestamp from metrics limit 1").fetchone()
        cursor = con.execute(
            "insert into metrics (run_id, run_name, timestamp, step, metrics) "
            "values (?, ?, ?, ?, ?)",
            (run_id or row[0], row[1], row[2], step, metrics),
        )
        found = cursor.lastrowid
    con.close()
    assert found is not None
    return found


# --------------------------------------------------------------------------- growing


LIVE = """
import os, pathlib, sqlite3, time
home = pathlib.Path(os.environ["TRACKIO_DIR"])
def committed():
    try:
        con = sqlite3.connect(f"file:{home / 'live.db'}?mode=ro", uri=True)
        try:
            return con.execute("select count(*) from metrics").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return 0
def wait_for(name):
    deadline = time.monotonic() + 120
    while not (home.parent / name).exists():
        assert time.monotonic() < deadline, name
        time.sleep(0.02)
start("live", "run")
for step in range(30):
    trackio.log({"loss": step / 10, "reward": float(step), "kl": step / 1000})
while committed() < 30:
    time.sleep(0.05)
(home.parent / "half").touch()
wait_for("go")
for step in range(30, 60):
    trackio.log({"loss": step / 10, "reward": float(step), "kl": step / 1000})
    if step % 10 == 0:
        trackio.alert(f"step {step}", level=trackio.AlertLevel.INFO)
    time.sleep(0.01)
trackio.finish()
"""


def test_a_database_written_while_ingested_lands_every_point_once(tmp_path: Path) -> None:
    trackio_dir = tmp_path / "trackio"
    lake = tmp_path / "lake"
    writer = write_project(trackio_dir, LIVE, wait=False)
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "half").exists():
            assert writer.poll() is None, writer.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.02)

        half = ingest_metrics(trackio_dir, lake=lake)  # the writer is open, mid-run
        assert half.points_landed == 90 and writer.poll() is None
        (tmp_path / "go").touch()
        during = []
        while writer.poll() is None:
            during.append(ingest_metrics(trackio_dir, lake=lake).points_landed)
        out, err = writer.communicate(timeout=120)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
    assert writer.returncode == 0, f"the writer was disturbed:\n{out}\n{err}"

    last = ingest_metrics(trackio_dir, lake=lake)

    assert half.points_landed + sum(during) + last.points_landed == 180
    assert_one_value_per_key(lake)
    points = landed(lake)
    assert len(points) == 180
    assert points[:3] == [
        ("live.run", 0, "kl", 0.0),
        ("live.run", 0, "loss", 0.0),
        ("live.run", 0, "reward", 0.0),
    ]
    assert ("live.run", 59, "loss", 5.9) in points
    [(summary,)] = lake_query(
        lake, "runs", "select summary from t order by ingested_at desc limit 1"
    )
    assert [a["title"] for a in json.loads(summary)["alerts"]] == ["step 30", "step 40", "step 50"]
    with sqlite3.connect(f"file:{trackio_dir / 'live.db'}?mode=ro", uri=True) as con:
        assert con.execute("select count(*) from metrics").fetchone() == (60,)
    con.close()
    again = ingest_metrics(trackio_dir, lake=lake)
    assert again.points_landed == 0


def test_an_uncommitted_batch_is_not_read_and_does_not_make_the_read_wait(
    trackio_dir: Path, tmp_path: Path
) -> None:
    lake = tmp_path / "lake"
    db = trackio_dir / "small.db"
    writer = sqlite3.connect(db, isolation_level=None)
    try:
        writer.execute("pragma journal_mode = wal")
        writer.execute("begin immediate")
        writer.execute(
            "insert into metrics (run_id, run_name, timestamp, step, metrics) "
            "select run_id, run_name, timestamp, 3, '{\"loss\": 0.2}' from metrics limit 1"
        )
        started = time.monotonic()
        first = ingest_metrics(trackio_dir, lake=lake)
        assert time.monotonic() - started < tio.BUSY_TIMEOUT_S
        assert first.points_landed == SMALL_POINTS
        writer.execute("commit")
    finally:
        writer.close()

    second = ingest_metrics(trackio_dir, lake=lake)

    assert second.points_landed == 1
    assert landed(lake, "step = 3") == [("small.r", 3, "loss", 0.2)]


def test_a_database_its_writer_keeps_locked_is_one_line_and_the_others_land(
    trackio_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rollback-journal database (as trackio writes on a Space) locked by its writer."""
    monkeypatch.setattr(tio, "BUSY_TIMEOUT_S", 0.2)
    lake = tmp_path / "lake"
    db = trackio_dir / "small.db"
    writer = sqlite3.connect(db, isolation_level=None)
    try:
        writer.execute("pragma journal_mode = delete")
        writer.execute("begin exclusive")
        result = ingest_metrics(trackio_dir, lake=lake)
    finally:
        writer.close()

    (locked,) = [f for f in result.files if f.status == "unreadable"]
    assert locked.source == db
    assert locked.note == (
        "its writer kept the database locked for 0.2 s (database is locked); nothing of it "
        "landed: ingest again"
    )
    assert result.points_landed == 1 and landed(lake) == [("other.o", 0, "acc", 0.5)]
    assert ingest_metrics(trackio_dir, lake=lake).points_landed == SMALL_POINTS - 1


def test_a_truncated_database_is_named_and_lands_once_complete(
    trackio_dir: Path, tmp_path: Path
) -> None:
    lake = tmp_path / "lake"
    whole = (trackio_dir / "small.db").read_bytes()
    (trackio_dir / "small.db").unlink()
    copy = trackio_dir / "copied.db"  # a copy still being made
    copy.write_bytes(whole[: len(whole) // 2])

    first = ingest_metrics(trackio_dir, lake=lake)

    (cut,) = [f for f in first.files if f.source == copy]
    assert cut.status == "unreadable" and cut.note == (
        "SQLite cannot read this database whole (database disk image is malformed); "
        "nothing of it landed: if it is still being copied ingest again once it is "
        "complete, else restore it from a copy"
    )
    assert landed(lake) == [("other.o", 0, "acc", 0.5)]

    copy.write_bytes(whole)
    complete = ingest_metrics(trackio_dir, lake=lake)

    assert complete.points_landed == SMALL_POINTS - 1
    assert {run for run, *_ in landed(lake)} == {"copied.r", "other.o"}
    assert_one_value_per_key(lake)


# --------------------------------------------------------------------------- odd rows


def test_odd_rows_are_rejected_with_their_row_id_and_the_rest_lands(
    trackio_dir: Path, tmp_path: Path
) -> None:
    lake = tmp_path / "lake"
    db = trackio_dir / "small.db"
    not_json = add_row(db, 7, b"{not json")
    a_list = add_row(db, 8, b"[1, 2]")
    negative = add_row(db, -3, b'{"loss": 1}')
    fraction = add_row(db, 2.5, b'{"loss": 1}')
    a_word = add_row(db, "abc", b'{"loss": 1}')
    add_row(
        db,
        9,
        b'{"deep": {"x": "NaN", "y": "-Infinity"}, "big": 1e308, '
        b'"huge": 100000000000000000000000000000, "word": "Infinity-ish", '
        b'"odd\\ud800key": 1, "media": {"_type": "trackio.image", "file_path": "a.png"}}',
    )
    with sqlite3.connect(db) as con:
        con.execute("update configs set config = ? where run_name = 'r'", (b"{damaged",))
    con.close()

    result = ingest_metrics(trackio_dir, lake=lake)

    assert result.points_landed == SMALL_POINTS + 5
    assert result.skipped == {"text": 1, "image": 1}
    odd = {key: value for _, _, key, value in landed(lake, "step = 9")}
    assert math.isnan(odd.pop("deep.x"))
    assert odd == {"big": 1e308, "deep.y": -math.inf, "huge": 1e29, "odd\ufffdkey": 1.0}
    rejects = lake_query(
        lake,
        "_rejects",
        "select source_file, source_line, reason, raw from t order by source_line",
    )
    assert {r[0] for r in rejects} == {str(db.resolve())}
    assert [r[1:3] for r in rejects] == [
        (
            not_json,
            "metrics is not valid JSON (Expecting property name enclosed in double "
            "quotes: line 1 column 2 (char 1))",
        ),
        (a_list, "metrics is not a JSON object"),
        (negative, "step -3 is not a non-negative integer"),
        (fraction, "step 2.5 is not a non-negative integer"),
        (a_word, "step 'abc' is not a non-negative integer"),
    ]
    assert rejects[0][3] == "step=7 metrics={not json"
    (small,) = [f for f in result.files if f.source == db]
    assert (
        small.note == "the config of run 'r' is not valid JSON (Expecting property name "
        "enclosed in double quotes: line 1 column 2 (char 1))"
    )

    add_row(db, 10, b'{"loss": 0.1}')
    again = ingest_metrics(trackio_dir, lake=lake)
    assert (again.points_landed, again.rows_rejected) == (1, 0)  # each reject lands once
    assert_one_value_per_key(lake)


def test_a_database_from_before_run_ids_lands_its_runs_by_name(tmp_path: Path) -> None:
    """The layout of trackio before 0.24: no run_id column, a run is its name."""
    trackio_dir = tmp_path / "trackio"
    trackio_dir.mkdir()
    db = trackio_dir / "old.db"
    stamp = "2025-06-01T12:00:00+00:00"
    with sqlite3.connect(db) as con:
        con.executescript(
            """
            create table metrics (id integer primary key autoincrement, timestamp text not
                null, run_name text not null, step integer not null, metrics text not null);
            create table configs (id integer primary key autoincrement, run_name text not null,
                config text not null, created_at text not null, unique(run_name));
            create table alerts (id integer primary key autoincrement, timestamp text not null,
                run_name text not null, title text not null, text text, level text not null
                default 'warn', step integer);
            """
        )
        con.executemany(
            "insert into metrics (timestamp, run_name, step, metrics) values (?, ?, ?, ?)",
            [
                (stamp, "a", 0, '{"loss": 1}'),
                (stamp, "b", 0, '{"loss": 2}'),
                (stamp, "a", 1, '{"loss": 0.5}'),
            ],
        )
        con.execute(
            "insert into configs (run_name, config, created_at) values "
            '(\'a\', \'{"lr": 0.1, "_Created": "2025-06-01T11:59:00+00:00"}\', ?)',
            (stamp,),
        )
        con.execute(
            "insert into alerts (timestamp, run_name, title, level, step) "
            "values (?, 'b', 'slow', 'info', 0)",
            (stamp,),
        )
    con.close()

    a, b = tio.read("trackio", db, trackio_dir)

    assert (a.run_id, b.run_id) == ("old.a", "old.b")
    assert list(zip(a.steps, a.keys, a.values, strict=True)) == [(0, "loss", 1.0), (1, "loss", 0.5)]
    assert a.config == {"lr": 0.1} and str(a.created_at) == "2025-06-01 11:59:00"
    assert str(b.created_at) == "2025-06-01 12:00:00" and a.wall_times[0] == 1748779200.0
    assert b.summary == {
        "alerts": [{"step": 0, "level": "info", "title": "slow", "text": None, "logged_at": stamp}]
    }
    assert tio.find(tmp_path) == [("trackio", db)]  # no lock file: its tables tell
