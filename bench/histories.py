"""Run histories in the benchmark: ``obs ingest metrics`` and the builds that follow it.

``--history-runs`` (default 20) W&B run exports of ``--history-steps`` (default
1,000) steps each are written with ``write_seed_export`` (noise 2.0; run
``hNN``, seed NN) into a folder, and one more run aside (not timed; the
generation's own seconds are shown beside the stages). Each timed step is a
process of its own measured by ``Bench.measure``:

history-ingest         ``obs ingest metrics FOLDER -q`` into a fresh lake.
history-warmup         ``obs build --compile-only``, so the build below finds
                       the compiled project (as parse-warmup does for the
                       rollout build).
history-build          ``obs build``: every model on the run histories (cold).
history-next           the run put aside appears in the folder: ``obs ingest
                       metrics FOLDER -q`` (history-next-ingest) + ``obs build``
                       (history-next-build), timed together: landing one run
                       into a warehouse that holds N.
history-again          ``obs build`` with nothing new.

Checks: after history-next, ``fct_metric_history`` holds exactly the points
the exports hold (every history row's numeric or boolean value under a key
other than ``_step`` and ``_timestamp``, nested objects flattened, one per
(step, key); pairs of the export's ``metrics`` view the history lacks; NaN
and Infinity counted) and ``dim_runs`` N + 1 runs. The slowest nodes of each
build are read from the build's record (``last_build`` in the warehouse's
build-state.json, copied beside the stage's log); the models downstream of
the lake's ``metrics`` and ``runs`` tables (in obs's compiled plan) are the
run-history nodes, whose seconds inside the rollout ``build`` (a lake with
no metrics) are reported beside that stage.
"""

from __future__ import annotations

import contextlib
import json
import math
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
from obs.demo.histories import write_seed_export

NOISE = 2.0
# Keys of a W&B history row that are no metric (the step, the wall time).
NOT_METRICS = ("_step", "_timestamp")
Command = Callable[..., list[str]]  # obs(lake, warehouse, *args) -> argv


def count_points(export: Path) -> tuple[int, int]:
    """(points, of which NaN or Infinity) an export holds, counted as ``obs ingest`` lands them."""
    data = json.loads(export.read_text())
    held: dict[tuple[int, str], float] = {}

    def add(step: int, key: str, value: Any) -> None:
        if isinstance(value, dict):
            if not isinstance(value.get("_type"), str):  # media, tables: no metric
                for sub, inner in value.items():
                    add(step, f"{key}.{sub}", inner)
        elif isinstance(value, bool | int | float):
            held[(step, key)] = float(value)

    for index, row in enumerate(data.get("history") or []):
        step = int(row.get("_step", index))
        for key, value in row.items():
            if key not in NOT_METRICS:
                add(step, key, value)
    for key, view in (data.get("metrics") or {}).items():
        for entry in view.get("values") or []:
            if (int(entry["_step"]), key) not in held:
                add(int(entry["_step"]), key, entry.get("value"))
    return len(held), sum(not math.isfinite(v) for v in held.values())


def node_seconds(state: Path) -> list[tuple[str, str, float]]:
    """(node, kind, seconds) of every model and seed the build ran, from the build's
    record (``<warehouse>.dbt/build-state.json``, copied aside after the stage)."""
    try:
        nodes = json.loads(state.read_text())["last_build"]["nodes"]
    except (OSError, ValueError, KeyError):
        return []
    return [(name, kind, float(seconds)) for name, (kind, seconds) in nodes.items()]


def keep_state(warehouse: Path, logs: Path, stage: str) -> Path:
    """A copy of the build's record beside the stage's log."""
    kept = logs / f"{stage}.build-state.json"
    with contextlib.suppress(OSError):
        shutil.copy2(warehouse.parent / f"{warehouse.name}.dbt" / "build-state.json", kept)
    return kept


def history_nodes(bench_cache: Path) -> set[str]:
    """Names of the models downstream of the lake's metrics and runs tables (obs's plan)."""
    from obs.runner import plan
    from obs.runner.dbt import environment

    with environment({"XDG_CACHE_HOME": str(bench_cache)}):
        compiled = plan.load(plan.plan_fingerprint([]))
    if compiled is None:
        raise ValueError(f"no compiled plan in {bench_cache}")
    chosen = compiled.downstream_of_tables(["metrics", "runs"])
    return {compiled.nodes[uid].name for uid in chosen}


