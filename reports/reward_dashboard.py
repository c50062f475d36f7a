"""Reward monitoring: the GRPO reward monitor's seven views as one static page.

``obs render-dashboard --kind rewards`` writes the page; the combined dashboard
adds the same seven sections as extra tabs for its runs with reward data. The
numbers come from the reward marts (fct_reward_*, fct_alerts) through the
``reports/queries/reward_*.sql`` queries their charts name in the chart
registry (``reports.charts``), the page from its blocks (``reports.blocks``)
through the templates ``sections.html`` and ``_blocks.html`` (``obs serve`` draws
the same blocks).
Python only picks rows and formats them: every statistic is the marts'.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import plotly.graph_objects as go
from obs.reports.blocks import Advice, Block, Note, Section, Table, Tile, Tiles
from obs.reports.charts import (
    RAW_DATA,
    REWARD_FUNCTIONS,
    REWARD_QUALITY,
    REWARD_SIGNAL,
    REWARD_SUMMARY,
    REWARDS,
    TRAINING,
    ChartData,
    charts_of,
    page_marts,
    queries_of,
)
from obs.reports.figures.base import as_strings
from obs.reports.figures.rewards import reward_function_colours
from obs.reports.page import (
    SectionsPage,
    chart_block,
    for_run,
    write_sections_page,
)
from obs.reports.resolve import WITH_REWARDS, runs_of, runs_with_data
from obs.reports.sql import frame
from obs.reports.warehouse import connect, table_names

PAGE = SectionsPage(
    kind="reward monitoring",
    missing="reward data",
    no_data_block="no_reward_data",
    layout="reward",
    assets_template="_reward_assets.html",
)

# The marts the page reads beyond the training dashboard's (it reads the runs' mean
# score there too): a warehouse built before them has no reward data to show.
REWARD_MARTS = tuple(mart for mart in page_marts(REWARDS) if mart not in page_marts(TRAINING))
RAW_ROWS = 1000  # steps in each run's raw data table (the first ones)
RAW_PAGE = 25  # rows on one page of the raw data table
# The raw data table: fct_reward_steps' columns as reward_steps.sql reads them.
RAW_COLUMNS = (
    ("step", "d"),
    ("basis", ""),
    ("n", "d"),
    ("mean", ".4f"),
    ("std", ".4f"),
    ("min", ".4f"),
    ("max", ".4f"),
    ("signal_to_noise", ".3f"),
    ("entropy", ".3f"),
    ("variance", ".4f"),
    ("kl_divergence", ".4f"),
    ("policy_entropy", ".4f"),
    ("advantage_mean", ".4f"),
    ("advantage_std", ".4f"),
    ("performance", ".4f"),
)
SUMMARY_USE_FOR = (
    "a first look at the run's reward signal: how far it went, where the reward stands"
    " now, and whether anything was flagged"
)
ADVICE_USE_FOR = (
    "knowing what the quality report found wrong with the reward (issues, warnings)"
    " and what to try (recommendations)"
)
RAW_USE_FOR = "reading the exact numbers behind the charts, step by step"


@dataclass(frozen=True)
class RewardRun:
    """One run's reward monitoring: its tiles, figures, advice and raw rows."""

    run_id: str
    summary: dict[str, Any]
    figures: dict[str, go.Figure]
    advice: dict[str, list[str]]
    raw_rows: list[list[str]]
    raw_total: int
    # What the total reward R of the page is, and how it stands to the rollouts' score.
    total_note: str = ""


@dataclass
class RewardDashboard:
    runs: list[RewardRun]
    # Why the page has no run to show (no reward marts, no reward data), else None.
    reason: str | None = None
    # Runs asked for that have no reward data.
    without_data: list[str] = field(default_factory=list)
    generated_at: datetime = field(default_factory=lambda: datetime.now(UTC))


def runs_with_reward_data(con: duckdb.DuckDBPyConnection) -> list[str] | None:
    """The runs fct_reward_steps has rows for; None when the reward marts are not built."""
    present = table_names(con)
    if any(mart not in present for mart in REWARD_MARTS):
        return None
    return runs_of(con, WITH_REWARDS)


def load_reward_runs(con: duckdb.DuckDBPyConnection, runs: Sequence[str]) -> list[RewardRun]:
    """Read every reward chart's rows for ``runs`` (each must have reward data)."""
    if not runs:
        return []
    params = {"runs": list(runs)}
    queries = queries_of(charts_of(REWARDS).values(), REWARDS)
    frames = {name: frame(con, name, params) for name in queries}
    return [_reward_run(run, frames) for run in runs]


