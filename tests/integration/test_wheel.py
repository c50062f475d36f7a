"""obs as a package: a wheel installed outside the checkout runs `obs demo` from an empty folder,
and its first build finds the plan obs's executor runs in the wheel instead of compiling it.

The wheel is built from this checkout and installed with ``--no-deps`` into a
fresh virtual environment; the dependencies are borrowed from the
development environment through a ``.pth`` line (no download: the point is
what the wheel itself carries: the dbt project, the report templates and
queries, the command). The package folder is made read-only first: a run
must write nothing into it.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def _run(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def _read_only(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        mode = path.stat().st_mode
        path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


# What a build of the package never reads (and an earlier build leaves behind):
# top-level folders of the checkout, and caches anywhere.
LEFT_OUT = {".git", ".venv", "build", "lake", "warehouse", "demo_data", "reports_out"}


def _left_out(folder: str, names: list[str]) -> set[str]:
    top = LEFT_OUT if Path(folder) == ROOT else set()
    return {n for n in names if n in top or n == "__pycache__" or n.endswith(".egg-info")}


def test_a_wheel_installed_outside_the_checkout_runs_the_demo(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    # From a copy without the checkout's build/ folder: setuptools builds in
    # the source tree and would ship files an earlier build left there.
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=_left_out)
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(dist), str(source)],
        cwd=tmp_path,
    )  # fmt: skip
    [wheel] = dist.glob("obs_warehouse-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for shipped in (
        "obs/project/dbt_project.yml",
        "obs/project/profiles.yml",
        "obs/project/models/marts/agent/fct_eval_steps.sql",
        "obs/project/macros/incremental.sql",
        "obs/project/seeds/metric_aliases.csv",
        "obs/project/data-tests/assert_marts_cover_lake.sql",
        "obs/reports/templates/dashboard.html",
        "obs/reports/queries/header.sql",
        "obs/runner/dbt.py",
        # compiled when the wheel was built (setup.py)
        "obs/runner/compiled-plan.json",
        "obs/serve/app.py",
        "obs/reports/queries/home_runs.sql",
        "obs/serve/templates/home.html",
        "obs/serve/static/live.js",
    ):
        assert shipped in names, shipped
    assert not [
        n
        for n in names
        if n.startswith(("obs/project/tests/", "obs/project/ingest/", "obs/project/runner/"))
        or n == "obs/project/setup.py"
    ]
    # kaleido (PNG export only) is the `png` extra, not a dependency of every install
    [metadata] = [n for n in names if n.endswith(".dist-info/METADATA")]
    kaleido = [
        line
        for line in zipfile.ZipFile(wheel).read(metadata).decode().splitlines()
        if line.startswith("Requires-Dist: kaleido")
    ]
    assert 'Requires-Dist: kaleido>=1.0; extra == "png"' in kaleido
    assert all("; extra == " in line for line in kaleido), kaleido

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path)  # pip from ensurepip
    python = venv / "bin" / "python"
    _run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], tmp_path
    )
    purelib = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    )  # fmt: skip
    # the dependencies: the development environment's, after the wheel on the path
    (purelib / "zz_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _read_only(purelib / "obs")
    before = _listing(purelib / "obs")
    try:
        _first_build(tmp_path, python, venv)
        _demo(tmp_path, python, venv, purelib)
        # nothing written into the package (a write would also have failed: it is read-only)
        assert _listing(purelib / "obs") == before
    finally:
        for path in [purelib / "obs", *(purelib / "obs").rglob("*")]:
            path.chmod(path.stat().st_mode | stat.S_IWUSR)


def _listing(folder: Path) -> dict[str, int]:
    return {
        str(p.relative_to(folder)): p.stat().st_mtime_ns
        for p in folder.rglob("*")
        if "__pycache__" not in p.parts
    }


def _first_build(tmp_path: Path, python: Path, venv: Path) -> None:
    """The first build after the install runs the shipped plan: nothing compiled, nothing
    written into the (empty) per-user cache; then a later cold build (a new warehouse)."""
    work = tmp_path / "first"
    work.mkdir()
    cache = tmp_path / "cache"
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    for name in ("OBS_WAREHOUSE", "OBS_LAKE", "OBS_PROJECT"):
        env.pop(name, None)
    write = (
        "import sys; from pathlib import Path; "
        "from obs.demo.rollouts import DemoSpec, write_demo_run; "
        "write_demo_run(Path(sys.argv[1]), DemoSpec(prompts=12, iterations=3, seed=3))"
    )
    _run([str(python), "-c", write, "dumps"], cwd=work, env=env)
    obs = str(venv / "bin" / "obs")
    _run([obs, "--lake", "lake", "--warehouse", "w0.duckdb", "ingest", "rollouts", "dumps",
          "--run", "p", "-q"], cwd=work, env=env)  # fmt: skip
    seconds = []
    for warehouse in ("first.duckdb", "later.duckdb"):
        started = time.perf_counter()
        out = _run([obs, "--lake", "lake", "--warehouse", warehouse, "build"], cwd=work, env=env)
        seconds.append(time.perf_counter() - started)
        assert "compiling the project" not in out, out
        assert re.search(r"built \d+ models, \d+ data tests passed", out), out
        # the plan was the package's: none compiled into the cache
        assert not list(cache.glob("obs/plan/*.json"))
    print(f"first build after the install {seconds[0]:.1f} s, later cold build {seconds[1]:.1f} s")


def _demo(tmp_path: Path, python: Path, venv: Path, purelib: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("OBS_WAREHOUSE", None)
    env.pop("OBS_LAKE", None)
    located = _run(
        [python, "-c", "import obs.runner.dbt as d; print(d.project_dir())"], cwd=empty, env=env
    )
    assert located.strip() == str(purelib / "obs" / "project")
    out = _run(
        [str(venv / "bin" / "obs"), "demo", "--prompts", "12", "--iterations", "3", "-q"],
        cwd=empty,
        env=env,
    )
    assert "dashboard: reports_out/dashboard.html" in out
    for made in (
        "warehouse/obs.duckdb",
        "reports_out/dashboard.html",
        "reports_out/agent_demo-agent.html",
        "lake/rollouts",
    ):
        assert (empty / made).exists(), made
    # the build's state sits beside the warehouse, never in the package; the
    # plan obs's executor runs was the package's (none compiled into the user's cache)
    assert (empty / "warehouse" / "obs.duckdb.dbt" / "build-state.json").is_file()
    assert not list((tmp_path / "cache").glob("obs/plan/*.json"))
