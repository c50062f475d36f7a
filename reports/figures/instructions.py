"""The instruction charts: each IFEval instruction type's success by iteration,
and how pairs of instructions interfere.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from obs.reports.figures.base import (
    DIVERGING,
    NO_VALUE,
    SEQUENTIAL,
    empty,
    iteration_axis,
    layout,
    sequential_range,
    symmetric_range,
)


def instruction_types(frame: pd.DataFrame, *, title: str) -> go.Figure:
    """Instruction success rate by iteration, hardest first, tier in the label."""
    if frame.empty:
        return empty(title, "no rollout carries IFEval instruction ids")
    rows = frame.drop_duplicates("instruction_id").sort_values(
        ["difficulty_rank", "instruction_id"]
    )
    labels = [f"{i} [{t}]" for i, t in zip(rows["instruction_id"], rows["tier"], strict=True)]
    iterations = np.sort(frame["iteration"].unique())
    grid = frame.pivot_table(index="instruction_id", columns="iteration", values="success_rate")
    z = grid.reindex(index=rows["instruction_id"], columns=iterations).to_numpy(dtype=float)
    low, high = sequential_range(z)
    figure = go.Figure(
        go.Heatmap(
            z=z,
            x=iterations.astype(float),
            y=labels,
            zmin=low,
            zmax=high,
            colorscale=SEQUENTIAL,
            colorbar={"title": {"text": "success"}, "tickformat": ".0%"},
            hoverongaps=False,
            hovertemplate="%{y}<br>iteration %{x}<br>success %{z:.1%}<extra></extra>",
        )
    )
    iteration_axis(figure, iterations)
    figure.update_yaxes(
        title_text="instruction type [tier]", autorange="reversed", showgrid=False, zeroline=False
    )
    figure.update_layout(plot_bgcolor=NO_VALUE)
    note = f"colours span the success rates seen, {low:.0%} to {high:.0%}"
    if np.isnan(z).any():
        note += "; grey: not observed at that iteration"
    return layout(figure, title, note, height=max(380, 28 * len(labels) + 160))


LIFT_FLOOR = -4.0  # rpt_instruction_interference draws a lift below 1/16 at log2 = -4


def _lift_ticks(half: float) -> tuple[list[float], list[str]]:
    """Colour bar ticks of a log2(lift) scale, labelled as lifts (x0.5, x1, x2)."""
    whole = [float(v) for v in range(-int(half), int(half) + 1)]
    values = sorted({-half, *whole, half})
    return values, [f"\u00d7{2**v:.2g}" for v in values]


def instruction_interference(
    frame: pd.DataFrame, min_rollouts: int | None = None, *, title: str
) -> go.Figure:
    """Each co-occurring pair coloured by lift (log2, diverging around a lift of 1);
    pairs with fewer than ``min_rollouts`` rollouts grey; n, joint and expected
    success on hover."""
    if frame.empty:
        return empty(title, "no prompt carries two instructions")
    names = sorted(set(frame["instruction_a"]) | set(frame["instruction_b"]))
    index = {n: i for i, n in enumerate(names)}
    size = len(names)
    lift = np.full((size, size), np.nan)
    grey = np.full((size, size), np.nan)
    hover = np.full((size, size), "", dtype=object)
    marks = np.full((size, size), "", dtype=object)
    for row in frame.itertuples(index=False):
        a, b = index[row.instruction_a], index[row.instruction_b]
        stuck = ""
        if row.is_stuck_at_one or row.is_stuck_at_zero:
            stuck = f"<br>STUCK at {row.joint_success_rate:.0%}: a broken verifier?"
            marks[a, b] = marks[b, a] = f"{row.joint_success_rate:.0%}"
        ratio = "-" if pd.isna(row.lift) else f"{row.lift:.2f}"
        expected = "-" if pd.isna(row.expected_joint_rate) else f"{row.expected_joint_rate:.1%}"
        few = "<br>too few rollouts to colour" if row.has_too_few_rollouts else ""
        text = (
            f"lift {ratio}<br>joint success {row.joint_success_rate:.1%}"
            f" (expected {expected})<br>n {row.n:,} rollouts{few}{stuck}"
        )
        hover[a, b] = hover[b, a] = text
        if row.has_too_few_rollouts or pd.isna(row.drawn_log2_lift):
            grey[a, b] = grey[b, a] = 1.0
        else:
            lift[a, b] = lift[b, a] = row.drawn_log2_lift
    # the colour range follows the lifts drawn, but for those at the floor (no joint
    # success): they take the scale's end, so they do not squeeze every other colour
    low, high = symmetric_range(np.where(lift > LIFT_FLOOR, lift, np.nan))
    if not np.isfinite(np.where(lift > LIFT_FLOOR, lift, np.nan)).any():
        low, high = symmetric_range(lift)
    ticks, labels = _lift_ticks(high)
    if np.nanmin(lift, initial=0.0) < low:
        labels[0] = "\u2264" + labels[0]
    figure = go.Figure(
        [
            go.Heatmap(
                z=lift,
                x=names,
                y=names,
                zmin=low,
                zmax=high,
                colorscale=DIVERGING,
                customdata=hover,
                text=marks,
                texttemplate="%{text}",
                name="lift",
                colorbar={
                    "title": {"text": "lift (log scale)", "side": "right"},
                    "tickvals": ticks,
                    "ticktext": labels,
                },
                hoverongaps=False,
                hovertemplate="%{y} + %{x}<br>%{customdata}<extra></extra>",
            ),
            go.Heatmap(
                z=grey,
                x=names,
                y=names,
                zmin=0,
                zmax=1,
                colorscale=[[0.0, NO_VALUE], [1.0, NO_VALUE]],
                showscale=False,
                customdata=hover,
                name="too few rollouts",
                hoverongaps=False,
                hovertemplate="%{y} + %{x}<br>%{customdata}<extra></extra>",
            ),
        ]
    )
    figure.update_xaxes(title_text="instruction", tickangle=40, showgrid=False)
    figure.update_yaxes(title_text="instruction", autorange="reversed", showgrid=False)
    # a pair never seen together has no cell: the background shows, the same grey as a
    # thin pair's, far from the near-white of a lift of 1
    figure.update_layout(plot_bgcolor=NO_VALUE)
    note = "lift = joint success / the product of the two success rates: red below 1 (interfere)"
    if (marks != "").any():
        note += "; a % in a cell: stuck at 0% or 100% (a broken verifier?)"
    if min_rollouts is not None:
        note += f"; grey: fewer than {min_rollouts} rollouts, or never together"
    else:
        note += "; grey: never together"
    return layout(figure, title, note, height=max(480, 34 * len(names) + 260))
