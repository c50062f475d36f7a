"""The plan reader (runner/manifest.py) and the executor's helpers on recorded manifests.

``tests/data/manifests/dbt-<minor>.json`` holds what dbt gave the plan reader when
the project was compiled in plan mode with that dbt-core minor (``python -m
tests.data.manifests.record``): a seed, the staging view of the rollouts, an
incremental model and the models around it, their data tests, the on-run-start
hook. No dbt runs here: the reader, the allow-list, the change detection, the group
predicates and the markers are checked in well under a second.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import duckdb
import pytest
from obs.runner.executor import (
    MARKER,
    Changes,
    Executor,
    changes_between,
    fill,
    groups_predicate,
)
from obs.runner.manifest import plan_nodes
from obs.runner.plan import (
    DATABASE_PLACEHOLDER,
    LAKE_PLACEHOLDER,
    CompiledPlan,
    Node,
    PlanNotCompiled,
    PlanUnsupported,
    dag_order,
)

ROOT = Path(__file__).resolve().parents[2]
RECORDED = sorted((ROOT / "tests" / "data" / "manifests").glob("dbt-*.json"))
INCREMENTAL = "model.obs.int_prompt_iteration"


def _load(path: Path) -> dict[str, Any]:
    recorded = json.loads(path.read_text())
    for node in recorded["records"]["nodes"].values():
        node["root_path"] = str(ROOT)  # the recording's paths are relative to the project
    return recorded


@pytest.fixture(params=RECORDED, ids=[p.stem for p in RECORDED])
def recorded(request: pytest.FixtureRequest) -> dict[str, Any]:
    return _load(request.param)


def _read(recorded: dict[str, Any]) -> tuple[dict[str, Node], list[str]]:
    return plan_nodes(recorded["records"], recorded["full"], recorded["incremental"])


def test_a_recording_exists_for_each_dbt_minor_the_project_allows() -> None:
    allowed = (ROOT / "pyproject.toml").read_text()
    assert '"dbt-core>=1.11,<1.12"' in allowed
    assert [p.stem for p in RECORDED] == ["dbt-1.11"]


def test_the_reader_maps_each_kind(recorded: dict[str, Any]) -> None:
    nodes, lake_tables = _read(recorded)
    assert lake_tables == ["rollouts"]
    stg = nodes["model.obs.stg_rollouts"]
    assert (stg.kind, stg.materialized, stg.sources, stg.parents) == (
        "model",
        "view",
        ["rollouts"],
        [],
    )
    assert stg.relation == f'"{DATABASE_PLACEHOLDER}"."main"."stg_rollouts"'
    inc = nodes[INCREMENTAL]
    assert inc.materialized == "incremental"
    assert inc.unique_key == ["run_id", "iteration", "prompt_hash"]
    assert inc.incremental_sql and inc.incremental_sql != inc.sql
    assert "model.obs.int_rollouts_scored" in inc.parents
    seed = nodes["seed.obs.metric_aliases"]
    header = (ROOT / "seeds" / "metric_aliases.csv").read_text().splitlines()[0].split(",")
    assert [name for name, _ in seed.seed_columns] == header
    assert seed.seed_path == "seeds/metric_aliases.csv"  # relative to the project folder
    tests = [n for n in nodes.values() if n.kind == "test"]
    assert tests and all(n.severity in ("error", "warn") for n in tests)
    assert all(n.fail_calc == "count(*)" and n.sql for n in tests)
    # the on-run-start hook (Spark's lake tables) is no node of the plan
    assert not [n for n in nodes.values() if n.kind == "operation"]
    # nothing the project sets needs a header or hooks
    assert all(not n.sql_header and not n.pre_hooks and not n.post_hooks for n in nodes.values())


def test_dag_order_puts_parents_first(recorded: dict[str, Any]) -> None:
    nodes, _ = _read(recorded)
    ordered = list(dag_order(nodes))
    for uid, node in nodes.items():
        for parent in node.parents:
            if parent in nodes:
                assert ordered.index(parent) < ordered.index(uid), (parent, uid)
    models = [u for u in ordered if nodes[u].kind != "test"]
    assert ordered[: len(models)] == models  # the data tests after every model


def _config(recorded: dict[str, Any], uid: str = INCREMENTAL) -> dict[str, Any]:
    return recorded["records"]["nodes"][uid]["config"]


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("grants", {"select": ["analyst"]}, 'config grants={"select": ["analyst"]}'),
        ("full_refresh", False, "config full_refresh=false"),
        ("on_schema_change", "fail", 'config on_schema_change="fail"'),
        ("persist_docs", {"relation": True}, 'config persist_docs={"relation": true}'),
        ("my_team_flag", "x", "config my_team_flag"),
        ("incremental_strategy", "merge", "incremental strategy merge"),
        ("contract", {"enforced": True, "alias_types": True}, "an enforced contract"),
        ("post-hook", [{"sql": "select {{ var('x') }}"}], "a hook with Jinja other than"),
    ],
)
def test_a_config_the_executor_does_not_run_is_named(
    recorded: dict[str, Any], key: str, value: Any, reason: str
) -> None:
    changed = copy.deepcopy(recorded)
    _config(changed)[key] = value
    with pytest.raises(PlanUnsupported) as raised:
        _read(changed)
    assert not isinstance(raised.value, PlanNotCompiled)
    assert str(raised.value).startswith(f"int_prompt_iteration: {reason}")


def test_a_header_and_this_hooks_are_run_by_the_executor(recorded: dict[str, Any]) -> None:
    changed = copy.deepcopy(recorded)
    config = _config(changed)
    config["sql_header"] = "set threads = 1;"
    config["pre-hook"] = [{"sql": "select 1", "transaction": True, "index": None}]
    config["post-hook"] = [{"sql": "analyze {{ this }}", "transaction": True, "index": None}]
    nodes, _ = _read(changed)
    node = nodes[INCREMENTAL]
    assert node.sql_header == "set threads = 1;"
    assert node.pre_hooks == ["select 1"]
    assert node.post_hooks == [f"analyze {node.relation}"]


def test_a_seed_with_hooks_or_a_foreign_source_goes_to_dbt(recorded: dict[str, Any]) -> None:
    changed = copy.deepcopy(recorded)
    _config(changed, "seed.obs.metric_aliases")["post-hook"] = [{"sql": "select 1"}]
    with pytest.raises(PlanUnsupported, match="metric_aliases: a seed's hooks"):
        _read(changed)
    changed = copy.deepcopy(recorded)
    (source,) = changed["records"]["sources"].values()
    source["source_name"] = "crm"
    with pytest.raises(PlanUnsupported, match="stg_rollouts: source crm"):
        _read(changed)


def test_a_field_a_dbt_release_moved_sends_the_build_to_dbt(recorded: dict[str, Any]) -> None:
    changed = copy.deepcopy(recorded)
    del changed["records"]["nodes"][INCREMENTAL]["depends_on"]
    with pytest.raises(PlanNotCompiled, match="a manifest the plan reader does not know"):
        _read(changed)
    changed = copy.deepcopy(recorded)
    del _config(changed, "model.obs.stg_rollouts")["materialized"]
    with pytest.raises(PlanNotCompiled, match="KeyError: 'materialized'"):
        _read(changed)


def test_the_markers_the_project_compiles(recorded: dict[str, Any]) -> None:
    """The staging view reads the lake through a lake marker; the incremental model's
    incremental SQL recomputes the groups of stg_rollouts' changed rows."""
    stg = [m["kind"] for m in MARKER.finditer(recorded["full"]["model.obs.stg_rollouts"])]
    assert stg == ["lake"]
    found = list(MARKER.finditer(recorded["incremental"][INCREMENTAL]))
    assert [m["kind"] for m in found] == ["groups"]
    spec = json.loads(found[0]["spec"])
    assert spec["grain"] == ["run_id", "iteration"] and spec["alias"] == "upstream"
    lookup = f'"{DATABASE_PLACEHOLDER}"."main"."stg_rollouts"'
    assert spec["specs"][0]["lookup"] == lookup
    assert not list(MARKER.finditer(recorded["full"][INCREMENTAL]))
    # the selection's SQL comes from the macros, with slots the executor fills
    [groups] = spec["specs"]
    assert groups["query"] == (
        f"select distinct run_id, iteration from {lookup} where __obs_conditions__ order by 1, 2"
    )
    assert groups["since"] == "(run_id = __obs_run__ and ingested_at >= timestamp __obs_time__)"
    assert groups["whole"] == "(run_id = __obs_run__)"
    assert spec["term"] == (
        "(upstream.run_id = __obs_run__ and upstream.iteration in (__obs_values__))"
    )


