"""Alerts that reach you: a command or a webhook per new alert or finding of a followed run.

``obs watch --on-alert CMD --webhook URL`` (and ``obs serve PATH`` with the same
options) hand every new warning, error or critical reward alert (fct_alerts) and
every new warning or critical finding (fct_run_findings) of the runs they follow to
``Notifier.notify`` after a round:

* ``--on-alert CMD`` runs through the shell once per event, with the event as one
  JSON line on its stdin (``run``, ``kind``, ``rule``, ``level``, ``step``,
  ``message``); a command that fails or runs past ``COMMAND_SECONDS`` is logged.
* ``--webhook URL`` gets the same JSON as a POST (``application/json``), tried
  ``WEBHOOK_TRIES`` times with a pause that doubles; a failure is logged.

Both run in a thread of their own, in the order the events came, so a slow command
or an unreachable hook never holds a round up. An event is an alert's run, rule and
step, or a finding's run, pattern and first step: each fires once, and the ones
fired are kept beside the warehouse (``<warehouse>.dbt/notified.json``), so a watch
started again on the same warehouse does not fire them again.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from obs.runner.dbt import state_dir

log = logging.getLogger(__name__)

COMMAND_SECONDS = 30.0
WEBHOOK_TRIES = 4
WEBHOOK_SECONDS = 5.0  # the timeout of one POST
FIRST_PAUSE = 0.5  # before the second try; doubling
NOTIFIED_FILE = "notified.json"


@dataclass(frozen=True)
class Event:
    """One alert or finding, as the command's stdin and the webhook's body carry it."""

    run: str
    kind: str  # alert or finding
    rule: str  # the alert's rule, the finding's pattern
    level: str  # warning, error or critical
    step: int | None  # the alert's step, the finding's first step
    message: str

    @property
    def key(self) -> str:
        return f"{self.kind}\0{self.run}\0{self.rule}\0{self.step}"

    def line(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, sort_keys=True)


def events_of(con: Any, runs: Iterable[str]) -> list[Event]:
    """The warning-or-worse reward alerts (fct_alerts) and findings (fct_run_findings) of
    ``runs`` in the warehouse (nothing of a mart that is not built)."""
    from obs.reports.sql import query_rows
    from obs.reports.warehouse import table_names

    wanted = set(runs)
    present = table_names(con)
    found: list[Event] = []
    if "fct_alerts" in present:
        # the reward alerts at warning (rank 2) or above; the findings that are alerts
        # too (finding_alerts.sql) come once, as findings
        for alert in query_rows(con, "alerts", run=None, level_rank=2, since_step=None):
            if alert["run_id"] in wanted:
                found.append(
                    Event(
                        str(alert["run_id"]),
                        "alert",
                        str(alert["rule_name"]),
                        str(alert["level"]),
                        None if alert["step"] is None else int(alert["step"]),
                        str(alert["message"]),
                    )
                )
    if "fct_run_findings" in present:
        for finding in query_rows(con, "findings", run=None, severity_rank=1):
            if finding["run_id"] in wanted:
                step = finding["first_step"]
                found.append(
                    Event(
                        str(finding["run_id"]),
                        "finding",
                        str(finding["pattern"]),
                        str(finding["severity"]),
                        None if step is None else int(step),
                        str(finding["summary"]),
                    )
                )
    return found


class Notifier:
    """Fires each event once: a shell command, a webhook, or both."""

    def __init__(self, warehouse: Path, command: str | None = None, webhook: str | None = None):
        self.command, self.webhook = command, webhook
        self.ledger = state_dir(warehouse) / NOTIFIED_FILE
        self.fired: set[str] = self._read()
        self._queue: queue.Queue[Event | None] = queue.Queue()
        self._thread = threading.Thread(target=self._deliver, name="obs-notify", daemon=True)
        self._thread.start()

    def notify(self, events: Iterable[Event]) -> list[Event]:
        """Queue the events not fired before (kept as fired at once); return them."""
        fresh = [e for e in events if e.key not in self.fired]
        if not fresh:
            return []
        self.fired.update(e.key for e in fresh)
        self._write()
        for event in fresh:
            self._queue.put(event)
        return fresh

    def close(self, seconds: float = COMMAND_SECONDS) -> None:
        """Deliver what is queued (waiting up to ``seconds``), then stop."""
        self._queue.put(None)
        self._thread.join(seconds)

    # ---------- the ledger

    def _read(self) -> set[str]:
        try:
            kept = json.loads(self.ledger.read_text())
        except (OSError, ValueError):
            return set()
        return {str(k) for k in kept} if isinstance(kept, list) else set()

    def _write(self) -> None:
        self.ledger.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.ledger.with_name(f".{self.ledger.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(sorted(self.fired)))
        temporary.replace(self.ledger)

    # ---------- delivery, in its own thread

    def _deliver(self) -> None:
        while True:
            event = self._queue.get()
            if event is None:
                return
            if self.command:
                self._run_command(self.command, event)
            if self.webhook:
                self._post(event)

    def _run_command(self, command: str, event: Event) -> None:
        try:
            done = subprocess.run(
                command,
                shell=True,
                input=event.line() + "\n",
                text=True,
                capture_output=True,
                timeout=COMMAND_SECONDS,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            log.warning(
                "--on-alert: %s (%s %s at step %s)", error, event.run, event.rule, event.step
            )
            return
        if done.returncode != 0:
            said = (done.stderr or "").strip().splitlines()
            log.warning(
                "--on-alert exited %s%s (%s %s at step %s)",
                done.returncode,
                f": {said[-1]}" if said else "",
                event.run,
                event.rule,
                event.step,
            )

    def _post(self, event: Event) -> None:
        body = event.line().encode()
        pause = FIRST_PAUSE
        for attempt in range(1, WEBHOOK_TRIES + 1):
            request = urllib.request.Request(
                str(self.webhook),
                data=body,
                headers={"Content-Type": "application/json"},
                method="POST",
            )
            try:
                with urllib.request.urlopen(request, timeout=WEBHOOK_SECONDS) as answer:
                    if 200 <= answer.status < 300:
                        return
                    problem = f"HTTP {answer.status}"
            except urllib.error.HTTPError as error:
                problem = f"HTTP {error.code}"
            except (OSError, ValueError) as error:
                problem = str(error)
            if attempt < WEBHOOK_TRIES:
                time.sleep(pause)
                pause *= 2
        log.warning(
            "--webhook: %s after %d tries (%s %s at step %s)",
            problem,
            WEBHOOK_TRIES,
            event.run,
            event.rule,
            event.step,
        )
