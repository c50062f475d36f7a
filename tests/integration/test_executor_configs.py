"""A model of your own with configs obs's executor does not know builds as `dbt build` builds it.

A fork of the project (OBS_PROJECT) adds three models: one whose sql_header
creates the macro it calls, one with a pre-hook and a post-hook on ``{{ this }}``,
and one whose hook needs dbt to render it. The executor runs the first two
itself, and they hold what a plain `dbt build` of the fork holds; the third
(and any config key outside the executor's allow-list) sends the build to dbt
with one line naming the model and the config, and that answer is remembered
(the next build does not compile the plan again).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest
from obs.demo.rollouts import DemoSpec, write_demo_run
from obs.runner.build import build
from obs.runner.build_state import PROJECT_PARTS
from obs.runner.dbt import Dbt, project_dir
from obs.runner.manifest import CONFIG_RULES, unsupported_config

from tests.conftest import run_cli

pytestmark = pytest.mark.integration

HEADER_MODEL = """{{ config(
    materialized='table',
    sql_header="create or replace macro my_double(x) as x * 2;"
) }}
select iteration, my_double(count(*)) as doubled
from {{ ref('fct_prompt_iteration') }}
group by 1
"""

HOOK_MODEL = """{{ config(
    materialized='table',
    pre_hook="create table if not exists my_hook_log (phase varchar, n bigint)",
    post_hook="insert into my_hook_log select 'after', count(*) from {{ this }}"
) }}
select prompt_hash, count(*) as iterations
from {{ ref('fct_prompt_iteration') }}
group by 1
"""

JINJA_HOOK_MODEL = """{{ config(
    materialized='table',
    post_hook="insert into my_hook_log select '{{ target.name }}', count(*) from {{ this }}"
) }}
select count(*) as hooked from {{ ref('my_hooked') }}
"""


def _fork(root: Path, models: dict[str, str]) -> Path:
    fork = root / "fork"
    fork.mkdir()
    for name in ("dbt_project.yml", "profiles.yml"):
        shutil.copy(project_dir() / name, fork / name)
    for name in PROJECT_PARTS:
        shutil.copytree(project_dir() / name, fork / name)
    for name, sql in models.items():
        (fork / "models" / "marts" / f"{name}.sql").write_text(sql)
    return fork


def _lake(root: Path) -> Path:
    dumps, lake = root / "dumps", root / "lake"
    write_demo_run(dumps, DemoSpec(prompts=6, iterations=3, samples_per_prompt=2, seed=3))
    run_cli(["--lake", lake, "--warehouse", root / "w0.duckdb", "ingest", "rollouts", dumps,
             "--run", "p", "-q"])  # fmt: skip
    return lake


def _rows(warehouse: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return con.execute(sql).fetchall()


def test_the_allow_list_names_what_it_does_not_know() -> None:
    assert unsupported_config({"materialized": "table", "tags": ["x"], "meta": {}}) is None
    assert unsupported_config({"grants": {}, "full_refresh": None}) is None
    assert unsupported_config({"grants": {"select": ["analyst"]}}) == (
        'config grants={"select": ["analyst"]}'
    )
    assert unsupported_config({"full_refresh": False}) == "config full_refresh=false"
    assert unsupported_config({"on_schema_change": "append_new_columns"}) == (
        'config on_schema_change="append_new_columns"'
    )
    assert unsupported_config({"my_team_flag": True}) == "config my_team_flag"
    # a key set to null is not set
    assert unsupported_config({"my_team_flag": None}) is None
    assert "sql_header" in CONFIG_RULES and "post-hook" in CONFIG_RULES


def test_a_sql_header_and_hooks_run_on_the_executor_as_on_dbt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    fork = _fork(tmp_path, {"my_doubled": HEADER_MODEL, "my_hooked": HOOK_MODEL})
    monkeypatch.setenv("OBS_PROJECT", str(fork))
    lake = _lake(tmp_path)
    ours, theirs = tmp_path / "obs.duckdb", tmp_path / "dbt.duckdb"
    assert build(Dbt(ours, lake)).engine == "obs"
    assert "building with dbt" not in capsys.readouterr().err
    result = Dbt(theirs, lake).invoke("build", ["--exclude-resource-type", "unit_test"])
    assert not result.failures
    for sql in (
        "select * from my_doubled order by 1",
        "select * from my_hooked order by 1",
        "select * from my_hook_log order by all",
    ):
        assert _rows(ours, sql) == _rows(theirs, sql), sql
    # worked by hand: 6 prompts at each of 3 iterations, doubled by the header's macro
    assert _rows(ours, "select * from my_doubled order by 1") == [(0, 12), (1, 12), (2, 12)]
    assert _rows(ours, "select * from my_hook_log") == [("after", 6)]


def test_a_config_the_executor_cannot_run_sends_the_build_to_dbt_once_compiled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    fork = _fork(tmp_path, {"my_hooked": HOOK_MODEL, "my_jinja_hooked": JINJA_HOOK_MODEL})
    monkeypatch.setenv("OBS_PROJECT", str(fork))
    lake = _lake(tmp_path)
    warehouse = tmp_path / "obs.duckdb"
    assert build(Dbt(warehouse, lake)).engine == "dbt"
    err = capsys.readouterr().err
    assert "compiling the project for obs's executor" in err
    assert (
        "building with dbt: the executor does not run my_jinja_hooked:"
        " a hook with Jinja other than {{ this }}"
    ) in err
    # dbt ran the hooks, rendered
    assert sorted(_rows(warehouse, "select * from my_hook_log")) == [("after", 6), ("duckdb", 1)]
    # the answer is remembered: no second compile
    assert build(Dbt(warehouse, lake)).engine == "dbt"
    err = capsys.readouterr().err
    assert "compiling the project" not in err
    assert "the executor does not run my_jinja_hooked" in err
