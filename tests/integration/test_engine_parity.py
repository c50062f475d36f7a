"""obs's executor builds what `dbt build` builds: the same marts, row for row, the same failures.

One lake, two warehouses: one built by a plain `dbt build` of the project,
one by `obs build` (obs's executor running the compiled plan). The lake
grows the ways a run grows (a new iteration, a grown dump, a new run, a new
and a grown tracker history, a reward monitor folder, an agent's eval logs
and console log); after the cold build and after the incremental one, every
relation of the two warehouses must hold the same columns and the same rows
(doubles within 1e-12 relative, absolute below 1: a sum's last bits follow
the order threads add in). Then a run whose values break a data rule lands:
both builds fail with the same lines.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from obs.demo.rollouts import DemoSpec, write_demo_run
from obs.runner.build import BuildFailed, build
from obs.runner.build_state import PROJECT_PARTS
from obs.runner.dbt import Dbt

from tests.conftest import run_cli
from tests.integration.growing_run import land_first, land_more
from tests.integration.warehouses import differences, within

pytestmark = pytest.mark.integration

TOLERANCE = 1e-12


def _dbt_build(lake: Path, warehouse: Path) -> list[str]:
    """A plain `dbt build` of the whole project (no unit tests); its failure lines."""
    result = Dbt(warehouse, lake).invoke("build", ["--exclude-resource-type", "unit_test"])
    return sorted(result.failures)


def _obs_build(lake: Path, warehouse: Path) -> tuple[int, list[str]]:
    """`obs build` on obs's executor (never its fallback to dbt): the models it ran and
    its failure lines."""
    try:
        done = build(Dbt(warehouse, lake))
    except BuildFailed as failed:
        assert str(failed).startswith("build failed ("), "dbt built, not obs's executor"
        return -1, sorted(failed.failures)
    assert done.engine == "obs", "obs build fell back to dbt: the parity would be dbt's own"
    return done.models, []


def _row_counts(warehouse: Path, tables: list[str]) -> dict[str, int]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return {t: con.execute(f'select count(*) from "{t}"').fetchone()[0] for t in tables}
    finally:
        con.close()


def test_executor_builds_what_dbt_builds(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    with_dbt, with_obs = tmp_path / "dbt" / "obs.duckdb", tmp_path / "obs" / "obs.duckdb"
    base = ["--lake", lake, "--warehouse", with_obs]
    grown_run = land_first(tmp_path, base)

    # ---------- cold
    assert _dbt_build(lake, with_dbt) == []
    ran, failures = _obs_build(lake, with_obs)
    assert failures == [] and ran > 60
    assert differences(with_dbt, with_obs, within(TOLERANCE)) == {}

    # ---------- the run goes on: a grown dump, a new iteration, a new run,
    # a grown and a new tracker history, more monitor steps, an agent's step
    land_more(grown_run)

    # ---------- incremental: dbt by its own rule, obs by its exact one
    assert _dbt_build(lake, with_dbt) == []
    ran, failures = _obs_build(lake, with_obs)
    assert failures == [] and ran > 0
    assert differences(with_dbt, with_obs, within(TOLERANCE)) == {}
    counted = _row_counts(with_obs, ["fct_prompt_iteration", "fct_metric_history", "dim_runs"])
    assert counted["fct_prompt_iteration"] > 0 and counted["dim_runs"] >= 4

    # ---------- the same broken rules, the same lines
    bad = tmp_path / "bad"
    write_demo_run(bad, DemoSpec(prompts=3, iterations=1, samples_per_prompt=2, seed=9))
    dump = bad / "0.jsonl"
    rows = dump.read_text().splitlines()
    import json

    broken = []
    for i, line in enumerate(rows):
        record = json.loads(line)
        if i < 2:
            record["inst_strict_acc"] = 3.0
        broken.append(json.dumps(record))
    dump.write_text("\n".join(broken) + "\n")
    run_cli([*base, "ingest", "rollouts", bad, "--run", "bad", "-q"])
    dbt_failures = _dbt_build(lake, with_dbt)
    ran, obs_failures = _obs_build(lake, with_obs)
    assert ran == -1
    assert dbt_failures and obs_failures == dbt_failures
    assert any("outside [0, 1]" in line for line in obs_failures)


def test_a_python_model_of_your_own_is_built_by_dbt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The project has no Python model; obs's executor runs SQL only. A fork that adds
    one (OBS_PROJECT) still builds: dbt runs that build, the Python model included."""
    import shutil

    from obs.runner.dbt import project_dir

    fork = tmp_path / "fork"
    fork.mkdir()
    for name in ("dbt_project.yml", "profiles.yml"):
        shutil.copy(project_dir() / name, fork / name)
    for name in PROJECT_PARTS:
        shutil.copytree(project_dir() / name, fork / name)
    (fork / "models" / "marts" / "my_prompt_counts.py").write_text(
        "def model(dbt, session):\n"
        "    dbt.config(materialized='table')\n"
        "    return dbt.ref('fct_prompt_iteration').aggregate(\n"
        "        'iteration, count(*) as prompts', 'iteration')\n"
    )
    monkeypatch.setenv("OBS_PROJECT", str(fork))
    dumps = tmp_path / "dumps"
    write_demo_run(dumps, DemoSpec(prompts=6, iterations=2, samples_per_prompt=2, seed=3))
    lake, warehouse = tmp_path / "lake", tmp_path / "obs.duckdb"
    run_cli(["--lake", lake, "--warehouse", warehouse, "ingest", "rollouts", dumps, "--run", "p"])
    done = build(Dbt(warehouse, lake))
    assert done.engine == "dbt"
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        counts = con.execute("select * from my_prompt_counts order by 1").fetchall()
    finally:
        con.close()
    assert counts == [(0, 6), (1, 6)]


