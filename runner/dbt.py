"""Run dbt on the obs project against one warehouse and lake, in this process.

dbt's own state (``target/``, ``logs/``) lives next to the warehouse it belongs
to, in ``<warehouse>.dbt/``, so two warehouses never share a manifest. dbt
re-reads the whole project (several seconds) unless its partial-parse file
matches; that file is kept per warehouse and seeded from a per-user cache, so
a fresh warehouse does not pay a full parse either (``_parse_cache``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from obs.runner.errors import DbtError

PARTIAL_PARSE_FILE = "partial_parse.msgpack"
# A failed test's rows are printed up to this many.
FAILURE_ROWS = 10
# Parses kept in the per-user cache (about 1 MB each).
PARSE_CACHE_FILES = 16
# How long a build waits for another process to let go of the warehouse.
LOCK_WAIT_SECONDS = 5.0


def project_dir() -> Path:
    """The obs dbt project: OBS_PROJECT, else the checkout (an editable install), else
    the package's copy.

    A wheel carries the project (dbt_project.yml, models, macros, seeds) as
    ``obs/project``. Nothing is written into it (dbt's state lives next to the
    warehouse), so an install that cannot be written works.
    """
    chosen = os.environ.get("OBS_PROJECT")
    if chosen:
        # Another copy of the project (a fork with models of its own; the
        # bench's copies with more models).
        if not (Path(chosen) / "dbt_project.yml").is_file():
            raise DbtError(f"{chosen}: OBS_PROJECT names no dbt project (no dbt_project.yml)")
        return Path(chosen).resolve()
    package = Path(__file__).resolve().parents[1]
    for root in (package, package / "project"):
        if (root / "dbt_project.yml").is_file():
            return root
    raise DbtError(
        f"{package}: no dbt_project.yml; reinstall obs: pip install --force-reinstall obs-warehouse"
    )


def state_dir(warehouse: Path) -> Path:
    """dbt's target/ and logs/ for this warehouse, and obs's record of its last build.

    Absolute: dbt reads a relative --target-path from its project's folder, so a
    relative one would put the state into the project, not beside the warehouse.
    """
    warehouse = warehouse.absolute()
    return warehouse.parent / f"{warehouse.name}.dbt"


def _parse_cache(warehouse: Path, lake: Path, target: str = "duckdb") -> tuple[Path, Path | None]:
    """Where to keep, and where to seed from, a per-user copy of dbt's partial-parse file.

    dbt checks a partial-parse file against the project's files, the vars, the
    env vars the project reads (the lake path) and the profile before using
    it, and reparses what changed. Its profile check includes the warehouse
    path, which obs leaves out (``path_free_profile``) as no model reads it,
    but not the database name (the warehouse file's stem), which every
    compiled relation carries. So the copy is kept per project folder,
    database name and lake: a new warehouse on a known lake parses nothing; on
    a new lake, only the sources' yml is parsed again (seeded from the newest
    copy of its project and name). A parse made by another checkout is never
    used: dbt would look for that checkout's files.
    """
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "obs" / "parse"
    stem = warehouse.name.split(".")[0]
    if target != "duckdb":
        # another profile output: dbt parses it apart (its profile check)
        stem = f"{stem}-{target}"
    project_key = hashlib.sha1(str(project_dir().resolve()).encode()).hexdigest()[:8]
    lake_key = hashlib.sha1(str(lake.resolve()).encode()).hexdigest()[:12]
    exact = base / f"{stem}-{project_key}-{lake_key}.msgpack"
    if exact.exists():
        return exact, exact
    try:
        named = max(base.glob(f"{stem}-{project_key}-*.msgpack"), key=lambda p: p.stat().st_mtime)
    except (ValueError, OSError):
        named = None
    return exact, named


def _prune(folder: Path, keep: int = PARSE_CACHE_FILES) -> None:
    """Keep the newest ``keep`` parses (one per database name and lake)."""
    with contextlib.suppress(OSError):
        kept = sorted(folder.glob("*.msgpack"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in kept[keep:]:
            old.unlink(missing_ok=True)


def copy_atomically(source: Path, target: Path) -> None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
        os.close(handle)
        shutil.copyfile(source, temporary)
        os.replace(temporary, target)
    except OSError:
        # A cache that cannot be written (read-only home) only costs a reparse.
        with contextlib.suppress(OSError, UnboundLocalError):
            os.unlink(temporary)


def path_free_profile() -> None:
    """Leave the warehouse path out of dbt's partial-parse profile check.

    dbt reparses the whole project (about 5 s) when any connection setting
    differs from the parse it saved, the DuckDB file's path included, though
    no obs model reads it. obs runs dbt in its own process, so it drops
    ``path`` from the keys dbt-duckdb reports for that check; ``dbt`` run from
    the shell is untouched.
    """
    from dbt.adapters.duckdb.credentials import DuckDBCredentials

    keys = DuckDBCredentials._connection_keys
    if getattr(keys, "_obs_path_free", False):
        return

    def without_path(self: Any) -> tuple[str, ...]:
        return tuple(key for key in keys(self) if key != "path")

    without_path._obs_path_free = True  # type: ignore[attr-defined]
    DuckDBCredentials._connection_keys = without_path  # type: ignore[method-assign]


@contextlib.contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    """These environment variables set while the block runs, then as they were."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def lake_environment(
    warehouse: Path, lake: Path, spark_warehouse: Path | None = None
) -> contextlib.AbstractContextManager[None]:
    """Point dbt's profile and sources at this warehouse and lake (absolute paths), and
    the spark output at its warehouse folder when given."""
    values = {"OBS_WAREHOUSE": str(warehouse.resolve()), "OBS_LAKE": str(lake.resolve())}
    if spark_warehouse is not None:
        values["OBS_SPARK_WAREHOUSE"] = str(spark_warehouse)
    return environment(values)


