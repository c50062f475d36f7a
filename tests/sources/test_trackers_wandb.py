"""W&B histories: run folders written by real SDK releases, export JSON, UI CSV exports.

The run folders are written at test time, in subprocesses, by wandb 0.19.11 and
0.31.0 (installed beside the venv by ``make install``) and by the installed
wandb (the reader's release), so the reader is checked against the bytes each
release really writes. All writers start together once per module.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from obs.ingest.errors import IngestError
from obs.ingest.trackers import wandb_files
from obs.ingest.trackers.base import RunHistory

WRITERS = Path(
    os.environ.get("OBS_WANDB_WRITERS") or Path(__file__).parents[2] / ".venv" / "writers"
)
WRITER_RELEASES = ("0.19.11", "0.31.0")
INSTALLED = "installed"
LONG_STEPS = 400
BLOCK = 32768  # the .wandb log's block size (leveldb log format)

# Every kind of value a training loop logs, then a summary value set by hand.
RICH_SCRIPT = """
import sys, wandb
print("VERSION", wandb.__version__)
run = wandb.init(
    project="obs-test", name="rich run", tags=["grpo", "smoke"], dir=sys.argv[1],
    config={"lr": 0.001, "model": {"name": "qwen", "layers": 2}},
)
for step in range(3):
    run.log({
        "loss": 1.0 / (step + 1), "count": step, "flag": step % 2 == 0,
        "nan": float("nan"), "inf": float("inf"), "nested": {"a": step, "b": {"c": 0.5}},
    })
run.log({"hist": wandb.Histogram([1, 2, 3, 4])})
run.log({"table": wandb.Table(columns=["a"], data=[[1]])})
run.summary["best"] = 0.25
run.finish()
"""

# Many steps (several 32 KiB blocks); "kill" ends the process without finishing the run.
LONG_SCRIPT = """
import os, sys, time, wandb
print("VERSION", wandb.__version__, flush=True)
run = wandb.init(project="obs-test", dir=sys.argv[1])
for step in range(int(sys.argv[3])):
    run.log({"loss": 1.0 / (step + 1), "acc": step * 0.5, "kl": {"mean": step, "max": 2 * step}})
if sys.argv[2] == "kill":
    time.sleep(1)
    os._exit(0)
run.finish()
"""

# One run id, two sessions: a resumed run writes a second folder.
RESUMED_SCRIPT = """
import sys, time, wandb
print("VERSION", wandb.__version__)
for part in range(2):
    run = wandb.init(project="obs-test", id="resumed01", resume="allow", dir=sys.argv[1])
    for step in range(2):
        run.log({"part": part, "x": step})
    run.finish()
    time.sleep(1.1)  # run folders are named by the second they start
