"""The prompt-level charts: a heatmap of prompts by iteration (mean score, V_i,
S_i, strict accuracy, score spread), the forgetting heatmap, and the score
distribution by iteration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
    whole_ticks,
)

# Solved or not (two categories): ColorBrewer PuOr's ends, orange and purple.
UNSOLVED, SOLVED = "#f1a340", "#542788"
SOLVED_SCALE = [[0.0, UNSOLVED], [0.5, UNSOLVED], [0.5, SOLVED], [1.0, SOLVED]]


@dataclass(frozen=True)
class Columns:
    """A prompt heatmap's columns: one per iteration, or one per visit.

    A run that shows each prompt once every k iterations (an epoch spread over
    k iterations) leaves k - 1 of every k cells of a row empty: a checkerboard.
    When every prompt's n-th visit falls in the n-th block of k iterations, the
    columns are the visits instead (a prompt's n-th visit: the n-th epoch), and
    the iteration of each cell stays in its hover. The marts keep iterations.
    """

    x: np.ndarray  # the column values: iterations, or visit numbers
    of_row: pd.Series  # each frame row's column value
    every: int  # iterations per column: 1 when the columns are iterations
    title: str  # the axis title

    @property
    def folded(self) -> bool:
        return self.every > 1


def columns(frame: pd.DataFrame, first_visit: int = 1) -> Columns:
    """Visits when they are regular (see ``Columns``), else iterations.

    ``frame`` holds one row per prompt (``prompt_hash``) and iteration shown;
    ``first_visit`` numbers a prompt's first row (the forgetting heatmap's rows
    start at a prompt's second visit: its first change).
    """
    iterations = np.sort(frame["iteration"].unique())
    plain = Columns(iterations, frame["iteration"], 1, "iteration")
    if len(iterations) < 2:
        return plain
    visit = frame.groupby("prompt_hash")["iteration"].rank(method="first").astype("int64") - 1
    most = int(visit.max()) + 1
    every = -(-len(iterations) // most)  # k: the iterations shown over the most visits
    if every < 2:
        return plain
    position = pd.Series(np.searchsorted(iterations, frame["iteration"]), index=frame.index)
    if not (position // every == visit).all():
        return plain  # a prompt seen twice in a block, or first seen late: not regular
    return Columns(
        np.arange(first_visit, first_visit + most),
        visit + first_visit,
        every,
        f"visit (each prompt's n-th: one every {every} iterations)",
    )


def _grid(
    frame: pd.DataFrame, value: str, index: str, rows: list[str], shown: Columns
) -> tuple[np.ndarray, np.ndarray]:
    """The heatmap's values and each cell's iteration (NaN where not observed)."""
    placed = frame.assign(_column=shown.of_row.to_numpy())
    z = placed.pivot_table(index=index, columns="_column", values=value, aggfunc="mean")
    at = placed.pivot_table(index=index, columns="_column", values="iteration", aggfunc="min")
    return (
        z.reindex(index=rows, columns=shown.x).to_numpy(dtype=float),
        at.reindex(index=rows, columns=shown.x).to_numpy(dtype=float),
    )


def _fold_note(shown: Columns) -> list[str]:
    if not shown.folded:
        return []
    return [
        f"columns are visits: each prompt is seen once every {shown.every} iterations"
        " (hover for the iteration)"
    ]


def _prompt_rows(
    figure: go.Figure,
    title: str,
    labels: list[str],
    shown: Columns,
    total: int | None,
    order: str,
    notes: list[str],
    ticktext: list[str] | None = None,
) -> go.Figure:
    """Axes, cap note and height shared by the heatmaps with one row per prompt.

    The full label stays each row's name (and its hover); the axis shows
    ``ticktext``, by default the label cut short."""
    iteration_axis(figure, shown.x, shown.title)
    named = len(labels) <= 40
    figure.update_yaxes(
        title_text=f"prompt ({order} on top)",
        autorange="reversed",
        showticklabels=named,
        showgrid=False,
        zeroline=False,
    )
    if named:
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
    shown = columns(frame)
    z, at = _grid(frame, value, "prompt_label", labels, shown)
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
    notes += _fold_note(shown)
    if np.isnan(z).any():
        notes.append(
            "grey: not observed " + ("at that visit" if shown.folded else "at that iteration")
        )
    where = "visit %{x} (iteration %{customdata})" if shown.folded else "iteration %{x}"
    figure = go.Figure(
        go.Heatmap(
            z=z,
            x=shown.x.astype(float),
            y=labels,
            **colours,
            colorbar=colorbar,
            hoverongaps=False,
            **({"customdata": at} if shown.folded else {}),
            hovertemplate="%{y}<br>" + where + "<br>" + value + f" %{{z:{spec}}}<extra></extra>",
        )
    )
    return _prompt_rows(
        figure, title, labels, shown, total_prompts, "earliest first success", notes
    )


def forgetting_heatmap(
    frame: pd.DataFrame, total_prompts: int | None = None, *, title: str
) -> go.Figure:
    """Iteration-to-iteration change of solved (under the build's success rule, as the
    forgetting counts); rows by forgetting count."""
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
    shown = columns(frame, first_visit=2)  # a prompt's first change is at its second visit
    z, at = _grid(frame, "solved_change", "prompt_hash", rows["prompt_hash"].tolist(), shown)
    low, high = symmetric_range(z)
    where = "visit %{x} (iteration %{customdata})" if shown.folded else "iteration %{x}"
    figure = go.Figure(
        go.Heatmap(
            z=z,
            x=shown.x.astype(float),
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
            **({"customdata": at} if shown.folded else {}),
            hovertemplate="%{y}<br>" + where + "<br>solved change %{z:+.0f}<extra></extra>",
        )
    )
    since = "visit" if shown.folded else "observed iteration"
    notes = [f"change since the previous {since}: red lost, blue gained", *_fold_note(shown)]
    if np.isnan(z).any():
        notes.append("grey: not observed")
    return _prompt_rows(
        figure, title, labels, shown, total_prompts, "most forgetting", notes, ticktext
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


def prompt_trajectory(iterations: list[dict[str, Any]]) -> go.Figure:
    """A prompt's served page's chart: its mean score (with its min-max band) and the
    share of its rollouts that succeed under the build's success rule (var success, as
    every count) by iteration, from prompt_iterations.sql's rows."""
    x = [r["iteration"] for r in iterations]
    figure = go.Figure()
    figure.add_trace(
        go.Scatter(
            x=x + x[::-1],
            y=[r["max_score"] for r in iterations] + [r["min_score"] for r in iterations][::-1],
            fill="toself",
            line={"width": 0},
            fillcolor="rgba(31, 119, 180, 0.15)",
            hoverinfo="skip",
            name="min to max",
        )
    )
    figure.add_trace(
        go.Scatter(
            x=x, y=[r["mean_score"] for r in iterations], name="mean score", mode="lines+markers"
        )
    )
    if any(r["success_rate"] is not None for r in iterations):
        figure.add_trace(
            go.Scatter(
                x=x,
                y=[r["success_rate"] for r in iterations],
                name="success rate",
                mode="lines+markers",
                yaxis="y2",
            )
        )
    figure.update_layout(
        title="Score and success rate by iteration",
        xaxis={"title": "iteration", **whole_ticks(x, each=25)},
        yaxis={"title": "score"},
        # a share: always 0 to 1, whatever the points (zoom and autoscale leave it)
        yaxis2={
            "title": "success rate",
            "overlaying": "y",
            "side": "right",
            "range": [0, 1],
            "autorange": False,
            "fixedrange": True,
            "showgrid": False,
            # its own ticks (Plotly would otherwise place them at the score axis' gridlines)
            "tickmode": "array",
            "tickvals": [0, 0.25, 0.5, 0.75, 1],
            "tickformat": ".2f",
        },
        legend={"orientation": "h"},
        margin={"t": 50, "l": 50, "r": 50, "b": 40},
        height=320,
    )
    return figure
