"""Where obs's executor finds its plan: the per-user cache, else the one the wheel ships.

A plan depends on the project's files, not on the folder they sit in: a plan
compiled when the wheel is built (in its build folder) is the installed
package's, and names its seed files relative to the project (no dbt here).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from obs.runner import build_state
from obs.runner import plan as plans
from obs.runner.plan import CompiledPlan, Node

ROOT = Path(__file__).resolve().parents[2]


def _copy_project(destination: Path) -> Path:
    for name in build_state.PROJECT_FILES:
        destination.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, destination / name)
    for part in build_state.PROJECT_PARTS:
        if (ROOT / part).is_dir():
            shutil.copytree(ROOT / part, destination / part)
    return destination


def _seed_plan(fingerprint: str) -> CompiledPlan:
    seed = Node(
        unique_id="seed.obs.metric_aliases",
        name="metric_aliases",
        kind="seed",
        materialized="seed",
        relation='"db"."main"."metric_aliases"',
        parents=[],
        sources=[],
        sql="",
        seed_path="seeds/metric_aliases.csv",
    )
    return CompiledPlan(fingerprint, {seed.unique_id: seed}, [])


def test_plan_fingerprint_is_the_same_for_a_copy_of_the_project_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OBS_PROJECT", str(ROOT))
    here = plans.plan_fingerprint([])
    copy = _copy_project(tmp_path / "elsewhere" / "project")
    # bytecode an install compiles beside the project's files changes nothing
    (copy / "models" / "__pycache__").mkdir()
    (copy / "models" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    monkeypatch.setenv("OBS_PROJECT", str(copy))
    assert plans.plan_fingerprint([]) == here
    assert plans.plan_fingerprint(["--vars", "{pass_threshold: 0.7}"]) != here
    (copy / "models" / "marts" / "runs" / "fct_new.sql").write_text("select 1 as x\n")
    assert plans.plan_fingerprint([]) != here


def test_plan_fingerprint_names_the_dbt_releases(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OBS_PROJECT", str(ROOT))
    now = plans.plan_fingerprint([])
    real = plans.importlib.metadata.version
    monkeypatch.setattr(
        plans.importlib.metadata,
        "version",
        lambda name: "1.11.999" if name == "dbt-core" else real(name),
    )
    assert plans.plan_fingerprint([]) != now


def test_plan_load_finds_the_shipped_plan_when_the_cache_has_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    shipped = tmp_path / "package" / "compiled-plan.json"
    shipped.parent.mkdir()
    monkeypatch.setattr(plans, "COMPILED_PLAN", shipped)
    assert plans.load("f1") is None
    body = plans._body(_seed_plan("f1"))
    shipped.write_text(json.dumps({"format": plans.PLAN_FORMAT, "fingerprint": "f1", **body}))
    found = plans.load("f1")
    assert found is not None
    assert found.nodes["seed.obs.metric_aliases"].seed_path == "seeds/metric_aliases.csv"
    # read in place: nothing copied into the cache
    assert not (tmp_path / "cache").exists()
    # another project version (or format) is not the shipped plan's
    assert plans.load("f2") is None
    shipped.write_text(json.dumps({"format": plans.PLAN_FORMAT - 1, "fingerprint": "f1", **body}))
    assert plans.load("f1") is None


def test_plan_load_prefers_the_cache_to_the_shipped_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    shipped = tmp_path / "compiled-plan.json"
    shipped.write_text("{not json")
    monkeypatch.setattr(plans, "COMPILED_PLAN", shipped)
    plans.save(_seed_plan("f1"))
    found = plans.load("f1")
    assert found is not None and list(found.nodes) == ["seed.obs.metric_aliases"]
