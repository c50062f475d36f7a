"""The run comparison: several runs side by side, one Okabe-Ito colour each
(learning curves, what happened to the prompts, instruction difficulty).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from obs.reports.figures.base import (
    OKABE_ITO,
    empty,
    floats,
    iteration_axis,
    layout,
    plain_text,
    short,
)
from plotly.subplots import make_subplots


def run_colours(runs: list[str]) -> dict[str, str]:
    """One Okabe-Ito colour per run, in the order given (the same in every comparison chart;
    past eight runs the colours repeat)."""
    return {run: OKABE_ITO[i % len(OKABE_ITO)] for i, run in enumerate(runs)}


# The learning-curve panels: (column, axis title, tick format).
CURVES = (
    ("mean_score", "mean score", ".2f"),
    ("solved_share", "prompts solved", ".0%"),  # under the build's success rule
    ("zero_variance_share", "zero-variance groups", ".0%"),
)


def compare_learning_curves(
    frame: pd.DataFrame, colours: dict[str, str], *, title: str
) -> go.Figure:
    """Mean score, share of prompts solved and share of zero-variance groups by iteration:
    one line per run in each of three stacked panels sharing the iteration axis."""
    if frame.empty:
        return empty(title, "no run iterations in this selection")
    figure = make_subplots(
        rows=len(CURVES),
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.1,
        subplot_titles=[
            "mean score",
            "prompts solved (any rollout solved it)",
            "zero-variance groups (every rollout scored the same: no GRPO gradient)",
        ],
    )
    for run, colour in colours.items():
        rows = frame[frame["run_id"] == run].sort_values("iteration")
        if rows.empty:
            continue
        for panel, (column, _, spec) in enumerate(CURVES, start=1):
            figure.add_trace(
                go.Scatter(
                    x=floats(rows, "iteration"),
                    y=floats(rows, column),
                    name=run,
                    legendgroup=run,
                    showlegend=panel == 1,
                    mode="lines+markers" if len(rows) <= 60 else "lines",
                    marker={"size": 5},
                    line={"color": colour, "width": 2},
                    customdata=floats(rows, "n_prompts"),
                    hovertemplate=f"run {plain_text(run)}<br>iteration %{{x}}<br>%{{y:{spec}}}"
                    " over %{customdata} prompts<extra></extra>",
                ),
                row=panel,
                col=1,
            )
    for panel, (_, axis_title, spec) in enumerate(CURVES, start=1):
        figure.update_yaxes(title_text=axis_title, tickformat=spec, row=panel, col=1)
        if spec.endswith("%"):
            figure.update_yaxes(rangemode="tozero", row=panel, col=1)
    iteration_axis(figure, np.sort(frame["iteration"].unique()))
    # every panel reads its own iterations; only the bottom one names the axis
    figure.update_xaxes(showticklabels=True, title_text=None)
    figure.update_xaxes(title_text="iteration", row=len(CURVES), col=1)
    figure.update_layout(
        legend={"orientation": "h", "x": 1, "xanchor": "right", "y": 1.04, "yanchor": "bottom"}
    )
    runs = frame["run_id"].nunique()
    note = f"{runs} runs; iterations as each run numbered them"
    figure = layout(figure, title, note, height=820)
    figure.update_layout(margin={"t": 110})
    return figure


# The prompt outcomes compared: (column of compare_prompts.sql, bar label).
OUTCOMES = (
    ("learned", "learned (solved at some iteration)"),
    ("never_solved", "never solved"),
    ("forgotten", "forgotten at least once"),
    ("forgotten_at_end", "forgotten at the end"),
    ("plateaued", "plateaued"),
    ("stuck_solved", "stuck: every rollout solves it"),
    ("stuck_failed", "stuck: every rollout fails it"),
)


def compare_prompt_outcomes(
    frame: pd.DataFrame, colours: dict[str, str], *, title: str
) -> go.Figure:
    """Per run, the share of its prompts in each outcome (grouped bars, a colour per run)."""
    if frame.empty:
        return empty(title, "no prompts in this selection")
    labels = [label for _, label in OUTCOMES]
    figure = go.Figure()
    for run, colour in colours.items():
        rows = frame[frame["run_id"] == run]
        if rows.empty:
            continue
        row = rows.iloc[0]
        prompts = int(row["prompts"])
        counts = np.array([float(row[column]) for column, _ in OUTCOMES])
        shares = counts / prompts if prompts else np.full(len(counts), np.nan)
        figure.add_trace(
            go.Bar(
                x=shares,
                y=labels,
                orientation="h",
                name=run,
                marker={"color": colour},
                customdata=np.stack([counts, np.full(len(counts), float(prompts))], axis=1),
                hovertemplate=f"run {plain_text(run)}<br>%{{y}}: %{{x:.1%}}"
                " (%{customdata[0]:.0f} of %{customdata[1]:.0f} prompts)<extra></extra>",
            )
        )
    figure.update_xaxes(
        title_text="share of the run's prompts", tickformat=".0%", rangemode="tozero"
    )
    figure.update_yaxes(autorange="reversed")
    figure.update_layout(
        barmode="group",
        legend={"orientation": "h", "x": 1, "xanchor": "right", "y": 1.02, "yanchor": "bottom"},
    )
    note = "over every iteration each run logged; stuck: the same score for every rollout"
    height = max(420, min(1600, 14 * len(OUTCOMES) * len(colours) + 60 * len(OUTCOMES) + 160))
    return layout(figure, title, note, height=height)


def compare_instruction_difficulty(
    frame: pd.DataFrame, colours: dict[str, str], *, title: str
) -> go.Figure:
    """Per instruction type (hardest first, by the mean over runs), each run's success rate:
    grouped horizontal bars, a colour per run."""
    if frame.empty:
        return empty(title, "no rollout of these runs carries IFEval instruction ids")
    order = (
        frame.groupby("instruction_id")["avg_success_rate"]
        .mean()
        .reset_index()
        .sort_values(["avg_success_rate", "instruction_id"])["instruction_id"]
        .tolist()
    )
    figure = go.Figure()
    for run, colour in colours.items():
        rows = frame[frame["run_id"] == run].set_index("instruction_id").reindex(order)
        if rows["avg_success_rate"].isna().all():
            continue
        figure.add_trace(
            go.Bar(
                x=rows["avg_success_rate"].to_numpy(dtype=float),
                y=order,
                orientation="h",
                name=run,
                marker={"color": colour},
                customdata=np.stack(
                    [
                        rows["n"].to_numpy(dtype=float),
                        rows["first_success_rate"].to_numpy(dtype=float),
                        rows["last_success_rate"].to_numpy(dtype=float),
                    ],
                    axis=1,
                ),
                text=[str(t) if isinstance(t, str) else "" for t in rows["tier"]],
                textposition="none",
                hovertemplate=f"run {plain_text(run)}<br>%{{y}} [%{{text}}]<br>success %{{x:.1%}}"
                " over %{customdata[0]:.0f} rollouts<br>first iteration %{customdata[1]:.0%},"
                " last %{customdata[2]:.0%}<extra></extra>",
            )
        )
    figure.update_xaxes(title_text="success rate", tickformat=".0%", range=[0, 1.02])
    figure.update_yaxes(
        title_text="instruction type (hardest first)",
        autorange="reversed",
        tickmode="array",
        tickvals=order,
        ticktext=[short(i, 44) for i in order],
    )
    figure.update_layout(
        barmode="group",
        legend={"orientation": "h", "x": 1, "xanchor": "right", "y": 1.02, "yanchor": "bottom"},
    )
    note = (
        f"{len(order)} instruction types; success over each run's iterations, rollouts"
        " weighted; a missing bar: the run never saw that type"
    )
    height = max(420, min(2400, (12 * len(colours) + 14) * len(order) + 180))
    return layout(figure, title, note, height=height)
