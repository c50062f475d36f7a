"""The dbt project's own rules, read from the manifest that `dbt parse` writes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from obs.reports.charts import PAGES
from obs.reports.exposures import Consumer, consumers
from obs.runner.dbt import project_dir, run_dbt

pytestmark = pytest.mark.integration

# Views whose rows are stg_rollouts' (and an instruction position from range()):
# keyed by construction; the key is tested on stg_rollouts.
KEYED_ELSEWHERE = {
    "int_rollout_instructions_unnested": "stg_rollouts",
    "int_rollouts_scored": "stg_rollouts",
    # its key is checked on the table that holds every row of it (a test on the
    # view would read the whole lake at every build)
    "stg_metrics": "int_metric_history",
    # Marts that are views of the intermediate table holding their rows: the
    # rules are tested on the table, which a build rebuilds when rows land (a
    # view is built again only when its SQL changes, and so are its tests).
    "fct_metric_history": "int_metric_history",
    "fct_prompt_iteration": "int_prompt_iteration",
    "fct_reward_steps": "int_reward_steps",
    "fct_reward_function_steps": "int_reward_function_steps",
    "fct_cache_stats": "int_cache_stats",
    "fct_rollout_reliability": "int_rollout_reliability",
    "fct_power_law_fit": "int_power_law_fit",
}


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("meta")
    target = root / "target"
    result = run_dbt("parse", root / "obs.duckdb", root / "lake", ["--target-path", str(target)])
    assert result.success
    return json.loads((target / "manifest.json").read_text())


def _models(manifest: dict) -> list[dict]:
    return [
        node
        for node in manifest["nodes"].values()
        if node["resource_type"] == "model" and node["package_name"] == "obs"
    ]


def test_meta_every_model_and_column_is_documented(manifest: dict) -> None:
    missing = []
    for model in _models(manifest):
        if not model["description"].strip():
            missing.append(model["name"])
        sql_path = project_dir() / model["original_file_path"]
        assert sql_path.is_file()
        for name, column in model["columns"].items():
            if not column["description"].strip():
                missing.append(f"{model['name']}.{name}")
    assert missing == []


def test_meta_one_models_yml_per_folder() -> None:
    """Each folder of models/ documents its models in one `_<folder>__models.yml`."""
    root = Path(__file__).resolve().parents[2] / "models"
    crowded = {
        str(folder.relative_to(root)): sorted(p.name for p in folder.glob("*__models.yml"))
        for folder in [root, *(p for p in root.rglob("*") if p.is_dir())]
        if len(list(folder.glob("*__models.yml"))) > 1
    }
    assert crowded == {}


def test_meta_every_macro_is_documented(manifest: dict) -> None:
    """Every macro of the project has a description in macros/_macros.yml."""
    undocumented = sorted(
        macro["name"]
        for macro in manifest["macros"].values()
        if macro["package_name"] == "obs" and not macro.get("description", "").strip()
    )
    assert undocumented == []


def test_meta_every_model_states_its_grain(manifest: dict) -> None:
    vague = [m["name"] for m in _models(manifest) if "One row per" not in m["description"]]
    assert vague == []


def test_meta_every_model_has_a_tested_primary_key(manifest: dict) -> None:
    keyed = set()
    for node in manifest["nodes"].values():
        if node["resource_type"] != "test":
            continue
        metadata = node.get("test_metadata") or {}
        if metadata.get("name") == "column_rules" and metadata.get("kwargs", {}).get("key"):
            keyed.update(node["depends_on"]["nodes"])
    unkeyed = [m["name"] for m in _models(manifest) if m["unique_id"] not in keyed]
    assert sorted(unkeyed) == sorted(KEYED_ELSEWHERE)
    assert {f"model.obs.{name}" for name in KEYED_ELSEWHERE.values()} <= keyed


def test_meta_only_staging_reads_sources(manifest: dict) -> None:
    offenders = []
    for model in _models(manifest):
        reads_source = any(n.startswith("source.") for n in model["depends_on"]["nodes"])
        is_staging = model["name"].startswith("stg_")
        if reads_source != is_staging:
            offenders.append(model["name"])
    assert offenders == []


# The layers, lowest first: a model reads seeds, sources (staging only, above)
# and models of its own layer or a lower one.
LAYERS = {"staging": 0, "intermediate": 1, "marts": 2, "reports": 3}


def _layer(model: dict) -> str:
    """A model's layer, from its folder under models/, checked against its name."""
    layer = model["original_file_path"].split("/")[1]
    prefixes = {
        "staging": ("stg_",),
        "intermediate": ("int_",),
        "marts": ("fct_", "dim_"),
        "reports": ("rpt_",),
    }[layer]
    assert model["name"].startswith(prefixes), (model["name"], layer)
    return layer


def _model_parents(model: dict, manifest: dict) -> list[dict]:
    return [manifest["nodes"][n] for n in model["depends_on"]["nodes"] if n.startswith("model.")]


