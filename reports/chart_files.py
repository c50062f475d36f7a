"""The training dashboard's charts one file each: ``obs render-dashboard --output-dir``.

A chart's file is named after its registry entry (``prompt_dynamics_fi.html``)
and holds that chart alone, as HTML (plotly.js inline or linked) or as a PNG
drawn by kaleido through the system Chromium.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import plotly.graph_objects as go
from obs.reports.charts import CHARTS, TRAINING, charts_of
from obs.reports.errors import ReportError
from obs.reports.figures.base import themed
from obs.reports.page import chart_block, environment, plotly_script
from obs.reports.render import Dashboard


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
    choices = list(charts_of(TRAINING))
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
    images: list[tuple[go.Figure, Path]] = []
    for folder, name, figure, whose in pages:
        if names and name not in names:
            continue
        folder.mkdir(parents=True, exist_ok=True)
        if fmt == "png":
            images.append((figure, folder / f"{name}.png"))
            continue
        chart = CHARTS[name]
        html = (
            environment()
            .get_template("chart.html")
            .render(
                title=f"{chart.title} ({whose})",
                plotly_script=plotly_script(plotlyjs),
                chart=chart_block(chart, figure, name),
            )
        )
        path = folder / f"{name}.html"
        path.write_text(html)
        written.append(path)
    return written + write_pngs(images)


def write_png(figure: go.Figure, path: Path) -> Path:
    """One figure as a PNG (see ``write_pngs``)."""
    return write_pngs([(figure, path)])[0]


def write_pngs(images: Sequence[tuple[go.Figure, Path]]) -> list[Path]:
    """Each figure as a PNG at its path, through kaleido driving the system Chromium
    (nothing is downloaded): one browser for all of them, started once.

    kaleido is the optional ``png`` extra (``pip install 'obs-warehouse[png]'``).
    """
    if not images:
        return []
    first = images[0][1]
    try:
        import kaleido
    except ImportError as exc:
        raise ReportError(
            f"{first}: --format png needs kaleido: pip install 'obs-warehouse[png]'"
        ) from exc
    browser = os.environ.get("BROWSER_PATH") or shutil.which("chromium")
    if browser is None:
        raise ReportError(f"{first}: --format png needs Chromium (apt-get install chromium)")
    specs = [
        {
            "fig": themed(go.Figure(figure)).to_dict(),
            "path": path,
            "opts": {
                "format": "png",
                "width": 1200,
                "height": int(figure.layout.height or 600),
                "scale": 1,
            },
        }
        for figure, path in images
    ]
    # One kaleido session renders every figure in one Chromium, a tab at a time; the
    # page loads plotly.js from the installed plotly and no MathJax (kaleido's default
    # fetches it from a CDN, and no chart writes TeX).
    try:
        errors = kaleido.write_fig_from_object_sync(
            specs, kopts={"path": browser, "mathjax": False}
        )
    except Exception as exc:
        raise ReportError(f"{first}: PNG export failed ({_first_line(exc)})") from exc
    failed = [path for _, path in images if not path.exists()]
    if errors or failed:
        where = failed[0] if failed else first
        reason = _first_line(errors[0]) if errors else "no image written"
        raise ReportError(f"{where}: PNG export failed ({reason})")
    return [path for _, path in images]


def _first_line(error: BaseException) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__
