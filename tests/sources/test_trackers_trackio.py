"""Trackio projects as trackio itself writes them, read back and landed.

Projects are written by the real ``trackio`` library in a process of its own
(it reads ``TRACKIO_DIR`` when imported and logs from a background thread),
offline, with every network connection refused and counted: a writer that
tried the network fails its test. Points landed are counted against points
logged, worked out by hand below.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from obs.ingest.trackers import trackio as tio
from obs.ingest.trackers.base import RunHistory

from tests.conftest import Invoke, lake_query

# Runs before the test's code in the writer: no network, no hardware sampling,
# no dashboard; ``start`` is trackio.init with those settings.
PREAMBLE = """
import math, socket, sys
attempts = []
_connect = socket.socket.connect
def _refuse(self, address):
    if self.family == socket.AF_UNIX:
        return _connect(self, address)
    attempts.append(repr(address))
    raise OSError("the network is not for tests")
def _no_lookup(*args, **kwargs):
    attempts.append(repr(args[:2]))
    raise OSError("the network is not for tests")
socket.socket.connect = _refuse
socket.getaddrinfo = _no_lookup
import trackio
def start(project, name, **kwargs):
    return trackio.init(
        project=project, name=name, auto_log_cpu=False, auto_log_gpu=False, embed=False,
        **kwargs,
    )
"""
EPILOGUE = """
if attempts:
    sys.exit(f"the writer tried the network: {attempts}")
"""
# Variables that would send a writer anywhere but its TRACKIO_DIR.
AWAY = ("HF_TOKEN", "TRACKIO_SPACE_ID", "TRACKIO_SERVER_URL", "TRACKIO_WEBHOOK_URL")

# The module's projects: what `FIRST` logs, point by point.
FIRST = """
run = start("grpo-ifeval", "qwen-grpo", group="ablation",
            config={"lr": 1e-6, "beta": 0.04, "model": {"name": "Qwen2.5-0.5B"}})
trackio.log({"loss": 0.9, "reward": 0.25, "kl": 0.0})                        # step 0
trackio.log({"loss": math.nan, "reward": 0.5, "kl": math.inf,
             "timing": {"gen": 1.5, "train": 2.0},
             "hist": trackio.Histogram([1, 2, 3])})                          # step 1
trackio.log({"loss": 0.7, "reward": 0.75, "completion": "a text", "done": True}, step=5)
trackio.alert("KL rising", text="kl=inf at step 1", level=trackio.AlertLevel.WARN)
trackio.log({"eval/accuracy": 0.5}, step=5)
trackio.log_system({"gpu/0/util": 0.9})
trackio.finish()
start("grpo-ifeval", "qwen-grpo")           # a second run of the same name
trackio.log({"loss": 2.0})
trackio.finish()
start("sft-base", "sft-1", config={"epochs": 1})
for step in range(3):
    trackio.log({"loss": 1.0 / (step + 1)})
trackio.log({"reward": -math.inf}, step=2)
trackio.finish()
"""
QWEN = [
    (0, "kl", 0.0),
    (0, "loss", 0.9),
    (0, "reward", 0.25),
    (1, "kl", math.inf),
    (1, "loss", math.nan),
    (1, "reward", 0.5),
    (1, "timing.gen", 1.5),
    (1, "timing.train", 2.0),
    (5, "done", 1.0),
    (5, "eval/accuracy", 0.5),
    (5, "loss", 0.7),
    (5, "reward", 0.75),
]
QWEN_AGAIN = [(0, "loss", 2.0)]
SFT = [(0, "loss", 1.0), (1, "loss", 0.5), (2, "loss", 1 / 3), (2, "reward", -math.inf)]
LOGGED = len(QWEN) + len(QWEN_AGAIN) + len(SFT)  # 17


def write_project(trackio_dir: Path, code: str, *, wait: bool = True) -> subprocess.Popen[str]:
    """Run ``code`` with trackio writing into ``trackio_dir``, offline; with ``wait``,
    to its end (the test fails if it failed or tried the network)."""
    env = {k: v for k, v in os.environ.items() if k not in AWAY}
    env.update(
        TRACKIO_DIR=str(trackio_dir),
        HF_HOME=str(trackio_dir.parent / "hf-home"),
        HF_HUB_OFFLINE="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        TRACKIO_STORAGE_MODE="sqlite",
    )
    script = PREAMBLE + textwrap.dedent(code) + EPILOGUE
    process = subprocess.Popen(
        [sys.executable, "-c", script],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    if wait:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, f"the writer failed:\n{out}\n{err}"
    return process


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The module's Trackio folder, written once (tests work on copies)."""
    trackio_dir = tmp_path_factory.mktemp("written") / "trackio"
    write_project(trackio_dir, FIRST)
    return trackio_dir


