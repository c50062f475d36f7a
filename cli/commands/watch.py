"""``obs watch``: follow a run while it trains, landing what is new and refreshing the marts."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

import click
from obs.cli.commands.build import run_build
from obs.cli.options import Settings, echo_err, pass_settings, run_id_callback
from obs.ingest.errors import IngestError
from obs.runner.build import check_lake
from obs.runner.dbt import Dbt
from obs.runner.errors import DbtError


class _Stop:
    """Ctrl-C or SIGTERM: finish the step under way, then stop. A second one stops at once."""

    def __init__(self) -> None:
        self.event = threading.Event()

    def handle(self, signum: int, frame: FrameType | None) -> None:
        if self.event.is_set():
            raise KeyboardInterrupt
        self.event.set()
        echo_err(f"{signal.Signals(signum).name}: stopping after this step (again to stop now)")

    @contextmanager
    def installed(self) -> Iterator[None]:
        previous = {s: signal.signal(s, self.handle) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)


def _coverage(warehouse: Path, runs: list[str]) -> str:
    """'run: N iterations (first-last)' per run, read from the marts."""
    import duckdb

    if not runs:
        return ""
    try:
        with duckdb.connect(str(warehouse), read_only=True) as con:
            rows = con.execute(
                "select run_id, count(*), min(iteration), max(iteration) "
                "from fct_iteration_summary where run_id in (select unnest(?)) "
                "group by 1 order by 1",
                [runs],
            ).fetchall()
    except duckdb.Error:
        return ""
    return ", ".join(f"{run}: {n} iterations ({low}-{high})" for run, n, low, high in rows)


def _new_alerts(warehouse: Path, runs: set[str], seen: set[tuple[str, str, int]]) -> list[str]:
    """The alerts of ``runs`` not printed yet, in the reward monitor's line format, each
    run's oldest first; marked as printed. Nothing while the warehouse is busy (they come
    in a later round) or when it holds no alerts table (no reward data)."""
    import duckdb
    from obs.reports.rewards import alert_line, unseen_alerts

    if not runs or not warehouse.is_file():
        return []
    try:
        with duckdb.connect(str(warehouse), read_only=True) as con:
            fresh = unseen_alerts(con, runs, seen)
    except duckdb.Error:
        return []
    return [f"  {a['run_id']}: {alert_line(a)}" for a in fresh]


# How often the wait between rounds looks for a new or grown file.
POLL_SECONDS = 0.1


def _signature(paths: tuple[Path, ...]) -> tuple[tuple[str, int, int], ...]:
    """Name, size and modification time of every file under ``paths``: a change in
    any of them (a new file, a file that grew) means a round has work."""
    found: list[tuple[str, int, int]] = []
    for path in paths:
        try:
            if path.is_file():
                stat = path.stat()
                found.append((str(path), stat.st_size, stat.st_mtime_ns))
                continue
            for folder, _dirs, names in os.walk(path):
                for name in names:
                    with contextlib.suppress(OSError):
                        stat = os.stat(os.path.join(folder, name))
                        found.append((os.path.join(folder, name), stat.st_size, stat.st_mtime_ns))
        except OSError:
            continue
    return tuple(sorted(found))


def _wait(stop: threading.Event, seconds: float, paths: tuple[Path, ...], seen: tuple) -> None:
    """Wait up to ``seconds``; return early when a file under ``paths`` changed."""
    deadline = time.monotonic() + seconds
    while not stop.is_set():
        left = deadline - time.monotonic()
        if left <= 0:
            return
        stop.wait(min(POLL_SECONDS, left))
        if _signature(paths) != seen:
            return


def _round(
    dbt: Dbt,
    settings: Settings,
    path: Path,
    run_id: str | None,
    metrics: tuple[Path, ...] = (),
    followed: set[str] | None = None,
) -> str:
    """One round: land, build what changed (also what a failed round left); its line.
    The runs PATH and the tracker history hold are added to ``followed``."""
    from obs.ingest.rollouts import ingest_rollouts

    landed = ingest_rollouts(path, lake=settings.lake, run_id=run_id)
    files = list(landed.files)
    points = records = 0
    for source in metrics:
        from obs.ingest.history import ingest_metrics

        history = ingest_metrics(source, lake=settings.lake, run_id=run_id)
        files += history.files
        points += history.points_landed + history.samples_landed
        records += history.record_rows
    if followed is not None:
        followed.update(f.run_id for f in files)
    problems = [f for f in files if f.is_problem]
    noted = f"; {len(problems)} file(s) not landed: {problems[0].source.name}" if problems else ""
    check_lake(settings.lake)
    ran = run_build(dbt, settings, ("--quiet",), unit_tests=False)
    if landed.rows_landed == 0 and points == 0 and records == 0 and ran == 0:
        return f"nothing new{noted}"
    landed_points = f"+{points:,} metric points; " if points else ""
    if records:
        landed_points += f"+{records:,} eval, step and advantage rows; "
    coverage = _coverage(settings.warehouse, landed.run_ids) or "marts built (busy to read)"
    if landed.rows_landed == 0:
        caught = (
            "marts caught up with rows landed earlier; " if ran and not points + records else ""
        )
        return f"{landed_points}{caught}{coverage}{noted}"
    count = sum(1 for f in landed.files if f.rows_landed)
    return f"{landed_points}+{landed.rows_landed:,} rows from {count} file(s); {coverage}{noted}"


@click.command()
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--run",
    "run_id",
    callback=run_id_callback,
    help="Run id (default: the folder's name), as for obs ingest rollouts.",
)
@click.option(
    "--every",
    type=click.FloatRange(min=0.1),
    default=10.0,
    show_default=True,
    help="Longest time from the start of one round to the start of the next; a new or "
    "grown file under PATH or a --metrics path starts the next round at once.",
)
@click.option(
    "--rounds",
    type=click.IntRange(min=1),
    default=None,
    help="Stop after this many rounds (default: until Ctrl-C or SIGTERM).",
)
@click.option(
    "--metrics",
    "metrics",
    type=click.Path(exists=True, path_type=Path),
    multiple=True,
    help="Also land this tracker history each round (as obs ingest metrics does): a "
    "TensorBoard folder, a metrics.jsonl, a W&B run folder, a trainer_state.json, a reward "
    "monitor's folder, an agent's eval_logs folder or console log. Repeatable.",
)
@pass_settings
def watch(
    settings: Settings,
    path: Path,
    run_id: str | None,
    every: float,
    rounds: int | None,
    metrics: tuple[Path, ...],
) -> None:
    """Follow a run while it trains: land what is new under PATH, refresh the marts.

    Each round lands the files that are new or grew under PATH (as obs ingest
    rollouts does), builds only the models downstream of what landed (as obs
    build does, keeping the compiled project loaded between rounds),
    and prints one line: rows landed, iterations now in the marts, seconds
    taken. Between rounds it looks at the files under PATH (and the
    --metrics paths) every 0.1 s: a new or grown file starts the next round
    at once, so a new iteration is in the marts about a round's time after
    its dump appears. Then it prints the reward alerts of the runs it follows (the run
    of PATH and of the --metrics history) that it has not printed before,
    on stderr below that line, in the GRPO reward monitor's format
    (`  RUN: 🚨 [CRITICAL] Step 19: ...`): the first round prints the alerts already raised when
    the watch starts, later rounds only new ones (an alert is its run, rule
    and step; obs alerts lists them all). Between rounds the warehouse is
    free: obs sql and the DuckDB shell can read it. A round that fails
    prints its error and the next round tries again. Ctrl-C or SIGTERM
    stops after the step under way (every file lands whole or not at all);
    a second one stops at once.

    \b
    Example:
      obs watch outputs/rollout_data --run grpo-ifeval --every 5
      obs watch outputs/rollout_data --run grpo-ifeval --metrics outputs/metrics.jsonl
      obs watch outputs/rollouts --run agent-1 --metrics outputs/eval_logs --metrics train.log
    """
    dbt = Dbt(settings.warehouse, settings.lake, keep_manifest=True)
    watched = (path, *metrics)
    stop = _Stop()
    number = 0
    followed: set[str] = {run_id} if run_id is not None else set()
    printed: set[tuple[str, str, int]] = set()
    with stop.installed():
        while not stop.event.is_set():
            number += 1
            started = time.perf_counter()
            clock = time.strftime("%H:%M:%S")
            seen = _signature(watched)
            failed = False
            try:
                line = _round(dbt, settings, path, run_id, metrics, followed)
            except (IngestError, DbtError, click.ClickException) as exc:
                message = exc.format_message() if isinstance(exc, click.ClickException) else exc
                line = f"error: {message}; trying again next round"
                failed = True
            elapsed = time.perf_counter() - started
            echo_err(f"[{clock}] round {number}: {line} ({elapsed:.1f} s)")
            for alert in _new_alerts(settings.warehouse, followed, printed):
                echo_err(alert)
            if rounds is not None and number >= rounds:
                break
            if failed:
                stop.event.wait(max(0.0, every - elapsed))
            else:
                _wait(stop.event, max(0.0, every - elapsed), watched, seen)
    click.echo(str(settings.warehouse))
