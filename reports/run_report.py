"""``obs analyze RUN --out FILE.html``: a self-contained HTML report of one run.

One chart per section of the analysis that has data, drawn from the marts,
with every warning and critical finding shaded on the step axis of the
panels showing a metric it is evidence about. The sections without data
follow in one card, each with the metric family it needs. Threshold lines
come from ``rpt_run_settings``: the dbt vars of the build that made the
warehouse. The page uses the training dashboard's renderer (its templates,
its lazy drawing, plotly.js inline), so it opens from disk with no network.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
from obs.reports.blocks import ChartBlock
from obs.reports.compare import TRAINING
from obs.reports.figures.base import whole_ticks
from obs.reports.page import environment, plotly_script
from obs.reports.runs import FINDINGS, Analysis, Section
from obs.reports.runs_format import number
from obs.reports.sql import query_rows, query_value
from obs.reports.warehouse import open_runs, table_names

SEVERITY_COLOURS = {"critical": "rgba(214, 40, 40, 0.16)", "warning": "rgba(245, 159, 0, 0.16)"}


@dataclass(frozen=True)
class SectionChart:
    """A section's chart over steps: the mart it reads and the series it draws."""

    mart: str  # "canonical": fct_metric_history by canonical metric
    columns: tuple[str, ...]
    axis: str  # the y-axis title when the series share one panel
    one_panel: bool = False  # every series on one scale (shares of 0..1)
    # Threshold lines: (rpt_run_settings column, label).
    thresholds: tuple[tuple[str, str], ...] = ()


TRAINING_TITLE = "Training metrics"
CHARTS = {
    TRAINING_TITLE: SectionChart("canonical", tuple(name for name, _ in TRAINING), "value"),
    "Performance": SectionChart(
        "fct_run_throughput",
        ("trajectories_per_second", "training_rollout_ratio", "pipeline_overlap_s"),
        "value",
    ),
    "Extraction": SectionChart(
        "fct_extraction_quality",
        ("extraction_rate", "extracted_share"),
        "share",
        one_panel=True,
        thresholds=(("extraction_rate_min", "target"),),
    ),
    "Rollout reliability": SectionChart(
        "fct_rollout_reliability",
        ("failed_rollouts", "max_total_s", "max_volume_reload_s"),
        "value",
    ),
    "Prefix cache": SectionChart(
        "canonical",
        ("cache_hit_rate",),
        "hit rate",
        one_panel=True,
        thresholds=(("cache_hit_good", "good"), ("cache_hit_low", "low")),
    ),
    "League": SectionChart("fct_league", ("elo", "best_elo", "win_rate"), "value"),
}
# Sections drawn by a chart of their own (not over steps).
OTHER_CHARTS = ("Power law", "Evaluation results")

CHART_METRICS = {column for chart in CHARTS.values() for column in chart.columns}

# Why a section has no chart: the metric family it needs, as the run would log it.
NEEDS = {
    "Training metrics": "no loss, KL or reward logged: needs loss, kl or reward_mean under a "
    "key the metric_aliases seed knows (benchmark/loss, actor/pg_loss, loss, ...)",
    "Performance": "no throughput metrics logged: needs benchmark/trajectories with "
    "benchmark/rollout_time_s or benchmark/training_time_s",
    "Extraction": "no extraction metrics logged: needs extraction/rate (extraction_rate), "
    "extraction/orders_expected and extraction/orders_extracted",
    "Rollout reliability": "no rollout metrics logged: needs rollout/failed_count "
    "(failed_rollouts), rollout/max_total_s or rollout/max_volume_reload_s",
    "Prefix cache": "no cache metrics logged: needs cache/hit_rate (cache_hit_rate); the run "
    "may not have prefix caching on (prefix_cache_optimized=False)",
    "Power law": "no compute axis logged, so no fit: needs power_law/cumulative_simulated_years "
    "(the canonical cumulative_compute) beside the reward",
    "League": "no league metrics logged: needs elo/challenger (elo), with elo/win_rate and "
    "league/best_elo; league play may be off",
    "Evaluation results": "no evaluation metrics logged: needs eval/vs_{opponent}/win_rate "
    "(and survival_rate, avg_centers)",
}
LABEL_PLACES = ("top left", "bottom left", "top right", "bottom right")


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


