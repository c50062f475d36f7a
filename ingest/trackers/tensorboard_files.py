"""TensorBoard event files: a folder of ``events.out.tfevents.*`` files is one run.

The files are read with the tensorboard package's own record reader
(``RawEventFileLoader``: framing and checksums) and parsed with its ``Event``
proto, so obs never decodes the record format itself. The raw loader is used
rather than ``EventFileLoader`` because it yields each record's bytes: adding
up their sizes tells a file that ended cleanly from one that stopped early
(all loaders stop silently at a partial or damaged record).

What a summary value becomes:

* a scalar (old-style ``simple_value``, or a new-style tensor whose tag carries
  the ``scalars`` plugin, written by torch's ``add_scalar(new_style=True)``,
  ``tensorboard.summary.Writer`` or TF2) is a point; TF2 names the plugin only
  on the first event of a tag, so the plugin is remembered per tag;
* histograms, images, audio, text, PR curves, graphs, ... are counted in
  ``skipped`` under their kind;
* hparams (``session_start_info``) are the run's config (they land, so they are not
  counted in ``skipped``); integral numbers become ints, as TensorBoard keeps doubles.

``add_hparams`` (torch and tensorboardX) writes into a timestamped subfolder of
the run: a subfolder whose event files hold only hparams and one step-0 value
per metric tag is not a run of its own: its hparams go to the config of the
run folder right above it and its metric values to that run's summary (they
are the results the user reported next to the hparams, not a time series).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from obs.ingest.errors import IngestError, install_hint
from obs.ingest.trackers.base import RunHistory, as_step, safe_run_id, utc

FORMAT = "tensorboard"
FORMATS: dict[str, str] = {FORMAT: "TensorBoard event files (a folder per run)"}
EVENT_PREFIX = "events.out.tfevents."
RECORD_OVERHEAD = 16  # 8-byte length, 4-byte length checksum, 4-byte data checksum
HEADER_SIZE = 12
HPARAMS = "hparams"
SCALARS = "scalars"
# Plugin names as the summary line names what was left out.
PLUGIN_KINDS = {
    "histograms": "histogram",
    "images": "image",
    "audio": "audio",
    "text": "text",
    "pr_curves": "pr_curve",
    "graphs": "graph",
    "mesh": "mesh",
    "custom_scalars": "custom_scalars",
}
# Old-style Summary.Value fields that are not points.
OLD_KINDS = {
    "histo": "histogram",
    "obsolete_old_style_histogram": "histogram",
    "image": "image",
    "audio": "audio",
}
# Events that carry no summary but are worth counting.
EVENT_KINDS = {"graph_def": "graph", "meta_graph_def": "graph", "tagged_run_metadata": "metadata"}


def find(path: Path) -> list[tuple[str, Path]]:
    """Every folder at or under ``path`` that holds event files (an hparams subfolder excluded)."""
    if path.is_file():
        return [(FORMAT, path.parent)] if path.name.startswith(EVENT_PREFIX) else []
    if not path.is_dir():
        return []
    folders = {Path(top) for top, _, names in os.walk(path) if _event_names(names)}
    runs = [f for f in folders if f == path or f.parent not in folders or not _hparams_only(f)]
    return [(FORMAT, folder) for folder in sorted(runs)]


def stat_files(fmt: str, origin: Path) -> list[Path]:
    """The run's event files and those of its hparams subfolders (a new one changes the config)."""
    _check_format(fmt)
    files = event_files(origin)
    for side in _hparams_folders(origin):
        files.extend(event_files(side))
    return files


def read(fmt: str, origin: Path, root: Path) -> list[RunHistory]:
    """The one run the folder holds: points, skipped kinds, hparams, notes on damage."""
    _check_format(fmt)
    _require_tensorboard(origin)
    files = event_files(origin)
    if not files:
        raise IngestError(
            f"{origin}: no TensorBoard event files (events.out.tfevents.*) in this folder; "
            "point at the folder a SummaryWriter wrote"
        )
    name = _run_name(origin, root)
    history = RunHistory(run_id=_run_id(name), source=FORMAT, origin=origin, name=name)
    reader = _RunReader(history)
    for path in files:
        reader.read_file(path)
    if reader.files_read == 0:
        raise IngestError(
            f"{origin}: none of its event files could be opened ({reader.errors[0]}); "
            "check the files' permissions"
        )
    for side in _hparams_folders(origin):
        _merge_hparams_folder(history, side)
    return [history]


# ---------------------------------------------------------------- finding runs