def load_reward_dashboard(warehouse: Path, runs: Sequence[str] | None = None) -> RewardDashboard:
    """The reward monitoring page's runs; a reason instead when none has reward data."""
    con = connect(warehouse)
    try:
        with_data = runs_with_reward_data(con)
        chosen, without = runs_with_data(con, warehouse, runs, with_data or [], WITH_REWARDS.marts)
        if with_data is None:
            return RewardDashboard(
                [],
                "No reward data: this warehouse was built before reward monitoring (the"
                " fct_reward_* marts are missing). Run `obs build` to build them.",
                list(runs or ()),
            )
        loaded = load_reward_runs(con, chosen)
    finally:
        con.close()
    reason = None
    if not loaded and without:
        reason = (
            f"No reward data for run {', '.join(without)}: fct_reward_steps has no row for it"
            f" (runs with reward data: {', '.join(with_data) or 'none'})."
        )
    elif not loaded:
        reason = (
            "No reward data: no run in this warehouse has reward statistics (fct_reward_steps"
            " is empty). Reward monitoring needs per-function rewards in the rollouts (a"
            " dump's `rewards` object, or V_i and S_i), or a trainer's or reward monitor's"
            " reward metrics (`obs ingest metrics`); then `obs build`."
        )
    return RewardDashboard(loaded, reason, without)


def _cell(value: Any, spec: str) -> str:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return "-"
    if spec == "d":
        return str(int(value))
    return format(float(value), spec) if spec else str(value)


def _reward_run(run: str, frames: dict[str, pd.DataFrame]) -> RewardRun:
    one = for_run(frames, run)
    summary = one["reward_summary"].iloc[0].to_dict() if not one["reward_summary"].empty else {}
    steps = one["reward_steps"]
    functions = one["reward_function_steps"]["reward_function"].unique().tolist()
    data = ChartData(one, colours=reward_function_colours(functions))
    built = {name: chart.draw(data) for name, chart in charts_of(REWARDS).items()}
    quality = one["reward_quality"]
    advice = {
        kind: as_strings(quality[kind].iloc[0]) if not quality.empty else []
        for kind in ("issues", "warnings", "recommendations")
    }
    raw = [
        [_cell(row[column], spec) for column, spec in RAW_COLUMNS]
        for row in steps.head(RAW_ROWS).to_dict("records")
    ]
    return RewardRun(run, summary, built, advice, raw, len(steps), total_note(summary, functions))


# The note saying what the reward tabs' total reward is (obs serve shows it under this).
TOTAL_TITLE = "The total reward R"
# More reward functions than this are counted in the note, not named.
NAMED_FUNCTIONS = 4
# The function charts draw a run's first SHOWN_FUNCTIONS functions by importance rank
# (the reward_function_steps, reward_contributions and reward_importance queries).
SHOWN_FUNCTIONS = 20
FUNCTIONS_TITLE = "Reward functions shown"
PAIRS_TITLE = "Reward function pairs"


def total_note(summary: dict[str, Any], functions: Sequence[str]) -> str:
    """What the total reward R of the reward tabs is: each sample's reward functions summed
    (``samples``) or the reward the trainer logged (``logged``); and, for a run with
    rollouts, whether R is their score (a dump's score need not be the sum: the IFEval
    dumps' score is not V_i + S_i + format_score)."""
    basis = summary.get("current_basis")
    if basis == "logged":
        return (
            "The reward on these tabs is R, the total reward the trainer logged (its mean and"
            " std at each step), not a sum over reward functions"
        )
    if basis != "samples":
        return ""
    names = sorted(str(f) for f in functions)
    count = max(len(names), int(_number(summary.get("reward_functions")) or 0))
    summed = " + ".join(names) if count <= NAMED_FUNCTIONS else f"{count} functions"
    note = f"The reward on these tabs is R, each sample's reward functions summed ({summed})"
    mean, score = _number(summary.get("current_mean")), _number(summary.get("current_score"))
    if mean is None or score is None:
        return note
    if math.isclose(mean, score, rel_tol=1e-9, abs_tol=1e-12):
        return f"{note}, which here is the rollouts' score"
    return (
        f"{note}, not the rollouts' score: at step {int(summary['last_step'])} R averages"
        f" {mean:.3f} and the score {score:.3f} (the mean rollout score of the training tabs)"
    )


