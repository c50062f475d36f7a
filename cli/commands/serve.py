"""``obs serve``: the warehouse live in the browser (obs.serve)."""

from __future__ import annotations

from pathlib import Path

import click
from obs.cli.errors import friendly_errors
from obs.cli.options import Settings, echo_err, pass_settings, run_id_callback


@click.command()
@click.argument("path", type=click.Path(exists=True, path_type=Path), required=False)
@click.option(
    "--run",
    "run_id",
    callback=run_id_callback,
    help="Run id of PATH (default: the folder's name), as for obs watch.",
)
@click.option(
    "--metrics",
    type=click.Path(exists=True, path_type=Path),
    multiple=True,
    help="Also follow this tracker history (as obs watch --metrics). Repeatable.",
)
@click.option(
    "--every",
    type=click.FloatRange(min=0.1),
    default=10.0,
    show_default=True,
    help="With PATH: longest time between rounds (a new or grown file starts one at once).",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on; anything but 127.0.0.1 lets others read every prompt.",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help="Also answer requests whose Host is NAME (the machine's name or address, with "
    "--host 0.0.0.0). Repeatable.",
)
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True)
@click.option(
    "--on-alert",
    "on_alert",
    metavar="CMD",
    help="With PATH: run CMD through the shell once per new warning, error or critical "
    "alert or finding of the followed runs, with the event as one JSON line on stdin "
    "(run, kind, rule, level, step, message). An event fires once, also across restarts.",
)
@click.option(
    "--webhook",
    metavar="URL",
    help="POST each such event's JSON to URL (retried a few times; a failure is logged "
    "and never holds a round up).",
)
@pass_settings
def serve(
    settings: Settings,
    path: Path | None,
    run_id: str | None,
    metrics: tuple[Path, ...],
    every: float,
    host: str,
    allow_hosts: tuple[str, ...],
    port: int,
    on_alert: str | None,
    webhook: str | None,
) -> None:
    """Serve the warehouse in the browser, read-only; with PATH, follow a run live.

    Open http://127.0.0.1:8765/ : every run with its findings and alerts,
    each run's pages, a page per prompt with its rollouts. Open pages update
    without a reload within a second of new data.

    Without PATH it serves what the warehouse holds and notices when
    another process (obs build, obs watch) changes it: pages wait for a
    build to finish and never show a half-built state; a build waits for
    a page's queries at most. With PATH (and --metrics), the server follows
    the run as obs watch does, printing the same line per round, and is the
    warehouse's writer (do not run obs watch beside it).

    It answers only requests for 127.0.0.1, localhost, [::1], the --host
    address and the --allow-host names: any other Host header (a web page
    rebinding its name to this machine) gets 400.

    Ctrl-C or SIGTERM stops it after the round under way.

    \b
    Example:
      obs serve
      obs serve outputs/rollout_data --run grpo-ifeval --metrics outputs/metrics.jsonl
    """
    from obs.serve.stopping import EarlyStop

    early = EarlyStop()
    early.install()  # a signal while it starts up stops it as soon as it is up
    try:
        from obs.serve.access import Access
        from obs.serve.following import Following
        from obs.serve.run import serve as run_server
    except ImportError as exc:
        raise click.ClickException(
            f"obs serve needs the serve extra ({exc.name} is missing): "
            "pip install 'obs-warehouse[serve]'"
        ) from exc
    access = Access(settings.warehouse, settings.lake)
    following = None
    if (on_alert or webhook) and path is None:
        raise click.UsageError("--on-alert and --webhook need PATH: the run to follow")
    if path is not None:
        from obs.cli.commands.watch import notifier_of

        following = Following(
            access,
            path,
            run_id=run_id,
            metrics=metrics,
            every=every,
            say=echo_err,
            notifier=notifier_of(settings.warehouse, on_alert, webhook),
        )
    with friendly_errors(settings.debug):
        run_server(
            access,
            host=host,
            port=port,
            following=following,
            say=echo_err,
            early=early,
            allow_hosts=allow_hosts,
        )
