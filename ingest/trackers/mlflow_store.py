"""MLflow file stores (``mlruns/``): every run of a store, an experiment or one run folder.

Everything is read through mlflow's own ``MlflowClient`` on a ``file://`` URI,
never by parsing the store's files: experiments, runs (info, params, tags,
latest metrics), each metric's full history and the top-level artifacts.

MLflow 3 keeps file stores in maintenance mode: ``FileStore`` refuses to open
unless ``MLFLOW_ALLOW_FILE_STORE`` is true. That variable (and
``MLFLOW_DISABLE_TELEMETRY``) is set only while this module talks to the client,
and put back afterwards. Opening a store creates its empty ``.trash`` folder
when it is missing (``FileStore`` does that); it is removed again after the
read, so the store is left as it was found.

The file store reads a run's every metric file whenever it reads the run, and
one damaged line (text appended to a metric file) makes ``search_runs`` raise
for the whole search. Runs are therefore searched one experiment at a time,
and when a search fails each run folder is asked for on its own: the run the
client cannot read is rejected (no points, a reject naming the damaged file
and line) and every other run lands.

Params stay the strings MLflow keeps them as: MLflow has already turned the
logged value into text ("0.001", "True", "[1, 2]"), and guessing a type back
would make "1e-3" and "0.001" different values of one parameter.
"""

from __future__ import annotations

import contextlib
import logging
import os
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml
from obs.ingest.errors import IngestError, install_hint
from obs.ingest.trackers.base import RunHistory, as_step, safe_run_id, utc

FORMAT = "mlflow"
FORMATS: dict[str, str] = {FORMAT: "MLflow file store (mlruns/)"}
META = "meta.yaml"
TRASH = ".trash"  # where MLflow moves deleted experiments
RUN_FOLDERS = ("metrics", "params", "tags")  # what decides whether a run changed
RESERVED = {"tags", "datasets", "traces", "models"}  # experiment subfolders that are not runs
# Set while the client reads: open a file store at all; send no usage telemetry.
READ_ENV = {"MLFLOW_ALLOW_FILE_STORE": "true", "MLFLOW_DISABLE_TELEMETRY": "true"}
RUN_NAME_TAG = "mlflow.runName"


def find(path: Path) -> list[tuple[str, Path]]:
    """Every store, experiment folder or run folder at ``path``, else every store under it."""
    if path.is_file():
        if path.name != META:
            return []
        path = path.parent
    if not path.is_dir():
        return []
    if _kind(path):
        return [(FORMAT, path)]
    found: list[Path] = []
    for top, dirs, _ in os.walk(path):
        here = Path(top)
        if here != path and _kind(here):
            found.append(here)
            dirs.clear()  # a store's experiments and runs are read with it
        dirs.sort()
    return [(FORMAT, origin) for origin in sorted(set(found))]


def stat_files(fmt: str, origin: Path) -> list[Path]:
    """The meta.yaml files and every file under the runs' metrics/, params/ and tags/
    (for a run folder, its experiment's meta.yaml too: it names the project).

    Artifacts are left out: they can be large, and a run's history does not depend on them.
    """
    _check_format(fmt)
    files: list[Path] = [origin.parent / META] if _kind(origin) == "run" else []
    for top, dirs, names in os.walk(origin):
        here = Path(top)
        dirs[:] = sorted(d for d in dirs if d != "artifacts")
        in_run_folder = any(part in RUN_FOLDERS for part in here.relative_to(origin).parts)
        files.extend(here / name for name in sorted(names) if name == META or in_run_folder)
    return sorted(files)