# --------------------------------------------------------------------------- findings


Shades = dict[str, tuple[str, ...]]


def signal_shades(con: Any, present: set[str]) -> Shades:
    """What each finding signal is evidence about: the metrics, named as the charts name
    their series, on whose panels it shades a finding, as each rule's yml entry declares
    them (rpt_finding_shades); empty when that model is not built. A signal declared
    with no metric (the power-law fit, drawn on its own log-log axes) shades no panel."""
    if "rpt_finding_shades" not in present:
        return {}
    shades: Shades = {}
    for row in query_rows(con, "report_finding_shades"):
        metric = () if row["metric"] is None else (row["metric"],)
        shades[row["signal"]] = (*shades.get(row["signal"], ()), *metric)
    return shades


def signal_metrics(signal: str, shades: Shades) -> tuple[str, ...]:
    """The metrics a finding's signal is evidence about (``shades``, see signal_shades);
    a signal no rule declares is read by its name (`loss_non_finite` is about loss)."""
    if signal in shades:
        return shades[signal]
    named = [m for m in CHART_METRICS if signal == m or signal.startswith(f"{m}_")]
    return (max(named, key=len),) if named else ()


def _finding_signals(finding: dict[str, Any]) -> list[str]:
    """The finding's signals: its `signals` list, else read off its evidence,
    which counts each signal's flagged steps as `<signal>_steps`."""
    if finding.get("signals"):
        return list(finding["signals"])
    evidence = finding.get("evidence") or {}
    if not isinstance(evidence, dict):
        return []
    return [
        key.removesuffix("_steps")
        for key in evidence
        if key.endswith("_steps") and key != "flagged_steps"
    ]


def finding_metrics(finding: dict[str, Any], shades: Shades) -> set[str]:
    return {m for signal in _finding_signals(finding) for m in signal_metrics(signal, shades)}