def warehouse_counts(warehouse: Path) -> dict[str, int]:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        points = con.execute(
            "select count(*), count(*) filter (where not isfinite(value)), "
            "count(distinct run_id) from fct_metric_history"
        ).fetchone()
        runs = con.execute("select count(*) from dim_runs").fetchone()
    assert points is not None and runs is not None
    return {
        "points": int(points[0]),
        "nonfinite": int(points[1]),
        "runs_with_points": int(points[2]),
        "runs": int(runs[0]),
    }


def generate(folder: Path, aside: Path, runs: int, steps: int) -> dict[str, Any]:
    """``runs`` exports in ``folder``, one more in ``aside``; their points and sizes."""
    started = time.perf_counter()
    for place in (folder, aside):
        shutil.rmtree(place, ignore_errors=True)
        place.mkdir(parents=True)
    files = []
    for i in range(runs + 1):
        path = (folder if i < runs else aside) / f"h{i:02d}.json"
        write_seed_export(path, run_id=f"h{i:02d}", steps=steps, seed=i, noise=NOISE)
        files.append(path)
    seconds = time.perf_counter() - started
    counted = [count_points(f) for f in files]
    return {
        "files": files,
        "generate_seconds": seconds,
        "points": sum(c[0] for c in counted[:-1]),
        "nonfinite": sum(c[1] for c in counted[:-1]),
        "megabytes": sum(f.stat().st_size for f in files[:-1]) / 1e6,
        "next_points": counted[-1][0],
        "next_nonfinite": counted[-1][1],
        "next_megabytes": files[-1].stat().st_size / 1e6,
    }


def run_histories(bench: Any, obs: Command, out: Path, runs: int, steps: int) -> dict[str, Any]:
    """The run-history stages on a fresh lake and warehouse under ``out/histories``."""
    place = out / "histories"
    shutil.rmtree(place, ignore_errors=True)
    folder, lake = place / "runs", place / "lake"
    warehouse = place / "warehouse" / "obs.duckdb"
    print(f"generating {runs} + 1 run histories of {steps} steps ...", file=sys.stderr, flush=True)
    made = generate(folder, place / "aside", runs, steps)
    points, mb = made["points"], made["megabytes"]
    ingest_cmd = obs(lake, warehouse, "ingest", "metrics", str(folder), "-q")
    found: dict[str, Any] = {"runs": runs, "steps": steps} | {
        k: v for k, v in made.items() if k != "files"
    }
    found["ingest"] = bench.measure("history-ingest", ingest_cmd, points, mb)
    found["warmup"] = bench.measure(
        "history-warmup", obs(lake, warehouse, "build", "--compile-only")
    )
    found["build"] = bench.measure("history-build", obs(lake, warehouse, "build"), points, mb)
    found["build_nodes"] = node_seconds(keep_state(warehouse, bench.out / "logs", "history-build"))
    late = made["files"][-1]
    shutil.copy2(late, folder / late.name)
    next_ingest = bench.measure(
        "history-next-ingest", ingest_cmd, made["next_points"], made["next_megabytes"]
    )
    next_build = bench.measure("history-next-build", obs(lake, warehouse, "build"))
    found["next_ingest"], found["next_build"] = next_ingest, next_build
    found["next_build_nodes"] = node_seconds(
        keep_state(warehouse, bench.out / "logs", "history-next-build")
    )
    found["expected"] = {
        "points": points + made["next_points"],
        "nonfinite": made["nonfinite"] + made["next_nonfinite"],
        "runs": runs + 1,
    }
    try:
        found["holds"] = warehouse_counts(warehouse)
    except Exception as error:  # a build that failed, a table renamed: report, go on
        bench.failures.append(f"history check: {error}")
        found["holds"] = None
    found["again"] = bench.measure("history-again", obs(lake, warehouse, "build"), points)
    try:
        found["history_nodes"] = sorted(history_nodes(Path(bench.env["XDG_CACHE_HOME"])))
    except (OSError, ValueError, KeyError) as error:
        bench.failures.append(f"history nodes: no plan ({error})")
        found["history_nodes"] = []
    shutil.rmtree(folder, ignore_errors=True)
    shutil.rmtree(place / "aside", ignore_errors=True)
    return found