def test_meta_views_name_what_they_read_without_the_database(manifest: dict) -> None:
    """A view's SQL is kept in the warehouse and bound when queried: a ref with
    the database (the warehouse file's stem) breaks once the file is copied or
    attached under another name. Tables are bound when built, so only views."""
    offenders = []
    for model in _models(manifest):
        if model["config"]["materialized"] != "view":
            continue
        calls = re.findall(r"ref\([^)]*\)(\.include\(database=false\))?", model["raw_code"])
        offenders += [model["name"] for bare in calls if not bare]
    assert offenders == []


def test_meta_staging_reads_only_sources(manifest: dict) -> None:
    """A staging model renames and casts one lake table: it reads no model and no seed."""
    offenders = {
        model["name"]: [n for n in model["depends_on"]["nodes"] if not n.startswith("source.")]
        for model in _models(manifest)
        if _layer(model) == "staging"
    }
    assert {name: read for name, read in offenders.items() if read} == {}
    assert offenders  # the rule found the staging models


def test_meta_no_model_reads_a_higher_layer(manifest: dict) -> None:
    """staging -> intermediate -> marts -> reports: an intermediate model never reads a
    mart or a report (a mart's computation that intermediate models need lives in an
    intermediate model the mart reads), a mart never reads a report."""
    offenders = sorted(
        f"{model['name']} reads {parent['name']}"
        for model in _models(manifest)
        for parent in _model_parents(model, manifest)
        if LAYERS[_layer(parent)] > LAYERS[_layer(model)]
    )
    assert offenders == []
    # the rule sees every layer's models
    assert {_layer(m) for m in _models(manifest)} == set(LAYERS)


def _has_logic(sql: str) -> bool:
    """A CASE expression or a window function (the project's rule: models with CASE or window
    logic get unit tests), read from the model's own SQL without comments or string
    literals; logic inside a macro is tested with the macro's callers' unit tests."""
    code = re.sub(r"\{#.*?#\}|--[^\n]*|'[^']*'", " ", sql, flags=re.DOTALL).lower()
    return bool(re.search(r"\bcase\b|\bover\s*\(", code))


def _needing_unit_tests(manifest: dict) -> set[str]:
    """Intermediate and mart SQL models with logic (Python models cannot be unit tested)."""
    return {
        m["name"]
        for m in _models(manifest)
        if m["language"] == "sql"
        and m["original_file_path"].startswith(("models/intermediate/", "models/marts/"))
        and _has_logic(m["raw_code"])
    }


# Debt, not an exemption: models with CASE or window logic and no unit test yet
# (their numbers are checked, if at all, only end to end by the integration tests
# of their marts). Only shrink this list: the test fails when an entry gets a unit
# test or loses its logic, so a fixed entry must be removed.
UNTESTED_LOGIC = {
    "int_agent_rollouts",
    "int_reward_function_coverage",
    "int_reward_function_runs",
    "int_reward_hacking_points",
    "int_reward_logged",
    "int_reward_sample_steps",
    "int_reward_samples",
    "fct_reward_correlations",
    "fct_reward_function_quality",
    "fct_vi_si_points",
    "fct_eval_results",
    "fct_league",
}


def test_meta_models_with_logic_have_unit_tests(manifest: dict) -> None:
    tested = {
        node["depends_on"]["nodes"][0].removeprefix("model.obs.")
        for node in manifest.get("unit_tests", {}).values()
        if node["depends_on"]["nodes"]
    }
    needing = _needing_unit_tests(manifest)
    # The rule finds the models whose logic the unit tests were written for.
    assert {
        "int_prompt_iteration",
        "fct_prompt_learning",
        "fct_forgetting_events",
        "fct_curriculum",
    } <= needing & tested
    assert sorted(needing - tested - UNTESTED_LOGIC) == []
    # The allow-list holds only real debt: each entry still has logic and no unit test.
    assert sorted(UNTESTED_LOGIC - (needing - tested)) == []


def test_meta_project_dir_is_the_checkout() -> None:
    assert (project_dir() / "dbt_project.yml").is_file()
    assert Path(__file__).resolve().is_relative_to(project_dir())


def test_meta_stg_rollouts_lists_the_lake_schema(manifest: dict, tmp_path: Path) -> None:
    """schema.py is the one definition; stg_rollouts and its yml must list the same columns."""
    import duckdb
    from obs.ingest.rollouts import ingest_rollouts
    from obs.ingest.schema import ROLLOUT_TABLE, RUN_PARTITION, TIME_PARTITION

    expected = {RUN_PARTITION, TIME_PARTITION, *ROLLOUT_TABLE.names}
    [model] = [m for m in _models(manifest) if m["name"] == "stg_rollouts"]
    assert set(model["columns"]) == expected
    # The view itself, built over a real lake, returns exactly those columns.
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    (dumps / "0.jsonl").write_text('{"input": "p", "output": "o", "score": 1}\n')
    lake, warehouse = tmp_path / "lake", tmp_path / "w.duckdb"
    ingest_rollouts(dumps, lake=lake, run_id="r")
    assert run_dbt("run", warehouse, lake, ["--select", "stg_rollouts"]).success
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        names = [row[0] for row in con.execute("describe stg_rollouts").fetchall()]
    finally:
        con.close()
    assert set(names) == expected and len(names) == len(expected)


