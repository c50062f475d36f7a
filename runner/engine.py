"""One ``obs build`` on obs's executor: plan, select, run, record.

``build_with_plan`` decides what to build from the record of the last build
(``obs.runner.build_state``): everything (a new warehouse, changed project
files or vars, another program wrote the warehouse, ``--full-refresh``), or
the models whose upstream lake tables gained or lost parts since the listing
their last successful build started from, the views whose SQL changed, and
the data tests of what was built. It returns None when the build needs dbt
itself (the caller falls back to ``dbt build``).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from obs.runner import build_state
from obs.runner import plan as plans
from obs.runner.dbt import LOCK_WAIT_SECONDS, state_dir, wait_for_warehouse
from obs.runner.errors import DbtError
from obs.runner.executor import (
    Changes,
    Executor,
    Listing,
    Outcome,
    changes_between,
    first_line,
    list_lake,
    listing_from_record,
    listing_record,
)

# A plan kept in this process (obs watch builds every round with it).
_kept: dict[str, plans.CompiledPlan] = {}


@dataclass
class Progress:
    """A live line on stderr while a build runs (a terminal only, not with --quiet)."""

    enabled: bool
    total: int = 0
    done: int = 0

    def step(self, name: str) -> None:
        self.done += 1
        if self.enabled:
            sys.stderr.write(f"\r\033[Kbuilding {name} ({self.done}/{self.total})")
            sys.stderr.flush()

    def close(self) -> None:
        if self.enabled and self.done:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def get_plan(args: Sequence[str], quiet: bool) -> plans.CompiledPlan | None:
    """The compiled plan for these arguments (cached), or None when dbt must build."""
    fingerprint = plans.plan_fingerprint(args)
    if fingerprint in _kept:
        return _kept[fingerprint]
    try:
        plan = plans.load(fingerprint)
        if plan is None:
            if not quiet:
                sys.stderr.write(
                    "compiling the project for obs's executor (once per project version)\n"
                )
            from obs.runner.dbt import path_free_profile

            path_free_profile()
            try:
                plan = plans.compile_plan(args, fingerprint, not quiet and sys.stderr.isatty())
            except plans.PlanNotCompiled:
                raise
            except plans.PlanUnsupported as unsupported:
                plans.save_unsupported(fingerprint, str(unsupported))
                raise
            plans.save(plan)
    except plans.PlanUnsupported as unsupported:
        if not quiet:
            sys.stderr.write(f"building with dbt: the executor does not run {unsupported}\n")
        return None
    _kept.clear()
    _kept[fingerprint] = plan
    return plan


def prepare(dbt_args: Sequence[str] = (), quiet: bool = False) -> bool:
    """Compile (or find in the cache) the plan for these arguments; False when dbt must build."""
    args = plans.plan_args(dbt_args)
    return args is not None and get_plan(args, quiet) is not None


def connect(warehouse: Path) -> Any:
    """A writable connection to the warehouse, waiting briefly for readers to let go."""
    import duckdb

    warehouse.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    while True:
        try:
            return duckdb.connect(str(warehouse))
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower():
                raise DbtError(f"{warehouse}: {first_line(exc)}") from exc
            # held by a reader: wait for it (one line naming the holder at the deadline)
            wait_for_warehouse(warehouse, max(0.0, deadline - time.monotonic()))


def _state(warehouse: Path) -> dict[str, Any]:
    try:
        found = json.loads((state_dir(warehouse) / build_state.STATE_FILE).read_text())
    except (FileNotFoundError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def build_with_plan(
    warehouse: Path,
    lake: Path,
    dbt_args: Sequence[str],
    state_args: Sequence[str],
    quiet: bool = False,
) -> Outcome | None:
    """Build with obs's executor; None when the arguments or the project need dbt.

    ``state_args`` are the arguments the build's record is fingerprinted
    under: those ``dbt build`` would get, so either engine's record is the
    other's.
    """
    args = plans.plan_args(dbt_args)
    if args is None or os.environ.get("OBS_ENGINE") == "dbt":
        return None
    quiet = quiet or any(a in {"--quiet", "-q"} for a in dbt_args)
    decided = build_state.what_to_rebuild(warehouse, lake, state_args, _lake_sources())
    refresh = build_state.full_refresh(dbt_args)
    recorded = _state(warehouse)
    executor_state = recorded.get("engine") == "obs" and not decided.full
    if decided.nothing and not refresh and executor_state and not recorded.get("pending"):
        return Outcome()
    plan = get_plan(args, quiet)
    if plan is None:
        return None
    full = refresh or not executor_state
    listing = list_lake(lake, plan.lake_tables)
    listings = {k: listing_from_record(v) for k, v in recorded.get("listings", {}).items()}
    consumed: dict[str, str] = dict(recorded.get("consumed", {})) if not full else {}
    views: dict[str, str] = dict(recorded.get("views", {})) if not full else {}
    pending = set(recorded.get("pending", [])) if not full else set()

    def changes(uid: str, tables: Iterable[str] | None = None) -> Changes:
        before = listings.get(consumed.get(uid, ""))
        chosen = plan.lake_tables_of(uid) if tables is None else tables
        return changes_between(listing, before, chosen)

    outcome = Outcome()
    started = time.perf_counter()
    con = connect(warehouse)
    outcome.seconds["(connect)"] = time.perf_counter() - started
    try:
        executor = Executor(plan, con, lake, listing)
        chosen = _select(plan, executor, full, consumed, views, pending, changes)
        tests = [
            n
            for n in plan.nodes.values()
            if n.kind == "test"
            and (full or n.unique_id in pending or chosen.intersection(n.parents))
        ]
        progress = Progress(not quiet and sys.stderr.isatty(), len(chosen) + bool(tests))
        broken = _run_models(plan, executor, chosen, full, changes, outcome, progress)
        runnable = [t for t in tests if not broken.intersection(t.parents)]
        outcome.skipped += len(tests) - len(runnable)
        if runnable:
            progress.step(f"{len(runnable)} data tests")
            began = time.perf_counter()
            executor.run_tests(runnable, outcome)
            outcome.seconds["data tests"] = time.perf_counter() - began
        progress.close()
        failed_tests = {
            t.unique_id for t in tests if t not in runnable or _failed(t, outcome.failures)
        }
        began = time.perf_counter()
        con.execute("checkpoint")
        outcome.seconds["(checkpoint)"] = time.perf_counter() - began
    finally:
        began = time.perf_counter()
        con.close()
        outcome.seconds["(close)"] = time.perf_counter() - began
    outcome.seconds["total"] = time.perf_counter() - started
    _record(
        warehouse,
        decided,
        listing,
        listings,
        consumed,
        views,
        outcome,
        failed_tests | (pending - {t.unique_id for t in tests}),
        plan.nodes,
    )
    return outcome


def build_threads() -> int:
    """Models run at once (OBS_BUILD_THREADS, default 2): DuckDB spreads one query over
    the cores, but a live build is many small queries that leave a core idle."""
    try:
        return max(1, int(os.environ.get("OBS_BUILD_THREADS", "2")))
    except ValueError:
        return 2


def _run_models(
    plan: plans.CompiledPlan,
    executor: Executor,
    chosen: set[str],
    full: bool,
    changes: Callable[..., Changes],
    outcome: Outcome,
    progress: Progress,
) -> set[str]:
    """Run the chosen models and seeds, each once its parents are built, on up to
    ``build_threads()`` connections; the ones that failed or were skipped."""
    from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

    order = [uid for uid in plan.nodes if uid in chosen]
    waiting = awaited(plan, chosen)
    broken: set[str] = set()
    done: set[str] = set()
    lock = threading.Lock()
    local = threading.local()
    cursors: list[Any] = []

    def own_executor() -> Executor:
        if not hasattr(local, "executor"):
            cursor = executor.con.cursor()
            with lock:
                cursors.append(cursor)
            local.executor = executor.with_connection(cursor)
        return local.executor

    def run(uid: str) -> tuple[str | None, float]:
        mine = own_executor()
        began = time.perf_counter()
        mine.con.execute("begin transaction")
        try:
            view_hash = mine.run_model(plan.nodes[uid], full, changes)
            mine.con.execute("commit")
        except BaseException:
            with contextlib.suppress(Exception):
                mine.con.execute("rollback")
            raise
        return view_hash, time.perf_counter() - began

    running: dict[Future[tuple[str | None, float]], str] = {}
    with ThreadPoolExecutor(max_workers=build_threads(), thread_name_prefix="obs-build") as pool:
        try:
            while len(done) + len(broken) < len(order):
                for uid in order:
                    if uid in done or uid in broken or uid in running.values():
                        continue
                    if waiting[uid] & broken:
                        broken.add(uid)
                        outcome.skipped += 1
                    elif waiting[uid] <= done:
                        progress.step(plan.nodes[uid].name)
                        running[pool.submit(run, uid)] = uid
                if not running:
                    if len(done) + len(broken) < len(order):
                        raise DbtError("obs build: the plan's models wait on each other")
                    break
                finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
                for future in finished:
                    uid = running.pop(future)
                    node = plan.nodes[uid]
                    try:
                        view_hash, seconds = future.result()
                    except Exception as exc:
                        broken.add(uid)
                        outcome.failed += 1
                        outcome.failures.append(f"{node.name}: {first_line(exc)}")
                        continue
                    done.add(uid)
                    outcome.seconds[node.name] = seconds
                    outcome.built.add(uid)
                    outcome.models_run += node.kind == "model"
                    if view_hash is not None:
                        outcome.views[uid] = view_hash
        finally:
            for future in running:
                future.cancel()
    for cursor in cursors:
        with contextlib.suppress(Exception):
            cursor.close()
    return broken


def awaited(plan: plans.CompiledPlan, chosen: set[str]) -> dict[str, set[str]]:
    """Per chosen node, the chosen nodes it must wait for: its chosen parents and,
    through a parent this build does not run (a view whose SQL did not change),
    that parent's own, and so on: a model reading a view of a table being rebuilt
    waits for the table."""
    through: dict[str, set[str]] = {}

    def upstream(uid: str) -> set[str]:
        if uid not in through:
            found: set[str] = set()
            for parent in plan.nodes[uid].parents:
                if parent in chosen:
                    found.add(parent)
                elif parent in plan.nodes:
                    found |= upstream(parent)
            through[uid] = found
        return through[uid]

    return {uid: upstream(uid) for uid in plan.nodes if uid in chosen}


def _failed(test: plans.Node, failures: list[str]) -> bool:
    return any(line.startswith(f"{test.name}: ") for line in failures)


def _select(
    plan: plans.CompiledPlan,
    executor: Executor,
    full: bool,
    consumed: dict[str, str],
    views: dict[str, str],
    pending: set[str],
    changes: Callable[..., Changes],
) -> set[str]:
    """The models and seeds this build runs."""
    if full:
        return {uid for uid, n in plan.nodes.items() if n.kind != "test"}
    chosen: set[str] = set()
    for uid, node in plan.nodes.items():
        if node.kind == "test":
            continue
        if not executor.exists(node) and node.materialized != "view":
            chosen.add(uid)
        elif node.materialized == "view":
            if views.get(uid) != executor.view_sql_hash(node, changes) or not executor.exists_view(
                node
            ):
                chosen.add(uid)
        elif uid not in consumed or changes(uid).runs or chosen.intersection(node.parents):
            chosen.add(uid)
    return chosen


def _record(
    warehouse: Path,
    decided: build_state.Rebuild,
    listing: Listing,
    listings: dict[str, Listing],
    consumed: dict[str, str],
    views: dict[str, str],
    outcome: Outcome,
    pending: set[str],
    nodes: dict[str, plans.Node] | None = None,
) -> None:
    """The build's record: what each model has read, the views' SQL, tests to run again."""
    names = {n.name for n in (nodes or {}).values()}
    key = f"{time.time_ns()}"
    listings[key] = listing
    for uid in outcome.built:
        consumed[uid] = key
    views.update(outcome.views)
    used = set(consumed.values())
    state = {
        "engine": "obs",
        "fingerprint": decided.fingerprint,
        # The lake marks as listed before the build: a build with nothing
        # new (the same marks) runs nothing, unless tests are pending.
        "marks": dict(decided.marks),
        "warehouse": build_state.warehouse_identity(warehouse),
        "listings": {k: listing_record(v) for k, v in listings.items() if k in used},
        "consumed": consumed,
        "views": views,
        "pending": sorted(pending),
        # What the build ran and for how long (models run two at a time, so
        # their seconds overlap): for `make bench` and anyone profiling.
        "last_build": {
            "nodes": {
                plan_node.name: [plan_node.kind, round(outcome.seconds.get(plan_node.name, 0), 4)]
                for plan_node in (nodes or {}).values()
                if plan_node.unique_id in outcome.built
            },
            "seconds": {k: round(v, 4) for k, v in outcome.seconds.items() if k not in names},
        },
    }
    path = state_dir(warehouse) / build_state.STATE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(state))
    os.replace(temporary, path)


def _lake_sources() -> tuple[str, ...]:
    from obs.runner.build import lake_sources

    return lake_sources()
