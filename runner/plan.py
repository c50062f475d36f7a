"""The build plan: the dbt project compiled once, for obs's executor to run on any warehouse.

dbt parses and compiles the project (every model, seed and data test) in
plan mode (the macro ``obs_plan_mode``): against no real warehouse or lake,
with the macros that would query either while compiling writing markers
instead. Incremental models are compiled twice, as a full build and as an
incremental one. The result is one JSON file: per node its kind, its
materialization and keys, its parents, and its SQL with two placeholders
(the lake's path and the warehouse's database name) that the executor
replaces. It depends only on the project's files and the dbt arguments that
change what a build produces, so it is kept in the per-user cache under
their fingerprint and compiled again only when either changes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from obs.runner.dbt import environment, project_dir

# The plan's format: a plan written by another format is compiled again. 3: plans
# compiled since the partial parse is kept per project folder (one compiled from another
# copy's parse could read that copy's seed files). 4: a model's sql_header and hooks.
PLAN_FORMAT = 4
# Stand-ins compiled into the SQL, replaced when the plan runs.
LAKE_PLACEHOLDER = "/__obs_plan_lake__"
DATABASE_PLACEHOLDER = "__obs_plan_db__"
# Plans kept in the per-user cache (one per project version and vars).
PLAN_CACHE_FILES = 8
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


def _anything(value: Any) -> bool:
    return True


def _empty(value: Any) -> bool:
    return not value


# The node configs the executor runs as dbt does, each with the values it accepts. A
# key left out, or one of these set to another value, sends the build to dbt, naming
# the key: an allow-list, so a config a later dbt adds is never silently ignored. A key
# set to null counts as not set.
CONFIG_RULES: dict[str, Callable[[Any], bool]] = {
    # what is said about a node, not how it is built
    **dict.fromkeys(
        ("access", "docs", "meta", "tags", "group", "enabled", "static_analysis", "freshness"),
        _anything,
    ),
    # the relation's name: the manifest's relation_name carries them
    **dict.fromkeys(("alias", "schema", "database"), _anything),
    # checked node by node in _plan_of
    **dict.fromkeys(
        ("materialized", "unique_key", "incremental_strategy", "contract", "column_types"),
        _anything,
    ),
    # run by the executor: a statement before the model's, hooks around it
    **dict.fromkeys(("sql_header", "pre-hook", "post-hook"), _anything),
    # what applies to other materializations or engines than the executor's: microbatch
    # (the strategy is checked), materialized views, Python models, Spark's file format
    **dict.fromkeys(
        ("event_time", "batch_size", "begin", "lookback", "concurrent_batches"), _anything
    ),
    **dict.fromkeys(("on_configuration_change", "packages", "file_format"), _anything),
    # what the executor does as dbt's defaults only
    "on_schema_change": lambda value: value == "ignore",
    **dict.fromkeys(("grants", "persist_docs", "quoting"), _empty),
    # true or false: a model that always (never) rebuilds from scratch
    "full_refresh": lambda value: False,
    # data tests: the test query compiles in its where; failures are not stored
    **dict.fromkeys(("severity", "fail_calc", "warn_if", "error_if", "limit", "where"), _anything),
    **dict.fromkeys(("store_failures", "store_failures_as"), _empty),
    # seeds (checked in _plan_of)
    **dict.fromkeys(("delimiter", "quote_columns"), _anything),
}

# The Jinja a hook may hold for the executor to run it: {{ this }}, the model's relation.
THIS = re.compile(r"\{\{\s*this\s*\}\}")


def unsupported_config(config: dict[str, Any]) -> str | None:
    """Why a node's config (dbt's config as a dict) needs dbt, or None when the
    executor builds it as dbt does."""
    for key, value in sorted(config.items()):
        if value is None:
            continue
        rule = CONFIG_RULES.get(key)
        if rule is None:
            return f"config {key}"
        if not rule(value):
            return f"config {key}={json.dumps(value, default=str)}"
    return None


def hook_sql(hooks: Any, relation: str, name: str) -> list[str]:
    """The SQL of a model's hooks with {{ this }} replaced by its relation; a hook with
    any other Jinja needs dbt to render it."""
    found = []
    for hook in hooks or []:
        sql = hook.get("sql", "") if isinstance(hook, dict) else str(getattr(hook, "sql", hook))
        sql = THIS.sub(lambda _: relation, sql)
        if "{{" in sql or "{%" in sql:
            raise PlanUnsupported(f"{name}: a hook with Jinja other than {{{{ this }}}}")
        if sql.strip():
            found.append(sql)
    return found


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
    # tests
    severity: str = "error"
    fail_calc: str = "count(*)"
    warn_if: str = "!= 0"
    error_if: str = "!= 0"
    limit: int | None = None
    # seeds
    seed_path: str | None = None
    seed_columns: list[list[str]] = field(default_factory=list)
    # models: statements run before the model's (config sql_header) and hooks around it
    sql_header: str | None = None
    pre_hooks: list[str] = field(default_factory=list)
    post_hooks: list[str] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Plan:
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
    """The project's files, the plan's arguments, the format and the project's folder."""
    from obs.runner import build_state

    digest = hashlib.sha1(build_state.project_fingerprint(args).encode())
    digest.update(f"\0{PLAN_FORMAT}\0{project_dir().resolve()}".encode())
    return digest.hexdigest()