@pytest.mark.parametrize("table", ["eval_steps", "step_groups", "turn_advantages"])
def test_meta_record_staging_lists_the_lake_schema(manifest: dict, table: str) -> None:
    """A keyed-record table's staging yml documents schema.py's columns (the view's
    declaration is checked for every lake table below)."""
    from obs.ingest.schema import RECORD_TABLES, RUN_PARTITION, TIME_PARTITION

    expected = {RUN_PARTITION, TIME_PARTITION, *RECORD_TABLES[table].names}
    [model] = [m for m in _models(manifest) if m["name"] == f"stg_{table}"]
    assert set(model["columns"]) == expected


def _duckdb_type(kind: object) -> str:
    """The DuckDB type staging declares for an Arrow type of ingest/schema.py."""
    import pyarrow as pa

    assert isinstance(kind, pa.DataType)
    if pa.types.is_list(kind):
        return _duckdb_type(kind.value_type) + "[]"
    if pa.types.is_map(kind):
        return f"map({_duckdb_type(kind.key_type)}, {_duckdb_type(kind.item_type)})"
    simple = {
        pa.string(): "varchar",
        pa.int64(): "bigint",
        pa.int32(): "integer",
        pa.float64(): "double",
        pa.bool_(): "boolean",
        pa.timestamp("us"): "timestamp",
    }
    return simple[kind]


LAKE_TABLES = [
    "rollouts",
    "rollout_tokens",
    "metrics",
    "runs",
    "reward_samples",
    "eval_steps",
    "step_groups",
    "turn_advantages",
    "_rejects",
]


@pytest.mark.parametrize("table", LAKE_TABLES)
def test_meta_every_staging_view_declares_the_lake_schema(table: str) -> None:
    """ingest/schema.py is the one definition of every lake table: its lake source
    declares the same columns with the same types (the empty relation a lake without
    the table reads as, Spark's table, the names the view reads), partitions
    included, and its staging view reads it through lake_source."""
    from obs.ingest import schema

    specs = {
        "rollouts": schema.ROLLOUT_TABLE,
        "rollout_tokens": schema.ROLLOUT_TOKEN_TABLE,
        "metrics": schema.METRIC_TABLE,
        "runs": schema.RUN_TABLE,
        "reward_samples": schema.REWARD_SAMPLE_TABLE,
        **schema.RECORD_TABLES,
        schema.REJECTS: schema.REJECT_TABLE,
    }
    expected = {
        schema.RUN_PARTITION: "varchar",
        schema.TIME_PARTITION: "varchar",
        **{column.name: _duckdb_type(column.type) for column in specs[table].columns},
    }
    model = f"stg_{table.lstrip('_')}"  # _rejects: stg_rejects
    sql = (project_dir() / "models" / "staging" / "lake" / f"{model}.sql").read_text()
    assert f"lake_source('{table}')" in sql, f"{model} reads the lake through lake_source"
    sources = yaml.safe_load((project_dir() / "models/staging/lake/_lake__sources.yml").read_text())
    [lake] = [source for source in sources["sources"] if source["name"] == "lake"]
    [declared_table] = [t for t in lake["tables"] if t["name"] == table]
    declared = {column["name"]: column["data_type"] for column in declared_table["columns"]}
    assert declared == expected and len(declared) > 5


def test_meta_the_lake_sources_are_the_lake_tables() -> None:
    """Every lake table has a source (and so the staging view above), and no more."""
    from obs.runner.build import lake_sources

    assert sorted(lake_sources()) == sorted(LAKE_TABLES)


@pytest.mark.parametrize("consumer", consumers(), ids=lambda consumer: consumer.exposure)
def test_meta_each_consumer_exposure_lists_what_its_queries_read(
    manifest: dict, consumer: Consumer
) -> None:
    """A consumer's dbt exposure (a dashboard's, the served pages', an answer's, an
    export's) names exactly the models its queries read, read here from their SQL."""
    read: set[str] = set()
    for name in consumer.queries:
        sql = (project_dir() / "reports" / "queries" / f"{name}.sql").read_text()
        sql = re.sub(r"--[^\n]*", "", sql)  # a model a comment names is not read
        read |= set(re.findall(r"\b((?:fct|dim|rpt|stg|int)_[a-z0-9_]+)\b", sql))
    [node] = [e for e in manifest["exposures"].values() if e["name"] == consumer.exposure]
    listed = {uid.split(".")[-1] for uid in node["depends_on"]["nodes"]}
    assert listed == read and read


def test_meta_every_dashboard_page_has_its_exposure(manifest: dict) -> None:
    names = {e["name"] for e in manifest["exposures"].values()}
    assert {page.exposure for page in PAGES} <= names
