"""TensorBoard event files as the real writers write them, read back into RunHistory."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from obs.ingest.errors import IngestError
from obs.ingest.trackers import tensorboard_files as tb
from obs.ingest.trackers.base import RunHistory

T0 = 1_700_000_000.0  # wall times given to the writers, so points can be compared exactly


def read_one(origin: Path, root: Path | None = None) -> RunHistory:
    histories = tb.read("tensorboard", origin, root or origin)
    assert len(histories) == 1
    return histories[0]


def points(history: RunHistory) -> list[tuple[int, str, float]]:
    return list(zip(history.steps, history.keys, history.values, strict=True))


def same(actual: list[tuple[int, str, float]], expected: list[tuple[int, str, float]]) -> bool:
    """Equal point lists, NaN equal to NaN."""
    return len(actual) == len(expected) and all(
        a[:2] == e[:2] and (a[2] == e[2] or (math.isnan(a[2]) and math.isnan(e[2])))
        for a, e in zip(actual, expected, strict=True)
    )


def event_file(folder: Path) -> Path:
    (path,) = tb.event_files(folder)
    return path


def write_x(folder: Path, values: list[float], suffix: str = "") -> None:
    """tensorboardX's SummaryWriter: old-style scalars (``simple_value``), one per step."""
    from tensorboardX import SummaryWriter

    writer = SummaryWriter(str(folder), filename_suffix=suffix)
    for step, value in enumerate(values, start=1):
        writer.add_scalar("train/loss", value, step, walltime=T0 + step)
    writer.close()


# ---------------------------------------------------------------- the writers


def test_tensorboardx_scalars_land_and_media_are_counted(tmp_path: Path) -> None:
    from tensorboardX import SummaryWriter

    run = tmp_path / "run"
    writer = SummaryWriter(str(run))
    writer.add_scalar("loss", 0.5, 1, walltime=T0 + 1)
    writer.add_scalar("loss", 0.1, 2, walltime=T0 + 2)  # float32 on disk, lands as 0.1
    writer.add_scalar("loss", float("nan"), 3, walltime=T0 + 3)
    writer.add_scalar("loss", float("inf"), 4, walltime=T0 + 4)
    writer.add_scalar("reward", float("-inf"), 4, walltime=T0 + 4.5)
    writer.add_histogram("weights", np.arange(10.0), 4, walltime=T0 + 5)
    writer.add_image("sample", np.zeros((3, 4, 4)), 4, walltime=T0 + 6)
    writer.add_text("completion", "hello", 4, walltime=T0 + 7)
    writer.close()

    history = read_one(run)

    expected = [(1, "loss", 0.5), (2, "loss", 0.1), (3, "loss", math.nan), (4, "loss", math.inf)]
    assert same(points(history), [*expected, (4, "reward", -math.inf)])
    assert history.wall_times == [T0 + 1, T0 + 2, T0 + 3, T0 + 4, T0 + 4.5]
    assert history.skipped == {"histogram": 1, "image": 1, "text": 1}
    assert (history.run_id, history.name, history.source, history.origin) == (
        "run",
        "run",
        "tensorboard",
        run,
    )
    assert history.state is None
    assert history.created_at is not None  # the file_version event's time
    assert history.notes == [] and history.rejects == []