def test_the_executor_fills_the_marker_s_slots_once() -> None:
    assert fill("(run_id = __obs_run__)", run="'a'") == "(run_id = 'a')"
    # a value holding a slot's name is not filled again
    filled = fill("__obs_run__ and __obs_values__", run="'__obs_values__'", values="1, 2")
    assert filled == "'__obs_values__' and 1, 2"


PART = "run_id={run}/ingested_at={t}Z/part-0.parquet"


def _part(run: str, t: str) -> str:
    return PART.format(run=run, t=t)


def test_changes_between_listings() -> None:
    a1, a2 = _part("a", "20261201T000000000000"), _part("a", "20261202T103000500000")
    b1 = _part("b", "20261130T000000000000")
    before = {"rollouts": {"a": {a1}, "b": {b1}}}
    now = {"rollouts": {"a": {a1, a2}}}
    changes = changes_between(now, before, ["rollouts"])
    # a grew by one part (its publish time); b lost its part: read whole (None)
    assert changes.runs == {"a": "2026-12-02 10:30:00.500000", "b": None}
    assert changes.oldest == "1970-01-01 00:00:00"
    assert changes_between(now, now, ["rollouts"]).runs == {}
    assert changes_between(now, None, ["rollouts"]).runs == {"a": "2026-12-01 00:00:00.000000"}


