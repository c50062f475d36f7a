"""A run's dashboards in the server: the static pages' charts and tables, one tab at a time.

The training dashboard's tabs, reward monitoring, the agentic run and the run
report draw from the chart registry (``obs.reports.charts``) with the same
queries and figure functions as ``obs render-dashboard`` and ``obs analyze
--html``: one chart definition, two outputs. The reward and agent pages take
their sections from the static pages' own builders (``reward_sections``,
``agent_sections``): the same blocks in the same order (tiles, charts, the
quality report's advice, the raw data table, the group selector), drawn here
as HTML without inline script. A tab is named in the URL by its slug
(``?tab=curriculum-data-selection``); an unknown one shows the first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
from markupsafe import Markup
from obs.reports import charts as registry
from obs.reports.agent_dashboard import (
    AgentRun,
    agent_sections,
    load_agent_runs,
    runs_with_agent_data,
)
from obs.reports.figures.agent import agent_advantage_group
from obs.reports.render import comparison_figures, run_tab
from obs.reports.reward_dashboard import load_reward_runs, reward_sections, runs_with_reward_data

GROUP_CHART = "agent_advantage_group"


@dataclass
class Drawn:
    """A chart to show: its name (the page's block id), title, use-for line and figure
    (a figure, or its JSON as ``embed`` wrote it)."""

    name: str
    title: str
    use_for: str
    figure: go.Figure | Markup
    wide: bool = True
    picker: Picker | None = None  # the group heatmap's selector, above the chart
    kind: str = "chart"


@dataclass
class Tiles:
    """A block of numbers (the reward and agent pages' summary tiles)."""

    title: str
    use_for: str
    tiles: list[tuple[str, str]]
    kind: str = "tiles"


@dataclass
class Advice:
    """The reward quality report's issues, warnings and recommendations."""

    title: str
    use_for: str
    issues: list[str]
    warnings: list[str]
    recommendations: list[str]
    kind: str = "advice"


@dataclass
class RawTable:
    """The reward page's raw data table, a page of it at a time (``?page=N``)."""

    title: str
    use_for: str
    columns: list[str]
    rows: list[list[str]]  # this page's
    page: int
    pages: int
    total: int  # rows in the table (all its pages)
    note: str
    kind: str = "raw"


@dataclass
class Note:
    """In place of a tab's charts when the run has none of their data."""

    title: str
    text: str
    kind: str = "note"


@dataclass
class Picker:
    """The group heatmap's selector: ``(iteration, [(value, label), ...])`` and the
    value drawn (``iteration/group_id``)."""

    chart: str  # the chart it redraws
    options: list[tuple[int, list[tuple[str, str]]]]
    chosen: str
    note: str
    kind: str = "picker"


Block = Drawn | Tiles | Advice | RawTable | Note


@dataclass
class Board:
    """One tab of one of a run's dashboards."""

    kind: str  # training, rewards, agent
    tabs: list[tuple[str, str]]  # (slug, label)
    tab: str  # the slug shown
    blocks: list[Block] = field(default_factory=list)
    tiles: list[tuple[str, str]] = field(default_factory=list)  # the page's header numbers
    note: str = ""

    @property
    def charts(self) -> list[Drawn]:
        return [block for block in self.blocks if isinstance(block, Drawn)]


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
    board.blocks = list(_drawn(registry.TRAINING, label, figures))
    return board


def rewards(con: Any, run: dict[str, Any], wanted: str | None, *, page: int = 1) -> Board:
    """The reward monitoring tab ``wanted``: the static page's blocks of that tab."""
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
    [section] = [s for s in reward_sections(loaded) if s["title"] == label]
    for block in section["blocks"]:
        if block["kind"] == "raw":
            board.blocks.append(_raw_table(block, loaded.raw_rows, page))
        else:
            board.blocks.append(_block(block))
    return board


def agent(con: Any, run: dict[str, Any], wanted: str | None, *, group: str | None = None) -> Board:
    """The agentic run tab ``wanted``: the static page's blocks of that tab; ``group``
    (``iteration/group_id``) picks the group heatmap's group (default: the latest's first)."""
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
    [section] = [s for s in agent_sections(loaded) if s["title"] == label]
    for block in section["blocks"]:
        if block["kind"] == "groups":
            board.blocks.append(_groups(block, loaded, group))
        else:
            board.blocks.append(_block(block))
    return board


def _block(block: dict[str, Any]) -> Block:
    """One block of a static page's section (reward_dashboard, agent_dashboard) for the server."""
    kind = block["kind"]
    if kind == "chart":
        chart = block["info"]
        return Drawn(chart.name, chart.title, chart.use_for, block["figure"], chart.wide)
    if kind == "kpis":
        tiles = [(tile["label"], tile["value"]) for tile in block["tiles"]]
        return Tiles(block["title"], block["use_for"], tiles)
    if kind == "advice":
        return Advice(
            block["title"],
            block["use_for"],
            block["issues"],
            block["warnings"],
            block["recommendations"],
        )
    if kind == "note":
        return Note(block["title"], block["text"])
    raise ValueError(f"a section block of unknown kind {kind!r}")


def _raw_table(block: dict[str, Any], rows: list[list[str]], page: int) -> RawTable:
    """A page of the raw data table: ``rows`` are the ones the static page holds (its note
    says when the run has more)."""
    size = int(block["page_size"])
    pages = max(1, -(-len(rows) // size))
    page = min(max(page, 1), pages)
    shown = rows[(page - 1) * size : page * size]
    columns = list(block["columns"])
    return RawTable(
        block["title"], block["use_for"], columns, shown, page, pages, len(rows), block["note"]
    )


def _groups(block: dict[str, Any], loaded: AgentRun, group: str | None) -> Drawn:
    """The group heatmap with its selector, drawn for the group picked."""
    chart = block["info"]
    keys = [f"{entry['iteration']}/{entry['group_id']}" for entry in loaded.groups]
    options = [
        (iteration, [(keys[index], f"iteration {iteration} · {label}") for index, label in entries])
        for iteration, entries in block["options"]
    ]
    figure: go.Figure | Markup = block["figure"]
    chosen = keys[0] if keys else ""
    if group in keys and group != chosen:
        # the registry's figure function, with the picked entry and the first's colour range
        entry = loaded.groups[keys.index(group)]
        zmax = float(loaded.figures[GROUP_CHART].data[0].zmax)
        figure, chosen = agent_advantage_group(entry, zmax, title=chart.title), str(group)
    picker = Picker(chart.name, options, chosen, block["note"]) if options else None
    return Drawn(chart.name, chart.title, chart.use_for, figure, chart.wide, picker)


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
        if value != value:
            return "NaN"
        # a count summed as a double (200,096 rollouts) reads as a count, not 2.001e+05
        return f"{int(value):,}" if value.is_integer() and abs(value) < 1e15 else f"{value:,.4g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)
