"""Render the dashboards: one self-contained HTML file, or one file per chart.

The numbers come from the marts through the SQL in ``reports/queries/``; the
figures from ``reports.figures``; the page from the Jinja templates in
``reports/templates/``. plotly.js is embedded once, inline, so the file opens
from disk with no network (``plotlyjs="cdn"`` links it instead).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import plotly.graph_objects as go
from obs.reports import figures
from obs.reports.errors import ReportError
from obs.reports.page import (
    embed,
    environment,
    frame,
    plotly_script,
)
from obs.reports.warehouse import connect, require_tables, unknown_run

if TYPE_CHECKING:
    from obs.reports.agent_dashboard import AgentRun
    from obs.reports.reward_dashboard import RewardRun

MARTS = (
    "fct_iteration_summary",
    "fct_prompt_iteration",
    "fct_prompt_learning",
    "rpt_prompt_heatmap_rank",
    "rpt_forgetting_changes",
    "fct_upsampling_candidates",
    "fct_instruction_iteration",
    "fct_reward_case_iteration",
    "fct_score_distribution",
    "fct_vi_si_points",
    "fct_instruction_pairs",
    "rpt_instruction_interference",
    "rpt_dashboard_settings",
)
# The queries of reports/queries/ read with the shared parameters (plateau has its own cap).
QUERIES = (
    "header",
    "prompt_counts",
    "prompt_heatmap",
    "forgetting",
    "sample_efficiency",
    "upsampling_top",
    "instruction_types",
    "reward_cases",
    "score_distribution",
    "vi_si",
    "interference",
)
# The run comparison's queries (two or more runs with rollouts).
COMPARE_QUERIES = ("compare_iterations", "compare_prompts", "compare_instructions")
# Every query the training dashboard runs (its dbt exposure lists the marts they read).
PAGE_QUERIES = (*QUERIES, *COMPARE_QUERIES, "dashboard_settings", "plateau")
HEATMAP_ROWS = 200  # prompts in each prompt heatmap: the most informative
SCATTER_POINTS = 3000  # points in each scatter (sample efficiency, V_i vs S_i)
PLATEAU_BARS = 300  # prompts in the plateau chart: the lowest recent variance
VARIANCE_FLOOR = 1e-6  # where the plateau chart's log axis draws a variance of 0
# The note in place of the V_i / S_i heatmaps of a run whose rollouts carry no such field.
COMPONENT_MISSING = (
    "this run's rollouts carry no {part}, only a score (TRL completions and plain"
    " rollout tables do not split the reward); land rollouts with a {field} field to see"
    " it prompt by prompt"
)
# --plotlyjs cdn links the same plotly.js version the figures were built for.


@dataclass(frozen=True)
class RunCharts:
    """The fourteen figures of one run, and its header numbers.

    A run with no rollouts (one known from its reward monitor, eval files or
    console log only) has neither: its rollout tabs say so.
    """

    run_id: str
    header: dict[str, Any]
    figures: dict[str, go.Figure]

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
    # imported here: reward_dashboard and agent_dashboard build on this module
    from obs.reports.agent_dashboard import load_agent_runs, runs_with_agent_data
    from obs.reports.reward_dashboard import load_reward_runs, runs_with_reward_data

    con = connect(warehouse)
    try:
        require_tables(con, warehouse, *MARTS)
        with_rollouts = [
            str(r[0])
            for r in con.execute(
                "select distinct run_id from fct_iteration_summary order by 1"
            ).fetchall()
        ]
        with_rewards = (runs_with_reward_data(con) or []) if rewards else []
        with_agents = (runs_with_agent_data(con) or []) if agents else []
        # By default the runs with rollouts or an agent's data; any run with reward
        # data when asked for (a tracker history alone logs a reward too).
        default = sorted({*with_rollouts, *with_agents})
        known = sorted({*default, *with_rewards})
        if not known:
            raise ReportError(f"{warehouse}: no runs built yet; run `obs build`")
        chosen = list(dict.fromkeys(runs)) if runs else default
        missing = [r for r in chosen if r not in known]
        if missing:
            raise unknown_run(warehouse, missing[0], known)
        if not chosen:
            raise ReportError(
                f"{warehouse}: no run with rollouts or agent data; name a run with --run"
                f" (runs with reward data: {', '.join(known)})"
            )
        picked_iterations = sorted(set(iterations)) if iterations else None
        rollout_runs = [r for r in chosen if r in with_rollouts]
        params: dict[str, Any] = {
            "runs": rollout_runs,
            "iterations": picked_iterations,
            "cap": HEATMAP_ROWS,
            "scatter_cap": SCATTER_POINTS,
        }
        frames = {name: frame(con, name, params) for name in QUERIES}
        # the build's thresholds (the dbt vars the marts used), one row
        settings = frame(con, "dashboard_settings", {}).iloc[0].to_dict()
        frames["plateau"] = frame(
            con, "plateau", params | {"cap": PLATEAU_BARS, "variance_floor": VARIANCE_FLOOR}
        )
        compared = (
            {name: frame(con, name, params) for name in COMPARE_QUERIES}
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
        charts, picked_iterations, rewards=reward_runs, agents=agent_runs, comparison=comparison
    )


def _comparison(runs: list[str], frames: dict[str, pd.DataFrame]) -> dict[str, go.Figure]:
    """The run comparison charts: every run with rollouts in one chart each."""
    colours = figures.run_colours(runs)
    return {
        "compare_learning_curves": figures.compare_learning_curves(
            frames["compare_iterations"], colours
        ),
        "compare_prompt_outcomes": figures.compare_prompt_outcomes(
            frames["compare_prompts"], colours
        ),
        "compare_instruction_difficulty": figures.compare_instruction_difficulty(
            frames["compare_instructions"], colours
        ),
    }


def _for_run(frame: pd.DataFrame, run: str) -> pd.DataFrame:
    return frame[frame["run_id"] == run].reset_index(drop=True)


def _run_charts(run: str, frames: dict[str, pd.DataFrame], settings: dict[str, Any]) -> RunCharts:
    one = {name: _for_run(frame, run) for name, frame in frames.items()}
    counts = one["prompt_counts"]
    total = int(counts["prompts"].iloc[0]) if not counts.empty else None
    header = one["header"].iloc[0].to_dict() if not one["header"].empty else {}
    grid = one["prompt_heatmap"]
    built = {
        "prompt_dynamics_fi": figures.prompt_heatmap(
            grid, "prompt_dynamics_fi", "mean_score", total, colorbar_title="mean score"
        ),
        "prompt_dynamics_vi": figures.prompt_heatmap(
            grid,
            "prompt_dynamics_vi",
            "mean_v_i",
            total,
            colorbar_title="mean V_i",
            missing=COMPONENT_MISSING.format(part="verifiable reward (V_i)", field="v_i"),
        ),
        "prompt_dynamics_si": figures.prompt_heatmap(
            grid,
            "prompt_dynamics_si",
            "mean_s_i",
            total,
            colorbar_title="mean S_i",
            missing=COMPONENT_MISSING.format(part="soft reward (S_i)", field="s_i"),
        ),
        "prompt_accuracy": figures.prompt_heatmap(
            grid,
            "prompt_accuracy",
            "prompt_strict_acc",
            total,
            scale="solved",
            colorbar_title="any rollout",
            note="solved: every instruction followed, or (a rollout without instruction"
            f" results) a score of at least {settings['pass_threshold']:g}",
        ),
        "upsampling_candidates": figures.upsampling_table(one["upsampling_top"]),
        "sample_efficiency": figures.sample_efficiency(
            one["sample_efficiency"],
            float(settings["fast_learning_iterations"]),
            float(settings["sample_efficiency_good_score"]),
            total,
        ),
        "plateau_detection": figures.plateau_detection(
            one["plateau"],
            float(settings["plateau_variance_threshold"]),
            VARIANCE_FLOOR,
            total,
        ),
        "forgetting_analysis": figures.forgetting_heatmap(one["forgetting"], total),
        "exploration": figures.prompt_heatmap(
            grid,
            "exploration",
            "std_score",
            total,
            scale="spread",
            colorbar_title="score std",
        ),
        "score_distribution": figures.score_distribution(one["score_distribution"]),
        "reward_case_evolution": figures.reward_case_evolution(one["reward_cases"]),
        "vi_si_correlation": figures.vi_si_correlation(one["vi_si"]),
        "instruction_types": figures.instruction_types(one["instruction_types"]),
        "instruction_interference": figures.instruction_interference(
            one["interference"], int(settings["stuck_cell_min_samples"])
        ),
    }
    ordered = {name: built[name] for name in figures.CHARTS}
    return RunCharts(run, header, ordered)


def _chart(name: str, info: figures.ChartInfo, figure: go.Figure, div_id: str) -> dict[str, Any]:
    return {"div_id": div_id, "name": name, "info": info, "figure": embed(figure)}


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


def _sections(run: RunCharts) -> list[dict[str, Any]]:
    sections = []
    for number, title in enumerate(figures.SECTIONS):
        charts = [
            _chart(name, info, run.figures[name], f"{name}__{run.run_id}")
            for name, info in figures.CHARTS.items()
            if info.section == title and run.has_rollouts
        ]
        note = "" if run.has_rollouts else NO_ROLLOUTS.format(run=run.run_id)
        sections.append({"id": f"section-{number}", "title": title, "charts": charts, "note": note})
    return sections


def _by_run(
    run_ids: list[str], items: dict[str, list[dict[str, Any]]], note: str
) -> list[dict[str, Any]]:
    """Every chosen run's sections of one kind, or the note saying it has none."""
    return [
        {"run_id": run, "sections": items.get(run), "note": note.format(run=run)} for run in run_ids
    ]


