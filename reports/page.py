"""The HTML page machinery every report shares: the Jinja environment and its filters,
a figure embedded as JSON, the plotly.js script, and the
sections page (one tab per topic, one section per run) the reward and agent
dashboards write.

Pages are written with autoescaping on: every text from a source (a prompt,
a response, a run's name) shows as text.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup
from obs.core.text import json_in_html, marked_strings
from obs.reports.blocks import ChartBlock
from obs.reports.errors import ReportError
from obs.reports.figures.agent import ADVANTAGE_ORIGINS
from obs.reports.figures.base import THEME
from plotly.offline import get_plotlyjs, get_plotlyjs_version

if TYPE_CHECKING:
    from obs.reports.charts import Chart

PLOTLY_CDN = f"https://cdn.plot.ly/plotly-{get_plotlyjs_version()}.min.js"


def _fmt_int(value: Any) -> str:
    return "-" if value is None else f"{int(value):,}"


def _fmt_pct(value: Any) -> str:
    return "-" if value is None else f"{float(value):.1%}"


def _fmt_num(value: Any, digits: int = 3) -> str:
    return "-" if value is None else f"{float(value):.{digits}f}"


@functools.cache
def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("obs.reports", "templates"),
        autoescape=select_autoescape(),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["fmt_int"] = _fmt_int
    env.filters["fmt_pct"] = _fmt_pct
    env.filters["fmt_num"] = _fmt_num
    env.filters["embed"] = embed
    env.filters["json_data"] = json_data
    env.globals["advantage_origins"] = list(ADVANTAGE_ORIGINS)
    env.globals["plotly_theme"] = _theme_json()
    return env


def _theme_json() -> Markup:
    """The charts' Plotly template as JSON, embedded once per page (see figures.base.THEME)."""
    template = pio.templates[THEME].to_plotly_json()
    return Markup(json_in_html(json.dumps(template, separators=(",", ":"))))


def for_run(frames: dict[str, pd.DataFrame], run: str) -> dict[str, pd.DataFrame]:
    """Each query's rows of one run (the queries read every chosen run at once)."""
    return {
        name: rows[rows["run_id"] == run].reset_index(drop=True) for name, rows in frames.items()
    }


def embed(figure: go.Figure) -> Markup:
    """The figure as JSON for a ``<script type="application/json">`` block.

    Arrays go out in Plotly's compact binary form (base64 typed arrays). The
    page draws a chart when its tab is first shown, so a large dashboard
    paints its first tab without waiting for the other thirteen charts.
    """
    content = figure.to_dict()
    # Plotly stores its default template in every figure; the page applies the
    # dashboards' own once instead (figures.base.THEME), and leaving it out saves 7 kB a chart.
    content["layout"].pop("template", None)
    # Titles, ticks and hover text show control characters and bidirectional controls
    # as marks, as the rest of a page does (obs.core.text).
    text = pio.to_json(marked_strings(content), validate=False)
    return Markup(json_in_html(text))


def chart_block(chart: Chart, figure: go.Figure, div_id: str) -> ChartBlock:
    """A registry chart's block: its figure drawn for a page, named ``div_id`` there."""
    return ChartBlock(chart.name, chart.title, chart.use_for, figure, div_id, chart.wide)


def json_data(value: Any) -> Markup:
    """``value`` as JSON for a ``<script type="application/json">`` block (the raw data
    table's rows, the group selector's entries)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return Markup(json_in_html(text))


def plotly_script(plotlyjs: str) -> Markup:
    if plotlyjs == "cdn":
        return Markup(f'<script src="{PLOTLY_CDN}"></script>')
    if plotlyjs != "inline":
        raise ReportError(f"--plotlyjs {plotlyjs}: choose inline or cdn")
    return Markup(f"<script>{get_plotlyjs()}</script>")


@dataclass(frozen=True)
class SectionsPage:
    """What distinguishes one kind of sections page (sections.html) from another."""

    kind: str  # the header's words: "reward monitoring"
    missing: str  # what a run can lack: "reward data"
    no_data_block: str  # the data-block of the note shown instead of the tabs
    layout: str  # how _blocks.html lays out a section: "reward" (a column) or "agent" (a grid)
    assets_template: str  # the page's own styles and scripts


def write_sections_page(
    page: SectionsPage,
    out: Path,
    *,
    title: str,
    runs: list[dict[str, Any]],
    tabs: list[dict[str, str]],
    reason: str | None,
    without_data: list[str],
    generated_at: datetime,
    plotlyjs: str,
) -> Path:
    """Write a sections page: every run's section in each tab, or the reason there is none."""
    html = (
        environment()
        .get_template("sections.html")
        .render(
            title=title,
            plotly_script=plotly_script(plotlyjs) if runs else Markup(""),
            runs=runs,
            tabs=tabs,
            reason=reason,
            without_data=without_data,
            generated_at=generated_at.strftime("%Y-%m-%d %H:%M UTC"),
            kind=page.kind,
            missing=page.missing,
            no_data_block=page.no_data_block,
            layout=page.layout,
            assets_template=page.assets_template,
        )
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html)
    return out