def read(fmt: str, origin: Path, root: Path) -> list[RunHistory]:
    """Every run the origin holds (``root`` is not needed: MLflow gives each run its id)."""
    _check_format(fmt)
    scope = _scope(origin)
    trash = scope.store / TRASH
    had_trash = trash.exists()
    try:
        with _file_store_allowed():
            client = _client(scope.store, origin)
            reader = _StoreReader(client, scope, origin)
            return reader.read()
    finally:
        if not had_trash:
            # The client made it; the store is left as it was found (only
            # when still empty: MLflow itself may have used it meanwhile).
            with contextlib.suppress(OSError):
                trash.rmdir()


# ---------------------------------------------------------------- what a folder is


@dataclass(frozen=True)
class _Scope:
    """The store to open and, for an experiment or run folder, what to read of it."""

    store: Path
    experiment_id: str | None = None
    run_id: str | None = None


def _kind(folder: Path) -> str | None:
    """``run``, ``experiment`` or ``store`` for an MLflow folder, else None."""
    meta = _meta(folder)
    if meta is not None:
        if _is_run_meta(meta) and (folder / "metrics").is_dir():
            return "run"
        return "experiment" if _is_experiment_meta(meta) else None
    try:
        children = sorted(Path(e.path) for e in os.scandir(folder) if e.is_dir())
    except OSError:
        return None
    for child in children:
        meta = _meta(child)
        if meta is not None and _is_experiment_meta(meta):
            return "store"
    return None


def _meta(folder: Path) -> dict[str, Any] | None:
    """A folder's meta.yaml as a mapping (only to tell stores, experiments and runs apart)."""
    path = folder / META
    try:
        if not path.is_file():
            return None
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
        return {}  # (RecursionError: nested thousands deep)
    return data if isinstance(data, dict) else {}


def _is_run_meta(meta: dict[str, Any]) -> bool:
    return "run_id" in meta or "run_uuid" in meta


def _is_experiment_meta(meta: dict[str, Any]) -> bool:
    return "experiment_id" in meta and "name" in meta and not _is_run_meta(meta)


def _scope(origin: Path) -> _Scope:
    """What ``read`` opens for ``origin``: a store, one of its experiments, or one run."""
    kind = _kind(origin)
    if kind == "store":
        return _Scope(origin)
    if kind == "experiment":
        return _Scope(_store_of(origin), _experiment_id(origin))
    if kind == "run":
        experiment = origin.parent
        if _kind(experiment) != "experiment":
            raise IngestError(
                f"{origin}: this MLflow run folder is not inside its experiment folder (no "
                f"experiment meta.yaml in {experiment}); point at the mlruns folder it came from"
            )
        meta = _meta(origin) or {}
        run_id = str(meta.get("run_id") or meta.get("run_uuid"))
        return _Scope(_store_of(experiment), _experiment_id(experiment), run_id)
    raise IngestError(
        f"{origin}: not an MLflow file store, experiment or run folder (no meta.yaml found); "
        "point at the mlruns folder"
    )


def _experiment_id(folder: Path) -> str:
    return str((_meta(folder) or {}).get("experiment_id", folder.name))


def _store_of(experiment: Path) -> Path:
    """The store an experiment folder belongs to (a deleted one sits in the store's .trash)."""
    parent = experiment.parent
    return parent.parent if parent.name == TRASH else parent


def _experiment_folder(store: Path, experiment_id: str) -> Path:
    folder = store / experiment_id
    return folder if folder.is_dir() else store / TRASH / experiment_id


def _run_folders(experiment: Path) -> list[Path]:
    """The run folders of an experiment folder as the file store lists them."""
    try:
        entries = sorted(os.scandir(experiment), key=lambda e: e.name)
    except OSError:
        return []
    return [
        Path(e.path)
        for e in entries
        if e.is_dir() and e.name not in RESERVED and (Path(e.path) / META).exists()
    ]


def _experiment_folders(store: Path) -> list[Path]:
    """Active and deleted experiment folders on disk (to see which the client could not read)."""
    folders: list[Path] = []
    for parent in (store, store / TRASH):
        try:
            entries = sorted(os.scandir(parent), key=lambda e: e.name)
        except OSError:
            continue
        folders.extend(
            Path(e.path)
            for e in entries
            if e.is_dir() and e.name != TRASH and (Path(e.path) / META).exists()
        )
    return folders


