"""``obs watch``: follow a run while it trains (obs.live.follow), one line per round."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

import click
from obs.cli.options import Settings, echo, echo_err, pass_settings, run_id_callback
from obs.core.success import SuccessError, parse_success, with_success_var
from obs.live.follow import Follower
from obs.live.notify import Notifier


def notifier_of(warehouse: Path, on_alert: str | None, webhook: str | None) -> Notifier | None:
    """The --on-alert / --webhook notifier, or None without either."""
    if webhook is not None and not webhook.startswith(("http://", "https://")):
        raise click.BadParameter(f"{webhook}: not an http(s) URL", param_hint="--webhook")
    if on_alert is None and webhook is None:
        return None
    return Notifier(warehouse, on_alert, webhook)


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
@click.option(
    "--success",
    "success",
    metavar="RULE",
    help="What a solved rollout is, for every count, as obs build --success takes it: "
    "strict, 'score >= X' or '<reward function> >= X' (e.g. 'check_answer >= 3'); "
    "every round's build uses it.",
)
@click.option(
    "--on-alert",
    "on_alert",
    metavar="CMD",
    help="Run CMD through the shell once per new warning, error or critical alert or "
    "finding of the followed runs, with the event as one JSON line on stdin (run, kind, "
    "rule, level, step, message). An event fires once, also across restarts.",
)
@click.option(
    "--webhook",
    metavar="URL",
    help="POST each such event's JSON to URL (retried a few times; a failure is logged "
    "and never holds a round up).",
)
@pass_settings
def watch(
    settings: Settings,
    path: Path,
    run_id: str | None,
    every: float,
    rounds: int | None,
    metrics: tuple[Path, ...],
    success: str | None,
    on_alert: str | None,
    webhook: str | None,
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

    --on-alert and --webhook hand each new warning-or-worse alert and
    finding of the followed runs to a command or a URL, once (the events
    fired are kept in the warehouse's state folder, <warehouse>.dbt/).

    \b
    Example:
      obs watch outputs/rollout_data --run grpo-ifeval --every 5
      obs watch outputs/rollout_data --run grpo-ifeval --metrics outputs/metrics.jsonl
      obs watch outputs/rollouts --run agent-1 --metrics outputs/eval_logs --metrics train.log
      obs watch outputs/rollout_data --run math-1 --success 'check_answer >= 3'
      obs watch outputs/rollout_data --run grpo-1 --on-alert 'cat >> alerts.jsonl'
    """
    dbt_args: list[str] = []
    if success is not None:
        try:
            dbt_args = with_success_var((), parse_success(success))
        except SuccessError as error:
            raise click.BadParameter(str(error), param_hint="--success") from None
    notifier = notifier_of(settings.warehouse, on_alert, webhook)
    follower = Follower(
        settings.warehouse, settings.lake, path, run_id, metrics, dbt_args, notifier
    )
    stop = _Stop()
    try:
        with stop.installed():
            while not stop.event.is_set():
                done = follower.round()
                for line in done.lines():
                    echo_err(line)
                if rounds is not None and done.number >= rounds:
                    break
                follower.wait(stop.event, max(0.0, every - done.seconds))
    finally:
        if notifier is not None:
            notifier.close()  # what the last round queued is delivered
    echo(str(settings.warehouse))
