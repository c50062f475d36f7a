"""Agentic runs: a multi-turn agent's GRPO training as one static page.

``obs render-dashboard --kind agent`` writes the page; the combined dashboard
adds the same sections as extra tabs for its runs with agent data. The
numbers come from the agent marts (fct_eval_steps, fct_group_summary,
fct_turn_advantages, fct_turn_summary) through the
``reports/queries/agent_*.sql`` queries their charts name in the chart
registry (``reports.charts``), the page from its blocks (``reports.blocks``)
through the templates ``sections.html``, ``_blocks.html`` and ``_agent_assets.html``
(``obs serve`` draws the same blocks). Python only picks rows and formats them: every
statistic is the marts'.

The group heatmap draws one (iteration, group) at a time: the page embeds the
cells of the run's latest ``HEATMAP_ITERATIONS`` iterations as JSON, and a
``<select>`` redraws the chart with the group picked (fewer iterations when
theirs would pass ``HEATMAP_CELLS`` cells: the page says so).
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
from obs.reports.blocks import Block, ChartBlock, Groups, Note, Section, Tile, Tiles
from obs.reports.charts import AGENT, CHARTS, EVALS, GROUPS, TURNS, ChartData, charts_of, queries_of
from obs.reports.figures.agent import (
    ADVANTAGE_ORIGINS,
    EVAL_MISSING,
    GROUPS_MISSING,
    TURNS_MISSING,
    advantage_group_title,
)
from obs.reports.page import (
    SectionsPage,
    chart_block,
    for_run,
    write_sections_page,
)
from obs.reports.resolve import runs_with_data
from obs.reports.sql import frame
from obs.reports.warehouse import connect, table_names

PAGE = SectionsPage(
    kind="agentic run: a multi-turn agent trained with GRPO",
    missing="agentic data",
    no_data_block="no_agent_data",
    layout="agent",
    assets_template="_agent_assets.html",
)

# The agent marts: a warehouse built before them has no agentic data to show.
AGENT_MARTS = ("fct_eval_steps", "fct_group_summary", "fct_turn_advantages", "fct_turn_summary")
HEATMAP_ITERATIONS = 20  # iterations (all their groups) the group selector holds, the latest
HEATMAP_CELLS = 150_000  # ... fewer when their cells would pass this (a few MB of JSON)
TEXT_CELLS = 160  # the group heatmap writes each cell's value up to this many cells
PREVIEW = 70  # characters of a group's question in the selector
SUMMARY_USE_FOR = (
    "a first look at the agent: where eval accuracy stands and how it moved, how many groups"
    " the last iteration trained on, and how often rollouts stop early"
)
ADVANTAGE_ORIGIN_CODES = {("rollouts", False): 0, ("rollouts", True): 1, ("trainer-log", True): 2}


@dataclass(frozen=True)
class AgentRun:
    """One run's agentic charts: its tiles, figures and the group selector's entries."""

    run_id: str
    summary: dict[str, Any]
    figures: dict[str, go.Figure]
    # The group heatmap's entries, latest iteration first (the first is drawn at load).
    groups: list[dict[str, Any]]
    groups_note: str
    # Which of the three tabs have rows (a tab without says so in one note, not empty charts).
    has_evals: bool = True
    has_groups: bool = True
    has_turns: bool = True


@dataclass
class AgentDashboard:
    runs: list[AgentRun]
    # Why the page has no run to show (no agent marts, no agent data), else None.
    reason: str | None = None
    # Runs asked for that have no agent data.
    without_data: list[str] = field(default_factory=list)
    generated_at: datetime = field(default_factory=lambda: datetime.now(UTC))


def runs_with_agent_data(con: duckdb.DuckDBPyConnection) -> list[str] | None:
    """The runs with rows in the agent marts; None when those marts are not built."""
    present = table_names(con)
    if any(mart not in present for mart in AGENT_MARTS):
        return None
    return [str(r) for r in frame(con, "agent_runs", {})["run_id"]]


def load_agent_runs(con: duckdb.DuckDBPyConnection, runs: Sequence[str]) -> list[AgentRun]:
    """Read every agent chart's rows for ``runs`` (each must have agent data)."""
    if not runs:
        return []
    params = {"runs": list(runs), "iteration_cap": HEATMAP_ITERATIONS, "cell_cap": HEATMAP_CELLS}
    queries = queries_of(charts_of(AGENT).values(), AGENT)
    frames = {name: frame(con, name, params) for name in queries}
    return [_agent_run(run, frames) for run in runs]