def release_warehouse() -> None:
    """Close the DuckDB database dbt-duckdb keeps open in this process.

    Without this, a later read-only connection in the same process (``obs
    demo`` summarising right after its build) is refused by DuckDB, and
    another process (``obs sql``, the DuckDB shell) cannot open the file.
    """
    import gc

    from dbt.adapters.duckdb.connections import DuckDBConnectionManager

    environment = DuckDBConnectionManager._ENV
    if environment is not None:
        environment.close()
    DuckDBConnectionManager.close_all_connections()
    gc.collect()


def wait_for_warehouse(warehouse: Path, seconds: float) -> None:
    """Wait until no other process holds the warehouse, up to ``seconds``.

    DuckDB lets one process write a file, and no process write while another
    reads it (``obs sql``, the DuckDB shell, a dashboard being rendered): a
    build started then fails at once. Readers are usually brief, so a build
    waits for them a little before giving up with one line.
    """
    import duckdb

    deadline = time.monotonic() + seconds
    while True:
        try:
            duckdb.connect(str(warehouse)).close()
            return
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower():
                raise
            if time.monotonic() >= deadline:
                pid = re.search(r"PID (\d+)", str(exc))
                holder = f" (PID {pid.group(1)})" if pid else ""
                raise DbtError(
                    f"{warehouse}: another process{holder} has it open; "
                    "close it (obs sql and the DuckDB shell hold it while open) and build again"
                ) from exc
            time.sleep(0.1)


class LiveLine:
    """dbt's progress as one live line on stderr, for while dbt itself is quiet.

    Given dbt's events (``dbtRunner(callbacks=[line])``), it shows the node dbt
    is at and how far along: ``building fct_prompt_learning (12/97)`` (the
    same line as obs's executor) when dbt counts its nodes, ``compiling
    dim_runs (41)`` when it does not. Only on a terminal (``enabled``); the
    line is cleared when dbt is done (``close``).
    """

    # Events that carry a node and dbt's count of them (index of total), where dbt
    # numbers its nodes (build, run, test); where it does not (compile), each node's
    # start is counted here.
    COUNTED = frozenset({"LogStartLine", "SkippingDetails"})
    STARTED = "NodeStart"

    def __init__(self, verb: str, enabled: bool, numbered: bool, stream: Any = None) -> None:
        self.verb = verb
        self.enabled = enabled
        self.watched = self.COUNTED if numbered else frozenset({self.STARTED})
        self.stream = stream if stream is not None else sys.stderr
        self.started = 0
        self.shown = False
        self._lock = threading.Lock()  # dbt's threads send events side by side

    def __call__(self, event: Any) -> None:
        name = event.info.name
        if not self.enabled or name not in self.watched:
            return
        data = event.data
        node = data.node_info.node_name
        with self._lock:
            if name == self.STARTED:
                self.started += 1
                self._show(f"{self.verb} {node} ({self.started})")
            else:
                self._show(f"{self.verb} {node} ({data.index}/{data.total})")

    def _show(self, text: str) -> None:
        self.stream.write(f"\r\033[K{text}")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self.shown = False


