"""The first `obs build` after `make install` does not compile the project.

`make install` compiles the plan obs's executor runs into the per-user cache
(`obs build --compile-only`), so the first build finds it there, as every
later build does, instead of spending the compile (dbt's full parse of the
project, about 10 s) on the user's first build.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from obs.demo.rollouts import DemoSpec, write_demo_run
from obs.runner import engine
from obs.runner import plan as plans

from tests.conftest import run_cli

pytestmark = pytest.mark.integration

MAKEFILE = Path(__file__).resolve().parents[2] / "Makefile"
COMPILE_STEP = "$(BIN)/obs build --compile-only"


def _install_recipe() -> list[str]:
    """The commands of the Makefile's install stamp, in order."""
    text = MAKEFILE.read_text()
    found = re.search(r"^\$\(STAMP\):.*\n((?:\t.*\n|#.*\n|\s*\n)+)", text, re.MULTILINE)
    assert found, "no $(STAMP) rule in the Makefile"
    return [line.strip() for line in found.group(1).splitlines() if line.startswith("\t")]


def test_make_install_compiles_the_plan_after_installing_obs() -> None:
    recipe = _install_recipe()
    assert COMPILE_STEP in recipe
    installs = max(i for i, line in enumerate(recipe) if "pip install" in line)
    assert installs < recipe.index(COMPILE_STEP) < recipe.index("touch $(STAMP)")


def test_the_first_build_after_the_install_step_compiles_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the cache as a fresh install has it: empty
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    dumps, lake = tmp_path / "dumps", tmp_path / "lake"
    write_demo_run(dumps, DemoSpec(prompts=6, iterations=3, samples_per_prompt=2, seed=3))
    run_cli(["--lake", lake, "--warehouse", tmp_path / "w0.duckdb", "ingest", "rollouts", dumps,
             "--run", "p", "-q"])  # fmt: skip
    # the install step, with nothing kept in memory (an earlier test's plan) before it
    # or after it (its own process)
    monkeypatch.setattr(engine, "_kept", {})
    compiled = run_cli(["build", "--compile-only"])
    assert "compiling the project for obs's executor" in compiled.stderr
    monkeypatch.setattr(engine, "_kept", {})

    def no_compile(*args: object, **kwargs: object) -> plans.CompiledPlan:
        raise AssertionError("the first build compiled the plan")

    monkeypatch.setattr(plans, "compile_plan", no_compile)
    built = run_cli(["--lake", lake, "--warehouse", tmp_path / "w1.duckdb", "build"])
    assert "compiling the project" not in built.stderr
    assert re.search(r"built \d+ models, \d+ data tests passed", built.stderr), built.stderr