def load_agent_dashboard(warehouse: Path, runs: Sequence[str] | None = None) -> AgentDashboard:
    """The agentic run page's runs; a reason instead when none has agent data."""
    con = connect(warehouse)
    try:
        with_data = runs_with_agent_data(con)
        chosen, without = runs_with_data(con, warehouse, runs, with_data or [], AGENT_MARTS)
        if with_data is None:
            return AgentDashboard(
                [],
                "No agentic data: this warehouse was built before the agent marts"
                " (fct_eval_steps, fct_group_summary, fct_turn_advantages, fct_turn_summary)."
                " Run `obs build` to build them.",
                list(runs or ()),
            )
        loaded = load_agent_runs(con, chosen)
    finally:
        con.close()
    reason = None
    if not loaded and without:
        reason = (
            f"No agentic data for run {', '.join(without)}: the agent marts have no eval step,"
            f" group summary or turn advantage for it (runs with agentic data:"
            f" {', '.join(with_data) or 'none'})."
        )
    elif not loaded:
        reason = (
            "No agentic data: no run in this warehouse has eval steps, group summaries or turn"
            " advantages of a multi-turn agent. Land the agent's eval files (`obs ingest"
            " eval-logs DIR --run RUN`), its console log (`obs ingest trainer-log FILE --run"
            " RUN`) or rollouts with turn_advantages, turn_rewards, num_turns or exit_reason"
            " (`obs ingest rollouts`); then `obs build`."
        )
    return AgentDashboard(loaded, reason, without)


def _agent_run(run: str, frames: dict[str, pd.DataFrame]) -> AgentRun:
    one = for_run(frames, run)
    summary = one["agent_summary"].iloc[0].to_dict() if not one["agent_summary"].empty else {}
    evals = one["agent_eval_steps"]
    groups = one["agent_group_summary"]
    turns = one["agent_turn_summary"]
    cells = one["agent_advantage_cells"]
    entries = advantage_groups(cells)
    data = ChartData(one, groups=entries)
    built = {name: chart.draw(data) for name, chart in charts_of(AGENT).items()}
    return AgentRun(
        run,
        summary,
        built,
        entries,
        _groups_note(run, cells),
        has_evals=bool((~evals["is_baseline"].astype(bool)).any()),
        has_groups=not groups.empty,
        has_turns=not turns.empty,
    )


def _groups_note(run: str, cells: pd.DataFrame) -> str:
    if cells.empty:
        return ""
    total = int(cells["iterations_total"].iloc[0])
    shown = cells["iteration"].nunique()
    if shown < total:
        return (
            f"The selector holds the latest {shown} of the {total} iterations with turn"
            f" advantages (every group of each); for an earlier one: obs show advantages --run"
            f" {run} --iteration N"
        )
    return f"The selector holds all {total} iterations with turn advantages, every group of each."


def advantage_groups(cells: pd.DataFrame) -> list[dict[str, Any]]:
    """The group selector's entries: one per (iteration, group), latest iteration first.

    Each holds the group's advantages as a rollout x turn grid (``z``, None
    where the rollout had stopped), how each came about (``how``: an index of
    ADVANTAGE_ORIGINS), the option label and the chart's title and
    height, so the page redraws the chart without reading anything else.
    """
    title = CHARTS["agent_advantage_group"].title
    entries = []
    for (iteration, _), rows in cells.groupby(["iteration", "group_rank"], sort=False):
        samples = sorted(int(s) for s in rows["sample_idx"].unique())
        row_of = {sample: index for index, sample in enumerate(samples)}
        width = int(rows["turn"].max())
        z: list[list[float | None]] = [[None] * width for _ in samples]
        how: list[list[int | None]] = [[None] * width for _ in samples]
        for cell in rows.itertuples(index=False):
            at, turn = row_of[int(cell.sample_idx)], int(cell.turn) - 1
            z[at][turn] = float(cell.advantage)
            how[at][turn] = ADVANTAGE_ORIGIN_CODES.get((str(cell.source), bool(cell.is_given)), 1)
        codes = {code for row in how for code in row if code is not None}
        origin = (
            ADVANTAGE_ORIGINS[codes.pop()]
            if len(codes) == 1
            else "some given, some computed from turn rewards"
        )
        group_id = str(rows["group_id"].iloc[0])
        preview = rows["prompt_preview"].dropna()
        label = f"group {group_id} ({len(samples)} rollouts, {width} turns)"
        if not preview.empty:
            text = str(preview.iloc[0])
            label += ": " + (text if len(text) <= PREVIEW else text[: PREVIEW - 1] + "…")
        entry = {
            "iteration": int(iteration),
            "group_id": group_id,
            "label": label,
            "origin": origin,
            "rollouts": [sample + 1 for sample in samples],
            "turns": list(range(1, width + 1)),
            "z": z,
            "how": how,
            "height": max(380, min(900, 190 + 38 * len(samples))),
            "text": len(samples) * width <= TEXT_CELLS,
        }
        entry["title"] = advantage_group_title(title, entry)
        entries.append(entry)
    return entries


def _known(value: Any) -> bool:
    return value is not None and not pd.isna(value)


