"""The build plan: the dbt project compiled once, for obs's executor to run on any warehouse.

dbt parses and compiles the project (every model, seed and data test) in
plan mode (the macro ``obs_plan_mode``): against no real warehouse or lake,
with the macros that would query either while compiling writing markers
instead. Incremental models are compiled twice, as a full build and as an
incremental one. The result is one JSON file: per node its kind, its
materialization and keys, its parents, and its SQL with two placeholders
(the lake's path and the warehouse's database name) that the executor
replaces. It depends only on the project's files and the dbt arguments that
change what a build produces (and dbt's release), never on the project's
folder (seed files are named relative to it), so it is kept in the per-user
cache under their fingerprint and compiled again only when either changes.
A wheel ships the plan of its own project (``COMPILED_PLAN``, written when the
wheel is built: ``setup.py``), so the first build after a ``pip install``
finds it as a later build finds the cached one.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import logging
import os
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from obs.runner.dbt import environment, project_dir

logger = logging.getLogger(__name__)

# The plan's format: a plan written by another format is compiled again. 3: plans
# compiled since the partial parse is kept per project folder (one compiled from another
# copy's parse could read that copy's seed files). 4: a model's sql_header and hooks.
# 5: seed files relative to the project folder, which left the fingerprint. 6: an
# incremental model's delete+insert statements (analyses/obs_delete_insert.sql).
PLAN_FORMAT = 6
# Stand-ins compiled into the SQL, replaced when the plan runs.
LAKE_PLACEHOLDER = "/__obs_plan_lake__"
DATABASE_PLACEHOLDER = "__obs_plan_db__"
# Plans kept in the per-user cache (one per project version and vars; about 1 MB each):
# enough for the var sets and --success rules one tries in a day (each one compiled again
# with dbt once dropped, many seconds), and for the test suite's.
PLAN_CACHE_FILES = 32
# Partial parses kept (one per project folder compiled last; about 3 MB each).
PARSE_CACHE_FILES = 8
# The plan a wheel ships for its own project and no vars (absent from a checkout).
COMPILED_PLAN = Path(__file__).with_name("compiled-plan.json")
# The releases the plan's SQL was compiled by.
COMPILERS = ("dbt-core", "dbt-duckdb")
# What the executor runs itself; any other node sends the build to dbt.
MATERIALIZATIONS = {"view", "table", "incremental", "seed", "test"}
# dbt arguments the plan can be compiled under; any other goes to dbt.
PLAN_ARGS_WITH_VALUE = {"--vars"}


class PlanUnsupported(Exception):
    """The project (or the arguments) holds something the executor does not run."""


class PlanNotCompiled(PlanUnsupported):
    """dbt could not parse or compile the project in plan mode, or its manifest is not
    one the plan reader knows: dbt builds, and says what is wrong in its words (not
    remembered: the cause may be outside the project's files)."""


@dataclass
class Node:
    """One node of the plan: a model, a seed or a data test."""

    unique_id: str
    name: str
    kind: str  # model, seed, test
    materialized: str
    relation: str  # quoted "db"."schema"."name" (placeholder database)
    parents: list[str]  # unique ids of the models and seeds it reads
    sources: list[str]  # lake tables it reads directly
    sql: str  # full build (tests: the test query)
    incremental_sql: str | None = None
    unique_key: list[str] = field(default_factory=list)
    # incremental models: the statements that merge the new rows (delete_insert_sql),
    # with slots for the table, the new rows and the columns
    merge_sql: str | None = None
    # tests
    severity: str = "error"
    fail_calc: str = "count(*)"
    warn_if: str = "!= 0"
    error_if: str = "!= 0"
    limit: int | None = None
    # seeds: the CSV file, relative to the project folder
    seed_path: str | None = None
    seed_columns: list[list[str]] = field(default_factory=list)
    # models: statements run before the model's (config sql_header) and hooks around it
    sql_header: str | None = None
    pre_hooks: list[str] = field(default_factory=list)
    post_hooks: list[str] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class CompiledPlan:
    """The plan: the project as dbt compiled it for one fingerprint, the nodes the executor runs
    (read from dbt's manifest by ``runner/manifest.py``), kept between builds. What a
    given build rebuilds of it is ``build_state.Rebuild``'s part."""

    fingerprint: str
    nodes: dict[str, Node]  # in DAG order
    # lake table -> the models that read it directly (staging)
    lake_tables: list[str]

    def downstream_of_tables(self, tables: Sequence[str]) -> set[str]:
        """The models (and seeds) downstream of these lake tables, themselves included."""
        wanted = set(tables)
        chosen: set[str] = set()
        for uid, node in self.nodes.items():  # DAG order: parents first
            if node.kind == "test":
                continue
            if wanted.intersection(node.sources) or chosen.intersection(node.parents):
                chosen.add(uid)
        return chosen

    def lake_tables_of(self, uid: str) -> set[str]:
        """Every lake table a node reads, directly or through its parents."""
        found: set[str] = set()
        todo = [uid]
        seen: set[str] = set()
        while todo:
            current = todo.pop()
            if current in seen or current not in self.nodes:
                continue
            seen.add(current)
            node = self.nodes[current]
            found.update(node.sources)
            todo.extend(node.parents)
        return found


def plan_args(dbt_args: Sequence[str]) -> list[str] | None:
    """The arguments a plan is compiled under, or None when one needs dbt itself.

    The executor takes ``--vars`` and the arguments that change nothing a
    build produces (``--quiet``, ``--full-refresh``, log options); a
    selection, a selector, ``--defer`` or any other argument goes to dbt.
    """
    from obs.runner import build_state

    kept: list[str] = []
    items = list(dbt_args)
    i = 0
    while i < len(items):
        arg = items[i]
        name = arg.split("=", 1)[0]
        if name in PLAN_ARGS_WITH_VALUE:
            if "=" in arg:
                kept.append(arg)
            elif i + 1 < len(items):
                kept += [arg, items[i + 1]]
                i += 1
            else:
                return None
        elif name in build_state.HARMLESS_WITH_VALUE:
            i += 0 if "=" in arg else 1
        elif arg not in build_state.HARMLESS:
            return None
        i += 1
    return kept


def cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "obs" / "plan"


def plan_fingerprint(args: Sequence[str]) -> str:
    """The project's files (their contents and paths inside the project, not its folder),
    the plan's arguments, the format and the dbt releases that compile it."""
    from obs.runner import build_state

    digest = hashlib.sha1(build_state.project_fingerprint(args).encode())
    digest.update(f"\0{PLAN_FORMAT}".encode())
    for name in COMPILERS:
        try:
            release = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            release = ""
        digest.update(f"\0{name}={release}".encode())
    return digest.hexdigest()


def load(fingerprint: str) -> CompiledPlan | None:
    """The plan of this fingerprint in the per-user cache, else the one the package
    ships (when it is this fingerprint's), if any."""
    path = cache_dir() / f"{fingerprint}.json"
    data = _read(path, fingerprint)
    if data is not None:
        with contextlib.suppress(OSError):
            os.utime(path)
    else:
        data = _read(COMPILED_PLAN, fingerprint)
        if data is None:
            return None
        logger.debug("the plan shipped with obs: %s", COMPILED_PLAN)
    if data.get("unsupported"):
        # compiled before: the executor does not run this project version
        raise PlanUnsupported(str(data["unsupported"]))
    nodes = {uid: Node(**record) for uid, record in data["nodes"].items()}
    return CompiledPlan(fingerprint, nodes, list(data["lake_tables"]))


def _read(path: Path, fingerprint: str) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    if data.get("format") != PLAN_FORMAT or data.get("fingerprint") != fingerprint:
        return None
    return data


def save(plan: CompiledPlan) -> None:
    _write(plan.fingerprint, _body(plan))


def _body(plan: CompiledPlan) -> dict[str, Any]:
    return {
        "lake_tables": plan.lake_tables,
        "nodes": {uid: node.record() for uid, node in plan.nodes.items()},
    }


def ship(destination: Path) -> CompiledPlan:
    """Compile the plan of the project (no vars: a plain ``obs build``) into
    ``destination``: a wheel's ``COMPILED_PLAN``, written when it is built. Raises
    PlanUnsupported when the executor would not run the project."""
    from obs.runner.dbt import path_free_profile

    path_free_profile()
    fingerprint = plan_fingerprint([])
    plan = compile_plan([], fingerprint)
    data = {"format": PLAN_FORMAT, "fingerprint": fingerprint, **_body(plan)}
    destination.write_text(json.dumps(data))
    return plan


def save_unsupported(fingerprint: str, reason: str) -> None:
    """Remember that the executor does not run this project version (and why), so the
    next builds go to dbt without compiling the plan again."""
    _write(fingerprint, {"unsupported": reason})


def _write(fingerprint: str, body: dict[str, Any]) -> None:
    folder = cache_dir()
    data = {"format": PLAN_FORMAT, "fingerprint": fingerprint, **body}
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".plan.")
        with os.fdopen(handle, "w") as out:
            json.dump(data, out)
        os.replace(temporary, folder / f"{fingerprint}.json")
        kept = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in kept[PLAN_CACHE_FILES:]:
            old.unlink(missing_ok=True)