"""

TRAINER_STATE_SCRIPT = """
import sys
from transformers import TrainerState
rows = [{"loss": 1.0, "step": 1}, {"loss": 0.5, "step": 2}]
state = TrainerState(global_step=2, log_history=rows)
state.save_to_json(sys.argv[1])
"""


@dataclass
class Written:
    """What one writer process left: the folder holding ``wandb/``, and the release used."""

    base: Path
    version: str
    started: float
    ended: float

    @property
    def run_folders(self) -> list[Path]:
        return sorted(
            p for p in (self.base / "wandb").iterdir() if p.is_dir() and not p.is_symlink()
        )

    @property
    def run_folder(self) -> Path:
        (folder,) = self.run_folders
        return folder

    @property
    def log(self) -> Path:
        (log,) = self.run_folder.glob("*.wandb")
        return log


def _writer_path(release: str) -> Path:
    path = WRITERS / f"wandb-{release}"
    if not (path / "wandb").is_dir():
        pytest.fail(
            f"{path}: the wandb {release} writer is missing; run `make install` "
            "(it installs the W&B writers these tests use), or set OBS_WANDB_WRITERS"
        )
    return path


def _environment(home: Path, release: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env.pop("PYTHONPATH", None)
    if release != INSTALLED:
        env["PYTHONPATH"] = str(_writer_path(release))
    for name in ("CACHE", "CONFIG", "DATA", "ARTIFACT"):
        env[f"WANDB_{name}_DIR"] = str(home / name.lower())
    env.update(WANDB_MODE="offline", WANDB_SILENT="true", WANDB_DISABLE_GIT="true")
    return env


@pytest.fixture(scope="module")
def trainer_writer(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """transformers' own TrainerState writing a trainer_state.json (started early: slow import)."""
    target = tmp_path_factory.mktemp("trainer") / "trainer_state.json"
    command = [sys.executable, "-c", TRAINER_STATE_SCRIPT, str(target)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        yield process, target
    finally:
        process.communicate(timeout=180)  # reaped even when no test asked for the file


@pytest.fixture(scope="module")
def trainer_state(trainer_writer: tuple[subprocess.Popen[bytes], Path]) -> Path:
    process, target = trainer_writer
    output, _ = process.communicate(timeout=180)
    assert process.returncode == 0, output.decode(errors="replace")
    return target


@pytest.fixture(scope="module")
def written(
    tmp_path_factory: pytest.TempPathFactory,
    trainer_writer: tuple[subprocess.Popen[bytes], Path],
) -> dict[str, Written]:
    """Every writer run at once (each a subprocess); keyed by job name.

    ``trainer_writer`` is requested only so it starts alongside.
    """
    jobs = {
        **{release: (RICH_SCRIPT, release, []) for release in WRITER_RELEASES},
        INSTALLED: (RICH_SCRIPT, INSTALLED, []),
        "long": (LONG_SCRIPT, INSTALLED, ["finish", str(LONG_STEPS)]),
        "killed": (LONG_SCRIPT, INSTALLED, ["kill", str(LONG_STEPS)]),
        "resumed": (RESUMED_SCRIPT, INSTALLED, []),
    }
    home = tmp_path_factory.mktemp("wandb-home")
    planned = []  # every environment first: a missing writer fails before anything starts
    for job, (script, release, args) in jobs.items():
        base = tmp_path_factory.mktemp(f"wandb-{job}")
        (base / "writer.py").write_text(script)
        command = [sys.executable, str(base / "writer.py"), str(base), *args]
        planned.append((job, base, command, _environment(home, release)))
    started = time.time()
    pipes: dict[str, Any] = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    processes = [
        (job, base, subprocess.Popen(command, cwd=base, env=env, **pipes))
        for job, base, command, env in planned
    ]
    out: dict[str, Written] = {}
    try:
        for job, base, process in processes:
            stdout, stderr = process.communicate(timeout=180)
            assert process.returncode == 0, f"{job} writer failed:\n{stdout}\n{stderr}"
            found = re.search(r"^VERSION (\S+)$", stdout, re.MULTILINE)
            assert found, f"{job} writer printed no version:\n{stdout}\n{stderr}"
            out[job] = Written(base, found.group(1), started, time.time())
    finally:
        for _, _, process in processes:
            if process.poll() is None:
                process.kill()
                process.communicate()
    return out


def _points(history: RunHistory) -> dict[tuple[int, str], Any]:
    """The points as {(step, key): value}, NaN as "nan" so it compares; no pair twice."""
    pairs = list(zip(history.steps, history.keys, strict=True))
    assert len(set(pairs)) == len(pairs), "a (step, key) pair landed twice"
    return {
        pair: "nan" if math.isnan(value) else value
        for pair, value in zip(pairs, history.values, strict=True)
    }


def _read_one(fmt: str, origin: Path) -> RunHistory:
    (history,) = wandb_files.read(fmt, origin, origin)
    return history


# --------------------------------------------------------------------------- run folders


def _rich_points() -> dict[tuple[int, str], Any]:
    expected: dict[tuple[int, str], Any] = {}
    for step in range(3):
        expected |= {
            (step, "loss"): 1.0 / (step + 1),
            (step, "count"): float(step),
            (step, "flag"): 1.0 if step % 2 == 0 else 0.0,
            (step, "nan"): "nan",
            (step, "inf"): math.inf,
            (step, "nested.a"): float(step),
            (step, "nested.b.c"): 0.5,
        }
    return expected


@pytest.mark.parametrize("job", [WRITER_RELEASES[0], INSTALLED, WRITER_RELEASES[1]])
def test_offline_run_of_each_release(written: dict[str, Written], job: str) -> None:
    run = written[job]
    assert run.version == (metadata.version("wandb") if job == INSTALLED else job)
    history = _read_one("wandb", run.run_folder)

    run_id = run.log.stem.removeprefix("run-")
    assert run.run_folder.name.endswith(f"-{run_id}")
    assert (history.run_id, history.source, history.origin) == (run_id, "wandb", run.run_folder)
    assert (history.name, history.project, history.entity) == ("rich run", "obs-test", None)
    assert (history.state, history.tags) == ("finished", ["grpo", "smoke"])
    assert history.config == {"lr": 0.001, "model": {"name": "qwen", "layers": 2}}

    points = _points(history)
    runtime = {pair: value for pair, value in points.items() if pair[1] == "_runtime"}
    assert set(runtime) == {(step, "_runtime") for step in range(5)}
    assert all(0 <= value < 600 for value in runtime.values())
    assert {pair: v for pair, v in points.items() if pair[1] != "_runtime"} == _rich_points()
    assert not {"_step", "_timestamp"} & set(history.keys)
    assert dict(history.skipped) == {"histogram": 1, "table": 1}
    assert (history.rejects, history.notes) == ([], [])

    window = (run.started - 5, run.ended + 5)
    assert all(w is not None and window[0] <= w <= window[1] for w in history.wall_times)
    assert history.created_at is not None
    created = history.created_at.replace(tzinfo=UTC).timestamp()
    assert window[0] <= created <= window[1]

    summary = history.summary
    assert set(summary) == {
        "_runtime", "_step", "_timestamp", "loss", "count", "flag", "nan", "inf", "nested",
        "hist", "table", "best",
    }  # fmt: skip
    assert (summary["best"], summary["_step"], summary["loss"], summary["count"]) == (
        0.25,
        4,
        1.0 / 3,
        2,
    )
    assert summary["flag"] is True and math.isnan(summary["nan"]) and summary["inf"] == math.inf
    assert summary["nested"] == {"a": 2, "b": {"c": 0.5}}
    assert summary["hist"]["_type"] == "histogram"


def test_run_files_win_over_the_log(written: dict[str, Written], tmp_path: Path) -> None:
    """A synced run's files/config.yaml and files/wandb-summary.json are its final state."""
    folder = tmp_path / "run-synced"
    shutil.copytree(written[INSTALLED].run_folder, folder)
    (folder / "files").mkdir(exist_ok=True)
    (folder / "files" / "config.yaml").write_text(
        "_wandb:\n  desc: null\n  value:\n    cli_version: 0.29.0\n"
        "lr:\n  desc: null\n  value: 0.002\nmodel:\n  desc: null\n  value:\n    name: big\n"
    )
    (folder / "files" / "wandb-summary.json").write_text(
        '{"best": 0.5, "loss": NaN, "_wandb": {"runtime": 3}}'
    )
    history = _read_one("wandb", folder)
    assert history.config == {"lr": 0.002, "model": {"name": "big"}}
    assert set(history.summary) == {"best", "loss"} and history.summary["best"] == 0.5
    assert math.isnan(history.summary["loss"])
    assert {k: v for k, v in _points(history).items() if k[1] != "_runtime"} == _rich_points()
    log = next(folder.glob("*.wandb"))
    assert wandb_files.stat_files("wandb", folder) == [
        log,
        folder / "files" / "config.yaml",
        folder / "files" / "wandb-summary.json",
    ]


def test_resumed_run_is_one_history_per_folder(written: dict[str, Written]) -> None:
    folders = written["resumed"].run_folders
    assert len(folders) == 2
    histories = [_read_one("wandb", folder) for folder in folders]
    assert [h.run_id for h in histories] == ["resumed01", "resumed01"]
    assert [h.origin for h in histories] == folders
    for part, history in enumerate(histories):
        points = {k: v for k, v in _points(history).items() if k[1] != "_runtime"}
        assert points == {
            (0, "part"): part,
            (0, "x"): 0.0,
            (1, "part"): part,
            (1, "x"): 1.0,
        }
        assert history.state == "finished"


def _long_points(steps: range) -> dict[tuple[int, str], Any]:
    expected: dict[tuple[int, str], Any] = {}
    for step in steps:
        expected |= {
            (step, "loss"): 1.0 / (step + 1),
            (step, "acc"): step * 0.5,
            (step, "kl.mean"): float(step),
            (step, "kl.max"): 2.0 * step,
        }
    return expected


def _check_prefix(history: RunHistory, full: RunHistory) -> int:
    """The read points are the full run's first points, whole steps 0..k-1; returns k."""
    count = history.points
    assert history.steps == full.steps[:count]
    assert history.keys == full.keys[:count]
    assert history.values == full.values[:count]
    steps = sorted(set(history.steps))
    assert steps == list(range(len(steps)))
    points = {k: v for k, v in _points(history).items() if k[1] != "_runtime"}
    assert points == _long_points(range(len(steps)))
    return len(steps)


PARTIAL = re.compile(
    r"^the log ends in a partial record \(still being written\?\); \d+ records read$"
)


def test_long_run_reads_whole(written: dict[str, Written]) -> None:
    full = _read_one("wandb", written["long"].run_folder)
    assert written["long"].log.stat().st_size > 4 * BLOCK
    assert (full.state, full.notes, full.rejects) == ("finished", [], [])
    assert _check_prefix(full, full) == LONG_STEPS


@pytest.mark.parametrize(
    ("cut", "whole_steps"),
    [
        (lambda size: size - 100, True),  # the exit record and the last summaries lost
        (lambda size: 2 * BLOCK + 5000, False),  # in the middle of a block
        (lambda size: 3 * BLOCK, False),  # at a block's end: a record's first fragment only
    ],
)
def test_cut_log_keeps_what_was_read(
    written: dict[str, Written], tmp_path: Path, cut: Any, whole_steps: bool
) -> None:
    source = written["long"].log
    full = _read_one("wandb", source.parent)
    data = source.read_bytes()
    (tmp_path / source.name).write_bytes(data[: cut(len(data))])

    history = _read_one("wandb", tmp_path)
    steps = _check_prefix(history, full)
    assert steps == LONG_STEPS if whole_steps else 0 < steps < LONG_STEPS
    assert history.state == "running"
    assert len(history.notes) == 1 and PARTIAL.match(history.notes[0]), history.notes
    assert history.rejects == []


def test_damaged_log_keeps_what_comes_before(written: dict[str, Written], tmp_path: Path) -> None:
    source = written["long"].log
    full = _read_one("wandb", source.parent)
    data = bytearray(source.read_bytes())
    data[40000:40010] = bytes(b ^ 0xFF for b in data[40000:40010])
    (tmp_path / source.name).write_bytes(bytes(data))

    history = _read_one("wandb", tmp_path)
    assert 0 < _check_prefix(history, full) < LONG_STEPS
    (note,) = history.notes
    assert re.match(rf"^the log is damaged at byte \d+ of {len(data)}; \d+ records read", note)
    assert history.state == "running"


def test_killed_run_is_running(written: dict[str, Written]) -> None:
    """A writer ended with os._exit: no exit record; whatever blocks reached the disk land."""
    history = _read_one("wandb", written["killed"].run_folder)
    assert history.state == "running"
    assert history.project == "obs-test"
    steps = _check_prefix(history, history)
    assert 0 < steps < LONG_STEPS, "the killed writer flushed no whole block (or every step)"
    assert all(PARTIAL.match(note) for note in history.notes)
    assert history.rejects == []


def test_log_without_records(written: dict[str, Written], tmp_path: Path) -> None:
    """An empty log (header not written yet) and a header-only log are runs just started."""
    header = written[INSTALLED].log.read_bytes()[:7]
    for name, data, note in [
        ("run-empty01.wandb", b"", "the log has no header yet (still being written?)"),
        ("run-header1.wandb", header, "the log holds no records yet (still being written?)"),
    ]:
        folder = tmp_path / name.removesuffix(".wandb")
        folder.mkdir()
        (folder / name).write_bytes(data)
        history = _read_one("wandb", folder)
        assert (history.run_id, history.state, history.points) == (
            name.removeprefix("run-").removesuffix(".wandb"),
            "running",
            0,
        )
        assert history.notes == [note]


def test_not_a_log(tmp_path: Path) -> None:
    (tmp_path / "run-bogus.wandb").write_bytes(b"not a leveldb log at all")
    with pytest.raises(IngestError) as caught:
        wandb_files.read("wandb", tmp_path, tmp_path)
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'run-bogus.wandb'}: is not a W&B run log")
    assert "\n" not in message


