"""One round of following a run: land, build, say what changed.

from obs.live.follow import Follower

follower = Follower(warehouse, lake, Path("outputs/rollout_data"), run_id="grpo-1")
done = follower.round()          # Round(number, clock, line, seconds, ...)
follower.wait(stop_event, 10.0)  # back early when a dump appears or grows
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from obs.core.errors import ObsError
from obs.ingest.writer import FileResult
from obs.live.notify import Notifier, events_of
from obs.runner.build import BuildFailed, build, check_lake
from obs.runner.dbt import Dbt

# How often a wait between rounds looks for a new or grown file.
POLL_SECONDS = 0.1

Signature = tuple[tuple[str, int, int], ...]


@dataclass
class Round:
    """What one round did."""

    number: int
    clock: str  # local time it started, HH:MM:SS
    line: str  # rows landed and iterations now in the marts, or the error
    seconds: float
    failed: bool = False
    # lines to show before the round's line (a failed build's broken rules)
    details: list[str] = field(default_factory=list)
    # the reward alerts of the followed runs not reported before, one line each
    alerts: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """The round as ``obs watch`` and ``obs serve`` print it: the broken rules, the
        round's line, then the new alerts."""
        line = f"[{self.clock}] round {self.number}: {self.line} ({self.seconds:.1f} s)"
        return [*self.details, line, *self.alerts]


def signature(paths: Sequence[Path]) -> Signature:
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


class Follower:
    """Follows one run's folder (and tracker histories) into one warehouse and lake.

    Keeps the compiled project loaded between rounds and releases the
    warehouse after each, so readers (obs sql, the DuckDB shell, a page)
    can open it between rounds.
    """

    def __init__(
        self,
        warehouse: Path,
        lake: Path,
        path: Path,
        run_id: str | None = None,
        metrics: Sequence[Path] = (),
        dbt_args: Sequence[str] = (),
        notifier: Notifier | None = None,
    ) -> None:
        self.warehouse, self.lake, self.path = warehouse, lake, path
        self.run_id, self.metrics = run_id, tuple(metrics)
        # passed to every round's build, as obs build passes its own (e.g. --vars
        # carrying var success, from obs watch --success)
        self.dbt_args = tuple(dbt_args)
        # --on-alert / --webhook: each new alert and finding of the followed runs
        self.notifier = notifier
        self.dbt = Dbt(warehouse, lake, keep_manifest=True)
        self.followed: set[str] = {run_id} if run_id is not None else set()
        self.reported: set[tuple[str, str, int]] = set()
        self.number = 0
        self.last_failed = False
        self._seen: Signature = ()

    @property
    def paths(self) -> tuple[Path, ...]:
        return (self.path, *self.metrics)

    def round(self) -> Round:
        """Land, build what changed (also what a failed round left), report."""
        self.number += 1
        started = time.perf_counter()
        clock = time.strftime("%H:%M:%S")
        self._seen = signature(self.paths)
        details: list[str] = []
        failed = False
        try:
            line = self._land_and_build()
        except BuildFailed as broken:
            details = [f"  {failure}" for failure in broken.failures]
            line, failed = f"error: {broken}; trying again next round", True
        except ObsError as error:
            line, failed = f"error: {error}; trying again next round", True
        self.last_failed = failed
        done = Round(self.number, clock, line, time.perf_counter() - started, failed, details)
        done.alerts = self._new_alerts()
        return done

    def wait(self, stop: threading.Event, seconds: float) -> None:
        """Wait up to ``seconds`` or until ``stop``; back early when a file under the
        followed paths changed since the last round started (not after a failed
        round: it waits the period out before trying again)."""
        if self.last_failed:
            stop.wait(max(0.0, seconds))
            return
        deadline = time.monotonic() + seconds
        while not stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            stop.wait(min(POLL_SECONDS, left))
            if signature(self.paths) != self._seen:
                return

    def _land_and_build(self) -> str:
        from obs.ingest.keyed import ingest_metrics
        from obs.ingest.rollouts import ingest_rollouts

        landed = ingest_rollouts(self.path, lake=self.lake, run_id=self.run_id)
        files = list(landed.files)
        points = records = 0
        for source in self.metrics:
            history = ingest_metrics(source, lake=self.lake, run_id=self.run_id)
            files += history.files
            points += history.points_landed + history.samples_landed
            records += history.record_rows
        self.followed.update(f.run_id for f in files)
        noted = _problems_line(files)
        check_lake(self.lake)
        ran = build(self.dbt, ("--quiet", *self.dbt_args)).models
        if landed.rows_landed == 0 and points == 0 and records == 0 and ran == 0:
            return f"nothing new{noted}"
        landed_points = f"+{points:,} metric points; " if points else ""
        if records:
            landed_points += f"+{records:,} eval, step and advantage rows; "
        coverage = self._coverage(landed.run_ids) or "marts built (busy to read)"
        if landed.rows_landed == 0:
            caught = (
                "marts caught up with rows landed earlier; " if ran and not points + records else ""
            )
            return f"{landed_points}{caught}{coverage}{noted}"
        count = sum(1 for f in landed.files if f.rows_landed)
        return (
            f"{landed_points}+{landed.rows_landed:,} rows from {count} file(s); {coverage}{noted}"
        )

    def _coverage(self, runs: list[str]) -> str:
        """'run: N iterations (first-last)' per run, read from the marts."""
        import duckdb
        from obs.reports.summary import iteration_coverage

        if not runs:
            return ""
        try:
            with duckdb.connect(str(self.warehouse), read_only=True) as con:
                rows = iteration_coverage(con, runs)
        except duckdb.Error:
            return ""
        return ", ".join(f"{run}: {n} iterations ({low}-{high})" for run, n, low, high in rows)

    def _new_alerts(self) -> list[str]:
        """The alerts of the followed runs not reported yet, in the reward monitor's line
        format, each run's oldest first. Nothing while the warehouse is busy (they come
        in a later round) or when it holds no alerts table (no reward data)."""
        import duckdb
        from obs.reports.rewards import alert_line, unseen_alerts

        if not self.followed or not self.warehouse.is_file():
            return []
        try:
            with duckdb.connect(str(self.warehouse), read_only=True) as con:
                fresh = unseen_alerts(con, self.followed, self.reported)
                if self.notifier is not None:
                    self.notifier.notify(events_of(con, self.followed))
        except duckdb.Error:
            return []
        return [f"  {a['run_id']}: {alert_line(a)}" for a in fresh]


def _problems_line(files: list[FileResult]) -> str:
    """The round line's end for files with a problem: how many, and the first one's
    name with what happened to it (rows landed beside a cut, rejects or a failure, and
    its note: a cut gzip names its limit and the option that raises it)."""
    problems = [f for f in files if f.is_problem]
    if not problems:
        return ""
    first = problems[0]
    said = [f"{first.rows_landed:,} rows landed"] if first.rows_landed else ["nothing landed"]
    if first.rows_rejected:
        said.append(f"{first.rows_rejected:,} rejected")
    if first.note:
        said.append(first.note)
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"; a problem with {first.source.name}{more}: {'; '.join(said)}"