def compile_plan(
    args: Sequence[str],
    fingerprint: str,
    show_progress: bool = False,
    keep: list[Compiled] | None = None,
) -> CompiledPlan:
    """Parse and compile the project in plan mode (a few seconds); raise PlanUnsupported
    when it holds a node the executor does not run. ``show_progress``: the node being
    compiled as a live line on stderr; ``keep``: a list the compiled records are added
    to (tests/data/manifests records them)."""
    from dbt.cli.main import dbtRunner
    from obs.runner.dbt import LiveLine

    root = project_dir()
    with tempfile.TemporaryDirectory(prefix="obs-plan-") as scratch:
        work = Path(scratch)
        common = [
            "--project-dir",
            str(root),
            "--profiles-dir",
            str(root),
            "--target-path",
            str(work / "target"),
            "--log-path",
            str(work / "logs"),
            "--no-use-colors",
            "--quiet",
            "--log-level-file",
            "none",
        ]
        # The partial parse of the last plan compile of this project folder, so a
        # changed project reparses only its changed files. Per folder: dbt keeps the
        # nodes of unchanged files as they were parsed, their folder included, so a
        # parse of another copy (a fork, another checkout) would point this project's
        # seeds at that copy's CSV files.
        folder_key = hashlib.sha1(str(root.resolve()).encode()).hexdigest()[:16]
        cached_parse = cache_dir() / f"partial_parse-{folder_key}.msgpack"
        (work / "target").mkdir()
        if cached_parse.is_file():
            with contextlib.suppress(OSError):
                (work / "target" / "partial_parse.msgpack").write_bytes(cached_parse.read_bytes())
        env = {
            "OBS_WAREHOUSE": str(work / f"{DATABASE_PLACEHOLDER}.duckdb"),
            "OBS_LAKE": LAKE_PLACEHOLDER,
            "OBS_PLAN_MODE": "full",
        }
        # the nodes dbt compiles, as a live line on a terminal (a few seconds)
        line = LiveLine("compiling", show_progress, numbered=False)
        with environment(env), contextlib.redirect_stdout(sys.stderr):
            parsed = dbtRunner().invoke(["parse", *common, "--no-write-json", *args])
            if not parsed.success:
                # dbt's own build says what is wrong, in its words
                reason = str(parsed.exception or "see the log above").strip().splitlines()
                raise PlanNotCompiled(f"a project that fails to parse ({reason[0]})")
            manifest: Any = parsed.result
            full = dbtRunner(manifest=manifest, callbacks=[line]).invoke(
                ["compile", *common, "--no-write-json", *args]
            )
            line.close()
            full_code = _compiled(full, "compile")
            os.environ["OBS_PLAN_MODE"] = "incremental"
            incremental = dbtRunner(manifest=manifest).invoke(
                [
                    "compile",
                    *common,
                    "--no-write-json",
                    "--select",
                    "config.materialized:incremental",
                    *args,
                ]
            )
            incremental_code = _compiled(incremental, "compile")
        saved = work / "target" / "partial_parse.msgpack"
        if saved.is_file():
            from obs.runner.dbt import copy_atomically

            copy_atomically(saved, cached_parse)
            _prune_parses(cached_parse.parent)
        from obs.runner import manifest as manifests

        compiled = Compiled(manifests.records_of(manifest), full_code, incremental_code)
    if keep is not None:
        keep.append(compiled)
    nodes, lake_tables = manifests.plan_nodes(compiled.records, compiled.full, compiled.incremental)
    return CompiledPlan(fingerprint, dag_order(nodes), lake_tables)