def _number(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


VERDICT_WORDS = {
    "no_performance_metric": "no performance metric logged",
    "insufficient_data": "too few points to judge",
}


def _tiles(summary: dict[str, Any]) -> list[Tile]:
    """The Summary statistics tiles, formatted as the GRPO reward monitor shows them."""
    verdict = summary.get("hacking_verdict")
    # the mart's verdict in words (no_performance_metric: no performance metric logged)
    verdict = VERDICT_WORDS.get(verdict, verdict) if isinstance(verdict, str) else verdict
    suspects = as_strings(summary.get("suspected_functions"))
    if isinstance(verdict, str) and suspects:
        verdict = f"{verdict} ({', '.join(suspects)})"
    return [
        Tile("Total Steps Tracked", _cell(summary.get("steps"), "d")),
        Tile("Current Mean Reward R", _cell(summary.get("current_mean"), ".3f")),
        Tile("Signal-to-Noise Ratio", _cell(summary.get("current_signal_to_noise"), ".3f")),
        Tile("Anomalies Detected", _cell(summary.get("anomalies"), "d")),
        Tile("Quality Score", _cell(summary.get("quality_score"), ".1f")),
        Tile("Latest Step", _cell(summary.get("last_step"), "d")),
        Tile("Reward Functions", _cell(summary.get("reward_functions"), "d")),
        Tile("Alerts", _cell(summary.get("alerts"), "d")),
        Tile("Reward Hacking (whole run)", verdict if isinstance(verdict, str) else "-"),
    ]


def _raw_block(run: RewardRun) -> Table:
    note = f"all {run.raw_total} steps"
    if run.raw_total > len(run.raw_rows):
        note = (
            f"the first {len(run.raw_rows)} of {run.raw_total} steps; the rest are one SQL"
            f" query away: obs sql \"from fct_reward_steps where run_id = '{run.run_id}'"
            ' order by step"'
        )
    return Table(
        div_id=f"raw_data__{run.run_id}",
        title="Raw data: the reward statistics of every step",
        use_for=RAW_USE_FOR,
        columns=[column for column, _ in RAW_COLUMNS],
        rows=run.raw_rows,
        page_size=RAW_PAGE,
        note=note,
    )


def reward_sections(run: RewardRun) -> list[Section]:
    """The seven sections of one run: the tab's charts, with the summary tiles first, the
    quality report's advice after the quality score, and the raw data table last."""
    blocks: dict[str, list[Block]] = {tab: [] for tab in REWARDS.tabs}
    if run.total_note:
        for tab in (REWARD_SUMMARY, REWARD_SIGNAL):
            blocks[tab].append(Note(TOTAL_TITLE, run.total_note))
    functions = int(_number(run.summary.get("reward_functions")) or 0)
    if functions > SHOWN_FUNCTIONS:
        blocks[REWARD_FUNCTIONS].append(
            Note(
                FUNCTIONS_TITLE,
                f"The charts of this tab draw the first {SHOWN_FUNCTIONS} of the run's"
                f" {functions} reward functions by importance rank; every one is in"
                " fct_reward_function_importance",
            )
        )
        blocks[REWARD_QUALITY].append(
            Note(
                FUNCTIONS_TITLE,
                f"The function quality chart draws the {SHOWN_FUNCTIONS} lowest scores of"
                f" the run's {functions} reward functions; every one is in"
                " fct_reward_function_quality",
            )
        )
    pair_note = run.summary.get("pair_note")
    if isinstance(pair_note, str) and pair_note:
        blocks[REWARD_QUALITY].append(Note(PAIRS_TITLE, pair_note))
    blocks[REWARD_SUMMARY].append(
        Tiles("summary", "Summary statistics", SUMMARY_USE_FOR, _tiles(run.summary))
    )
    for name, chart in charts_of(REWARDS).items():
        figure = run.figures[name]
        blocks[chart.tab].append(chart_block(chart, figure, f"{name}__{run.run_id}"))
        if name == "reward_quality_score":
            blocks[REWARD_QUALITY].append(
                Advice(
                    "Issues, warnings and recommendations",
                    ADVICE_USE_FOR,
                    run.advice["issues"],
                    run.advice["warnings"],
                    run.advice["recommendations"],
                )
            )
    blocks[RAW_DATA].append(_raw_block(run))
    return [
        Section(f"rewards-{number}", title, blocks[title])
        for number, title in enumerate(REWARDS.tabs)
    ]


def reward_tabs() -> list[dict[str, str]]:
    return [{"id": f"rewards-{n}", "title": t} for n, t in enumerate(REWARDS.tabs)]


def render_reward_dashboard(
    dashboard: RewardDashboard, out: Path, plotlyjs: str = "inline"
) -> Path:
    """Write the reward monitoring page: seven tabs, every run's section in each."""
    runs = [{"run": run, "sections": reward_sections(run)} for run in dashboard.runs]
    names = ", ".join(r.run_id for r in dashboard.runs) or "no reward data"
    return write_sections_page(
        PAGE,
        out,
        title=f"obs reward monitoring: {names}",
        runs=runs,
        tabs=reward_tabs(),
        reason=dashboard.reason,
        without_data=dashboard.without_data,
        generated_at=dashboard.generated_at,
        plotlyjs=plotlyjs,
    )