def test_missing_wandb_says_how_to_install(
    written: dict[str, Written], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [n for n in sys.modules if n == "wandb" or n.startswith("wandb.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "wandb", None)
    folder = written[INSTALLED].run_folder
    with pytest.raises(IngestError) as caught:
        wandb_files.read("wandb", folder, folder)
    message = str(caught.value)
    assert message.startswith(f"{folder}: reading a W&B run log needs wandb below 0.30")
    assert message.endswith(
        "install the W&B reader: pip install 'obs-warehouse[wandb]'"
        " (in a checkout: pip install -e '.[trackers]')"
    )
    assert "\n" not in message


def test_module_imports_without_wandb(tmp_path: Path) -> None:
    script = (
        "import sys; sys.modules['wandb'] = None\n"
        "from pathlib import Path\n"
        "from obs.ingest.trackers import wandb_files\n"
        "print(sorted(wandb_files.FORMATS), wandb_files.find(Path(sys.argv[1])))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['wandb', 'wandb-csv', 'wandb-export'] []"


# --------------------------------------------------------------------------- export JSON


def _export() -> dict[str, Any]:
    return {
        "id": "abc123",
        "name": "grpo-qwen",
        "state": "finished",
        "created_at": "2025-01-02T03:04:05Z",
        "updated_at": "2025-01-02T04:00:00Z",
        "finished_at": "2025-01-02T04:00:00Z",
        "tags": ["grpo", "qwen"],
        "config": {
            "lr": {"value": 1e-6, "desc": None},
            "model": {"value": {"name": "qwen", "layers": 24}},
            "_wandb": {"value": {"cli_version": "0.19.11"}},
        },
        "summary": {"_step": 100, "benchmark/loss": 0.2, "_wandb": {"runtime": 50}},
        "url": "https://wandb.ai/team/rl-project/runs/abc123",
        "group": "sweep-1",
        "job_type": "train",
        "history": [
            {
                "_step": 0,
                "_timestamp": 1.7e9,
                "_runtime": 12.5,
                "benchmark/loss": 0.5,
                "r": math.nan,
            },
            {
                "_step": 10,
                "_timestamp": 1.7e9 + 10,
                "_runtime": 22.5,
                "benchmark/loss": 0.4,
                "r": 0.1,
                "hist": {"_type": "histogram", "values": [1], "bins": [0, 1]},
            },
            "a damaged row",
            {
                "_step": 20,
                "_timestamp": 1.7e9 + 20,
                "benchmark/loss": math.inf,
                "eval": {"acc": 0.5},
            },
        ],
        "artifacts": [
            {
                "name": "model",
                "type": "model",
                "version": "v0",
                "aliases": ["latest"],
                "size": 10,
                "created_at": "2025-01-02T04:00:00Z",
            }
        ],
        "metrics": {
            "benchmark/loss": {
                "data_points": 4,
                "values": [
                    {"_step": 0, "value": 0.5},
                    {"_step": 10, "value": 0.4},
                    {"_step": 20, "value": math.inf},
                    {"_step": 30, "value": 0.3},
                ],
                "min": 0.3,
                "max": math.inf,
                "mean": math.inf,
                "std": math.nan,
            }
        },
    }


def _write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, allow_nan=True, indent=1))
    return path


def test_export_json(tmp_path: Path) -> None:
    origin = _write_json(tmp_path / "abc123.json", _export())
    assert wandb_files.find(origin) == [("wandb-export", origin)]
    assert wandb_files.stat_files("wandb-export", origin) == [origin]
    history = _read_one("wandb-export", origin)

    assert (history.run_id, history.source, history.origin) == ("abc123", "wandb-export", origin)
    assert (history.name, history.state, history.tags) == (
        "grpo-qwen",
        "finished",
        ["grpo", "qwen"],
    )
    assert (history.entity, history.project) == ("team", "rl-project")
    assert history.created_at == datetime(2025, 1, 2, 3, 4, 5)
    assert history.config == {"lr": 1e-6, "model": {"name": "qwen", "layers": 24}}
    assert history.summary == {"_step": 100, "benchmark/loss": 0.2}
    assert history.artifacts == _export()["artifacts"]

    assert _points(history) == {
        (0, "_runtime"): 12.5,
        (0, "benchmark/loss"): 0.5,
        (0, "r"): "nan",
        (10, "_runtime"): 22.5,
        (10, "benchmark/loss"): 0.4,
        (10, "r"): 0.1,
        (20, "benchmark/loss"): math.inf,
        (20, "eval.acc"): 0.5,
        (30, "benchmark/loss"): 0.3,  # only in the metrics view
    }
    walls = dict(
        zip(zip(history.steps, history.keys, strict=True), history.wall_times, strict=True)
    )
    assert walls[(0, "r")] == 1.7e9 and walls[(20, "eval.acc")] == 1.7e9 + 20
    assert walls[(30, "benchmark/loss")] is None
    assert dict(history.skipped) == {"histogram": 1}
    assert [(r.file, r.line, r.reason) for r in history.rejects] == [
        (origin, 3, "history row is not an object")
    ]
    assert history.notes == [
        "history holds 4 rows up to step 20; the run logged to step 100 "
        "(W&B samples exported history)"
    ]


def test_export_steps(tmp_path: Path) -> None:
    """No _step: the row's index; a _step that is not a non-negative integer: a reject."""
    rows = [
        {"loss": 1.0},
        {"loss": 2.0},
        {"_step": -1, "loss": 3.0},
        {"_step": "x"},
        {"_step": 7.0},
    ]
    origin = _write_json(tmp_path / "run.json", {"history": rows, "project": "p"})
    history = _read_one("wandb-export", origin)
    assert (history.run_id, history.project, history.state) == ("run", "p", None)
    assert _points(history) == {(0, "loss"): 1.0, (1, "loss"): 2.0}
    assert [(r.line, r.reason) for r in history.rejects] == [
        (3, "history _step is not a non-negative integer"),
        (4, "history _step is not a non-negative integer"),
    ]
    assert history.notes == []


def test_export_still_being_written(tmp_path: Path) -> None:
    text = json.dumps(_export(), allow_nan=True, indent=1)
    origin = tmp_path / "abc123.json"
    origin.write_text(text[: len(text) // 2])
    assert wandb_files.find(tmp_path) == [("wandb-export", origin)]
    with pytest.raises(IngestError) as caught:
        wandb_files.read("wandb-export", origin, tmp_path)
    message = str(caught.value)
    assert message.startswith(f"{origin}: is not complete JSON (still being written?)")
    assert "\n" not in message


# --------------------------------------------------------------------------- UI CSV


def _write_csv(path: Path, rows: list[list[str]], bom: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8-sig" if bom else "utf-8", newline="") as handle:
        csv.writer(handle).writerows(rows)
    return path


def _chart_rows() -> list[list[str]]:
    runs = ["grpo-a", "run b/2"]
    header = ["Step"]
    for run in runs:
        header += [
            f"{run} - train/reward",
            f"{run} - train/reward__MIN",
            f"{run} - train/reward__MAX",
        ]
    return [
        header,
        ["0", "0.1", "0.1", "0.1", "", "", ""],
        ["10", "0.2", "0.2", "0.2", "0.5", "0.5", "0.5"],
        ["x", "1", "1", "1", "1", "1", "1"],
        ["20", "NaN", "", "", "n/a", "", ""],
        [],
    ]


def test_chart_csv_of_several_runs(tmp_path: Path) -> None:
    origin = _write_csv(tmp_path / "reward.csv", _chart_rows(), bom=True)
    assert origin.read_bytes().startswith(b"\xef\xbb\xbf")
    assert wandb_files.find(origin) == [("wandb-csv", origin)]
    first, second = wandb_files.read("wandb-csv", origin, tmp_path)

    assert (first.run_id, first.name, first.source, first.origin) == (
        "grpo-a",
        "grpo-a",
        "wandb-csv",
        origin,
    )
    assert _points(first) == {
        (0, "train/reward"): 0.1,
        (10, "train/reward"): 0.2,
        (20, "train/reward"): "nan",
    }
    assert [(r.line, r.reason) for r in first.rejects] == [(4, "Step is not an integer")]
    assert (first.state, dict(first.skipped)) == (None, {})

    assert (second.run_id, second.name) == (f"run_b_2-{_sha('run b/2')}", "run b/2")
    assert _points(second) == {(10, "train/reward"): 0.5}
    assert dict(second.skipped) == {"text": 1}
    assert second.rejects == []


def test_plain_csv(tmp_path: Path) -> None:
    rows = [
        ["_step", "_runtime", "_timestamp", "loss", "note"],
        ["0", "1.5", "1700000000", "0.9", ""],
        ["1", "2.5", "1700000010", "0.8", "hello"],
        ["2", "3.5", "", "inf", ""],
    ]
    origin = _write_csv(tmp_path / "my run.csv", rows)
    history = _read_one("wandb-csv", origin)
    assert (history.run_id, history.name) == (f"my_run-{_sha('my run')}", "my run")
    assert _points(history) == {
        (0, "_runtime"): 1.5,
        (0, "loss"): 0.9,
        (1, "_runtime"): 2.5,
        (1, "loss"): 0.8,
        (2, "_runtime"): 3.5,
        (2, "loss"): math.inf,
    }
    assert history.wall_times == [1.7e9, 1.7e9, 1.7e9 + 10, 1.7e9 + 10, None, None]
    assert dict(history.skipped) == {"text": 1}
    assert history.rejects == []


def test_csv_without_step(tmp_path: Path) -> None:
    origin = _write_csv(tmp_path / "runs.csv", [["Name", "State"], ["a", "finished"]])
    assert wandb_files.find(tmp_path) == []
    with pytest.raises(IngestError, match=r"has no Step column"):
        wandb_files.read("wandb-csv", origin, tmp_path)


# --------------------------------------------------------------------------- find


def test_find_in_a_project_folder(
    written: dict[str, Written], trainer_state: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    shutil.copytree(written[INSTALLED].base / "wandb", project / "wandb", symlinks=True)
    assert (project / "wandb" / "latest-run").is_symlink()
    export = _write_json(project / "exports" / "abc123.json", _export())
    chart = _write_csv(project / "charts" / "reward.csv", _chart_rows(), bom=True)
    (project / "out").mkdir()
    shutil.copy(trainer_state, project / "out" / "trainer_state.json")
    _write_json(project / "other.json", {"id": 1, "rows": []})
    _write_csv(project / "other.csv", [["epoch", "loss"], ["1", "0.5"]])
    _write_csv(project / ".hidden" / "chart.csv", _chart_rows())
    run_folder = next(p for p in (project / "wandb").iterdir() if p.name.startswith("offline-run"))

    assert json.loads((project / "out" / "trainer_state.json").read_text())["log_history"]
    found = wandb_files.find(project)
    assert found == [
        ("wandb", run_folder.resolve()),
        ("wandb-csv", chart.resolve()),
        ("wandb-export", export.resolve()),
    ]
    assert wandb_files.find(project / "wandb" / "latest-run") == [("wandb", run_folder.resolve())]
    log = next(run_folder.glob("*.wandb"))
    assert wandb_files.find(log) == [("wandb", run_folder.resolve())]
    assert wandb_files.find(project / "out" / "trainer_state.json") == []
    assert wandb_files.stat_files("wandb", run_folder) == [log]


def test_unknown_format(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match=r"is not a W&B format"):
        wandb_files.read("tensorboard", tmp_path, tmp_path)


def _sha(name: str) -> str:
    """The hash a changed run name keeps (first 8 hex of SHA-1), computed here independently."""
    import hashlib

    return hashlib.sha1(name.encode()).hexdigest()[:8]