def event_files(folder: Path) -> list[Path]:
    """The folder's own event files in name order (names start with the creation time)."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return []
    return [Path(e.path) for e in entries if e.name.startswith(EVENT_PREFIX) and e.is_file()]


def _event_names(names: list[str]) -> bool:
    return any(name.startswith(EVENT_PREFIX) for name in names)


def _hparams_folders(origin: Path) -> list[Path]:
    """Subfolders of ``origin`` that ``add_hparams`` wrote (part of this run, not runs)."""
    try:
        subfolders = sorted(Path(e.path) for e in os.scandir(origin) if e.is_dir())
    except OSError:
        return []
    return [sub for sub in subfolders if event_files(sub) and _hparams_only(sub)]


def _hparams_only(folder: Path) -> bool:
    """True when the folder's events are hparams plus at most one step-0 value per scalar tag.

    That is what ``add_hparams`` writes; a real run logs scalars at many steps.
    Without the tensorboard package the folder cannot be looked into: it is a run.
    """
    try:
        _import_proto()
    except ImportError:
        return False
    seen_hparams = False
    scalar_tags: set[str] = set()
    for path in event_files(folder):
        for event in _events(path):
            if not event.HasField("summary"):
                continue
            for value in event.summary.value:
                plugin = value.metadata.plugin_data.plugin_name
                if plugin == HPARAMS:
                    seen_hparams = True
                elif _is_scalar_shape(value, plugin) and event.step == 0:
                    if value.tag in scalar_tags:
                        return False
                    scalar_tags.add(value.tag)
                else:
                    return False
    return seen_hparams


def _events(path: Path) -> Iterator[Any]:
    """Parsed events of a file, stopping quietly at the first unreadable record."""
    from google.protobuf.message import DecodeError
    from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader

    event_pb2 = _import_proto()
    try:
        for record in RawEventFileLoader(str(path)).Load():
            yield event_pb2.Event.FromString(record)
    except (OSError, DecodeError, _tb_errors().OpError):
        return


def _is_scalar_shape(value: Any, plugin: str) -> bool:
    return value.HasField("simple_value") or (value.HasField("tensor") and plugin == SCALARS)


# ---------------------------------------------------------------- reading a run


@dataclass
class _RunReader:
    """Reads a run's event files in order, keeping what spans files (plugin per tag)."""

    history: RunHistory
    plugins: dict[str, str] = field(default_factory=dict)
    files_read: int = 0
    errors: list[str] = field(default_factory=list)

    def read_file(self, path: Path) -> None:
        """Land every event of one file; a partial or damaged record ends it with a note."""
        from google.protobuf.message import DecodeError
        from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader

        event_pb2 = _import_proto()
        try:
            size = path.stat().st_size
            records = RawEventFileLoader(str(path)).Load()
            consumed = count = 0
            for record in records:
                count += 1
                consumed += len(record) + RECORD_OVERHEAD
                try:
                    event = event_pb2.Event.FromString(record)
                except DecodeError as exc:
                    reason = f"not a TensorBoard event: {exc}"
                    self.history.reject(path, count, reason, record[:256])
                    continue
                self._event(path, count, event)
        except (OSError, _tb_errors().OpError) as exc:
            self.errors.append(f"{path.name}: {exc}")
            self.history.notes.append(f"{path}: could not be read ({exc})")
            return
        self.files_read += 1
        if consumed < size:
            self._stopped_early(path, count, consumed, size)

    def _stopped_early(self, path: Path, count: int, consumed: int, size: int) -> None:
        """Say why the loader stopped before the end: a partial last record or a damaged one."""
        left = size - consumed
        if _partial_record(path, consumed, left):
            self.history.truncated = True
            self.history.notes.append(
                f"{path}: read {count} events; the last record is incomplete "
                f"({left} bytes: the file is still being written or was cut short)"
            )
            return
        reason = (
            f"record {count + 1} is damaged (failed its checksum): the last {left} bytes "
            "of the file, from that record on, were not read"
        )
        self.history.notes.append(f"{path}: read {count} events; {reason}")
        self.history.reject(path, count + 1, reason)

    def _event(self, path: Path, number: int, event: Any) -> None:
        """One event: its summary values, or a counted non-summary record."""
        what = event.WhichOneof("what")
        if self.history.created_at is None:
            self.history.created_at = utc(event.wall_time)
        if what in EVENT_KINDS:
            self.history.skipped[EVENT_KINDS[what]] += 1
        if what != "summary":
            return
        step = as_step(event.step)
        if step is None:
            self.history.reject(path, number, f"step {event.step} is not a non-negative integer")
            return
        for value in event.summary.value:
            self._value(step, event.wall_time, value)

    def _value(self, step: int, wall_time: float, value: Any) -> None:
        """One summary value: a point, hparams for the config, or a counted kind."""
        tag = value.tag or value.node_name
        plugin = value.metadata.plugin_data.plugin_name
        if plugin:
            self.plugins.setdefault(tag, plugin)
        plugin = plugin or self.plugins.get(tag, "")
        kind = value.WhichOneof("value")
        if kind == "simple_value":
            self.history.add(step, tag, _float32(value.simple_value), wall_time)
        elif kind in OLD_KINDS:
            self.history.skipped[OLD_KINDS[kind]] += 1
        elif plugin == HPARAMS:
            self.history.config.update(_hparams(value))
        elif kind == "tensor" and (plugin == SCALARS or _scalar_class(value)):
            self._tensor_scalar(step, tag, wall_time, value)
        else:
            self.history.skipped[PLUGIN_KINDS.get(plugin, plugin or "tensor")] += 1

    def _tensor_scalar(self, step: int, tag: str, wall_time: float, value: Any) -> None:
        number = _tensor_number(value.tensor)
        if number is None:
            self.history.skipped["tensor"] += 1
        else:
            self.history.add(step, tag, number, wall_time)


