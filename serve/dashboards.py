"""A run's dashboards in the server: the static pages' charts, one tab at a time.

The training dashboard's tabs, reward monitoring, the agentic run and the run
report draw from the chart registry (``obs.reports.charts``) with the same
queries and figure functions as ``obs render-dashboard`` and ``obs analyze
--html``: one chart definition, two outputs. A tab is named in the URL by
its slug (``?tab=curriculum-data-selection``); an unknown one shows the first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
from obs.reports import charts as registry
from obs.reports.agent_dashboard import load_agent_runs, runs_with_agent_data
from obs.reports.render import comparison_figures, run_tab
from obs.reports.reward_dashboard import load_reward_runs, runs_with_reward_data


@dataclass
class Drawn:
    """A chart to show: its name (the page's block id), title, use-for line and figure."""

    name: str
    title: str
    use_for: str
    figure: go.Figure


@dataclass
class Board:
    """One tab of one of a run's dashboards."""

    kind: str  # training, rewards, agent
    tabs: list[tuple[str, str]]  # (slug, label)
    tab: str  # the slug shown
    charts: list[Drawn] = field(default_factory=list)
    tiles: list[tuple[str, str]] = field(default_factory=list)
    note: str = ""


def slug(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")


def _pick(page: registry.Page, wanted: str | None) -> tuple[list[tuple[str, str]], str, str]:
    tabs = [(slug(label), label) for label in page.tabs]
    chosen = next(((s, label) for s, label in tabs if s == wanted), tabs[0])
    return tabs, chosen[0], chosen[1]


def _drawn(page: registry.Page, tab: str, figures: dict[str, go.Figure]) -> list[Drawn]:
    return [
        Drawn(name, chart.title, chart.use_for, figures[name])
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
    board.charts = _drawn(registry.TRAINING, label, figures)
    return board


def rewards(con: Any, run: dict[str, Any], wanted: str | None) -> Board:
    tabs, chosen, label = _pick(registry.REWARDS, wanted)
    board = Board("rewards", tabs, chosen)
    if run["run_id"] not in (runs_with_reward_data(con) or []):
        board.note = (
            f"run {run['run_id']} has no reward data: rollouts with reward columns, a reward"
            " monitor's folder (obs ingest monitoring) or a tracker history that logs the"
            " reward fill this page"
        )
        return board
    [loaded] = load_reward_runs(con, [run["run_id"]])
    board.tiles = [(name.replace("_", " "), _shown(v)) for name, v in loaded.summary.items()]
    board.charts = _drawn(registry.REWARDS, label, loaded.figures)
    if not board.charts and label != registry.REWARD_SUMMARY:
        board.note = "this tab's tables are in the static page: obs render-dashboard --kind rewards"
    return board


def agent(con: Any, run: dict[str, Any], wanted: str | None) -> Board:
    tabs, chosen, label = _pick(registry.AGENT, wanted)
    board = Board("agent", tabs, chosen)
    if run["run_id"] not in (runs_with_agent_data(con) or []):
        board.note = (
            f"run {run['run_id']} has no agentic data: an agent trainer's eval files (obs"
            " ingest eval-logs), its console log (obs ingest trainer-log) or multi-turn"
            " rollouts fill this page"
        )
        return board
    [loaded] = load_agent_runs(con, [run["run_id"]])
    board.tiles = [(name.replace("_", " "), _shown(v)) for name, v in loaded.summary.items()]
    board.charts = _drawn(registry.AGENT, label, loaded.figures)
    return board


def comparison(con: Any, with_rollouts: list[str]) -> list[Drawn]:
    """The run comparison charts of the runs with rollouts (two or more)."""
    if len(with_rollouts) < 2:
        return []
    figures = comparison_figures(con, with_rollouts)
    page, tab = registry.TRAINING, registry.COMPARISON
    return _drawn(page, tab, figures)


def report(warehouse: Path, run_id: str) -> tuple[str, Any]:
    """``obs analyze RUN`` as text, and the run report's charts and cards."""
    from obs.reports.run_report import report_content
    from obs.reports.runs import analyze
    from obs.reports.runs_format import analysis_text

    analysis = analyze(warehouse, run_id)
    return analysis_text(analysis), report_content(warehouse, analysis)


def _shown(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return "NaN" if value != value else f"{value:,.4g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)