@pytest.fixture
def trackio_dir(pristine: Path, tmp_path: Path) -> Path:
    """A copy of the module's Trackio folder under ``tmp_path/home``."""
    target = tmp_path / "home" / "trackio"
    shutil.copytree(pristine, target)
    return target


def points(history: RunHistory) -> list[tuple[int, str, float]]:
    return sorted(zip(history.steps, history.keys, history.values, strict=True))


def same(got: list[tuple[int, str, float]], want: list[tuple[int, str, float]]) -> bool:
    """Equal point lists, NaN equal to NaN, values to float precision."""
    return len(got) == len(want) and all(
        g[:2] == w[:2] and (math.isnan(g[2]) if math.isnan(w[2]) else g[2] == pytest.approx(w[2]))
        for g, w in zip(got, want, strict=True)
    )


def ingest(invoke: Invoke, path: Path, *args: object, exit_code: int = 0) -> dict:
    result = invoke(["ingest", "metrics", path, "--json", *args], exit_code=exit_code)
    return json.loads(result.stdout)


def lake_points(lake: Path) -> list[tuple[str, int, str, float]]:
    rows = lake_query(lake, "metrics", "select run_id, step, key, value from t order by all")
    return [(r, s, k, v) for r, s, k, v in rows]


# --------------------------------------------------------------------------- the reader


def test_a_project_gives_every_run_with_points_config_and_alerts(pristine: Path) -> None:
    before = datetime.now(UTC).replace(tzinfo=None)
    db = pristine / "grpo-ifeval.db"

    histories = tio.read("trackio", db, pristine)

    first, again = histories
    assert (first.run_id, first.name, first.project) == (
        "grpo-ifeval.qwen-grpo",
        "qwen-grpo",
        "grpo-ifeval",
    )
    assert same(points(first), QWEN)
    assert points(again) == QWEN_AGAIN and again.name == "qwen-grpo"
    trackio_id = again.summary["trackio_run_id"]
    assert again.run_id == f"grpo-ifeval.qwen-grpo-{trackio_id[:8]}"
    assert again.notes == [
        f"run 'qwen-grpo' ({trackio_id}) shares its name with an earlier run of project "
        f"'grpo-ifeval': landed as {again.run_id}"
    ]
    assert first.config == {"lr": 1e-6, "beta": 0.04, "model": {"name": "Qwen2.5-0.5B"}}
    assert first.tags == ["group=ablation"] and again.tags == [] and again.config == {}
    assert first.entity is None  # no Hugging Face login where the tests run
    assert first.created_at is not None and first.created_at < again.created_at
    assert timedelta(0) < before - first.created_at < timedelta(minutes=10)
    # the wall time: when trackio wrote the row, in the seconds after the run began
    began = first.created_at.replace(tzinfo=UTC).timestamp()
    assert all(0 <= (w or -1) - began < 60 for w in first.wall_times)
    (alert,) = first.summary["alerts"]
    assert {k: alert[k] for k in ("step", "level", "title", "text")} == {
        "step": 5,
        "level": "warn",
        "title": "KL rising",
        "text": "kl=inf at step 1",
    }
    assert alert["logged_at"].startswith(str(before.year))
    assert len(first.summary["trackio_run_id"]) == 32
    assert first.skipped == {"histogram": 1, "text": 1, "system-metrics record": 1}
    assert first.rejects == [] and first.notes == [] and first.state is None

    (sft,) = tio.read("trackio", pristine / "sft-base.db", pristine)
    assert same(points(sft), SFT) and sft.run_id == "sft-base.sft-1"
    assert sft.config == {"epochs": 1} and "alerts" not in sft.summary