def empty_metrics(found: dict[str, Any], build: Any, state: Path) -> dict[str, Any]:
    """The run-history nodes inside the rollout build (a lake with no metrics)."""
    ours = set(found["history_nodes"])
    timed = node_seconds(state)
    mine = [t for t in timed if t[0] in ours]
    return {
        "stage": build.name,
        "seconds": build.seconds,
        "peak_tree_mb": build.peak_tree_mb,
        "ok": build.ok,
        "nodes": len(timed),
        "node_seconds": sum(t[2] for t in timed),
        "history_nodes": len(mine),
        "history_node_seconds": sum(t[2] for t in mine),
    }


def report(found: dict[str, Any]) -> None:
    """The "run histories" section; ``found["next"]``: history-next-ingest + -build, combined."""
    runs, steps = found["runs"], found["steps"]
    print(
        f"\nrun histories: {runs} runs x {steps} steps, {found['points']:,} points "
        f"({found['nonfinite']} NaN/Inf), {found['megabytes']:.0f} MB of W&B export JSON; "
        f"generated (not timed) in {found['generate_seconds']:.1f} s; next run "
        f"{found['next_points']:,} points"
    )
    print(f"  {'stage':<34} {'seconds':>8} {'tree MB':>8} {'points/s':>10}  ok")
    rows = [
        ("history-ingest", found["ingest"], True),
        ("history-warmup", found["warmup"], False),
        ("history-build (cold)", found["build"], False),
        ("history-next (ingest + build)", found["next"], False),
        ("  history-next-ingest", found["next_ingest"], True),
        ("  history-next-build", found["next_build"], False),
        ("history-again (nothing new)", found["again"], False),
    ]
    for label, stage, rate in rows:
        shown = f"{stage.rows_per_s:>10,.0f}" if rate else f"{'':>10}"
        print(
            f"  {label:<34} {stage.seconds:>8.2f} {stage.peak_tree_mb:>8.0f} {shown}  "
            f"{'yes' if stage.ok else 'NO'}"
        )
    empty = found.get("empty_metrics")
    if empty:
        print(
            f"  {'rollout-build-with-empty-metrics':<34} {empty['seconds']:>8.2f} "
            f"{empty['peak_tree_mb']:>8.0f} {'':>10}  {'yes' if empty['ok'] else 'NO'}"
        )
        print(
            f"    (the rollout '{empty['stage']}' stage above, on a lake with no metrics: its "
            f"{empty['history_nodes']} run-history nodes took {empty['history_node_seconds']:.2f} "
            f"of {empty['node_seconds']:.2f} node-seconds, two models at a time)"
        )
    for label, key in (
        ("history-build", "build_nodes"),
        ("history-next-build", "next_build_nodes"),
    ):
        nodes = sorted(found[key], key=lambda t: -t[2])[:5]
        if nodes:
            total = sum(t[2] for t in found[key])
            slowest = ", ".join(f"{n} {s:.2f}" for n, _, s in nodes)
            print(f"  slowest nodes of {label} (s; {total:.1f} node-seconds in all): {slowest}")
    holds, expected = found.get("holds"), found["expected"]
    if holds:
        print(
            f"  after history-next: fct_metric_history {holds['points']:,} points "
            f"({holds['nonfinite']} NaN/Inf; exports hold {expected['points']:,}, "
            f"{expected['nonfinite']}), dim_runs {holds['runs']} runs (expected {expected['runs']})"
        )


def holds_as_expected(found: dict[str, Any]) -> bool | None:
    holds, expected = found.get("holds"), found["expected"]
    if not holds:
        return None
    return (
        holds["points"] == expected["points"]
        and holds["nonfinite"] == expected["nonfinite"]
        and holds["runs"] == expected["runs"]
        and holds["runs_with_points"] == expected["runs"]
    )


def record(found: dict[str, Any]) -> dict[str, Any]:
    """The section as plain JSON for results.json."""
    plain = {k: v.record() if hasattr(v, "record") else v for k, v in found.items()}
    plain["ingest_points_per_s"] = found["ingest"].rows_per_s
    plain["next_ingest_points_per_s"] = found["next_ingest"].rows_per_s
    for key in ("build_nodes", "next_build_nodes"):
        plain[key] = [
            {"node": n, "kind": k, "seconds": s}
            for n, k, s in sorted(found[key], key=lambda t: -t[2])
        ]
    plain["check_ok"] = holds_as_expected(found)
    return plain
