"""The training dashboard: the combined page of ``obs render-dashboard``.

The numbers come from the marts through the SQL in ``reports/queries/``; which
queries and which figures, from the chart registry (``reports.charts``); the
page from the Jinja templates in ``reports/templates/``. plotly.js is embedded
once, inline, so the file opens from disk with no network (``plotlyjs="cdn"``
links it instead). Runs with reward or agent data get the reward monitoring and
agentic run tabs too (``reward_dashboard``, ``agent_dashboard``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import plotly.graph_objects as go
from obs.reports.agent_dashboard import (
    AgentRun,
    agent_sections,
    agent_tabs,
    load_agent_runs,
    runs_with_agent_data,
)
from obs.reports.blocks import Block, Note, Section
from obs.reports.charts import (
    COMPARISON,
    TRAINING,
    Chart,
    ChartData,
    charts_of,
    page_marts,
    queries_of,
    run_charts,
)
from obs.reports.errors import ReportError
from obs.reports.figures.comparison import run_colours
from obs.reports.figures.curriculum import VARIANCE_FLOOR
from obs.reports.headline import Success, scale_note, solved_line, solved_means
from obs.reports.page import chart_block, environment, for_run, plotly_script
from obs.reports.resolve import WITH_ROLLOUTS, choose_runs, holdings, notes_for
from obs.reports.reward_dashboard import (
    RewardRun,
    load_reward_runs,
    reward_sections,
    reward_tabs,
    runs_with_reward_data,
)
from obs.reports.sql import frame
from obs.reports.warehouse import connect, require_tables

HEATMAP_ROWS = 200  # prompts in each prompt heatmap: the most informative
SCATTER_POINTS = 3000  # points in each scatter (sample efficiency, V_i vs S_i)
PLATEAU_BARS = 300  # prompts in the plateau chart: the lowest recent variance
# The queries read with parameters of their own (beside the runs and iterations).
QUERY_PARAMETERS: dict[str, dict[str, Any]] = {
    "plateau": {"cap": PLATEAU_BARS, "variance_floor": VARIANCE_FLOOR},
}


@dataclass(frozen=True)
class RunCharts:
    """The fourteen figures of one run, and its header numbers.

    A run with no rollouts (one known from its reward monitor, eval files or
    console log only) has neither: its rollout tabs say so.
    """

    run_id: str
    header: dict[str, Any]
    figures: dict[str, go.Figure]
    # What its "prompts solved" and "learned" counted (headline.solved_means) ...
    solved_means: str = ""
    # ... and, when its scores leave the scale its threshold is for, the line saying so.
    scale_note: str = ""
    # ... and the var that sets the rule: success (--success), else pass_threshold.
    solved_var: str = "pass_threshold"

    @property
    def has_rollouts(self) -> bool:
        return bool(self.figures)


@dataclass
class Dashboard:
    runs: list[RunCharts]
    iterations: list[int] | None
    generated_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    # Reward monitoring of the runs with reward data: the extra tabs.
    rewards: list[RewardRun] = field(default_factory=list)
    # The agentic run sections of the runs with agent data: more extra tabs.
    agents: list[AgentRun] = field(default_factory=list)
    # With two or more runs with rollouts: the run comparison charts (first tab).
    comparison: dict[str, go.Figure] = field(default_factory=dict)
    # A line per set of runs shown without rollouts: what they hold, what lands the rest.
    notes: list[str] = field(default_factory=list)

    @property
    def run_ids(self) -> list[str]:
        return [run.run_id for run in self.runs]


def load_dashboard(
    warehouse: Path,
    runs: Sequence[str] | None = None,
    iterations: Sequence[int] | None = None,
    rewards: bool = True,
    agents: bool = True,
) -> Dashboard:
    """Read every chart's rows from the marts and build the figures, run by run.

    With ``rewards``, the runs with reward data get the reward monitoring
    sections too (none in a warehouse built before the reward marts); with
    ``agents``, the runs with agent data get the agentic run sections.
    """
    con = connect(warehouse)
    try:
        require_tables(con, warehouse, *page_marts(TRAINING))
        found = holdings(con)
        with_rollouts = [run for run, kinds in found.items() if WITH_ROLLOUTS in kinds]
        with_rewards = (runs_with_reward_data(con) or []) if rewards else []
        with_agents = (runs_with_agent_data(con) or []) if agents else []
        # By default the runs with rollouts or an agent's data (with neither, those with
        # reward data: a tracker history logs a reward too); any run when asked for.
        default = sorted({*with_rollouts, *with_agents}) or sorted(with_rewards)
        if not found:
            raise ReportError(f"{warehouse}: no runs built yet; run `obs build`")
        chosen = choose_runs(warehouse, list(dict.fromkeys(runs or ())), default, found)
        drawn = {*with_rollouts, *with_rewards, *with_agents}
        bare = [run for run in chosen or found if run not in drawn]
        if bare:
            # nothing of theirs to draw: say what they hold, and what would land prompts
            raise ReportError("; ".join(notes_for(found, bare, WITH_ROLLOUTS)))
        picked_iterations = sorted(set(iterations)) if iterations else None
        rollout_runs = [r for r in chosen if r in with_rollouts]
        params: dict[str, Any] = {
            "runs": rollout_runs,
            "iterations": picked_iterations,
            "cap": HEATMAP_ROWS,
            "scatter_cap": SCATTER_POINTS,
        }
        per_run = queries_of(run_charts(TRAINING).values(), TRAINING)
        frames = {
            name: frame(con, name, params | QUERY_PARAMETERS.get(name, {})) for name in per_run
        }
        # the build's thresholds (the dbt vars the marts used), one row
        settings = frame(con, "dashboard_settings", {}).iloc[0].to_dict()
        compared = (
            {name: frame(con, name, params) for name in queries_of(_compare_charts().values())}
            if len(rollout_runs) > 1
            else {}
        )
        reward_runs = load_reward_runs(con, [r for r in chosen if r in with_rewards])
        agent_runs = load_agent_runs(con, [r for r in chosen if r in with_agents])
    finally:
        con.close()
    charts = [
        _run_charts(run, frames, settings) if run in rollout_runs else RunCharts(run, {}, {})
        for run in chosen
    ]
    if picked_iterations is not None and rollout_runs and not any(c.header for c in charts):
        raise ReportError(f"{warehouse}: none of iterations {picked_iterations} was built")
    comparison = _comparison(rollout_runs, compared) if compared else {}
    return Dashboard(
        charts,
        picked_iterations,
        rewards=reward_runs,
        agents=agent_runs,
        comparison=comparison,
        notes=notes_for(found, chosen, WITH_ROLLOUTS),
    )


def _compare_charts() -> dict[str, Chart]:
    return charts_of(TRAINING, COMPARISON)


def _comparison(runs: list[str], frames: dict[str, pd.DataFrame]) -> dict[str, go.Figure]:
    """The run comparison charts: every run with rollouts in one chart each."""
    data = ChartData(frames, colours=run_colours(runs))
    return {name: chart.draw(data) for name, chart in _compare_charts().items()}


def _run_data(
    run: str, frames: dict[str, pd.DataFrame], settings: dict[str, Any]
) -> tuple[dict[str, Any], ChartData]:
    """One run's header numbers and its charts' data, from the queries' rows of every run."""
    one = for_run(frames, run)
    counts = one["prompt_counts"]
    total = int(counts["prompts"].iloc[0]) if not counts.empty else None
    header = one["header"].iloc[0].to_dict() if not one["header"].empty else {}
    return header, ChartData(one, settings=settings, prompts=total)