def test_torch_writer_default_and_new_style_scalars(tmp_path: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    run = tmp_path / "torch-run"
    writer = SummaryWriter(str(run))
    writer.add_scalar("loss", 0.75, 10, walltime=T0 + 10)
    writer.add_scalar("kl", 0.3, 11, walltime=T0 + 11, new_style=True)
    writer.add_scalar("kl", float("nan"), 12, walltime=T0 + 12, new_style=True)
    writer.add_scalar("kl", float("-inf"), 13, walltime=T0 + 13, new_style=True)
    writer.close()

    history = read_one(run)

    assert same(
        points(history),
        [(10, "loss", 0.75), (11, "kl", 0.3), (12, "kl", math.nan), (13, "kl", -math.inf)],
    )
    assert history.wall_times == [T0 + 10, T0 + 11, T0 + 12, T0 + 13]
    assert history.skipped == {}


def test_tensorboard_summary_writer_tensor_scalars(tmp_path: Path) -> None:
    from tensorboard.summary import Writer

    run = tmp_path / "tb-run"
    writer = Writer(str(run))
    writer.add_scalar("reward/mean", 2.5, 7, wall_time=T0 + 7)
    writer.add_scalar("reward/mean", 0.2, 8, wall_time=T0 + 8)
    writer.add_scalar("reward/mean", float("inf"), 9, wall_time=T0 + 9)
    writer.close()

    history = read_one(run)

    assert points(history) == [
        (7, "reward/mean", 2.5),
        (8, "reward/mean", 0.2),
        (9, "reward/mean", math.inf),
    ]
    assert history.wall_times == [T0 + 7, T0 + 8, T0 + 9]


def test_scalar_plugin_named_only_on_the_first_event_of_a_tag(tmp_path: Path) -> None:
    """TF2 writes a tag's metadata once; later tensors of the tag are still scalars."""
    from tensorboard.compat.proto import event_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
    from tensorboard.util import tensor_util

    run = tmp_path / "tf2-run"
    writer = EventFileWriter(str(run))
    for step, number in ((1, 0.125), (2, 0.1), (3, 7)):
        event = event_pb2.Event(wall_time=T0 + step, step=step)
        value = event.summary.value.add(tag="entropy")
        value.tensor.CopyFrom(tensor_util.make_tensor_proto(np.float64(number)))
        if step == 1:
            value.metadata.plugin_data.plugin_name = "scalars"
        vector = event.summary.value.add(tag="logits")  # a plain tensor: not a point
        vector.tensor.CopyFrom(tensor_util.make_tensor_proto(np.arange(3.0)))
        writer.add_event(event)
    writer.close()

    history = read_one(run)

    assert points(history) == [(1, "entropy", 0.125), (2, "entropy", 0.1), (3, "entropy", 7.0)]
    assert history.skipped == {"tensor": 3}


def test_torch_add_hparams_subfolder_is_the_runs_config(tmp_path: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    logs = tmp_path / "logs"
    run = logs / "grpo"
    writer = SummaryWriter(str(run))
    writer.add_scalar("loss", 1.5, 1, walltime=T0 + 1)
    writer.add_hparams({"lr": 0.01, "batch_size": 32, "optim": "adam", "kl": True}, {"hp/acc": 0.9})
    writer.close()
    (side,) = [p for p in run.iterdir() if p.is_dir()]  # add_hparams' timestamped folder

    assert tb.find(logs) == [("tensorboard", run)]
    assert tb.stat_files("tensorboard", run) == tb.event_files(run) + tb.event_files(side)
    history = read_one(run, logs)
    assert history.config == {"batch_size": 32, "kl": True, "lr": 0.01, "optim": "adam"}
    assert history.summary == {"hp/acc": 0.9}
    assert points(history) == [(1, "loss", 1.5)]


def test_hparams_in_the_runs_own_files_and_a_subfolder_that_is_a_run(tmp_path: Path) -> None:
    """tensorboardX's add_hparams beside a nested folder that logged a real series."""
    from tensorboardX import SummaryWriter

    run = tmp_path / "parent"
    writer = SummaryWriter(str(run))
    writer.add_scalar("loss", 1.0, 1, walltime=T0)
    writer.add_hparams({"seed": 3}, {"hp/score": 0.5}, name="hp")
    writer.close()
    write_x(run / "child", [0.5, 0.25])  # a run of its own: steps 1 and 2

    assert tb.find(tmp_path) == [("tensorboard", run), ("tensorboard", run / "child")]
    assert read_one(run, tmp_path).config == {"seed": 3}
    child = read_one(run / "child", tmp_path)
    assert (child.run_id, child.config) == ("parent.child", {})
    assert points(child) == [(1, "train/loss", 0.5), (2, "train/loss", 0.25)]


# ---------------------------------------------------------------- finding runs


def test_a_folder_of_runs_gives_one_run_per_event_folder(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    for name in ("run_a", "run_b", "exp/run_c"):
        write_x(logs / name, [1.0])
    (logs / "exp" / "notes.txt").write_text("not a run")

    found = tb.find(logs)

    assert found == [("tensorboard", logs / p) for p in ("exp/run_c", "run_a", "run_b")]
    ids = [read_one(origin, logs).run_id for _, origin in found]
    assert ids == ["exp.run_c", "run_a", "run_b"]
    assert tb.find(logs / "run_a") == [("tensorboard", logs / "run_a")]
    assert read_one(logs / "run_a").run_id == "run_a"  # origin == root: the folder's name
    assert tb.find(event_file(logs / "run_b")) == [("tensorboard", logs / "run_b")]
    assert tb.find(logs / "exp" / "notes.txt") == [] and tb.find(tmp_path / "missing") == []


def test_run_id_characters_are_replaced(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    write_x(logs / "lr=0.1 bs#32", [1.0])

    history = read_one(logs / "lr=0.1 bs#32", logs)

    assert (history.run_id, history.name) == (
        f"lr_0.1_bs_32-{_sha('lr=0.1 bs#32')}",
        "lr=0.1 bs#32",
    )


def test_two_event_files_of_a_restarted_run_are_both_read(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_x(run, [4.0, 3.0], suffix=".0")
    write_x(run, [3.5, 2.0, 1.0], suffix=".1")  # the restart logs step 1 and 2 again

    history = read_one(run)

    assert len(tb.stat_files("tensorboard", run)) == 2
    assert points(history) == [
        (1, "train/loss", 4.0),
        (2, "train/loss", 3.0),
        (1, "train/loss", 3.5),
        (2, "train/loss", 2.0),
        (3, "train/loss", 1.0),
    ]


# ---------------------------------------------------------------- damaged files


def test_a_file_cut_short_lands_the_events_before_the_cut(tmp_path: Path) -> None:
    write_x(tmp_path / "full", [1.0, 2.0, 3.0, 4.0])
    data = event_file(tmp_path / "full").read_bytes()
    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / "events.out.tfevents.1.host").write_bytes(data[:-10])  # inside the last record

    history = read_one(cut)

    assert points(history) == [
        (1, "train/loss", 1.0),
        (2, "train/loss", 2.0),
        (3, "train/loss", 3.0),
    ]
    (note,) = history.notes
    assert "events.out.tfevents.1.host: read 4 events" in note and "incomplete" in note
    assert history.rejects == []


def test_a_damaged_record_in_the_middle_keeps_what_came_before(tmp_path: Path) -> None:
    write_x(tmp_path / "full", [1.0, 2.0, 3.0, 4.0])
    data = bytearray(event_file(tmp_path / "full").read_bytes())
    record_lengths = []
    offset = 0
    while offset < len(data):
        length = int.from_bytes(data[offset : offset + 8], "little")
        record_lengths.append(length)
        offset += length + 16
    third = sum(n + 16 for n in record_lengths[:2])
    data[third + 14] ^= 0xFF  # a byte of the third record's data: its checksum fails
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "events.out.tfevents.1.host").write_bytes(bytes(data))

    history = read_one(bad)

    assert points(history) == [(1, "train/loss", 1.0)]
    (note,) = history.notes
    assert "read 2 events; record 3 is damaged" in note
    (reject,) = history.rejects
    assert (reject.file.name, reject.line) == ("events.out.tfevents.1.host", 3)


def test_a_file_that_is_not_an_event_file_lands_nothing_with_a_note(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "events.out.tfevents.1.host").write_bytes(b"this is not a record file at all")

    history = read_one(run)

    assert history.points == 0
    assert "read 0 events" in history.notes[0]


def test_a_folder_without_event_files_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match=r"no TensorBoard event files .*; point at"):
        tb.read("tensorboard", tmp_path, tmp_path)


# ---------------------------------------------------------------- without tensorboard


def test_without_tensorboard_reading_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_x(tmp_path / "run", [1.0])
    for name in [n for n in sys.modules if n == "tensorboard" or n.startswith("tensorboard.")]:
        monkeypatch.setitem(sys.modules, name, None)  # an import of any of them now fails

    with pytest.raises(IngestError) as raised:
        tb.read("tensorboard", tmp_path / "run", tmp_path)

    assert str(raised.value) == (
        f"{tmp_path / 'run'}: reading TensorBoard event files needs the tensorboard package: "
        "pip install 'obs-warehouse[tensorboard]' (in a checkout: pip install -e '.[trackers]')"
    )
    assert tb.find(tmp_path) == [("tensorboard", tmp_path / "run")]  # finding needs no library


def test_the_module_imports_without_tensorboard() -> None:
    code = (
        "import sys; sys.modules['tensorboard'] = None; "
        "import obs.ingest.trackers.tensorboard_files as m; print(sorted(m.FORMATS))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['tensorboard']"


def _sha(name: str) -> str:
    """The hash a changed run name keeps (first 8 hex of SHA-1), computed here independently."""
    import hashlib

    return hashlib.sha1(name.encode()).hexdigest()[:8]


# ---------------------------------------------------------------- run ids across ingests


def test_a_folder_keeps_its_run_id_whatever_path_names_it_later(tmp_path: Path) -> None:
    """Landed as ``exp1.train`` from ``logs/``, the folder grows and is ingested as
    ``logs/exp1`` (where its path alone would name it ``train``): the new points join
    ``exp1.train``, and no second run appears."""
    import duckdb
    from obs.ingest.keyed import ingest_metrics

    run, lake = tmp_path / "logs" / "exp1" / "train", tmp_path / "lake"
    write_x(run, [1.0, 2.0, 3.0])
    first = ingest_metrics(tmp_path / "logs", lake=lake)
    assert first.runs == ["exp1.train"]
    # The trainer restarts and writes a second event file with steps 1-5.
    write_x(run, [1.0, 2.0, 3.0, 4.0, 5.0], suffix=".restart")
    later = ingest_metrics(tmp_path / "logs" / "exp1", lake=lake)
    assert later.runs == ["exp1.train"]
    landed = duckdb.sql(
        f"select run_id, count(distinct step) from read_parquet('{lake}/metrics/*/*/*.parquet', "
        "hive_partitioning = true) group by 1"
    ).fetchall()
    assert landed == [("exp1.train", 5)]
    # Named explicitly, a run id is what --run says.
    named = ingest_metrics(tmp_path / "logs" / "exp1", lake=lake, run_id="mine")
    assert named.runs == ["mine"]