def _pct(value: Any) -> str:
    return f"{float(value):.1%}" if _known(value) else "-"


def _int(value: Any) -> str:
    return f"{int(value):,}" if _known(value) else "-"


def _tiles(summary: dict[str, Any], evals: bool, groups: bool) -> list[Tile]:
    """The summary tiles: the latest eval step's accuracy (with ``evals``), the latest
    iteration's groups (with ``groups``), the iterations with turn advantages."""
    get = summary.get
    tiles: list[Tile] = []
    if evals:
        at_step = f" (step {_int(get('eval_step'))})" if _known(get("eval_step")) else ""
        since = f" since step {_int(get('previous_step'))}" if _known(get("previous_step")) else ""
        change = get("accuracy_change")
        tiles += [
            Tile(f"Eval accuracy{at_step}", _pct(get("accuracy"))),
            Tile(
                f"Accuracy change{since}",
                f"{float(change) * 100:+.1f} pts" if change is not None and _known(change) else "-",
            ),
        ]
        if _known(get("baseline_accuracy")):
            tiles.append(Tile("Baseline accuracy", _pct(get("baseline_accuracy"))))
        if _known(get("beat_rate")):
            tiles.append(Tile(f"Beat the baseline{at_step}", _pct(get("beat_rate"))))
        tiles.append(Tile("Eval steps", _int(get("eval_steps"))))
    if groups:
        at = (
            f" (iteration {_int(get('group_iteration'))})" if _known(get("group_iteration")) else ""
        )
        kept = "-"
        if _known(get("groups_total")):
            kept = (
                f"{_int(get('groups_kept'))} / {_int(get('groups_filtered'))}"
                f" of {_int(get('groups_total'))}"
            )
        early = _pct(get("early_exit_rate"))
        if _known(get("early_exit_rate")) and _known(get("rollouts")):
            early += f" ({_int(get('finished_early'))}/{_int(get('rollouts'))})"
        tiles += [
            Tile(f"Groups kept / filtered{at}", kept),
            Tile(f"Early-exit rate{at}", early),
            Tile(f"Tokens trained on{at}", _pct(get("trainable_token_share"))),
            Tile("Iterations with group counts", _int(get("iterations"))),
        ]
        if get("all_filtered_iterations"):
            tiles.append(
                Tile("Iterations with every group filtered", _int(get("all_filtered_iterations")))
            )
    if get("advantage_iterations"):
        tiles.append(Tile("Iterations with turn advantages", _int(get("advantage_iterations"))))
    return tiles


def _chart_block(run: AgentRun, name: str) -> ChartBlock:
    return chart_block(CHARTS[name], run.figures[name], f"{name}__{run.run_id}")


def _group_block(run: AgentRun) -> Groups:
    """The group heatmap with its selector (options grouped by iteration)."""
    return Groups(_chart_block(run, "agent_advantage_group"), run.groups, run.groups_note)


def agent_sections(run: AgentRun) -> list[Section]:
    """The sections of one run: the tab's charts (the group heatmap with its selector),
    the summary tiles first; a note in place of a tab's charts when the run has none of
    their data."""
    summary = Tiles(
        "agent_summary",
        "Summary",
        SUMMARY_USE_FOR,
        _tiles(run.summary, run.has_evals, run.has_groups),
    )
    charts: dict[str, list[Block]] = {
        tab: [
            _group_block(run) if name == "agent_advantage_group" else _chart_block(run, name)
            for name in charts_of(AGENT, tab)
        ]
        for tab in AGENT.tabs
    }
    blocks: list[list[Block]] = [
        [summary, *charts[EVALS]]
        if run.has_evals
        else [summary, Note("No eval statistics", EVAL_MISSING)],
        charts[GROUPS] if run.has_groups else [Note("No group summary", GROUPS_MISSING)],
        charts[TURNS] if run.has_turns else [Note("No turn advantages", TURNS_MISSING)],
    ]
    return [
        Section(f"agentic-{number}", title, blocks[number])
        for number, title in enumerate(AGENT.tabs)
    ]


def agent_tabs() -> list[dict[str, str]]:
    return [{"id": f"agentic-{n}", "title": t} for n, t in enumerate(AGENT.tabs)]


def render_agent_dashboard(dashboard: AgentDashboard, out: Path, plotlyjs: str = "inline") -> Path:
    """Write the agentic run page: three tabs, every run's section in each."""
    runs = [{"run": run, "sections": agent_sections(run)} for run in dashboard.runs]
    names = ", ".join(r.run_id for r in dashboard.runs) or "no agentic data"
    return write_sections_page(
        PAGE,
        out,
        title=f"obs agentic run: {names}",
        runs=runs,
        tabs=agent_tabs(),
        reason=dashboard.reason,
        without_data=dashboard.without_data,
        generated_at=dashboard.generated_at,
        plotlyjs=plotlyjs,
    )