def test_a_copy_of_the_project_reads_its_own_seeds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two copies of the project on one machine (two checkouts, a fork): the plan of the
    second copy, compiled after the first one's, reads the second copy's seed files, and
    builds once the first copy is gone (dbt keeps an unchanged file's node as another
    copy's partial parse recorded it, that copy's folder included)."""
    import shutil

    from obs.runner import engine
    from obs.runner.dbt import project_dir

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    # no plan kept in memory by an earlier test: the copies' plan is compiled here
    monkeypatch.setattr(engine, "_kept", {})
    copies = {}
    for name in ("first", "second"):
        copy = copies[name] = tmp_path / name
        copy.mkdir()
        for file in ("dbt_project.yml", "profiles.yml"):
            shutil.copy(project_dir() / file, copy / file)
        for folder in PROJECT_PARTS:  # the analysis of the executor's delete+insert too
            shutil.copytree(project_dir() / folder, copy / folder)
    dumps, lake = tmp_path / "dumps", tmp_path / "lake"
    write_demo_run(dumps, DemoSpec(prompts=6, iterations=2, samples_per_prompt=2, seed=3))
    run_cli(["--lake", lake, "--warehouse", tmp_path / "w0.duckdb", "ingest", "rollouts",
             dumps, "--run", "p", "-q"])  # fmt: skip
    monkeypatch.setenv("OBS_PROJECT", str(copies["first"]))
    assert build(Dbt(tmp_path / "first.duckdb", lake)).engine == "obs"
    shutil.rmtree(copies["first"])
    monkeypatch.setenv("OBS_PROJECT", str(copies["second"]))
    assert build(Dbt(tmp_path / "second.duckdb", lake)).engine == "obs"
    # one plan for both: its fingerprint is the files' contents, its seed paths are
    # relative to the project, resolved against the copy that builds
    plans = list((tmp_path / "cache" / "obs" / "plan").glob("*.json"))
    assert len(plans) == 1
    text = plans[0].read_text()
    assert str(copies["first"]) not in text and str(copies["second"]) not in text
    aliases = (copies["second"] / "seeds" / "metric_aliases.csv").read_text().splitlines()
    con = duckdb.connect(str(tmp_path / "second.duckdb"), read_only=True)
    try:
        assert con.execute("select count(*) from metric_aliases").fetchone() == (len(aliases) - 1,)
    finally:
        con.close()
