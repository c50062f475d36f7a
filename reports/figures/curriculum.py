"""The curriculum charts: which prompts to upsample, how fast each prompt was
learned, and which stopped moving.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from obs.reports.figures.base import (
    OKABE_ITO,
    cap_note,
    empty,
    finite,
    layout,
    sequential_range,
    whole_step,
)

# Upsampling priority: one hue (ColorBrewer Oranges), darker for higher priority.
PRIORITY_COLOURS = {"high": "#fdae6b", "medium": "#fdd9b5", "low": "#fff5eb"}
PLATEAUED, MOVING = OKABE_ITO[1], OKABE_ITO[0]  # orange, blue
# Where the plateau chart's log axis draws a variance of 0 (plateau.sql's drawn_variance).
VARIANCE_FLOOR = 1e-6


def sample_efficiency(
    frame: pd.DataFrame,
    fast_iterations: float,
    good_score: float,
    total: int | None = None,
    *,
    title: str,
) -> go.Figure:
    """Iterations to first success vs the share of the last visit's rollouts that
    succeed, both under the build's success rule (var success), the quadrant's two
    cuts; never-solved prompts on the right."""
    if frame.empty:
        return empty(title, "no prompts")
    learned = frame["iterations_to_learn"].dropna()
    # never-solved prompts sit two iterations right of the last learner and of the divide
    never_x = max(float(learned.max()) if not learned.empty else 0.0, fast_iterations) + 2
    x = frame["iterations_to_learn"].fillna(never_x).to_numpy(dtype=float)
    y = frame["final_success_rate"].to_numpy(dtype=float)
    hover = [
        f"{label}<br>{quadrant}"
        for label, quadrant in zip(frame["prompt_label"], frame["efficiency_quadrant"], strict=True)
    ]
    instructions = frame["num_instructions"].fillna(0).to_numpy(dtype=float)
    marker: dict[str, object] = {"size": 9, "opacity": 0.8}
    if instructions.max() > 0:
        marker |= {
            "color": instructions,
            "colorscale": "Plasma",
            "showscale": True,
            "colorbar": {"title": {"text": "instructions"}},
        }
    else:  # no instruction counts: one colour, no colour bar
        marker["color"] = OKABE_ITO[0]
    figure = go.Figure(
        go.Scatter(
            x=x,
            y=y,
            mode="markers",
            marker=marker,
            text=hover,
            hovertemplate="%{text}<br>iterations to learn %{x}<br>final success rate %{y:.3f}"
            "<extra></extra>",
        )
    )
    divide = fast_iterations + 0.5
    figure.add_vline(x=divide, line_dash="dash", line_color="#777")
    figure.add_hline(y=good_score, line_dash="dash", line_color="#777")
    # the axis follows the data and keeps the divide
    low, high = sequential_range(np.append(finite(y), good_score))
    pad = 0.1 * (high - low)
    bottom, top = low - pad, high + pad
    corners = [
        (0, top, "fast learner", "left", "top"),
        (never_x, top, "slow learner", "right", "top"),
        (0, bottom, "quick failure", "left", "bottom"),
        (never_x, bottom, "hard / failed", "right", "bottom"),
    ]
    for cx, cy, text, anchor, side in corners:
        figure.add_annotation(
            x=cx,
            y=cy,
            text=f"<b>{text}</b>",
            showarrow=False,
            xanchor=anchor,
            yanchor=side,
            font={"size": 12},
        )
    figure.add_annotation(
        x=never_x,
        y=(bottom + top) / 2,
        text="never solved",
        showarrow=False,
        textangle=-90,
        xshift=18,
    )
    figure.update_xaxes(
        title_text="iterations to first success (never solved at the right)",
        tickmode="linear",
        tick0=0,
        dtick=whole_step(never_x, ticks=30),
        tickformat="d",
    )
    figure.update_yaxes(
        title_text="final success rate (last visit's rollouts that succeed)", range=[bottom, top]
    )
    return layout(figure, title, cap_note(len(frame), total, "the most informative"))


def plateau_detection(
    frame: pd.DataFrame,
    threshold: float,
    floor: float,
    total: int | None = None,
    *,
    title: str,
) -> go.Figure:
    """Recent variance of each prompt's mean score, lowest first, plateaued in orange.

    The axis is logarithmic, so a variance of 0 (a flat prompt) is drawn at
    ``floor`` (the query's ``drawn_variance``); the hover gives the real value.
    """
    if frame.empty:
        return empty(title, "no prompt has two observed iterations yet")
    colours = np.where(frame["is_plateau"].to_numpy(dtype=bool), PLATEAUED, MOVING)
    figure = go.Figure(
        go.Bar(
            x=frame["prompt_label"].tolist(),
            y=frame["drawn_variance"].to_numpy(dtype=float),
            customdata=frame["recent_variance"].to_numpy(dtype=float),
            marker={"color": colours.tolist()},
            hovertemplate="%{x}<br>recent variance %{customdata:.6f}<extra></extra>",
        )
    )
    figure.add_hline(y=threshold, line_dash="dash", line_color="#000000")
    # written by hand: on a log axis an annotation's y is the power of ten
    figure.add_annotation(
        x=0,
        xref="paper",
        xanchor="left",
        y=float(np.log10(threshold)),
        yanchor="bottom",
        text=f"plateau threshold {threshold:g}",
        showarrow=False,
        bgcolor="rgba(255, 255, 255, 0.85)",
    )
    figure.update_xaxes(title_text="prompt (lowest recent variance first)", showticklabels=False)
    # a label at each power of ten only (10⁻⁶, 10⁻⁵, ...): no 2 and 5 between them
    figure.update_yaxes(
        title_text="recent variance of mean score",
        type="log",
        dtick=1,
        exponentformat="power",
        showexponent="all",
        minor={"showgrid": False, "ticks": ""},
    )
    # from a decade below the lowest bar, so the flattest prompts (the plateaued,
    # those drawn at the floor) show as bars, not slivers
    drawn = finite(frame["drawn_variance"])
    bottom = min(float(drawn.min()) if drawn.size else floor, threshold)
    top = max(float(drawn.max()) if drawn.size else threshold, threshold)
    figure.update_yaxes(range=[np.log10(bottom) - 1, np.log10(top) + 0.5])
    note = cap_note(len(frame), total, "those with the lowest variance")
    return layout(
        figure, title, f"{note}; plateaued in orange; a variance of 0 is drawn at {floor:g}"
    )


def upsampling_table(frame: pd.DataFrame, *, title: str) -> go.Figure:
    """The top 20 upsampling candidates, rows shaded by priority."""
    if frame.empty:
        return empty(title, "no prompts")
    fills = [PRIORITY_COLOURS.get(p, "#ffffff") for p in frame["priority"]]
    columns = [
        ("rank", frame["upsampling_rank"].astype(str)),
        ("prompt", frame["prompt_hash"] + " " + frame["prompt_preview"].fillna("").str[:60]),
        ("priority", frame["priority"]),
        ("score", frame["upsampling_score"].map("{:.2f}".format)),
        ("final", frame["final_score"].map("{:.2f}".format)),
        ("slope", frame["learning_rate"].map(lambda v: "-" if pd.isna(v) else f"{v:+.3f}")),
        ("forgot", frame["num_forgetting_events"].astype(str)),
        ("quadrant", frame["efficiency_quadrant"]),
    ]
    figure = go.Figure(
        go.Table(
            columnwidth=[30, 330, 60, 50, 50, 60, 50, 100],
            header={"values": [f"<b>{c}</b>" for c, _ in columns], "fill_color": "#e0e0e0"},
            cells={
                "values": [v.tolist() for _, v in columns],
                "fill_color": [fills] * len(columns),
                "align": ["right", "left", "left", "right", "right", "right", "right", "left"],
            },
        )
    )
    # as tall as its rows (a 20-row table fits)
    height = max(240, min(640, 120 + 21 * (len(frame) + 1)))
    figure = layout(figure, title, "high / medium / low priority by upsampling score", height)
    figure.update_layout(margin={"b": 20})
    return figure
