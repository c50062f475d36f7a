"""``obs rewards`` and ``obs alerts``: reward monitoring, read back from the marts."""

from __future__ import annotations

import click
from obs.cli.errors import friendly_errors
from obs.cli.options import Settings, echo, echo_err, format_option, pass_settings

LEVELS = ("info", "warning", "error", "critical")


@click.command()
@click.argument("run")
@format_option("table", "json", default="table")
@pass_settings
def rewards(settings: Settings, run: str, output_format: str) -> None:
    """The GRPO reward monitor's analysis of one run, in one answer.

    The quality score (0-100) and its parts (consistency, discriminability,
    stability, coverage) with issues, warnings and recommendations; each
    reward function's contribution and impact; the reward hacking verdict
    against the performance metric over the whole run and the spans of
    sliding windows judged high or medium; the latest alerts. The quality
    score needs per-sample rewards: a run that logged aggregates only gets
    none, and is told why. RUN is a run id or a unique run name; a run
    without reward data exits 1 with one line saying so.

    \b
    Example:
      obs rewards grpo-ifeval
      obs rewards grpo-ifeval --format json
    """
    from obs.reports.rewards import load_rewards, rewards_json, rewards_text

    with friendly_errors(settings.debug):
        analysis = load_rewards(settings.warehouse, run)
    if output_format == "json":
        echo(rewards_json(analysis))
    else:
        echo(rewards_text(analysis), nl=False)


@click.command()
@click.option("--run", help="Only this run (id or unique name).")
@click.option(
    "--level",
    type=click.Choice(LEVELS),
    default="info",
    show_default=True,
    help="Only alerts at this level or above (info < warning < error < critical).",
)
@click.option(
    "--since-step",
    type=int,
    metavar="N",
    help="Only alerts raised at step N or later.",
)
@format_option("table", "json", default="table")
@pass_settings
def alerts(
    settings: Settings, run: str | None, level: str, since_step: int | None, output_format: str
) -> None:
    """Reward alerts: where an alert rule started to hold, each run's newest last.

    One alert per episode: a rule whose condition holds at a step and did
    not at the run's previous step (thresholds and trends on the reward
    statistics, KL, and reward hacking judged over sliding windows). The
    table format prints each run's alerts as `🚨 [CRITICAL] Step 19: ...`
    and then the counts by level; json prints the rows.

    Exit codes, for scripts that stop a run: 1 when a critical alert is
    among those selected, 0 otherwise (also when there are none); 2 when
    the alerts cannot be read (no warehouse, marts not built, unknown run).

    \b
    Example:
      obs alerts --level warning
      obs alerts --run grpo-ifeval --since-step 100 --format json
      obs alerts --run grpo-ifeval --level critical || echo "stop the run"
    """
    from obs.reports.rewards import alerts_json, alerts_text, load_alerts

    try:
        with friendly_errors(settings.debug):
            selection = load_alerts(settings.warehouse, run, level, since_step)
    except click.ClickException as exc:
        # 1 is the answer "a critical alert is present": a failure to answer is 2.
        # (click declares it on the class and reads it from the instance)
        exc.exit_code = 2  # type: ignore[misc]
        raise
    if output_format == "json":
        echo(alerts_json(selection))
    else:
        echo(alerts_text(selection), nl=False)
    if selection.critical:
        echo_err(f"{selection.critical} critical alert{'s' if selection.critical > 1 else ''}")
        click.get_current_context().exit(1)
