"""The wheel ships the plan obs's executor runs, compiled when the wheel is built.

Everything else about the package is in pyproject.toml. ``build_py`` copies the
packages and the dbt project into the build folder, then compiles the project
found there (``obs/project``, the files the wheel carries) into
``obs/runner/compiled-plan.json`` (``obs.runner.plan.ship``): about 10 s, in a
child process that imports obs from the build folder. The first ``obs build``
after a ``pip install`` of the wheel then finds its plan, instead of spending the
compile on the user's first build.

The compile needs obs's dependencies (dbt) where the wheel is built: ``make
wheel`` builds in the project's environment (``--no-build-isolation``). A build
that cannot import dbt (pip's isolated build environment holds setuptools only)
ships no plan and says so; that wheel's first build compiles it, as before. An
editable install (``pip install -e``) ships nothing: ``make install`` compiles
the plan into the per-user cache.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PLAN_FILE = ("obs", "runner", "compiled-plan.json")
SHIP = "import sys, pathlib; from obs.runner.plan import ship; ship(pathlib.Path(sys.argv[1]))"


class BuildPyWithPlan(build_py):
    def find_package_modules(self, package: str, package_dir: str) -> list[tuple[str, str, str]]:
        # obs.project is the checkout's root folder: this file is no module of it
        found = super().find_package_modules(package, package_dir)
        return [m for m in found if (m[0], m[1]) != ("obs.project", "setup")]

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        build_lib = Path(self.build_lib).resolve()
        target = build_lib.joinpath(*PLAN_FILE)
        probe = subprocess.run(
            [sys.executable, "-c", "import dbt.cli.main, dbt.adapters.duckdb"],
            capture_output=True,
            check=False,
        )
        if probe.returncode != 0:
            self.warn(
                "dbt cannot be imported where the wheel is built: the wheel ships no compiled "
                "plan and its first `obs build` compiles it (build with `make wheel`)"
            )
            return
        with tempfile.TemporaryDirectory(prefix="obs-wheel-plan-") as scratch:
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            env.update(
                PYTHONPATH=str(build_lib),
                # the project as the wheel carries it (the fingerprint is its files')
                OBS_PROJECT=str(build_lib / "obs" / "project"),
                # no bytecode into the build folder (the wheel would ship it), no
                # plan or parse into the builder's own cache
                PYTHONDONTWRITEBYTECODE="1",
                XDG_CACHE_HOME=scratch,
            )
            subprocess.run(
                [sys.executable, "-c", SHIP, str(target)], cwd=build_lib, env=env, check=True
            )
        self.announce(f"compiled the executor's plan into {target}", level=2)


setup(cmdclass={"build_py": BuildPyWithPlan})