@dataclass
class Compiled:
    """What dbt gives the plan reader: the manifest's records and each node's SQL compiled
    for a full build and (incremental models) for an incremental one."""

    records: dict[str, Any]
    full: dict[str, str]
    incremental: dict[str, str]


def _prune_parses(folder: Path) -> None:
    """Keep the partial parses of the few project folders compiled last (and drop the one
    file all folders shared before)."""
    with contextlib.suppress(OSError):
        (folder / "partial_parse.msgpack").unlink(missing_ok=True)
        kept = sorted(
            folder.glob("partial_parse-*.msgpack"), key=lambda p: p.stat().st_mtime, reverse=True
        )
        for old in kept[PARSE_CACHE_FILES:]:
            old.unlink(missing_ok=True)


def _compiled(result: Any, what: str) -> dict[str, str]:
    if not result.success:
        # dbt's own build says what is wrong, in its words
        reason = str(result.exception or "see the log above").strip().splitlines()
        raise PlanNotCompiled(f"a project that fails to {what} in plan mode ({reason[0]})")
    return {
        item.node.unique_id: item.node.compiled_code
        for item in result.result.results
        if getattr(item.node, "compiled_code", None) is not None
    }


def dag_order(nodes: dict[str, Node]) -> dict[str, Node]:
    ordered: dict[str, Node] = {}
    visiting: set[str] = set()

    def visit(uid: str) -> None:
        if uid in ordered or uid not in nodes:
            return
        if uid in visiting:
            raise PlanUnsupported(f"{uid}: a cycle")
        visiting.add(uid)
        for parent in nodes[uid].parents:
            visit(parent)
        visiting.discard(uid)
        ordered[uid] = nodes[uid]

    for uid in sorted(nodes, key=lambda u: (nodes[u].kind == "test", u)):
        visit(uid)
    return ordered