def load(fingerprint: str) -> Plan | None:
    """The cached plan of this fingerprint, if any."""
    path = cache_dir() / f"{fingerprint}.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if data.get("format") != PLAN_FORMAT or data.get("fingerprint") != fingerprint:
        return None
    with contextlib.suppress(OSError):
        os.utime(path)
    if data.get("unsupported"):
        # compiled before: the executor does not run this project version
        raise PlanUnsupported(str(data["unsupported"]))
    nodes = {uid: Node(**record) for uid, record in data["nodes"].items()}
    return Plan(fingerprint, nodes, list(data["lake_tables"]))


def save(plan: Plan) -> None:
    _write(
        plan.fingerprint,
        {
            "lake_tables": plan.lake_tables,
            "nodes": {uid: node.record() for uid, node in plan.nodes.items()},
        },
    )


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


def compile_plan(args: Sequence[str], fingerprint: str, show_progress: bool = False) -> Plan:
    """Parse and compile the project in plan mode (a few seconds); raise PlanUnsupported
    when it holds a node the executor does not run. ``show_progress``: the node being
    compiled as a live line on stderr."""
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
        try:
            return _plan_of(manifest, full_code, incremental_code, fingerprint)
        except (AttributeError, KeyError, TypeError, ValueError) as moved:
            # a manifest field this dbt release moved or renamed: dbt builds
            from dbt.version import __version__ as dbt_version

            raise PlanNotCompiled(
                f"the manifest of dbt-core {dbt_version} ({type(moved).__name__}: {moved})"
            ) from moved


def _prune_parses(folder: Path) -> None:
    """Keep the partial parses of the few project folders compiled last (and drop the one
    file all folders shared before)."""
    with contextlib.suppress(OSError):
        (folder / "partial_parse.msgpack").unlink(missing_ok=True)
        kept = sorted(
            folder.glob("partial_parse-*.msgpack"), key=lambda p: p.stat().st_mtime, reverse=True
        )
        for old in kept[PLAN_CACHE_FILES:]:
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


