"""``obs analyze RUN --out FILE.html``: a self-contained HTML report of one run.

One chart per section of the analysis, drawn from the marts, with every
warning and critical finding marked on the step axis where it happened. The
page uses the training dashboard's renderer (its templates, its lazy drawing,
plotly.js inline), so it opens from disk with no network.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
from obs.reports.render import _embed, _plotly_script, environment
from obs.reports.runs import Analysis, Section, open_runs, rows
from obs.reports.runs_format import number
from obs.reports.warehouse import table_names

SEVERITY_COLOURS = {"critical": "rgba(214, 40, 40, 0.16)", "warning": "rgba(245, 159, 0, 0.16)"}
# Section charts: title -> (mart, columns to draw as lines, y-axis title).
SERIES = {
    "Training metrics": (
        "canonical",
        ["loss", "kl", "reward_mean", "reward_std", "grad_norm", "entropy", "clip_ratio"],
        "value",
    ),
    "Performance": (
        "fct_run_throughput",
        ["trajectories_per_second", "training_rollout_ratio", "pipeline_overlap_s"],
        "value",
    ),
    "Extraction": ("fct_extraction_quality", ["extraction_rate", "extracted_share"], "share"),
    "Rollout reliability": (
        "fct_rollout_reliability",
        ["failed_rollouts", "max_total_s", "max_volume_reload_s"],
        "value",
    ),
    "Prefix cache": ("canonical", ["cache_hit_rate"], "hit rate"),
    "League": ("fct_league", ["elo", "best_elo", "win_rate"], "value"),
}
LINES = {"Extraction": [(0.95, "target 95%")], "Prefix cache": [(0.5, "good"), (0.3, "low")]}


def _figure(title: str, subtitle: str = "") -> go.Figure:
    figure = go.Figure()
    figure.update_layout(
        title={"text": f"{title}<br><sub>{subtitle}</sub>" if subtitle else title},
        template="plotly_white",
        height=380,
        margin={"l": 60, "r": 20, "t": 70, "b": 50},
        legend={"orientation": "h", "y": -0.2},
        xaxis_title="step",
    )
    return figure


def _no_data(figure: go.Figure, note: str) -> go.Figure:
    figure.add_annotation(
        text=f"no data: {note}", showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5
    )
    figure.update_xaxes(visible=False)
    figure.update_yaxes(visible=False)
    return figure


# Which findings each chart marks: the patterns its series are evidence of.
MARKS = {
    "Training metrics": {
        "training_instability",
        "performance_plateau",
        "grad_spike_reward_collapse",
        "length_truncation",
        "entropy_collapse_plateau",
        "kl_runaway",
        "model_quality_degradation",
    },
    "Performance": {"infrastructure_bottleneck"},
    "Extraction": {"model_quality_degradation", "training_instability"},
    "Rollout reliability": {"infrastructure_bottleneck"},
    "Prefix cache": {"prefix_cache_inefficiency"},
    "League": {"performance_plateau"},
}
# One panel per series, except where every series shares a scale (shares of 0..1).
ONE_PANEL = {"Extraction", "Prefix cache"}
LABEL_PLACES = ("top left", "bottom left", "top right", "bottom right")


def _mark_findings(figure: go.Figure, found: list[dict[str, Any]], title: str) -> None:
    """Shade each warning and critical finding this chart is evidence of, labelled once."""
    wanted = MARKS.get(title, set())
    marked = [f for f in found if f["pattern"] in wanted and f["severity"] in SEVERITY_COLOURS]
    grid = {"row": "all", "col": "all"} if figure._grid_ref is not None else {}
    for place, finding in enumerate(marked):
        if finding["first_step"] is None:
            continue
        last = finding["last_step"] if finding["last_step"] is not None else finding["first_step"]
        figure.add_vrect(
            x0=finding["first_step"] - 0.5,
            x1=last + 0.5,
            fillcolor=SEVERITY_COLOURS[finding["severity"]],
            line_width=0,
            layer="below",
            annotation_text=finding["pattern"].replace("_", " "),
            annotation_position=LABEL_PLACES[place % len(LABEL_PLACES)],
            annotation_font_size=10,
            **grid,
        )


def _series(con: Any, run_id: str, mart: str, columns: list[str]) -> dict[str, list[Any]]:
    if mart == "canonical":
        found = rows(
            con,
            "select canonical_metric as name, step, value from fct_metric_history where run_id "
            "= ? and canonical_metric in (select unnest(?)) and isfinite(value) order by step",
            [run_id, columns],
        )
        out: dict[str, list[Any]] = {}
        for row in found:
            out.setdefault(row["name"], []).append((row["step"], row["value"]))
        return {name: out[name] for name in columns if name in out}  # the section's order
    present = {
        r[0]
        for r in con.execute(
            "select column_name from information_schema.columns where table_name = ?", [mart]
        ).fetchall()
    }
    wanted = [c for c in columns if c in present]
    if not wanted:
        return {}
    sql = f"select step, {', '.join(wanted)} from {mart} where run_id = ? order by step"
    found = rows(con, sql, [run_id])
    return {
        c: [(r["step"], r[c]) for r in found if r[c] is not None]
        for c in wanted
        if any(r[c] is not None for r in found)
    }


def _section_figure(
    con: Any, run_id: str, section: Section, found: list[dict[str, Any]], present: set[str]
) -> go.Figure | None:
    title = f"{section.number}. {section.title}" if section.number else section.title
    if section.title == "Power law":
        return _power_law_figure(con, run_id, section, title)
    if section.title == "Evaluation results":
        figure = _figure(title, "latest evaluation, by opponent")
        if not section.available:
            return _no_data(figure, section.note)
        for key in ("win_rate", "survival_rate"):
            figure.add_bar(
                x=[r["opponent"] for r in section.data],
                y=[r[key] for r in section.data],
                name=key.replace("_", " "),
            )
        figure.update_layout(xaxis_title="opponent")
        return figure
    if section.title not in SERIES:
        return None
    mart, columns, axis = SERIES[section.title]
    figure = _figure(title)
    if mart != "canonical" and mart not in present:
        return _no_data(figure, f"{mart} is not built")
    series = _series(con, run_id, mart, columns)
    if not series:
        return _no_data(figure, section.note or "nothing logged")
    if len(series) > 1 and section.title not in ONE_PANEL:
        figure = _panels(title, series)
    else:
        for name, points in series.items():
            figure.add_scatter(
                x=[p[0] for p in points],
                y=[p[1] for p in points],
                mode="lines+markers" if len(points) < 60 else "lines",
                name=name.replace("_", " "),
            )
        for value, label in LINES.get(section.title, []):
            figure.add_hline(y=value, line_dash="dot", annotation_text=label)
        figure.update_layout(yaxis_title=axis)
    _mark_findings(figure, found, section.title)
    return figure


def _panels(title: str, series: dict[str, list[Any]]) -> go.Figure:
    """One small panel per series (two columns): each on its own scale."""
    from plotly.subplots import make_subplots

    names = list(series)
    rows = (len(names) + 1) // 2
    figure = make_subplots(
        rows=rows,
        cols=2,
        subplot_titles=[n.replace("_", " ") for n in names],
        vertical_spacing=0.5 / rows if rows > 1 else 0.1,
        horizontal_spacing=0.08,
    )
    for index, name in enumerate(names):
        points = series[name]
        figure.add_scatter(
            x=[p[0] for p in points],
            y=[p[1] for p in points],
            mode="lines+markers" if len(points) < 60 else "lines",
            name=name.replace("_", " "),
            showlegend=False,
            row=index // 2 + 1,
            col=index % 2 + 1,
        )
    figure.update_layout(
        title={"text": title},
        template="plotly_white",
        height=120 + 230 * rows,
        margin={"l": 60, "r": 20, "t": 80, "b": 40},
    )
    figure.update_xaxes(title_text="step", row=rows)
    return figure


def _power_law_figure(con: Any, run_id: str, section: Section, title: str) -> go.Figure:
    figure = _figure(title, "reward against cumulative compute, log-log")
    if not section.available:
        return _no_data(figure, section.note)
    points = rows(
        con,
        "select step, cumulative_compute as c, coalesce(reward_at_compute, reward_mean) as r "
        "from int_run_steps where run_id = ? and cumulative_compute > 0 and "
        "coalesce(reward_at_compute, reward_mean) > 0 order by step",
        [run_id],
    )
    if not points:
        return _no_data(figure, "no positive reward and compute")
    figure.add_scatter(
        x=[p["c"] for p in points], y=[p["r"] for p in points], mode="markers", name="steps"
    )
    fit = next((f for f in section.data if f["scope"] == "run"), None)
    if fit and fit.get("exponent") is not None:
        xs = [points[0]["c"], points[-1]["c"]]
        figure.add_scatter(
            x=xs,
            y=[fit["prefactor"] * x ** fit["exponent"] for x in xs],
            mode="lines",
            name=f"fit: R = {number(fit['prefactor'])} C^{number(fit['exponent'])} "
            f"(R² {number(fit['r_squared'])})",
        )
    figure.update_xaxes(type="log", title="cumulative compute")
    figure.update_yaxes(type="log", title="reward")
    return figure


def write_run_report(warehouse: Path, analysis: Analysis, out: Path) -> Path:
    """Write the run's HTML report (one chart per section, findings marked)."""
    con = open_runs(warehouse)
    try:
        present = table_names(con)
        findings = next((s.data or [] for s in analysis.sections if s.title.startswith("Find")), [])
        charts = []
        for section in analysis.sections:
            figure = _section_figure(con, analysis.run_id, section, findings, present)
            if figure is None:
                continue
            div = f"run-{len(charts)}"
            charts.append(
                {
                    "div_id": div,
                    "name": section.title,
                    "info": {"use_for": section.note or _use_for(section.title)},
                    "figure": _embed(figure),
                }
            )
    finally:
        con.close()
    info = next(s.data for s in analysis.sections if s.title == "Run info")
    counts = {
        level: sum(1 for f in findings if f["severity"] == level)
        for level in ("critical", "warning", "info")
    }
    html = (
        environment()
        .get_template("run_report.html")
        .render(
            title=f"obs: {analysis.name} ({analysis.run_id})",
            plotly_script=_plotly_script("inline"),
            analysis=analysis,
            info=info,
            counts=counts,
            findings=findings,
            charts=charts,
            generated_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            fmt=number,
            missing=[s for s in analysis.sections if not s.available and s.number],
        )
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    temporary = out.with_name(f".{out.name}.tmp")
    temporary.write_text(html)
    temporary.replace(out)
    return out


def _use_for(title: str) -> str:
    return {
        "Training metrics": "loss and KL should fall or stay bounded, reward rise; shaded bands "
        "are findings",
        "Performance": "trajectories per second, and whether training or rollouts bound a step",
        "Extraction": "the share of orders the parser extracted (target above 95%)",
        "Rollout reliability": "failed rollouts and the slowest rollout and volume reload",
        "Prefix cache": "cache hit rate (good above 50% after warm-up, low below 30%)",
        "League": "Elo of the challenger and its win rate against the league",
    }.get(title, title)
