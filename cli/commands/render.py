"""``obs render-dashboard``: the run's dashboard as one self-contained HTML file.

``--kind rewards`` writes the reward monitoring page instead, ``--kind agent``
the agentic run page.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click
from obs.cli.errors import friendly_errors
from obs.cli.options import Settings, echo, echo_err, marts_of, pass_settings, read_target_option

DEFAULT_OUT = {
    "combined": Path("reports_out/dashboard.html"),
    "rewards": Path("reports_out/rewards.html"),
    "agent": Path("reports_out/agent.html"),
}


@click.command("render-dashboard")
@click.argument("extra_iterations", nargs=-1, type=int, metavar="")
@click.option(
    "--run",
    "runs",
    multiple=True,
    help="Run(s) to show (repeatable; default: every run with rollouts or agentic data).",
)
@click.option(
    "--kind",
    type=click.Choice(["combined", "rewards", "agent"]),
    default="combined",
    show_default=True,
    help="The combined dashboard (with reward monitoring tabs for runs with reward data and"
    " agentic run tabs for runs with agent data), the reward monitoring page alone, or the"
    " agentic run page alone.",
)
@click.option(
    "--iterations",
    type=int,
    multiple=True,
    help="Only these iterations (--iterations 0 1 2).",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The page to write  [default: reports_out/dashboard.html; with --kind rewards"
    " reports_out/rewards.html, with --kind agent reports_out/agent.html]",
)
@click.option(
    "--output-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write one file per chart here instead (prompt_dynamics_fi.html, ...).",
)
@click.option(
    "--chart",
    "charts",
    multiple=True,
    help="With --output-dir: only this chart (repeatable; default all fourteen, and the"
    " compare_* charts with several runs).",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["html", "png"]),
    default="html",
    show_default=True,
    help="With --output-dir: HTML files, or PNGs through the system Chromium"
    " (PNG needs kaleido, the png extra of obs-warehouse).",
)
@click.option(
    "--plotlyjs",
    type=click.Choice(["inline", "cdn"]),
    default="inline",
    show_default=True,
    help="Embed plotly.js (works offline) or link it (smaller file).",
)
@read_target_option
@pass_settings
def render_dashboard_command(
    settings: Settings,
    extra_iterations: tuple[int, ...],
    runs: tuple[str, ...],
    kind: str,
    iterations: tuple[int, ...],
    out: Path | None,
    output_dir: Path | None,
    charts: tuple[str, ...],
    output_format: str,
    plotlyjs: str,
    target: str,
) -> None:
    """Render the dashboard of the built marts: header, five tabs, fourteen charts.

    One self-contained HTML file (plotly.js inline: it opens from disk with
    no network), or with --output-dir one file per chart under its chart
    names (prompt_dynamics_fi.html, ..., score_distribution.html). Runs with
    reward data get seven more tabs: the reward monitoring of --kind rewards.
    Runs with agent data get three more: the agentic run of --kind agent.

    A run with rollouts, reward data or agent data can be drawn: the page
    opens on the first tab with something of it to show, and a run without
    rollouts gets a line on stderr saying what it holds and what would land
    its prompts (with none of the three: exit 1 with that line). With no
    --run, the runs with rollouts or agent data (with neither, those with
    reward data).

    Several runs: a "Run comparison" tab comes first (learning curves, prompt
    outcomes and instruction difficulty, every run in one chart), the header
    is a table of runs, and the other tabs show the run picked in the page.
    With --output-dir the comparison charts go beside a folder per run.

    --kind rewards writes the reward monitoring page alone (summary tiles,
    reward signal, reward functions, training dynamics, quality, alerts and
    reward hacking, raw data), for every run with reward data or the --run
    ones; a warehouse without reward data gets a page that says so.

    --kind agent writes the agentic run page alone (a multi-turn agent's
    eval statistics over steps, groups kept and filtered, early exits, and
    turn-by-turn advantages with a group picker), for every run with agent
    data or the --run ones; a warehouse without it gets a page that says so.

    \b
    Example:
      obs render-dashboard --run grpo-ifeval --out dashboard.html
      obs render-dashboard --iterations 0 5 10 --out early.html
      obs render-dashboard --output-dir charts/ --format png --chart exploration
      obs render-dashboard --kind rewards --run grpo-ifeval --out rewards.html
      obs render-dashboard --kind agent --run agent-1 --out agent.html
    """
    # imported here: pandas and plotly are slow to import, and only this command needs them
    from obs.reports.chart_files import render_chart_files
    from obs.reports.render import load_dashboard, render_dashboard

    with friendly_errors(settings.debug):
        settings = dataclasses.replace(settings, warehouse=marts_of(settings, target))

    if extra_iterations and not iterations:
        raise click.UsageError(f"unexpected extra argument {extra_iterations[0]}")
    wanted = (*iterations, *extra_iterations) or None
    out = out or DEFAULT_OUT[kind]
    if kind in ("rewards", "agent"):
        _render_page(settings, kind, runs, wanted, output_dir, charts, output_format, out, plotlyjs)
        return
    if output_format == "png" and output_dir is None:
        raise click.UsageError("--format png needs --output-dir")
    if charts and output_dir is None:
        raise click.UsageError("--chart needs --output-dir")
    with friendly_errors(settings.debug):
        dashboard = load_dashboard(settings.warehouse, runs or None, wanted)
        for note in dashboard.notes:
            echo_err(note)
        if output_dir is not None:
            for path in render_chart_files(dashboard, output_dir, output_format, plotlyjs, charts):
                echo(str(path))
            return
        echo(str(render_dashboard(dashboard, out, plotlyjs)))


def _render_page(
    settings: Settings,
    kind: str,
    runs: tuple[str, ...],
    iterations: tuple[int, ...] | None,
    output_dir: Path | None,
    charts: tuple[str, ...],
    output_format: str,
    out: Path,
    plotlyjs: str,
) -> None:
    """``--kind rewards`` or ``--kind agent``: the reward monitoring or agentic run page."""
    for given, option in (
        (iterations, "--iterations"),
        (output_dir, "--output-dir"),
        (charts, "--chart"),
        (output_format != "html", "--format png"),
    ):
        if given:
            raise click.UsageError(f"{option} is for the combined dashboard, not --kind {kind}")
    with friendly_errors(settings.debug):
        if kind == "agent":
            from obs.reports.agent_dashboard import load_agent_dashboard, render_agent_dashboard

            agent = load_agent_dashboard(settings.warehouse, runs or None)
            path = render_agent_dashboard(agent, out, plotlyjs)
            reason, without, what = agent.reason, agent.without_data, "agentic data"
        else:
            from obs.reports.reward_dashboard import (
                load_reward_dashboard,
                render_reward_dashboard,
            )

            rewards = load_reward_dashboard(settings.warehouse, runs or None)
            path = render_reward_dashboard(rewards, out, plotlyjs)
            reason, without, what = rewards.reason, rewards.without_data, "reward data"
    if reason:
        echo_err(reason.split(":")[0] + f": {settings.warehouse} (the page says why)")
    elif without:
        echo_err(f"no {what} for run {', '.join(without)}")
    echo(str(path))