def _run_charts(run: str, frames: dict[str, pd.DataFrame], settings: dict[str, Any]) -> RunCharts:
    header, data = _run_data(run, frames, settings)
    built = {name: chart.draw(data) for name, chart in run_charts(TRAINING).items()}
    if not header:
        return RunCharts(run, header, built)
    # what the solved and learned counts stand on, and a scale the threshold may not fit
    threshold = float(settings["pass_threshold"])
    rule = Success.of(settings)
    return RunCharts(
        run,
        header,
        built,
        solved_means(header["solved_by"], threshold, rule),
        scale_note(
            header["solved_by"],
            threshold,
            header["min_score"],
            header["max_score"],
            rule,
            header.get("min_success_value"),
            header.get("max_success_value"),
        ),
        "success" if header["solved_by"] in ("score", "function") else "pass_threshold",
    )


def _params(runs: list[str]) -> dict[str, Any]:
    return {"runs": runs, "iterations": None, "cap": HEATMAP_ROWS, "scatter_cap": SCATTER_POINTS}


def run_tab(
    con: duckdb.DuckDBPyConnection, run: str, tab: str
) -> tuple[dict[str, Any], dict[str, go.Figure]]:
    """One run's header numbers and the figures of one tab of the training dashboard
    (``obs serve`` draws a tab at a time): the same queries and figure functions as
    the static dashboard's. The run must have rollouts."""
    charts = charts_of(TRAINING, tab)
    names = ("header", "prompt_counts", *queries_of(charts.values(), TRAINING))
    params = _params([run])
    frames = {
        name: frame(con, name, params | QUERY_PARAMETERS.get(name, {}))
        for name in dict.fromkeys(names)
    }
    settings = frame(con, "dashboard_settings", {}).iloc[0].to_dict()
    header, data = _run_data(run, frames, settings)
    if header:
        # what solved counts by (var success), and a threshold the run's range does not fit
        header["solved"] = solved_line(
            header["solved_by"],
            float(settings["pass_threshold"]),
            header["min_score"],
            header["max_score"],
            Success.of(settings),
            header.get("min_success_value"),
            header.get("max_success_value"),
        ).removeprefix("solved: ")
    return header, {name: chart.draw(data) for name, chart in charts.items()}


def comparison_figures(con: duckdb.DuckDBPyConnection, runs: list[str]) -> dict[str, go.Figure]:
    """The run comparison charts of ``runs`` (runs with rollouts), as the dashboard's first tab."""
    params = _params(runs)
    frames = {name: frame(con, name, params) for name in queries_of(_compare_charts().values())}
    return _comparison(runs, frames)


