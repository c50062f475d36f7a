"""``obs build`` as a library call: build what changed in the lake since the last build.

    from pathlib import Path
    from obs.runner.build import build_warehouse

    ran = build_warehouse(Path("warehouse/obs.duckdb"), Path("lake"))  # models run, 0: none

A failed model or data test raises ``BuildFailed`` (a ``DbtError``) whose
``failures`` hold one line per broken rule; nothing here prints.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from obs.core.lake_layout import run_folder
from obs.core.places import empty_lake
from obs.runner import build_state
from obs.runner.claim import claiming
from obs.runner.dbt import Dbt, project_dir
from obs.runner.errors import DbtError

# Tables of the lake that the dbt project declares as sources.
SOURCES_YML = "models/staging/lake/_lake__sources.yml"


class BuildFailed(DbtError):
    """dbt ran, and a model or a data test failed: ``failures`` says which, a line each."""

    def __init__(self, message: str, failures: Sequence[str]) -> None:
        super().__init__(message)
        self.failures = list(failures)


def lake_sources() -> tuple[str, ...]:
    import yaml

    declared = yaml.safe_load((project_dir() / SOURCES_YML).read_text())
    return tuple(
        table["name"]
        for source in declared.get("sources", [])
        if source.get("name") == "lake"
        for table in source.get("tables", [])
    )


def check_lake(lake: Path) -> None:
    """Refuse a lake with nothing landed, or one an older obs wrote, in one line."""
    if not any((lake / table).is_dir() for table in ("rollouts", "metrics", "runs")):
        raise DbtError(
            empty_lake(lake, "run `obs ingest rollouts PATH` or `obs ingest metrics PATH` first")
        )
    old = next((lake / "rollouts").glob(f"{run_folder('*')}/*.parquet"), None)
    if old is not None:
        raise DbtError(
            f"{old}: this lake was written by an older obs (parts directly under run_id=); "
            "ingest the source files again into a new lake (--lake)"
        )


def build_args(dbt_args: Sequence[str], unit_tests: bool) -> list[str]:
    """dbt's arguments: no JSON artefacts, no unit tests unless asked; the user's last.

    With a selection, a data test runs only when every model it reads is
    selected (dbt's "buildable" indirect selection, unless the user chose
    another): a test of two marts must not run beside one of them alone.
    """
    args = ["--no-write-json"]
    if not unit_tests:
        args += ["--exclude-resource-type", "unit_test"]
    chosen = any(a.split("=", 1)[0] == "--indirect-selection" for a in dbt_args)
    if build_state.selects(dbt_args) and not chosen:
        args += ["--indirect-selection", "buildable"]
    return [*args, *dbt_args]


@dataclass(frozen=True)
class BuildSummary:
    """What one build did."""

    models: int  # models run; 0: the warehouse was up to date
    tests_passed: int = 0
    tests_warned: int = 0
    engine: str = "obs"  # "obs": obs's executor; "dbt": dbt build
    seconds: float = 0.0
    unit_tests_passed: int = 0  # with unit_tests (dbt builds them)


def build(
    dbt: Dbt, dbt_args: Sequence[str] = (), unit_tests: bool = False, dbt_log: bool = True
) -> BuildSummary:
    """One build: obs's executor runs the compiled plan; dbt builds what it does not run.

    dbt builds when asked for its unit tests, given a selection or an
    argument the executor does not take, or when the project holds a node
    the executor does not run (``obs.runner.plan``), or with OBS_ENGINE=dbt,
    and on any target other than DuckDB (the executor runs DuckDB only).
    ``dbt_log``: dbt's own log on stdout when it builds (else its errors only).
    """
    if dbt.target != "duckdb":
        return _build(dbt, dbt_args, unit_tests, dbt_log)
    # Readers that honour the claim (obs serve's pages) wait for this build, so a
    # steady stream of them cannot keep it from the file (obs.runner.claim).
    with claiming(dbt.built_warehouse):
        return _build(dbt, dbt_args, unit_tests, dbt_log)


def _build(dbt: Dbt, dbt_args: Sequence[str], unit_tests: bool, dbt_log: bool) -> BuildSummary:
    started = time.perf_counter()
    if not unit_tests and dbt.target == "duckdb":
        from obs.runner.engine import build_with_plan

        outcome = build_with_plan(dbt.warehouse, dbt.lake, dbt_args, build_args(dbt_args, False))
        if outcome is not None:
            if not outcome.success:
                raise BuildFailed(
                    f"build failed ({outcome.failed} failed, {outcome.passed} passed, "
                    f"{outcome.skipped} skipped); what broke is listed above",
                    outcome.failures,
                )
            return BuildSummary(
                outcome.models_run if outcome.built else 0,
                outcome.passed,
                outcome.warned,
                "obs",
                time.perf_counter() - started,
            )
    if not dbt_log and not {"-q", "--quiet"} & set(dbt_args):
        dbt_args = ["--quiet", *dbt_args]  # dbt's errors only
    return _dbt_build(dbt, dbt_args, unit_tests, started)


def _dbt_build(dbt: Dbt, dbt_args: Sequence[str], unit_tests: bool, started: float) -> BuildSummary:
    """``dbt build``: decide what to rebuild, run dbt, record."""
    warehouse, lake = dbt.built_warehouse, dbt.lake
    args = build_args(dbt_args, unit_tests)
    if not any(a.split("=", 1)[0] == "--log-level-file" for a in dbt_args):
        # dbt's debug log costs time on every node; keep its warnings and errors.
        args += ["--log-level-file", "warn"]
    custom = build_state.selects(dbt_args)
    rebuild = build_state.what_to_rebuild(warehouse, lake, args, lake_sources())
    # obs watch keeps dbt's parsed project: parse again when the project changed.
    dbt.parsed_under(build_state.project_fingerprint([]))
    if build_state.full_refresh(dbt_args):
        rebuild = build_state.Rebuild(True, rebuild.tables, rebuild.marks, rebuild.fingerprint)
    if rebuild.nothing and not custom:
        return BuildSummary(0, engine="dbt")
    selection = [] if custom else rebuild.select_args()
    if rebuild.full and not custom and not build_state.full_refresh(dbt_args):
        # New project files, vars or warehouse: incremental rows built under
        # the old ones would stay as they were, so every model is rebuilt.
        selection.append("--full-refresh")
    result = dbt.invoke("build", [*selection, *args])
    if custom:
        # The user's own selection, perhaps under other vars: the next plain
        # build rebuilds from scratch rather than trust what this one left.
        build_state.forget(warehouse)
    else:
        build_state.record(warehouse, rebuild, succeeded=result.success)
    if not result.success:
        raise BuildFailed(
            f"dbt build failed ({result.failed} failed, {result.passed} passed); "
            "what broke is listed above, dbt's log above that",
            result.failures,
        )
    return BuildSummary(
        max(result.models_run, 1),
        result.tests_passed,
        engine="dbt",
        seconds=time.perf_counter() - started,
        unit_tests_passed=result.unit_tests_passed,
    )


def build_warehouse(
    warehouse: Path,
    lake: Path,
    dbt_args: Sequence[str] = (),
    unit_tests: bool = False,
    target: str = "duckdb",
) -> int:
    """``obs build`` from Python: check the lake, then build what changed since the last
    build (everything the first time). Returns how many models ran (0: up to date).
    ``target="spark"``: the same project on Spark, beside the warehouse
    (``obs.runner.spark``)."""
    from obs.runner.spark import check_target

    check_target(target)
    check_lake(lake)
    return build(Dbt(warehouse, lake, target=target), dbt_args, unit_tests).models
