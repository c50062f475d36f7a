"""dbt's manifest, read into the plan's nodes: the one place (with the dbt invocation in
``runner/dbt.py`` and ``runner/plan.py``) that knows dbt's objects.

``records_of`` turns a parsed manifest into plain records, each node as dbt writes it
into ``manifest.json`` (``to_dict``) plus its project folder; ``plan_nodes`` reads those
records into the executor's typed nodes. Every config key a node sets is checked
against an allow-list (``CONFIG_RULES``); a key outside it, a value the executor does
not run as dbt does, or a record without a field the reader needs raises
``PlanUnsupported`` (``PlanNotCompiled`` for a record of a shape it does not know), and
the build goes to dbt with that one line. The unit tests read recorded records
(``tests/data/manifests``), so the reader is tested without compiling the project.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from obs.runner.plan import MATERIALIZATIONS, Node, PlanNotCompiled, PlanUnsupported

# The analysis whose plan-mode compile holds each incremental model's delete+insert
# (analyses/obs_delete_insert.sql), one marker per model.
MERGES_ANALYSIS = "obs_delete_insert"
MERGE_MARKER = re.compile(r"/\*obs:replace (?P<spec>\{.*?\})\*/", re.DOTALL)


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


def records_of(manifest: Any) -> dict[str, Any]:
    """The manifest's nodes and sources as plain records (manifest.json's shape)."""
    nodes = {}
    for uid, item in manifest.nodes.items():
        record = item.to_dict(omit_none=False)
        record["root_path"] = str(getattr(item, "root_path", ""))
        nodes[uid] = record
    sources = {uid: item.to_dict(omit_none=False) for uid, item in manifest.sources.items()}
    return {"nodes": nodes, "sources": sources}


def plan_nodes(
    records: dict[str, Any], full: dict[str, str], incremental: dict[str, str]
) -> tuple[dict[str, Node], list[str]]:
    """The plan's nodes (not yet in DAG order) and the lake tables they read."""
    try:
        return _plan_nodes(records, full, incremental)
    except (AttributeError, KeyError, TypeError, ValueError) as moved:
        # a field this dbt release moved or renamed: dbt builds
        raise PlanNotCompiled(
            f"a manifest the plan reader does not know ({type(moved).__name__}: {moved})"
        ) from moved


def _plan_nodes(
    records: dict[str, Any], full: dict[str, str], incremental: dict[str, str]
) -> tuple[dict[str, Node], list[str]]:
    nodes: dict[str, Node] = {}
    lake_tables: set[str] = set()
    for uid, item in records["nodes"].items():
        kind = str(item["resource_type"]).split(".")[-1].lower()
        config = item["config"]
        name = item["name"]
        if kind in {"analysis", "unit_test"}:
            continue  # dbt runs unit tests (--unit-tests); analyses are not built
        if not config["enabled"]:
            continue
        if kind == "operation" and _lake_tables_hook(item):
            continue  # it makes Spark's lake tables: nothing to do on DuckDB
        materialized = "test" if kind == "test" else str(config["materialized"])
        if kind not in {"model", "seed", "test"} or materialized not in MATERIALIZATIONS:
            raise PlanUnsupported(f"{name}: {kind} materialized as {materialized}")
        unknown = unsupported_config(config)
        if unknown:
            raise PlanUnsupported(f"{name}: {unknown}")
        if kind == "seed" and (config.get("pre-hook") or config.get("post-hook")):
            raise PlanUnsupported(f"{name}: a seed's hooks")
        if str(item.get("language") or "sql").split(".")[-1].lower() != "sql":
            # a user's Python model: dbt runs the build (on DuckDB)
            raise PlanUnsupported(f"{name}: a Python model")
        depends = list(item["depends_on"].get("nodes", []))  # a seed depends on none
        parents = [p for p in depends if p.startswith(("model.", "seed."))]
        sources = []
        for parent in depends:
            if parent.startswith("source."):
                source = records["sources"][parent]
                if source["source_name"] != "lake":
                    raise PlanUnsupported(f"{name}: source {source['source_name']}")
                sources.append(source["name"])
        lake_tables.update(sources)
        node = Node(
            unique_id=uid,
            name=name,
            kind=kind,
            materialized=materialized,
            relation=str(item.get("relation_name") or ""),
            parents=parents,
            sources=sources,
            sql=full.get(uid, ""),
        )
        if kind == "model":
            _model(node, config, incremental)
        elif kind == "test":
            _test(node, config)
        else:
            _seed(node, config, Path(item["root_path"]), str(item["original_file_path"]))
        nodes[uid] = node
    merges = _merge_statements(records, full)
    for node in nodes.values():
        if node.materialized == "incremental":
            node.merge_sql = merges.get(node.unique_id)
            if node.merge_sql is None:
                raise PlanUnsupported(
                    f"{node.name}: no delete+insert compiled for it"
                    f" (analyses/{MERGES_ANALYSIS}.sql)"
                )
    return nodes, sorted(lake_tables)