def test_groups_predicate_by_run_and_value() -> None:
    term = "(upstream.run_id = __obs_run__ and upstream.iteration in (__obs_values__))"
    assert groups_predicate({}, term) == "false"
    predicate = groups_predicate({"a": [1, 2], "o'b": [0]}, term)
    assert predicate == (
        "(\n    (upstream.run_id = 'a' and upstream.iteration in (1, 2))"
        "\n    or (upstream.run_id = 'o''b' and upstream.iteration in (0))\n)"
    )
    assert groups_predicate({"a": [None]}, "(run_id = __obs_run__)") == "(\n    (run_id = 'a')\n)"


def test_render_replaces_placeholders_and_picks_the_lake_branch(tmp_path: Path) -> None:
    node = Node("model.obs.x", "x", "model", "view", '"db"."main"."x"', [], ["rollouts"], "")
    sql = (
        f'select * from /*obs:lake {{"table": "rollouts"}}*/read_parquet(\'{LAKE_PLACEHOLDER}'
        "/rollouts/*.parquet')/*obs:else*/(select 1 where false)/*obs:end*/"
        f' join "{DATABASE_PLACEHOLDER}".main.y using (k)'
    )
    with duckdb.connect(str(tmp_path / "w.duckdb")) as con:
        plan = CompiledPlan("f", {node.unique_id: node}, ["rollouts"])
        lake = tmp_path / "la'ke"
        landed = Executor(plan, con, lake, {"rollouts": {"a": {_part("a", "20261201T0")}}})
        empty = Executor(plan, con, lake, {"rollouts": {}})
        rendered = landed.render(node, sql, lambda *_: None)
        assert f"read_parquet('{str(lake.resolve()).replace(chr(39), 2 * chr(39))}/rollouts" in (
            rendered
        )
        assert '"w".main.y' in rendered and "obs:" not in rendered
        assert "(select 1 where false)" in empty.render(node, sql, lambda *_: None)