def _scalar_class(value: Any) -> bool:
    """A tensor the writer marked as a scalar (``DATA_CLASS_SCALAR``) without a plugin name."""
    from tensorboard.compat.proto import summary_pb2

    return value.metadata.data_class == summary_pb2.DATA_CLASS_SCALAR


def _tensor_number(tensor: Any) -> float | bool | None:
    """The number a 0-d or one-element numeric tensor holds, else None."""
    from tensorboard.util import tensor_util

    try:
        array = tensor_util.make_ndarray(tensor)
    except (ValueError, TypeError):
        return None
    if array.size != 1:
        return None
    item = array.reshape(()).item()
    if array.dtype == np.bool_:
        return bool(item)
    if array.dtype == np.float32:
        return _float32(item)
    if np.issubdtype(array.dtype, np.number) and not np.iscomplexobj(array):
        return float(item)
    return None


def _float32(number: float) -> float:
    """A float32 as the shortest decimal that reads back as it: 0.9 lands as 0.9, not as
    0.8999999761581421, so it equals the 0.9 another tracker lands for the same metric."""
    return float(str(np.float32(number)))


def _partial_record(path: Path, consumed: int, left: int) -> bool:
    """True when the bytes left after the last good record are a record cut short.

    Only the 8-byte length is looked at: a record whose length runs past the end
    of the file is incomplete; one that fits but was not read failed a checksum.
    """
    if left < HEADER_SIZE:
        return True
    with path.open("rb") as handle:
        handle.seek(consumed)
        (length,) = struct.unpack("<Q", handle.read(8))
    return length + RECORD_OVERHEAD > left


# ---------------------------------------------------------------- hparams


def _hparams(value: Any) -> dict[str, Any]:
    """The hyperparameters of a ``session_start_info`` value ({} for the other hparams values:
    the experiment's declared domains, the session's end)."""
    from google.protobuf.message import DecodeError
    from tensorboard.plugins.hparams import plugin_data_pb2

    try:
        data = plugin_data_pb2.HParamsPluginData.FromString(value.metadata.plugin_data.content)
    except DecodeError:
        return {}
    if not data.HasField("session_start_info"):
        return {}
    hparams = data.session_start_info.hparams
    return {name: _hparam_value(hparams[name]) for name in sorted(hparams)}


def _hparam_value(value: Any) -> Any:
    """A ``google.protobuf.Value`` as Python: TensorBoard keeps every number as a double,
    so an integral one becomes an int (batch sizes, seeds, step counts are ints)."""
    from google.protobuf import json_format

    kind = value.WhichOneof("kind")
    if kind == "number_value":
        number = value.number_value
        return int(number) if number.is_integer() else number
    if kind == "string_value":
        return value.string_value
    if kind == "bool_value":
        return value.bool_value
    if kind in (None, "null_value"):
        return None
    return json_format.MessageToDict(value)


def _merge_hparams_folder(history: RunHistory, folder: Path) -> None:
    """An ``add_hparams`` subfolder: hparams to the config, its metric values to the summary."""
    for path in event_files(folder):
        for event in _events(path):
            if not event.HasField("summary"):
                continue
            for value in event.summary.value:
                if value.metadata.plugin_data.plugin_name == HPARAMS:
                    history.config.update(_hparams(value))
                elif (number := _scalar_of(value)) is not None:
                    history.summary[value.tag] = number


def _scalar_of(value: Any) -> float | bool | None:
    """The number an old-style or tensor scalar value holds, else None."""
    if value.HasField("simple_value"):
        return _float32(value.simple_value)
    return _tensor_number(value.tensor) if value.HasField("tensor") else None


# ---------------------------------------------------------------- names and imports


def _run_name(origin: Path, root: Path) -> str:
    """The folder's path under ``root`` with '/' as '.', or its own name when it is ``root``."""
    base = root.parent if root.is_file() else root
    for folder, top in ((origin, base), (origin.resolve(), base.resolve())):
        try:
            relative = folder.relative_to(top)
        except ValueError:
            continue
        if relative.parts:
            return ".".join(relative.parts)
        break
    return origin.resolve().name or "run"


def _run_id(name: str) -> str:
    """``safe_run_id`` (a changed or cut name keeps a hash of itself: long paths stay apart)."""
    return safe_run_id(name)


def _check_format(fmt: str) -> None:
    if fmt != FORMAT:
        raise ValueError(f"tensorboard_files reads {FORMAT!r}, not {fmt!r}")


def _require_tensorboard(origin: Path) -> None:
    try:
        _import_proto()
    except ImportError:
        raise IngestError(
            f"{origin}: reading TensorBoard event files needs the tensorboard package: "
            + install_hint("tensorboard")
        ) from None


def _import_proto() -> Any:
    from tensorboard.compat.proto import event_pb2

    return event_pb2


def _tb_errors() -> Any:
    """TensorBoard's error classes (its TensorFlow stand-in when TensorFlow is absent)."""
    from tensorboard.compat import tf

    return tf.errors