# The rollout tabs of a run that has no rollouts (one known from its reward
# monitor, eval files or console log).
NO_ROLLOUTS = (
    "run {run} has no rollouts, so these tabs have nothing to show: land its rollout dumps"
    " or table with obs ingest rollouts PATH --run {run}"
)
# The reward and agent tabs of a run that has none of their data.
NO_REWARDS = (
    "run {run} has no reward data: rollouts with reward columns, a reward monitor's folder"
    " (obs ingest monitoring) or a tracker history that logs the reward fill these tabs"
)
NO_AGENT = (
    "run {run} has no agentic data: an agent trainer's eval files (obs ingest eval-logs),"
    " its console log (obs ingest trainer-log) or multi-turn rollouts fill these tabs"
)


def _sections(run: RunCharts) -> list[Section]:
    """The training tabs of one run: their charts, or a note when it has no rollouts."""
    blocks: list[Block]
    sections = []
    for number, title in enumerate(TRAINING.tabs):
        if run.has_rollouts:
            blocks = [
                chart_block(chart, run.figures[name], f"{name}__{run.run_id}")
                for name, chart in charts_of(TRAINING, title).items()
            ]
        else:
            blocks = [Note("No rollouts", NO_ROLLOUTS.format(run=run.run_id))]
        sections.append(Section(f"section-{number}", title, blocks))
    return sections


def _by_run(run_ids: list[str], items: dict[str, list[Section]], note: str) -> list[dict[str, Any]]:
    """Every chosen run's sections of one kind, or the note saying it has none."""
    return [
        {"run_id": run, "sections": items.get(run), "note": note.format(run=run)} for run in run_ids
    ]


def solved_lines(runs: Sequence[RunCharts]) -> list[str]:
    """Under the runs table: what "solved" counted, a line per way and its runs, then a
    line per run whose scores leave the scale its threshold is for."""
    ways: dict[str, list[str]] = {}
    for run in runs:
        if run.header:
            ways.setdefault(run.solved_means, []).append(run.run_id)
    lines = [f"Solved: {way} ({', '.join(ids)})." for way, ids in ways.items()]
    return lines + [
        f"{run.run_id}: solved counts {run.solved_means}, but {run.scale_note}."
        for run in runs
        if run.scale_note
    ]


def opening_tab(dashboard: Dashboard, tab_ids: Sequence[str]) -> str:
    """The tab the page opens on: the first with something of the run shown first (the
    first run of the picker) to draw; the run comparison when there is one."""
    if not dashboard.runs or "section-compare" in tab_ids:
        return tab_ids[0]
    first = dashboard.runs[0]
    has = {
        "section": first.has_rollouts,
        "rewards": any(r.run_id == first.run_id for r in dashboard.rewards),
        "agentic": any(r.run_id == first.run_id for r in dashboard.agents),
    }
    return next((tab for tab in tab_ids if has[tab.split("-")[0]]), tab_ids[0])


def render_dashboard(dashboard: Dashboard, out: Path, plotlyjs: str = "inline") -> Path:
    """Write the combined dashboard: header, five tabs, the charts of every run.

    With several runs, a run comparison tab comes first and the other tabs show
    the run picked in the page. Runs with reward data add the seven reward
    monitoring tabs, runs with agent data the three agentic run tabs.
    """
    run_ids = dashboard.run_ids
    runs = [{"run": run, "sections": _sections(run)} for run in dashboard.runs]
    tabs = [{"id": f"section-{n}", "title": t} for n, t in enumerate(TRAINING.tabs)]
    compare = _compare_charts()
    comparison = [
        chart_block(compare[name], figure, name) for name, figure in dashboard.comparison.items()
    ]
    if comparison:
        tabs.insert(0, {"id": "section-compare", "title": COMPARISON})
    rewards = _by_run(
        run_ids, {r.run_id: reward_sections(r) for r in dashboard.rewards}, NO_REWARDS
    )
    agents = _by_run(run_ids, {r.run_id: agent_sections(r) for r in dashboard.agents}, NO_AGENT)
    shown_tabs = [
        *tabs,
        *(reward_tabs() if dashboard.rewards else []),
        *(agent_tabs() if dashboard.agents else []),
    ]
    html = (
        environment()
        .get_template("dashboard.html")
        .render(
            title="obs: " + ", ".join(run_ids),
            plotly_script=plotly_script(plotlyjs),
            runs=runs,
            run_ids=run_ids,
            tabs=tabs,
            comparison=comparison,
            rewards=rewards,
            reward_tabs=reward_tabs() if dashboard.rewards else [],
            agents=agents,
            agent_tabs=agent_tabs() if dashboard.agents else [],
            iterations=dashboard.iterations,
            generated_at=dashboard.generated_at.strftime("%Y-%m-%d %H:%M UTC"),
            opening=opening_tab(dashboard, [t["id"] for t in shown_tabs]),
            solved_lines=solved_lines(dashboard.runs),
        )
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html)
    return out