# ---------------------------------------------------------------- reading through the client


class _StoreReader:
    """Reads a scope's runs, one experiment at a time, so one bad run loses nothing else."""

    def __init__(self, client: Any, scope: _Scope, origin: Path) -> None:
        self.client = client
        self.scope = scope
        self.origin = origin

    def read(self) -> list[RunHistory]:
        if self.scope.run_id is not None:
            experiment = self._experiment(self.scope.experiment_id)  # None: project unknown
            return [self._run_by_id(self.scope.run_id, experiment)]
        histories: list[RunHistory] = []
        listed: set[str] = set()
        for experiment in self._experiments():
            listed.add(experiment.experiment_id)
            histories.extend(self._experiment_runs(experiment))
        histories.extend(self._unlisted_experiments(listed))
        return histories

    def _experiments(self) -> list[Any]:
        """Active and deleted experiments of the scope; when the listing fails (one meta.yaml
        the client raises for), each experiment folder is asked for on its own."""
        from mlflow.entities import ViewType

        try:
            experiments = list(_pages(self.client.search_experiments, view_type=ViewType.ALL))
        except Exception:
            folders = _experiment_folders(self.scope.store)
            experiments = [e for f in folders if (e := self._experiment(f.name)) is not None]
        experiments.sort(key=lambda e: _numeric_first(e.experiment_id))
        if self.scope.experiment_id is None:
            return experiments
        return [e for e in experiments if e.experiment_id == self.scope.experiment_id]

    def _experiment(self, experiment_id: str | None) -> Any:
        """One experiment by id, or None when the client cannot read it."""
        try:
            return self.client.get_experiment(experiment_id)
        except Exception:
            return None

    def _experiment_runs(self, experiment: Any) -> list[RunHistory]:
        """The experiment's runs; when the search fails, each run folder is read on its own."""
        from mlflow.entities import ViewType

        folder = _experiment_folder(self.scope.store, experiment.experiment_id)
        try:
            runs = list(
                _pages(
                    self.client.search_runs,
                    experiment_ids=[experiment.experiment_id],
                    run_view_type=ViewType.ALL,
                )
            )
        except Exception:  # one unreadable run makes the file store's whole search raise
            runs = []
        found = {run.info.run_id for run in runs}
        histories = [self._history(run, experiment) for run in runs]
        for run_folder in _run_folders(folder):
            if run_folder.name not in found:
                histories.append(self._run_by_id(run_folder.name, experiment))
        histories.sort(key=lambda h: (h.created_at is None, h.created_at or 0, h.run_id))
        return histories

    def _unlisted_experiments(self, listed: set[str]) -> list[RunHistory]:
        """Runs of experiment folders the client skipped (a meta.yaml it could not read)."""
        histories: list[RunHistory] = []
        for folder in _experiment_folders(self.scope.store):
            wanted = self.scope.experiment_id in (None, folder.name)
            if folder.name in listed or not wanted:
                continue
            reason = "MLflow could not read this experiment's meta.yaml; its runs were not read"
            for run_folder in _run_folders(folder):
                history = self._unread(run_folder.name, None)
                history.reject(folder / META, 0, reason)
                history.notes.append(f"run {run_folder.name}: {reason} ({folder / META})")
                histories.append(history)
        return histories

    def _run_by_id(self, run_id: str, experiment: Any) -> RunHistory:
        """One run asked for by id: its history, or a rejected run naming what is damaged."""
        try:
            run = self.client.get_run(run_id)
        except Exception as exc:
            return self._rejected(run_id, experiment, exc)
        return self._history(run, experiment)

    def _history(self, run: Any, experiment: Any) -> RunHistory:
        """A run the client read: attributes, params, user tags, then every metric's history."""
        info, data = run.info, run.data
        history = self._unread(info.run_id, experiment)
        history.name = info.run_name or data.tags.get(RUN_NAME_TAG) or None
        history.state = info.status.lower() if info.status else None
        history.created_at = utc(info.start_time / 1000) if info.start_time else None
        history.config = dict(sorted(data.params.items()))
        history.tags = _user_tags(data.tags)
        history.summary = dict(sorted(data.metrics.items()))
        history.artifacts = self._artifacts(info, history)
        if info.lifecycle_stage == "deleted" or (
            experiment is not None and experiment.lifecycle_stage == "deleted"
        ):
            history.state = "deleted"  # its status says how it ended; deleted says more now
        if info.lifecycle_stage == "deleted":
            history.notes.append(f"run {info.run_id} is deleted in MLflow (still in its store)")
        if experiment is not None and experiment.lifecycle_stage == "deleted":
            history.notes.append(f"experiment {experiment.name!r} is deleted in MLflow")
        self._points(history, info.run_id, sorted(data.metrics))
        return history

    def _points(self, history: RunHistory, run_id: str, keys: list[str]) -> None:
        """Every logged value of every metric; a metric the client cannot read rejects them all."""
        try:
            series = {key: self.client.get_metric_history(run_id, key) for key in keys}
        except Exception as exc:
            self._reject_metrics(history, run_id, exc)
            return
        for key, metrics in series.items():
            for line, metric in enumerate(metrics, start=1):
                step = as_step(metric.step)
                if step is None:
                    reason = f"step {metric.step} is not a non-negative integer"
                    history.reject(self._run_folder(run_id) / "metrics" / key, line, reason)
                    continue
                history.add(step, key, metric.value, metric.timestamp / 1000)

    def _artifacts(self, info: Any, history: RunHistory) -> list[str]:
        """Top-level artifact paths, listed only when they are on this machine."""
        uri = info.artifact_uri or ""
        if urlparse(uri).scheme not in ("", "file"):
            history.notes.append(f"artifacts at {uri} not listed (not a local folder)")
            return []
        try:
            return sorted(item.path for item in self.client.list_artifacts(info.run_id))
        except Exception as exc:
            history.notes.append(f"artifacts at {uri} not listed ({_one_line(exc)})")
            return []

    def _rejected(self, run_id: str, experiment: Any, exc: Exception) -> RunHistory:
        """A run the client raised for: no points, a reject for each damaged file."""
        history = self._unread(run_id, experiment)
        self._reject_metrics(history, run_id, exc)
        return history

    def _reject_metrics(self, history: RunHistory, run_id: str, exc: Exception) -> None:
        """Drop the run's points and say what the client could not read: the metric files
        with a damaged line, else the run's meta.yaml."""
        del history.steps[:], history.keys[:], history.values[:], history.wall_times[:]
        folder = self._run_folder(run_id)
        error = _one_line(exc)
        damaged = self._damaged_metric_lines(run_id, folder)
        for path, line, raw in damaged:
            history.reject(path, line, f"MLflow could not read this metric file: {error}", raw)
        if damaged:
            named = ", ".join(f"{path} line {line}" for path, line, _ in damaged)
            fix = "fix or remove the damaged line and ingest again"
        else:
            history.reject(folder / META, 0, f"MLflow could not read this run: {error}")
            named, fix = str(folder / META), "repair or restore the run's meta.yaml"
        history.notes.append(
            f"run {run_id}: MLflow could not read {named} ({error}); none of its metrics "
            f"landed: {fix}"
        )

    def _damaged_metric_lines(self, run_id: str, folder: Path) -> list[tuple[Path, int, str]]:
        """(file, line, text) of each metric file the client raises for and that has a line
        which is not a metric record (the client raises for every file when meta.yaml is bad)."""
        damaged = []
        for path in _metric_files(folder):
            key = path.relative_to(folder / "metrics").as_posix()
            try:
                self.client.get_metric_history(run_id, key)
            except Exception:
                line, raw = _bad_line(path)
                if line:
                    damaged.append((path, line, raw))
        return damaged

    def _unread(self, run_id: str, experiment: Any) -> RunHistory:
        project = experiment.name if experiment is not None else None
        return RunHistory(safe_run_id(run_id), FORMAT, self.origin, project=project)

    def _run_folder(self, run_id: str) -> Path:
        store = self.scope.store
        for experiment in _experiment_folders(store):
            if (experiment / run_id).is_dir():
                return experiment / run_id
        return store / run_id