def render_dashboard(dashboard: Dashboard, out: Path, plotlyjs: str = "inline") -> Path:
    """Write the combined dashboard: header, five tabs, the charts of every run.

    With several runs, a run comparison tab comes first and the other tabs show
    the run picked in the page. Runs with reward data add the seven reward
    monitoring tabs, runs with agent data the three agentic run tabs.
    """
    from obs.reports.agent_dashboard import agent_sections, agent_tabs
    from obs.reports.reward_dashboard import reward_sections, reward_tabs

    run_ids = dashboard.run_ids
    runs = [{"run": run, "sections": _sections(run)} for run in dashboard.runs]
    tabs = [{"id": f"section-{n}", "title": t} for n, t in enumerate(figures.SECTIONS)]
    comparison = [
        _chart(name, figures.COMPARE_CHARTS[name], figure, name)
        for name, figure in dashboard.comparison.items()
    ]
    if comparison:
        tabs.insert(0, {"id": "section-compare", "title": figures.COMPARE_SECTION})
    rewards = _by_run(
        run_ids, {r.run_id: reward_sections(r) for r in dashboard.rewards}, NO_REWARDS
    )
    agents = _by_run(run_ids, {r.run_id: agent_sections(r) for r in dashboard.agents}, NO_AGENT)
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
        )
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html)
    return out