def test_find_a_trackio_folder_from_its_parent_or_one_database(
    trackio_dir: Path, tmp_path: Path
) -> None:
    databases = [trackio_dir / "grpo-ifeval.db", trackio_dir / "sft-base.db"]
    expected = [("trackio", db) for db in databases]

    assert tio.find(trackio_dir) == expected
    assert tio.find(tmp_path) == expected  # from the folder above
    assert tio.find(databases[1]) == [("trackio", databases[1])]
    assert tio.find(trackio_dir / "grpo-ifeval.lock") == []

    # Another program's SQLite database is no Trackio folder; given as a file it is
    # taken (read() then says what it is).
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    other = elsewhere / "cache.db"
    with sqlite3.connect(other) as con:
        con.execute("create table items (id integer primary key, name text)")
    con.close()
    assert tio.find(elsewhere) == [] and tio.find(other) == [("trackio", other)]
    assert tio.find(tmp_path) == expected
    # A lock file marks a project whose tables are only in its write-ahead log yet.
    (elsewhere / "cache.lock").touch()
    assert tio.find(elsewhere) == [("trackio", other)]


def test_stat_files_name_the_write_ahead_log_while_it_holds_commits(trackio_dir: Path) -> None:
    db = trackio_dir / "sft-base.db"
    assert tio.stat_files("trackio", db) == [db]

    writer = sqlite3.connect(db)  # a writer still open: its commit is in the -wal file
    try:
        writer.execute("pragma journal_mode = wal")
        writer.execute("pragma wal_autocheckpoint = 0")
        writer.execute(
            "insert into metrics (run_id, timestamp, run_name, step, metrics) "
            "select run_id, timestamp, run_name, 9, '{\"loss\": 0.125}' from metrics limit 1"
        )
        writer.commit()
        assert tio.stat_files("trackio", db) == [db, Path(f"{db}-wal")]
        (sft,) = tio.read("trackio", db, trackio_dir)
        assert (9, "loss", 0.125) in points(sft)
    finally:
        writer.close()


# --------------------------------------------------------------------------- through the CLI


def test_a_folder_lands_every_point_once_and_again_nothing(
    trackio_dir: Path, invoke: Invoke, lake: Path
) -> None:
    first = ingest(invoke, trackio_dir)

    assert first["points_landed"] == LOGGED == len(lake_points(lake))
    landed = {(r, s, k): v for r, s, k, v in lake_points(lake)}
    assert landed[("grpo-ifeval.qwen-grpo", 5, "eval/accuracy")] == 0.5
    assert math.isnan(landed[("grpo-ifeval.qwen-grpo", 1, "loss")])
    assert landed[("grpo-ifeval.qwen-grpo", 1, "kl")] == math.inf
    assert landed[("sft-base.sft-1", 2, "reward")] == -math.inf
    runs = lake_query(
        lake,
        "runs",
        "select run_id, source, project, name, tags, config, "
        "json_extract(summary, '$.alerts[0].title') from t order by run_id",
    )
    qwen, qwen_again, sft = runs
    assert qwen[:5] == (
        "grpo-ifeval.qwen-grpo",
        "trackio",
        "grpo-ifeval",
        "qwen-grpo",
        ["group=ablation"],
    )
    assert json.loads(qwen[5]) == {"beta": 0.04, "lr": 1e-6, "model": {"name": "Qwen2.5-0.5B"}}
    assert json.loads(qwen[6]) == "KL rising"
    assert qwen_again[0].startswith("grpo-ifeval.qwen-grpo-") and qwen_again[6] is None
    assert sft[:4] == ("sft-base.sft-1", "trackio", "sft-base", "sft-1")
    sources = lake_query(lake, "metrics", "select distinct source, source_file from t order by 2")
    assert sources == [
        ("trackio", str((trackio_dir / "grpo-ifeval.db").resolve())),
        ("trackio", str((trackio_dir / "sft-base.db").resolve())),
    ]

    again = ingest(invoke, trackio_dir)
    assert again["points_landed"] == 0 and len(lake_points(lake)) == LOGGED
    # not even read: the read left an empty -wal beside each database, which is no change
    assert [f["status"] for f in again["file_results"]] == ["unchanged", "unchanged"]
    named = ingest(invoke, trackio_dir, "--format", "trackio")
    assert named["points_landed"] == 0
    assert len(lake_query(lake, "runs", "select * from t")) == 3