def _plan_of(
    manifest: Any, full: dict[str, str], incremental: dict[str, str], fingerprint: str
) -> Plan:
    nodes: dict[str, Node] = {}
    lake_tables: set[str] = set()
    for uid, item in manifest.nodes.items():
        kind = str(item.resource_type).split(".")[-1].lower()
        if kind in {"analysis", "unit_test"} or not item.config.enabled:
            continue
        if kind == "operation" and _lake_tables_hook(item):
            continue  # it makes Spark's lake tables: nothing to do on DuckDB
        config = item.config
        materialized = "test" if kind == "test" else str(config.materialized)
        if kind not in {"model", "seed", "test"} or materialized not in MATERIALIZATIONS:
            raise PlanUnsupported(f"{item.name}: {kind} materialized as {materialized}")
        unknown = unsupported_config(config.to_dict(omit_none=True))
        if unknown:
            raise PlanUnsupported(f"{item.name}: {unknown}")
        if kind == "seed" and (config.pre_hook or config.post_hook):
            raise PlanUnsupported(f"{item.name}: a seed's hooks")
        if str(getattr(item, "language", "sql")).split(".")[-1].lower() != "sql":
            # a user's Python model: dbt runs the build (on DuckDB)
            raise PlanUnsupported(f"{item.name}: a Python model")
        depends = list(getattr(item.depends_on, "nodes", []))
        parents = [p for p in depends if p.startswith(("model.", "seed."))]
        sources = []
        for parent in depends:
            if parent.startswith("source."):
                source = manifest.sources[parent]
                if source.source_name != "lake":
                    raise PlanUnsupported(f"{item.name}: source {source.source_name}")
                sources.append(source.name)
        lake_tables.update(sources)
        node = Node(
            unique_id=uid,
            name=item.name,
            kind=kind,
            materialized=materialized,
            relation=str(item.relation_name or ""),
            parents=parents,
            sources=sources,
            sql=full.get(uid, ""),
        )
        if kind == "model":
            if uid not in full:
                raise PlanUnsupported(f"{item.name}: not compiled")
            node.sql_header = config.get("sql_header") or None
            node.pre_hooks = hook_sql(config.pre_hook, node.relation, item.name)
            node.post_hooks = hook_sql(config.post_hook, node.relation, item.name)
            if materialized == "incremental":
                strategy = config.get("incremental_strategy") or "delete+insert"
                key = config.get("unique_key")
                if strategy != "delete+insert" or not key or config.get("incremental_predicates"):
                    raise PlanUnsupported(f"{item.name}: incremental strategy {strategy}")
                node.unique_key = [key] if isinstance(key, str) else list(key)
                node.incremental_sql = incremental[uid]
            if config.get("contract") and config.contract.enforced:
                raise PlanUnsupported(f"{item.name}: an enforced contract")
        elif kind == "test":
            if uid not in full:
                raise PlanUnsupported(f"{item.name}: not compiled")
            node.severity = str(config.severity).lower()
            node.fail_calc = str(config.fail_calc)
            node.warn_if = str(config.warn_if)
            node.error_if = str(config.error_if)
            node.limit = config.limit
            if config.get("store_failures"):
                raise PlanUnsupported(f"{item.name}: store_failures")
        elif kind == "seed":
            types = dict(config.column_types or {})
            path = Path(item.root_path) / item.original_file_path
            header = path.read_text(encoding="utf-8").splitlines()[0].split(",")
            missing = [name for name in header if name not in types]
            if missing or config.get("quote_columns") or config.get("delimiter", ",") != ",":
                raise PlanUnsupported(f"{item.name}: a seed without column_types for {missing}")
            node.seed_path = str(path)
            node.seed_columns = [[name, str(types[name])] for name in header]
        nodes[uid] = node
    ordered = _dag_order(nodes)
    return Plan(fingerprint, ordered, sorted(lake_tables))


def _lake_tables_hook(item: Any) -> bool:
    """The project's on-run-start hook that makes the lake tables on Spark (and does
    nothing on DuckDB, where the lake source reads the parts in place)."""
    return str(getattr(item, "raw_code", "")).strip() == "{{ create_lake_tables() }}"


def _dag_order(nodes: dict[str, Node]) -> dict[str, Node]:
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