def render_chart_files(
    dashboard: Dashboard,
    output_dir: Path,
    fmt: str = "html",
    plotlyjs: str = "inline",
    names: Sequence[str] | None = None,
) -> list[Path]:
    """One file per chart under the charts' names; runs get a folder each when several.

    ``names`` picks some of the charts (default: all fourteen, and with several
    runs with rollouts the run comparison charts, written beside the folders).
    A run without rollouts has no rollout charts and gets no folder.
    """
    choices = [*figures.CHARTS, *figures.COMPARE_CHARTS]
    unknown = [n for n in names or () if n not in choices]
    if unknown:
        raise ReportError(f"no chart '{unknown[0]}' (charts: {', '.join(choices)})")
    drawn = [run for run in dashboard.runs if run.has_rollouts]
    several = len(drawn) > 1
    pages: list[tuple[Path, str, go.Figure, str]] = [
        (output_dir, name, figure, "runs " + ", ".join(r.run_id for r in drawn))
        for name, figure in dashboard.comparison.items()
    ]
    for run in drawn:
        folder = output_dir / run.run_id if several else output_dir
        pages += [(folder, name, figure, run.run_id) for name, figure in run.figures.items()]
    written = []
    for folder, name, figure, whose in pages:
        if names and name not in names:
            continue
        folder.mkdir(parents=True, exist_ok=True)
        if fmt == "png":
            written.append(_write_png(figure, folder / f"{name}.png"))
            continue
        info = figures.CHARTS.get(name) or figures.COMPARE_CHARTS[name]
        html = (
            environment()
            .get_template("chart.html")
            .render(
                title=f"{info.title} ({whose})",
                plotly_script=plotly_script(plotlyjs),
                chart=_chart(name, info, figure, name),
            )
        )
        path = folder / f"{name}.html"
        path.write_text(html)
        written.append(path)
    return written


def _write_png(figure: go.Figure, path: Path) -> Path:
    """A PNG through kaleido, driving the system Chromium (nothing is downloaded).

    kaleido is the optional ``png`` extra (``pip install 'obs-warehouse[png]'``).
    """
    try:
        import kaleido  # noqa: F401  (plotly drives it; imported here only to check it is there)
    except ImportError as exc:
        raise ReportError(
            f"{path}: --format png needs kaleido: pip install 'obs-warehouse[png]'"
        ) from exc
    browser = os.environ.get("BROWSER_PATH") or shutil.which("chromium")
    if browser is None:
        raise ReportError(f"{path}: --format png needs Chromium (apt-get install chromium)")
    os.environ["BROWSER_PATH"] = browser
    try:
        figures.themed(go.Figure(figure)).write_image(
            path, width=1200, height=int(figure.layout.height or 600), scale=1
        )
    except Exception as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ReportError(f"{path}: PNG export failed ({message})") from exc
    return path
