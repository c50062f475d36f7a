"""The prompt-level charts: a heatmap of prompts by iteration (mean score, V_i,
S_i, strict accuracy, score spread), the forgetting heatmap, and the score
distribution by iteration.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from obs.reports.figures.base import (
    DIVERGING,
    NO_VALUE,
    OKABE_ITO,
    SEQUENTIAL,
    cap_note,
    empty,
    iteration_axis,
    layout,
    no_data,
    score_scale,
    sequential_range,
    short,
    symmetric_range,
)

# Solved or not (two categories): ColorBrewer PuOr's ends, orange and purple.
UNSOLVED, SOLVED = "#f1a340", "#542788"
SOLVED_SCALE = [[0.0, UNSOLVED], [0.5, UNSOLVED], [0.5, SOLVED], [1.0, SOLVED]]


def _prompt_rows(
    figure: go.Figure,
    title: str,
    labels: list[str],
    iterations: np.ndarray,
    total: int | None,
    order: str,
    notes: list[str],
    ticktext: list[str] | None = None,
) -> go.Figure:
    """Axes, cap note and height shared by the heatmaps with one row per prompt.

    The full label stays each row's name (and its hover); the axis shows
    ``ticktext``, by default the label cut short."""
    iteration_axis(figure, iterations)
    shown = len(labels) <= 40
    figure.update_yaxes(
        title_text=f"prompt ({order} on top)",
        autorange="reversed",
        showticklabels=shown,
        showgrid=False,
        zeroline=False,
    )
    if shown:
        figure.update_yaxes(
            tickmode="array",
            tickvals=labels,
            ticktext=ticktext or [short(label) for label in labels],
        )
    figure.update_layout(plot_bgcolor=NO_VALUE)
    note = "; ".join([cap_note(len(labels), total, "the most informative"), *notes])
    return layout(figure, title, note, height=max(420, min(1400, 14 * len(labels) + 160)))


# The prompt heatmaps' colour scales: "score" follows the data (diverging
# around 0 when any value is below 0); "spread" is sequential from 0 (no
# spread) to the largest; "solved" has two colours.
HEATMAP_SCALES = ("score", "spread", "solved")


def prompt_heatmap(
    frame: pd.DataFrame,
    value: str,
    total_prompts: int | None = None,
    scale: str = "score",
    colorbar_title: str = "",
    missing: str = "",
    note: str = "",
    *,
    title: str,
) -> go.Figure:
    """Prompts (rows, ordered by first success) x iterations, coloured by ``value``.

    ``missing`` is the note shown instead when no row has ``value`` (a source
    without V_i or S_i); ``note`` goes in the subtitle.
    """
    if scale not in HEATMAP_SCALES:
        raise ValueError(f"scale {scale!r}: one of {', '.join(HEATMAP_SCALES)}")
    if frame.empty:
        return empty(title, "no prompt iterations in this selection")
    if frame[value].isna().all():
        return no_data(title, missing or f"no rollout of this run carries {value}")
    rows = frame.drop_duplicates("prompt_hash").sort_values("display_order")
    labels = rows["prompt_label"].tolist()
    iterations = np.sort(frame["iteration"].unique())
    grid = frame.pivot_table(index="prompt_label", columns="iteration", values=value)
    z = grid.reindex(index=labels, columns=iterations).to_numpy(dtype=float)
    colorbar: dict[str, object] = {"title": {"text": colorbar_title}}
    notes = [note] if note else []
    spec = ".3f"
    if scale == "solved":
        colours: dict[str, object] = {"zmin": 0.0, "zmax": 1.0, "colorscale": SOLVED_SCALE}
        colorbar |= {"tickvals": [0.25, 0.75], "ticktext": ["not solved", "solved"]}
        spec = ".0f"
    elif scale == "spread":
        low, high = sequential_range(z, low=0.0)
        colours = {"zmin": low, "zmax": high, "colorscale": SEQUENTIAL}
        notes.append("colours from 0 (no spread: no gradient) to the largest spread")
    else:
        colours = score_scale(z)
        if colours["colorscale"] is DIVERGING:
            notes.append("red below 0, blue above")
    if np.isnan(z).any():
        notes.append("grey: not observed at that iteration")
    figure = go.Figure(
        go.Heatmap(
            z=z,
            x=iterations.astype(float),
            y=labels,
            **colours,
            colorbar=colorbar,
            hoverongaps=False,
            hovertemplate="%{y}<br>iteration %{x}<br>" + value + f" %{{z:{spec}}}<extra></extra>",
        )
    )
    return _prompt_rows(
        figure, title, labels, iterations, total_prompts, "earliest first success", notes
    )


def forgetting_heatmap(
    frame: pd.DataFrame, total_prompts: int | None = None, *, title: str
) -> go.Figure:
    """Iteration-to-iteration change of strict accuracy; rows by forgetting count."""
    if frame.empty:
        return empty(title, "no prompt was observed at two iterations")
    rows = frame.drop_duplicates("prompt_hash").sort_values(
        ["num_forgetting_events", "prompt_hash"], ascending=[False, True]
    )
    drops = [
        f"  ({events} drop{'' if events == 1 else 's'})" for events in rows["num_forgetting_events"]
    ]
    labels = [label + d for label, d in zip(rows["prompt_label"], drops, strict=True)]
    ticktext = [short(label, 46) + d for label, d in zip(rows["prompt_label"], drops, strict=True)]
    iterations = np.sort(frame["iteration"].unique())
    grid = frame.pivot_table(index="prompt_hash", columns="iteration", values="strict_acc_change")
    z = grid.reindex(index=rows["prompt_hash"], columns=iterations).to_numpy(dtype=float)
    low, high = symmetric_range(z)
    figure = go.Figure(
        go.Heatmap(
            z=z,
            x=iterations.astype(float),
            y=labels,
            zmin=low,
            zmax=high,
            colorscale=DIVERGING,
            colorbar={
                "title": {"text": "change", "side": "right"},
                "tickvals": [low, 0, high],
                "ticktext": ["lost", "same", "gained"],
            },
            hoverongaps=False,
            hovertemplate="%{y}<br>iteration %{x}<br>strict acc change %{z:+.0f}<extra></extra>",
        )
    )
    notes = ["change since the previous observed iteration: red lost, blue gained"]
    if np.isnan(z).any():
        notes.append("grey: not observed")
    return _prompt_rows(
        figure, title, labels, iterations, total_prompts, "most forgetting", notes, ticktext
    )


def score_distribution(frame: pd.DataFrame, *, title: str) -> go.Figure:
    """A box per iteration drawn from the quantile mart (whiskers at p05 and p95)."""
    if frame.empty:
        return empty(title, "no scores")
    x = frame["iteration"].to_numpy(dtype=float)
    figure = go.Figure(
        go.Box(
            x=x,
            q1=frame["p25"].to_numpy(dtype=float),
            median=frame["p50"].to_numpy(dtype=float),
            q3=frame["p75"].to_numpy(dtype=float),
            lowerfence=frame["p05"].to_numpy(dtype=float),
            upperfence=frame["p95"].to_numpy(dtype=float),
            mean=frame["mean_score"].to_numpy(dtype=float),
            sd=frame["std_score"].to_numpy(dtype=float),
            name="score",
            marker_color=OKABE_ITO[0],
            boxmean="sd",
        )
    )
    iteration_axis(figure, np.sort(frame["iteration"].unique()))
    figure.update_yaxes(title_text="score (box p25-p75, whiskers p05-p95, dashed mean ± sd)")
    return layout(figure, title)