def live_line(command: str, extra_args: Sequence[str]) -> LiveLine:
    """The live line of ``dbt <command>``: shown on a terminal while dbt is quiet (--quiet)."""
    quiet = bool({"-q", "--quiet"} & set(extra_args))
    compiles = command in {"compile", "parse"}
    return LiveLine(
        "compiling" if compiles else "building", quiet and sys.stderr.isatty(), not compiles
    )


@dataclass(frozen=True)
class BuildResult:
    success: bool
    passed: int
    failed: int
    skipped: int
    # One line per failed model or test, with what broke.
    failures: tuple[str, ...] = ()
    # Models that ran (built, not skipped).
    models_run: int = 0
    # Data tests and unit tests that passed.
    tests_passed: int = 0
    unit_tests_passed: int = 0


@dataclass
class Dbt:
    """dbt on the obs project for one warehouse and lake, in this process.

    Keeps the parsed project between invocations (``obs watch`` builds every
    round without parsing again) and releases the warehouse after each.
    ``target``: the profile's output, ``duckdb`` (the warehouse file) or
    ``spark`` (tables under the Spark warehouse that goes with it,
    ``obs.runner.spark``).
    """

    warehouse: Path
    lake: Path
    keep_manifest: bool = False
    target: str = "duckdb"
    _manifest: Any = field(default=None, repr=False)
    _parsed_under: str | None = field(default=None, repr=False)

    def parsed_under(self, fingerprint: str) -> None:
        """Forget a kept parse of the project made when its files hashed otherwise."""
        if self._parsed_under != fingerprint:
            self._manifest = None
        self._parsed_under = fingerprint

    @property
    def built_warehouse(self) -> Path:
        """What the target builds: the DuckDB file, or the Spark warehouse folder."""
        if self.target == "duckdb":
            return self.warehouse
        from obs.runner.spark import spark_warehouse

        return spark_warehouse(self.warehouse)

    def _args(self, command: str, extra_args: Sequence[str]) -> list[str]:
        root = project_dir()
        state = state_dir(self.built_warehouse)
        target = [] if self.target == "duckdb" else ["--target", self.target]
        return [
            command,
            "--project-dir",
            str(root),
            "--profiles-dir",
            str(root),
            "--target-path",
            str(state / "target"),
            "--log-path",
            str(state / "logs"),
            # dbt colours its log; plain text where stderr is no terminal (a file, a pipe, CI)
            "--use-colors" if sys.stderr.isatty() else "--no-use-colors",
            *target,
            *extra_args,
        ]

    def invoke(self, command: str, extra_args: Sequence[str] = ()) -> BuildResult:
        """``dbt <command> <extra_args>``; dbt's log goes to stderr."""
        from dbt.cli.main import dbtRunner  # imported late: it is slow to import

        path_free_profile()
        self.warehouse.parent.mkdir(parents=True, exist_ok=True)
        if command != "parse" and self.target == "duckdb":
            wait_for_warehouse(self.warehouse, LOCK_WAIT_SECONDS)
        state = state_dir(self.built_warehouse)
        saved_parse = state / "target" / PARTIAL_PARSE_FILE
        cache, seed = _parse_cache(self.warehouse, self.lake, self.target)
        if self._manifest is None and not saved_parse.exists() and seed is not None:
            copy_atomically(seed, saved_parse)
        spark = None if self.target == "duckdb" else self.built_warehouse
        environment = lake_environment(self.warehouse, self.lake, spark)
        with environment, contextlib.redirect_stdout(sys.stderr):
            try:
                if self.keep_manifest and self._manifest is None:
                    parsed = dbtRunner().invoke(self._args("parse", ["--no-write-json"]))
                    if parsed.success:
                        self._manifest = parsed.result
                line = live_line(command, extra_args)
                runner = dbtRunner(manifest=self._manifest, callbacks=[line])
                deadline = time.monotonic() + LOCK_WAIT_SECONDS
                while True:
                    result = runner.invoke(self._args(command, extra_args))
                    line.close()
                    # A reader that opened the file between the wait above and
                    # dbt's own open: dbt ran nothing yet, so try again.
                    if "Could not set lock" not in str(result.exception or ""):
                        break
                    if time.monotonic() >= deadline:
                        break
                    release_warehouse()
                    time.sleep(0.1)
            finally:
                release_warehouse()
        if saved_parse.exists():
            copy_atomically(saved_parse, cache)
            _prune(cache.parent)
        return self._summarise(command, result)

    def _summarise(self, command: str, result: Any) -> BuildResult:
        passed = failed = skipped = models_run = tests_passed = unit_tests_passed = 0
        broken: list[tuple[str, Any]] = []
        nodes = getattr(result.result, "results", None) or []
        for node in nodes:
            status = str(getattr(node, "status", "")).lower()
            kind = getattr(getattr(node, "node", None), "resource_type", "")
            if status == "success" and str(kind).lower().endswith("operation"):
                continue  # the on-run-start hook (create_lake_tables): no model, no test
            if status in {"success", "pass"}:
                passed += 1
                kind = str(kind).lower()
                models_run += kind.endswith("model")
                unit_tests_passed += kind.endswith("unit_test")
                tests_passed += kind.endswith("test") and not kind.endswith("unit_test")
            elif status in {"error", "fail", "runtime error"}:
                failed += 1
                broken.append((status, node))
            else:
                skipped += 1
        if result.exception is not None and not nodes:
            lines = [line.strip() for line in str(result.exception).splitlines() if line.strip()]
            # dbt's first line is often only the kind ("Runtime Error"): add the next.
            if not lines:  # an interrupt (a second Ctrl-C or SIGTERM) has no text
                lines = [type(result.exception).__name__]
            message = ": ".join(lines[:2]) if lines[0].endswith("Error") else lines[0]
            raise DbtError(f"dbt {command} failed: {message}")
        failures = tuple(line for status, node in broken for line in self._describe(node))
        return BuildResult(
            bool(result.success),
            passed,
            failed,
            skipped,
            failures,
            models_run=models_run,
            tests_passed=tests_passed,
            unit_tests_passed=unit_tests_passed,
        )

    def _describe(self, node_result: Any) -> list[str]:
        """What broke: a test's failing rows (one per broken rule), else dbt's message."""
        node = node_result.node
        name = getattr(node, "name", "?")
        code = getattr(node, "compiled_code", None)
        is_test = str(getattr(node, "resource_type", "")).lower().endswith("test")
        if is_test and code and self.target == "duckdb":
            rows = _test_rows(self.warehouse, code)
            if rows:
                return [f"{name}: {row}" for row in rows]
        message = (getattr(node_result, "message", None) or "failed").strip().splitlines()
        return [f"{name}: {message[0] if message else 'failed'}"]


def _test_rows(warehouse: Path, code: str) -> list[str]:
    """A failed test's first rows, read back from the warehouse after dbt released it."""
    import duckdb

    try:
        with duckdb.connect(str(warehouse), read_only=True) as con:
            cursor = con.execute(f"select * from ({code}) as failing limit {FAILURE_ROWS}")
            names = [column[0] for column in cursor.description or []]
            rows = cursor.fetchall()
    except duckdb.Error:
        return []
    if names[:2] == ["rule", "failing_rows"]:
        return [f"{rule} ({count} rows)" for rule, count, *_ in rows]
    return [", ".join(f"{n}={v!r}" for n, v in zip(names, row, strict=True)) for row in rows]


def run_dbt(
    command: str, warehouse: Path, lake: Path, extra_args: Sequence[str] = ()
) -> BuildResult:
    """Invoke ``dbt <command>`` once, in-process; dbt's log goes to stderr."""
    return Dbt(warehouse, lake).invoke(command, extra_args)