def test_a_run_that_logged_more_lands_only_the_new_points(
    trackio_dir: Path, invoke: Invoke, lake: Path
) -> None:
    assert ingest(invoke, trackio_dir)["points_landed"] == LOGGED

    write_project(
        trackio_dir,
        """
        start("sft-base", "sft-1", resume="must")
        trackio.log({"loss": 0.25})                  # step 3
        trackio.log({"loss": 0.2, "reward": 1.5})    # step 4
        trackio.alert("Done", level=trackio.AlertLevel.INFO)
        trackio.finish()
        start("sft-base", "sft-2")
        trackio.log({"loss": 9.0})
        trackio.finish()
        """,
    )
    grown = ingest(invoke, trackio_dir)

    assert grown["points_landed"] == 4
    new = [p for p in lake_points(lake) if p[0].startswith("sft-base") and p[1] >= 3]
    assert new == [
        ("sft-base.sft-1", 3, "loss", 0.25),
        ("sft-base.sft-1", 4, "loss", 0.2),
        ("sft-base.sft-1", 4, "reward", 1.5),
    ]
    assert ("sft-base.sft-2", 0, "loss", 9.0) in lake_points(lake)
    assert len(lake_points(lake)) == LOGGED + 4
    # the alert changed sft-1's attributes: its row landed again, with the alert
    titles = lake_query(
        lake,
        "runs",
        "select json_extract_string(summary, '$.alerts[0].title') from t "
        "where run_id = 'sft-base.sft-1' order by ingested_at",
    )
    assert titles == [(None,), ("Done",)]


def test_a_single_database_or_the_folder_above_lands_and_run_overrides_the_id(
    trackio_dir: Path, tmp_path: Path, invoke: Invoke, lake: Path
) -> None:
    one = ingest(invoke, trackio_dir / "sft-base.db")
    assert one["points_landed"] == len(SFT)
    assert {p[0] for p in lake_points(lake)} == {"sft-base.sft-1"}

    above = ingest(invoke, tmp_path / "home")
    assert above["points_landed"] == LOGGED - len(SFT)

    mine = ingest(invoke, trackio_dir / "sft-base.db", "--run", "mine")
    assert mine["points_landed"] == len(SFT)
    assert [p[1:] for p in lake_points(lake) if p[0] == "mine"][:1] == [(0, "loss", 1.0)]


def test_format_trackio_reads_only_the_trackio_projects_beside_other_logs(
    trackio_dir: Path, tmp_path: Path, invoke: Invoke, lake: Path
) -> None:
    home = tmp_path / "home"
    (home / "verl").mkdir()
    (home / "verl" / "metrics.jsonl").write_text('{"step": 0, "loss": 3.5}\n')

    only = ingest(invoke, home, "--format", "trackio")

    assert only["points_landed"] == LOGGED
    assert {p[0].split(".")[0] for p in lake_points(lake)} == {"grpo-ifeval", "sft-base"}
    both = ingest(invoke, home)
    assert both["points_landed"] == 1 and ("verl", 0, "loss", 3.5) in lake_points(lake)


def test_a_damaged_or_foreign_database_is_one_line_and_the_others_land(
    trackio_dir: Path, invoke: Invoke, lake: Path
) -> None:
    broken = trackio_dir / "broken.db"
    broken.write_bytes(b"\x00\x01 not a database " * 200)
    foreign = trackio_dir / "inventory.db"
    with sqlite3.connect(foreign) as con:
        con.execute("create table items (id integer primary key, name text)")
    con.close()

    result = invoke(["ingest", "metrics", trackio_dir])

    assert len(lake_points(lake)) == LOGGED
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [
        f"warning: {broken}: not an SQLite database (file is not a database), so not a "
        f"Trackio project; nothing of it landed: {tio.MOVE_IT}",
        f"warning: {foreign}: an SQLite database, but not a Trackio project (no metrics "
        "table with metrics, run_name, step, timestamp columns); nothing of it landed: "
        f"{tio.MOVE_IT}",
    ]

    alone = invoke(["ingest", "metrics", broken], exit_code=1)
    assert alone.stderr == (
        f"Error: {broken}: not an SQLite database (file is not a database), so not a "
        f"Trackio project; nothing of it landed: {tio.MOVE_IT}\n"
    )