def _with_signals(con: Any, run_id: str, findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The findings, each with the `signals` list fct_run_findings holds for it."""
    found = query_rows(con, "findings", run=run_id, severity_rank=2)
    signals = {(r["pattern"], r["first_step"], r["last_step"]): r["signals"] for r in found}
    return [
        {**f, "signals": list(signals.get((f["pattern"], f["first_step"], f["last_step"])) or [])}
        for f in findings
    ]


def _mark_findings(
    figure: go.Figure,
    found: list[dict[str, Any]],
    places: dict[str, dict[str, int]],
    shades: Shades,
) -> None:
    """Shade each warning and critical finding on the panels (``places``: metric ->
    subplot) showing a metric it is evidence about, labelled once per panel."""
    labelled: dict[tuple[int, int], int] = {}
    for finding in found:
        if finding["severity"] not in SEVERITY_COLOURS or finding["first_step"] is None:
            continue
        metrics = finding_metrics(finding, shades)
        panels = {
            (place.get("row", 0), place.get("col", 0)): place
            for metric, place in places.items()
            if metric in metrics
        }
        last = finding["last_step"] if finding["last_step"] is not None else finding["first_step"]
        for key, place in panels.items():
            count = labelled.get(key, 0)
            labelled[key] = count + 1
            figure.add_vrect(
                x0=finding["first_step"] - 0.5,
                x1=last + 0.5,
                fillcolor=SEVERITY_COLOURS[finding["severity"]],
                line_width=0,
                layer="below",
                annotation_text=finding["pattern"].replace("_", " "),
                annotation_position=LABEL_PLACES[count % len(LABEL_PLACES)],
                annotation_font_size=10,
                **place,
            )


# --------------------------------------------------------------------------- charts


# The query each chart's mart is read through (reports/queries/report_*.sql): the
# step, then the chart's columns.
SERIES_QUERIES = {
    "fct_run_throughput": "report_throughput",
    "fct_extraction_quality": "report_extraction",
    "fct_rollout_reliability": "report_reliability",
    "fct_league": "report_league",
}


def _series(con: Any, run_id: str, mart: str, columns: tuple[str, ...]) -> dict[str, list[Any]]:
    if mart == "canonical":
        found = query_rows(con, "report_canonical_series", run=run_id, metrics=list(columns))
        out: dict[str, list[Any]] = {}
        for row in found:
            out.setdefault(row["name"], []).append((row["step"], row["value"]))
        return {name: out[name] for name in columns if name in out}  # the section's order
    found = query_rows(con, SERIES_QUERIES[mart], run=run_id)
    return {
        c: [(r["step"], r[c]) for r in found if r[c] is not None]
        for c in columns
        if any(r[c] is not None for r in found)
    }


@dataclass
class SectionFigure:
    """A section's chart, or why it has none (``figure`` None)."""

    figure: go.Figure | None
    why: str = ""
    use_for: str = ""


def _why(section: Section, mart: str | None, present: set[str]) -> str:
    if mart is not None and mart != "canonical" and mart not in present:
        return f"{mart} is not built: run `obs build`"
    return NEEDS.get(section.title) or section.note or "nothing logged"


def _section_chart(
    con: Any,
    run_id: str,
    section: Section,
    found: list[dict[str, Any]],
    present: set[str],
    settings: dict[str, Any],
    shades: Shades,
) -> SectionFigure | None:
    """The section's chart; None for a section the report draws no chart for."""
    title = f"{section.number}. {section.title}" if section.number else section.title
    if section.title == "Power law":
        return _power_law_chart(con, run_id, section, title, present)
    if section.title == "Evaluation results":
        if not section.available:
            return SectionFigure(None, _why(section, "fct_eval_results", present))
        figure = _figure(title, "latest evaluation, by opponent")
        for key in ("win_rate", "survival_rate"):
            figure.add_bar(
                x=[r["opponent"] for r in section.data],
                y=[r[key] for r in section.data],
                name=key.replace("_", " "),
            )
        figure.update_layout(xaxis_title="opponent")
        return SectionFigure(figure, use_for=_use_for(section.title, settings))
    chart = CHARTS.get(section.title)
    if chart is None:
        return None
    if chart.mart != "canonical" and chart.mart not in present:
        return SectionFigure(None, _why(section, chart.mart, present))
    columns = chart.columns
    held_out = (
        _held_out_canonical(con, run_id, present) if section.title == TRAINING_TITLE else None
    )
    if held_out is not None:
        columns = (held_out, *(c for c in columns if c != held_out))
    series = _series(con, run_id, chart.mart, columns)
    if not series:
        return SectionFigure(None, _why(section, chart.mart, present))
    if len(series) > 1 and not chart.one_panel:
        figure, places = _panels(title, series)
        if held_out in places:
            # the held-out findings are about the run's held-out metric, whatever its name
            places = {**places, "eval_accuracy": places[held_out]}
    else:
        figure = _figure(title)
        for name, points in series.items():
            figure.add_scatter(
                x=[p[0] for p in points],
                y=[p[1] for p in points],
                mode="lines+markers" if len(points) < 60 else "lines",
                name=name.replace("_", " "),
                # a derived series drawn over the logged one stays visible
                line={"dash": "dot"} if name != chart.columns[0] else None,
            )
        for column, label in chart.thresholds:
            value = settings.get(column)
            if value is not None:
                figure.add_hline(
                    y=value,
                    line_dash="dot",
                    annotation_text=f"{label} {_share(value)}",
                    name=column,
                )
        if section.title == "Prefix cache":
            _mark_warmup(figure, series["cache_hit_rate"], settings)
        figure.update_layout(yaxis_title=chart.axis)
        places = {name: {} for name in series}  # one panel
    # steps are whole numbers: no tick at 1.5
    figure.update_xaxes(**whole_ticks([p[0] for points in series.values() for p in points]))
    _mark_findings(figure, found, places, shades)
    return SectionFigure(figure, use_for=_use_for(section.title, settings))


def _held_out_canonical(con: Any, run_id: str, present: set[str]) -> str | None:
    """The canonical name of the run's held-out metric (the key fct_reward_hacking judges
    against, picked by the var performance_metric) when it is a held-out alias (a
    canonical name starting with ``eval``); the training chart draws it first."""
    if not {"fct_reward_hacking", "fct_metric_summary"} <= present:
        return None
    found = query_rows(con, "report_held_out", run=run_id)
    name = found[0]["canonical_metric"] if found else None
    return name if isinstance(name, str) and name.startswith("eval") else None


def _share(value: float) -> str:
    return f"{value * 100:g}%"


def _mark_warmup(figure: go.Figure, points: list[Any], settings: dict[str, Any]) -> None:
    """A line where the cache's warm-up ends (its hit rate is judged from there on)."""
    warmup = settings.get("cache_warmup_steps")
    if warmup is None or not points:
        return
    figure.add_vline(
        x=points[0][0] + warmup - 0.5,
        line_dash="dot",
        line_color="#9aa5b1",
        annotation_text="warm-up",
        annotation_position="bottom right",
        annotation_font_size=10,
    )


def _panels(title: str, series: dict[str, list[Any]]) -> tuple[go.Figure, dict[str, dict]]:
    """One small panel per series (two columns), each on its own scale; and where
    each series sits (metric -> row and column)."""
    from plotly.subplots import make_subplots

    names = list(series)
    rows_ = (len(names) + 1) // 2
    figure = make_subplots(
        rows=rows_,
        cols=2,
        subplot_titles=[n.replace("_", " ") for n in names],
        vertical_spacing=0.5 / rows_ if rows_ > 1 else 0.1,
        horizontal_spacing=0.08,
    )
    places = {}
    for index, name in enumerate(names):
        points = series[name]
        places[name] = {"row": index // 2 + 1, "col": index % 2 + 1}
        figure.add_scatter(
            x=[p[0] for p in points],
            y=[p[1] for p in points],
            mode="lines+markers" if len(points) < 60 else "lines",
            name=name.replace("_", " "),
            showlegend=False,
            **places[name],
        )
    figure.update_layout(
        title={"text": title},
        template="plotly_white",
        height=120 + 230 * rows_,
        margin={"l": 60, "r": 20, "t": 80, "b": 40},
    )
    # Every panel shows its step axis (a panel alone in the last row has none below it).
    figure.update_xaxes(showticklabels=True)
    figure.update_xaxes(title_text="step", row=rows_)
    return figure, places


def _logs_compute(con: Any, run_id: str) -> bool:
    return bool(query_value(con, "report_logs_compute", run=run_id))


def _power_law_chart(
    con: Any, run_id: str, section: Section, title: str, present: set[str]
) -> SectionFigure:
    if not section.available:
        if "fct_power_law_fit" in present and not _logs_compute(con, run_id):
            return SectionFigure(None, NEEDS["Power law"])
        return SectionFigure(None, section.note or _why(section, "fct_power_law_fit", present))
    points = query_rows(con, "report_power_law_points", run=run_id)
    if not points:
        return SectionFigure(None, "no step logged both a positive reward and a positive compute")
    figure = _figure(title, "reward against cumulative compute, log-log")
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
    return SectionFigure(figure, use_for=_use_for(section.title, {}))


# --------------------------------------------------------------------------- page


def _settings(con: Any, present: set[str]) -> dict[str, Any]:
    """The build's thresholds (rpt_run_settings); empty when that model is not built."""
    if "rpt_run_settings" not in present:
        return {}
    found = query_rows(con, "run_settings")
    return found[0] if found else {}


@dataclass
class ReportContent:
    """What a run report shows: a chart per section with data, the sections without."""

    findings: list[dict[str, Any]]
    # (section title, its "use for" line, its figure)
    charts: list[ChartBlock]  # named by their section, div ids run-0, run-1, ...
    missing: list[dict[str, Any]]  # number, title, why
    info: Any
    counts: dict[str, int]  # findings by severity


def report_content(warehouse: Path, analysis: Analysis) -> ReportContent:
    """The run report's charts and cards (findings shaded in the charts); the HTML file
    (``write_run_report``) and ``obs serve``'s report page both show it."""
    con = open_runs(warehouse)
    try:
        present = table_names(con)
        settings = _settings(con, present)
        shades = signal_shades(con, present)
        findings = next((s.data or [] for s in analysis.sections if s.title.startswith("Find")), [])
        if "fct_run_findings" in present:
            findings = _with_signals(con, analysis.run_id, findings)
        charts: list[ChartBlock] = []
        missing: list[dict[str, Any]] = []
        for section in analysis.sections:
            drawn = _section_chart(
                con, analysis.run_id, section, findings, present, settings, shades
            )
            if drawn is not None and drawn.figure is not None:
                title, number = section.title, len(charts)
                charts.append(
                    ChartBlock(title, title, drawn.use_for, drawn.figure, f"run-{number}")
                )
            elif drawn is not None:
                missing.append({"number": section.number, "title": section.title, "why": drawn.why})
            elif not section.available and section.title != FINDINGS:
                missing.append(
                    {"number": section.number, "title": section.title, "why": section.note}
                )
    finally:
        con.close()
    info = next(s.data for s in analysis.sections if s.title == "Run info")
    counts = {
        level: sum(1 for f in findings if f["severity"] == level)
        for level in ("critical", "warning", "info")
    }
    return ReportContent(findings, charts, missing, info, counts)


def write_run_report(warehouse: Path, analysis: Analysis, out: Path) -> Path:
    """Write the run's HTML report: a chart per section with data (findings shaded),
    then one card naming the sections without data and what each needs."""
    content = report_content(warehouse, analysis)
    html = (
        environment()
        .get_template("run_report.html")
        .render(
            title=f"obs: {analysis.name} ({analysis.run_id})",
            plotly_script=plotly_script("inline"),
            analysis=analysis,
            info=content.info,
            counts=content.counts,
            findings=content.findings,
            charts=content.charts,
            generated_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            fmt=number,
            missing=content.missing,
        )
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    temporary = out.with_name(f".{out.name}.tmp")
    temporary.write_text(html)
    temporary.replace(out)
    return out


def _use_for(title: str, settings: dict[str, Any]) -> str:
    if title == "Extraction":
        if "extraction_rate_min" not in settings:
            return (
                "the share of orders the parser extracted (no target line: rpt_run_settings "
                "is not built; run `obs build`)"
            )
        return (
            "the share of orders the parser extracted (the target line: "
            f"extraction_rate_min {_share(settings['extraction_rate_min'])})"
        )
    if title == "Prefix cache":
        if "cache_hit_good" not in settings:
            return (
                "cache hit rate (no threshold lines: rpt_run_settings is not built; run "
                "`obs build`)"
            )
        return (
            f"cache hit rate: good above {_share(settings['cache_hit_good'])} after the first "
            f"{settings['cache_warmup_steps']} steps of warm-up, low below "
            f"{_share(settings['cache_hit_low'])}"
        )
    return {
        "Training metrics": "loss and KL should fall or stay bounded, reward rise; a shaded band "
        "is a finding about the metric of its panel",
        "Performance": "trajectories per second, and whether training or rollouts bound a step",
        "Rollout reliability": "failed rollouts and the slowest rollout and volume reload",
        "Power law": "whether reward grows as a power of compute (a straight line on log-log "
        "axes), and the fitted exponent",
        "League": "Elo of the challenger and its win rate against the league",
        "Evaluation results": "win and survival rates at the latest evaluation, by opponent",
    }.get(title, title)