def _merge_statements(records: dict[str, Any], full: dict[str, str]) -> dict[str, str]:
    """Each incremental model's delete+insert statements, as the project's analysis
    ``obs_delete_insert`` compiles them in plan mode (one marker per model)."""
    found: dict[str, str] = {}
    for uid, item in records["nodes"].items():
        kind = str(item["resource_type"]).split(".")[-1].lower()
        if kind == "analysis" and item["name"] == MERGES_ANALYSIS:
            for match in MERGE_MARKER.finditer(full.get(uid, "")):
                spec = json.loads(match["spec"])
                found[str(spec["node"])] = str(spec["sql"])
    return found


def _model(node: Node, config: dict[str, Any], incremental: dict[str, str]) -> None:
    if not node.sql:
        raise PlanUnsupported(f"{node.name}: not compiled")
    node.sql_header = config.get("sql_header") or None
    node.pre_hooks = hook_sql(config.get("pre-hook"), node.relation, node.name)
    node.post_hooks = hook_sql(config.get("post-hook"), node.relation, node.name)
    if node.materialized == "incremental":
        strategy = config.get("incremental_strategy") or "delete+insert"
        key = config.get("unique_key")
        if strategy != "delete+insert" or not key or config.get("incremental_predicates"):
            raise PlanUnsupported(f"{node.name}: incremental strategy {strategy}")
        node.unique_key = [key] if isinstance(key, str) else list(key)
        node.incremental_sql = incremental[node.unique_id]
    if (config.get("contract") or {}).get("enforced"):
        raise PlanUnsupported(f"{node.name}: an enforced contract")


def _test(node: Node, config: dict[str, Any]) -> None:
    if not node.sql:
        raise PlanUnsupported(f"{node.name}: not compiled")
    node.severity = str(config["severity"]).lower()
    node.fail_calc = str(config["fail_calc"])
    node.warn_if = str(config["warn_if"])
    node.error_if = str(config["error_if"])
    node.limit = config.get("limit")


def _seed(node: Node, config: dict[str, Any], root: Path, path: str) -> None:
    """A seed's columns and its file, named relative to the project folder (a plan
    compiled in one copy of the project runs in another: a wheel's)."""
    types = dict(config.get("column_types") or {})
    header = (root / path).read_text(encoding="utf-8").splitlines()[0].split(",")
    missing = [name for name in header if name not in types]
    if missing or config.get("quote_columns") or config.get("delimiter", ",") != ",":
        raise PlanUnsupported(f"{node.name}: a seed without column_types for {missing}")
    node.seed_path = Path(path).as_posix()
    node.seed_columns = [[name, str(types[name])] for name in header]


def _lake_tables_hook(item: dict[str, Any]) -> bool:
    """The project's on-run-start hook that makes the lake tables on Spark (and does
    nothing on DuckDB, where the lake source reads the parts in place)."""
    return str(item.get("raw_code", "")).strip() == "{{ create_lake_tables() }}"
