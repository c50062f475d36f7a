"""What every figure shares: the palettes, the charts' look, titles and empty
charts, colour ranges, and the small helpers that turn query rows into arrays
and table text.
"""

from __future__ import annotations

import textwrap
from html import escape

import numpy as np
import pandas as pd
import plotly.graph_objects as go

# Every colour encoding is one colour-blind readers can tell apart: no red
# against green. Diverging around 0 (ColorBrewer RdBu): red below 0, blue above.
DIVERGING = [
    [0.0, "#ca0020"],
    [0.25, "#f4a582"],
    [0.5, "#f7f7f7"],
    [0.75, "#92c5de"],
    [1.0, "#0571b0"],
]
# Sequential over the data's range: viridis (dark purple low, yellow high).
SEQUENTIAL = "Viridis"
WHITE_TO_BLUE = [[0.0, "#f7fbff"], [1.0, "#08306b"]]
# Heatmap cells with no value (a prompt not observed at an iteration, a pair
# with too few rollouts) show this grey: a mid grey, far from every colour of the
# scales above (their pale ends and the diverging scale's near-white midpoint).
NO_VALUE = "#999999"
# Okabe-Ito: told apart with the common colour-vision deficiencies.
OKABE_ITO = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#56B4E9",  # sky blue
    "#D55E00",  # vermillion
    "#000000",  # black
    "#F0E442",  # yellow
)
# Notes written on a chart, and reference lines that should not draw the eye.
MUTED = "#616e7c"

# The charts' look (white background, light grid). Setting it on each figure costs
# Plotly a deep copy and a validation of the whole template (about 50 ms a chart,
# most of a dashboard's time), so the figures leave it out and each page applies it
# once, in the browser (base.html); ``themed`` sets it for a figure used on its own.
THEME = "plotly_white"


def themed(figure: go.Figure) -> go.Figure:
    """The figure with the dashboards' template set (for ``fig.show()`` or an image)."""
    return figure.update_layout(template=THEME)


def titled(title: str, subtitle: str = "") -> str:
    """A chart's title as Plotly shows it: the title, and the subtitle in small type."""
    return title + (f"<br><sup>{subtitle}</sup>" if subtitle else "")


def layout(figure: go.Figure, title: str, subtitle: str = "", height: int = 520) -> go.Figure:
    """The title (with its subtitle), height and margins every chart has."""
    figure.update_layout(
        title={"text": titled(title, subtitle), "x": 0.01},
        height=height,
        margin={"l": 60, "r": 30, "t": 80, "b": 60},
    )
    return figure


def empty(title: str, reason: str) -> go.Figure:
    """A chart with nothing to draw: its title and the reason in the middle."""
    figure = go.Figure()
    figure.add_annotation(text=reason, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    figure.update_xaxes(visible=False)
    figure.update_yaxes(visible=False)
    return layout(figure, title, height=300)


def no_data(title: str, reason: str) -> go.Figure:
    """A chart's place when the run has none of its data: a note saying why, and what
    would fill it (as the reward and agent pages do)."""
    return empty(title, "<br>".join(textwrap.wrap(f"No data: {reason}", 90)))


def finite(values: object) -> np.ndarray:
    """The finite values, flattened."""
    array = np.asarray(values, dtype=float).ravel()
    return array[np.isfinite(array)]


def symmetric_range(values: object) -> tuple[float, float]:
    """A colour range centred on 0: ± the largest absolute value (±1 when all are 0)."""
    kept = finite(values)
    half = float(np.abs(kept).max()) if kept.size else 0.0
    if half < 1e-12:
        half = 1.0
    return -half, half


def sequential_range(values: object, low: float | None = None) -> tuple[float, float]:
    """A colour range over the data: [min, max] (from ``low`` when given).

    A flat grid (every value the same) gets a range around its value, so the
    colour bar still reads it.
    """
    kept = finite(values)
    if not kept.size:
        return (0.0 if low is None else low), 1.0
    start = float(kept.min()) if low is None else low
    end = float(kept.max())
    if end - start < 1e-12:
        if low is not None:
            return start, start + 1.0
        pad = max(abs(start) * 0.1, 0.5)
        return start - pad, end + pad
    return start, end


def score_scale(values: object) -> dict[str, object]:
    """Colours for a score: diverging around 0 (symmetric) when any value is below 0,
    else sequential over the values' range."""
    kept = finite(values)
    if kept.size and kept.min() < 0:
        low, high = symmetric_range(kept)
        return {"zmin": low, "zmax": high, "colorscale": DIVERGING}
    low, high = sequential_range(kept)
    return {"zmin": low, "zmax": high, "colorscale": SEQUENTIAL}


def cap_note(shown: int, total: int | None, how: str) -> str:
    """How many of the run's prompts a capped chart shows, and which."""
    if total is None or shown >= total:
        return f"all {shown} prompts"
    return f"{shown} of {total} prompts, {how}; the rest are one SQL query away"


def short(label: str, width: int = 56) -> str:
    """``label`` cut to ``width`` characters, an ellipsis marking the cut."""
    return label if len(label) <= width else label[: width - 1].rstrip() + "\u2026"


def whole_step(span: float, ticks: int = 8) -> int:
    """A tick spacing of 1, 2 or 5 times a power of ten, whole and at least 1, that
    puts about ``ticks`` ticks over ``span``."""
    if span <= ticks:
        return 1
    magnitude = 10 ** int(np.floor(np.log10(span / ticks)))
    return next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude * ticks >= span)


def whole_ticks(values: object, each: int = 12) -> dict[str, object]:
    """Axis settings that put ticks on whole numbers only (a step, an iteration: never 1.5).

    A tick at each value when there are at most ``each``; else ticks every
    ``whole_step`` from 0, which zooming in cannot split.
    """
    kept = np.unique(finite(values))
    if not kept.size:
        return {}
    if kept.size <= each:
        return {"tickmode": "array", "tickvals": kept.tolist(), "tickformat": "d"}
    span = float(kept.max() - kept.min())
    return {"tickmode": "linear", "tick0": 0, "dtick": whole_step(span), "tickformat": "d"}


def step_axis(
    figure: go.Figure,
    steps: object,
    title: str = "step",
    *,
    row: int | None = None,
    col: int | None = None,
) -> None:
    """A step axis (of one subplot, with ``row`` and ``col``) titled and ticked on whole steps."""
    figure.update_xaxes(title_text=title, **whole_ticks(steps), row=row, col=col)


def iteration_axis(figure: go.Figure, iterations: np.ndarray, title: str = "iteration") -> None:
    """An iteration axis with a tick at each iteration when there are few (never 1.5)."""
    figure.update_xaxes(
        title_text=title, showgrid=False, zeroline=False, **whole_ticks(iterations, each=25)
    )


def floats(frame: pd.DataFrame, column: str) -> np.ndarray:
    """A numeric column as floats, nulls as NaN (Plotly draws them as gaps)."""
    return pd.to_numeric(frame[column], errors="coerce").astype("float64").to_numpy()


def formatted(values: pd.Series, spec: str) -> list[str]:
    """Each value formatted with ``spec``; ``-`` for a null."""
    return ["-" if pd.isna(v) else format(float(v), spec) for v in values]


def plain_text(value: object) -> str:
    """Free text for a table cell or a hover: Plotly reads a few HTML tags in it."""
    return escape(str(value), quote=False)


def as_strings(value: object) -> list[str]:
    """A VARCHAR[] cell as a Python list (null: empty)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return []
    # (a list or a numpy array)
    return [str(v) for v in value]  # type: ignore[attr-defined]
