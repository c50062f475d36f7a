"""A run's dashboards a tab at a time, as ``obs serve`` shows them: the static pages'
blocks (``reports.blocks``) of one tab.

The training dashboard's tabs, reward monitoring, the agentic run and the run
report draw from the chart registry (``reports.charts``) with the same queries
and figure functions as ``obs render-dashboard`` and ``obs analyze --html``:
one chart definition, two outputs. The reward and agent tabs are the static
pages' own sections (``reward_sections``, ``agent_sections``): the same blocks
in the same order, which the server's templates draw as HTML without inline
script. A tab is named by its slug (``curriculum-data-selection``); an unknown
one shows the first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from obs.reports import charts as registry
from obs.reports.agent_dashboard import agent_sections, load_agent_runs, runs_with_agent_data
from obs.reports.blocks import Block, ChartBlock, Groups, Section
from obs.reports.figures.agent import agent_advantage_group
from obs.reports.page import chart_block
from obs.reports.render import comparison_figures, run_tab
from obs.reports.reward_dashboard import load_reward_runs, reward_sections, runs_with_reward_data
from obs.reports.run_report import report_content
from obs.reports.runs import analyze
from obs.reports.runs_format import analysis_text


@dataclass
class Board:
    """One tab of one of a run's dashboards."""

    kind: str  # training, rewards, agent
    tabs: list[tuple[str, str]]  # (slug, label)
    tab: str  # the slug shown
    blocks: list[Block] = field(default_factory=list)
    tiles: list[tuple[str, str]] = field(default_factory=list)  # the page's header numbers
    note: str = ""
    page: int = 1  # the page of its table shown

    @property
    def charts(self) -> list[ChartBlock]:
        return [
            block.chart if isinstance(block, Groups) else block
            for block in self.blocks
            if isinstance(block, ChartBlock | Groups)
        ]


def slug(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")


def _pick(page: registry.Page, wanted: str | None) -> tuple[list[tuple[str, str]], str, str]:
    tabs = [(slug(label), label) for label in page.tabs]
    chosen = next(((s, label) for s, label in tabs if s == wanted), tabs[0])
    return tabs, chosen[0], chosen[1]


def _charts(page: registry.Page, tab: str, figures: dict[str, Any]) -> list[ChartBlock]:
    return [
        chart_block(chart, figures[name], name)
        for name, chart in registry.charts_of(page, tab).items()
        if name in figures
    ]


def training(con: Any, run: dict[str, Any], wanted: str | None) -> Board:
    tabs, chosen, label = _pick(registry.TRAINING, wanted)
    board = Board("training", tabs, chosen)
    if not run["has_rollouts"]:
        board.note = (
            f"run {run['run_id']} has no rollouts, so the training dashboard has nothing to"
            " show: land its rollout dumps or table with obs ingest rollouts PATH --run"
            f" {run['run_id']}; its other pages are linked above"
        )
        return board
    header, figures = run_tab(con, run["run_id"], label)
    tiles = {k: v for k, v in header.items() if k != "run_id"}
    board.tiles = [(name.replace("_", " "), _shown(v)) for name, v in tiles.items()]
    board.blocks = list(_charts(registry.TRAINING, label, figures))
    return board


# What a run without a page's data shows in place of its tabs.
NO_REWARDS = (
    "run {run} has no reward data: rollouts with reward columns, a reward monitor's folder"
    " (obs ingest monitoring) or a tracker history that logs the reward fill this page"
)
NO_AGENT = (
    "run {run} has no agentic data: an agent trainer's eval files (obs ingest eval-logs),"
    " its console log (obs ingest trainer-log) or multi-turn rollouts fill this page"
)


def rewards(con: Any, run: dict[str, Any], wanted: str | None, *, page: int = 1) -> Board:
    """The reward monitoring tab ``wanted``: the static page's blocks of that tab, its
    raw data table at page ``page``."""
    tabs, chosen, label = _pick(registry.REWARDS, wanted)
    board = Board("rewards", tabs, chosen, page=page)
    if run["run_id"] not in (runs_with_reward_data(con) or []):
        board.note = NO_REWARDS.format(run=run["run_id"])
    else:
        [loaded] = load_reward_runs(con, [run["run_id"]])
        board.blocks = _tab(reward_sections(loaded), label)
    return board


def agent(con: Any, run: dict[str, Any], wanted: str | None, *, group: str | None = None) -> Board:
    """The agentic run tab ``wanted``: the static page's blocks of that tab; ``group``
    (``iteration/group_id``) picks the group heatmap's group (default: the latest's first)."""
    tabs, chosen, label = _pick(registry.AGENT, wanted)
    board = Board("agent", tabs, chosen)
    if run["run_id"] not in (runs_with_agent_data(con) or []):
        board.note = NO_AGENT.format(run=run["run_id"])
    else:
        [loaded] = load_agent_runs(con, [run["run_id"]])
        board.blocks = [
            _picked(block, group) if isinstance(block, Groups) else block
            for block in _tab(agent_sections(loaded), label)
        ]
    return board


def _tab(sections: list[Section], label: str) -> list[Block]:
    """The blocks of the section of tab ``label``."""
    return next(list(section.blocks) for section in sections if section.title == label)


def _picked(block: Groups, group: str | None) -> Groups:
    """The group heatmap drawn for the group picked (``iteration/group_id``): the
    registry's figure function, with that entry and the first's colour range."""
    keys = [Groups.key(entry) for entry in block.entries]
    if group not in keys or keys.index(group) == block.chosen:
        return block
    index = keys.index(group)
    zmax = float(block.chart.figure.data[0].zmax)
    figure = agent_advantage_group(block.entries[index], zmax, title=block.chart.title)
    return replace(block, chart=replace(block.chart, figure=figure), chosen=index)


def comparison(con: Any, with_rollouts: list[str]) -> list[ChartBlock]:
    """The run comparison charts of the runs with rollouts (two or more)."""
    if len(with_rollouts) < 2:
        return []
    figures = comparison_figures(con, with_rollouts)
    return _charts(registry.TRAINING, registry.COMPARISON, figures)


def report(warehouse: Path, run_id: str) -> tuple[str, Any]:
    """``obs analyze RUN`` as text, and the run report's charts and cards."""
    analysis = analyze(warehouse, run_id)
    return analysis_text(analysis), report_content(warehouse, analysis)


def _shown(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if value != value:
            return "NaN"
        # a count summed as a double (200,096 rollouts) reads as a count, not 2.001e+05
        return f"{int(value):,}" if value.is_integer() and abs(value) < 1e15 else f"{value:,.4g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)