# ---------------------------------------------------------------- helpers


def _pages(search: Any, **kwargs: Any) -> Iterator[Any]:
    """Every item of a paged MLflow search."""
    token = None
    while True:
        page = search(**kwargs, page_token=token)
        yield from page
        token = page.token
        if not token:
            return


def _user_tags(tags: dict[str, str]) -> list[str]:
    """User tags as ``key=value`` (just ``key`` when the value is empty); ``mlflow.*`` left out."""
    return [
        f"{key}={value}" if value else key
        for key, value in sorted(tags.items())
        if not key.startswith("mlflow.")
    ]


def _metric_files(run_folder: Path) -> list[Path]:
    metrics = run_folder / "metrics"
    return sorted(p for p in metrics.rglob("*") if p.is_file()) if metrics.is_dir() else []


def _bad_line(path: Path) -> tuple[int, str]:
    """The first line of a metric file that is not ``timestamp value [step [dataset digest]]``.

    Only to point the user at the damage the client raised for; 0 when no line is to blame.
    """
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return 0, ""
    for number, line in enumerate(lines, start=1):
        if not _metric_line_ok(line):
            return number, line
    return 0, ""


def _metric_line_ok(line: str) -> bool:
    parts = line.strip().split(" ")
    if len(parts) not in (2, 3, 5):
        return False
    try:
        int(parts[0])
        float(parts[1])
        if len(parts) > 2:
            int(parts[2])
    except ValueError:
        return False
    return True