def test_the_executor_looks_changed_groups_up_by_the_recorded_marker(
    recorded: dict[str, Any], tmp_path: Path
) -> None:
    """The incremental model's groups marker, as dbt compiled it, run on a small table:
    a run with new parts from their oldest publish time on, a run that lost one whole."""
    [marker] = MARKER.finditer(recorded["incremental"][INCREMENTAL])
    node = Node(INCREMENTAL, "x", "model", "incremental", '"w"."main"."x"', [], [], "")
    with duckdb.connect(str(tmp_path / "w.duckdb")) as con:
        con.execute(
            "create table stg_rollouts as select * from (values"
            " ('a', 1, timestamp '2026-12-01 00:00:00'),"
            " ('a', 2, timestamp '2026-12-02 00:00:00'),"
            " ('o''b', 0, timestamp '2026-11-01 00:00:00'),"
            " ('c', 5, timestamp '2026-12-03 00:00:00')"
            ") as t(run_id, iteration, ingested_at)"
        )
        executor = Executor(CompiledPlan("f", {}, []), con, tmp_path, {})
        found = Changes(runs={"a": "2026-12-02 00:00:00", "o'b": None})
        predicate = executor.render(node, marker[0], lambda *_: found)
        assert predicate == (
            "(\n    (upstream.run_id = 'a' and upstream.iteration in (2))"
            "\n    or (upstream.run_id = 'o''b' and upstream.iteration in (0))\n)"
        )
        assert executor.render(node, marker[0], lambda *_: Changes()) == "false"


def test_an_incremental_model_merges_by_the_statements_the_project_compiles(
    recorded: dict[str, Any], tmp_path: Path
) -> None:
    """The delete+insert the executor runs is delete_insert_sql's, compiled into the plan
    by analyses/obs_delete_insert.sql: the groups of the new rows are replaced, the others
    kept, and no key is matched once per new row."""
    nodes, _ = _read(recorded)
    inc = nodes[INCREMENTAL]
    assert inc.merge_sql and "select distinct run_id, iteration, prompt_hash" in inc.merge_sql
    # only incremental models carry one
    assert all(n.merge_sql is None for n in nodes.values() if n.materialized != "incremental")
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    con.execute(
        "create table main.int_prompt_iteration"
        " (run_id varchar, iteration int, prompt_hash varchar, score double)"
    )
    con.execute(
        "insert into main.int_prompt_iteration values "
        "('a', 1, 'p', 0.1), ('a', 1, 'p', 0.2), ('a', 2, 'p', 0.3), ('b', 1, 'p', 0.4)"
    )
    # the new rows: a's first iteration again (one row), and a third iteration
    con.execute(
        "create table obs_new_int_prompt_iteration as select * from (values "
        "('a', 1, 'p', 0.9), ('a', 3, 'p', 0.5)) as t(run_id, iteration, prompt_hash, score)"
    )
    executor = Executor(CompiledPlan("f", {INCREMENTAL: inc}, []), con, tmp_path, {})
    executor._replace_keys(inc, "main.int_prompt_iteration", "obs_new_int_prompt_iteration")
    rows = con.execute(
        "select run_id, iteration, score from main.int_prompt_iteration order by all"
    ).fetchall()
    assert rows == [("a", 1, 0.9), ("a", 2, 0.3), ("a", 3, 0.5), ("b", 1, 0.4)]


def test_a_project_without_the_merge_analysis_is_built_by_dbt(recorded: dict[str, Any]) -> None:
    changed = copy.deepcopy(recorded)
    changed["full"]["analysis.obs.obs_delete_insert"] = "select 1"
    with pytest.raises(PlanUnsupported) as raised:
        _read(changed)
    assert str(raised.value) == (
        "int_prompt_iteration: no delete+insert compiled for it (analyses/obs_delete_insert.sql)"
    )