def _numeric_first(experiment_id: str) -> tuple[int, int | str]:
    return (0, int(experiment_id)) if experiment_id.isdigit() else (1, experiment_id)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:300]


def _check_format(fmt: str) -> None:
    if fmt != FORMAT:
        raise ValueError(f"mlflow_store reads {FORMAT!r}, not {fmt!r}")


def _client(store: Path, origin: Path) -> Any:
    """An ``MlflowClient`` on the store (the file store creates an empty .trash if missing)."""
    try:
        from mlflow.tracking import MlflowClient
    except ImportError:
        raise IngestError(
            f"{origin}: reading an MLflow file store needs the mlflow package: "
            + install_hint("mlflow")
        ) from None
    try:
        return MlflowClient(tracking_uri=store.resolve().as_uri())
    except Exception as exc:
        raise IngestError(
            f"{origin}: MLflow cannot open the file store {store} ({_one_line(exc)}); "
            "point at the mlruns folder"
        ) from None


class _DropMlflowRecords(logging.Filter):
    """The file store warns through the root logger about runs it skips; they become rejects."""

    def filter(self, record: logging.LogRecord) -> bool:
        return f"{os.sep}mlflow{os.sep}" not in record.pathname


@contextlib.contextmanager
def _file_store_allowed() -> Iterator[None]:
    """Let MLflow 3 open a file store, quietly and without usage telemetry (reading local
    files has no reason to reach mlflow.org), for this read only."""
    before = {name: os.environ.get(name) for name in READ_ENV}
    os.environ.update(READ_ENV)
    quiet = _DropMlflowRecords()
    root_logger = logging.getLogger()
    root_logger.addFilter(quiet)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            yield
    finally:
        root_logger.removeFilter(quiet)
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
