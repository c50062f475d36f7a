"""The agentic run charts (a multi-turn agent trained with GRPO): eval results
over training, groups kept and filtered, early exits, turn-by-turn advantages.
Each takes the rows its agent query returns for one run.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from obs.reports.figures.base import (
    DIVERGING,
    MUTED,
    NO_VALUE,
    OKABE_ITO,
    WHITE_TO_BLUE,
    empty,
    floats,
    iteration_axis,
    layout,
    plain_text,
    titled,
    whole_ticks,
)

# DIVERGING: red below 0 (penalised), blue above (rewarded).
WHITE_TO_ORANGE = [[0.0, "#fff7ec"], [1.0, "#b35806"]]
# Cells with no value (a turn the rollout did not reach) show the plot's background.
NOT_REACHED = NO_VALUE
# How a turn's advantage came about, by the code agent_dashboard gives it.
ADVANTAGE_ORIGINS = (
    "computed from turn rewards",
    "given by the rollout",
    "given by the trainer's log",
)
# The eval rates: column of agent_eval_steps.sql, label, colour, dash, width.
EVAL_RATES = (
    ("accuracy", "accuracy (correct)", OKABE_ITO[0], "solid", 3),
    ("attempted_rate", "attempted an answer", OKABE_ITO[4], "solid", 2),
    ("found_rate", "found the right e-mail", OKABE_ITO[2], "solid", 2),
    ("read_rate", "read the right e-mail", OKABE_ITO[3], "solid", 2),
    ("idk_share", 'answered "I don\'t know"', OKABE_ITO[1], "dash", 2),
)
EVAL_SEARCHES = (
    ("total_searches", "all searches", OKABE_ITO[0], "solid"),
    ("total_unique_searches", "distinct searches", OKABE_ITO[4], "dash"),
    ("total_repeated_searches", "repeated searches", OKABE_ITO[1], "solid"),
)
# Early exits by reason (rollouts basis): column, label, colour.
EARLY_REASONS = (
    ("early_answered", "gave an answer", OKABE_ITO[0]),
    ("early_idk", 'said "I don\'t know"', OKABE_ITO[1]),
    ("early_error", "hit an error", OKABE_ITO[3]),
    ("early_other", "other or no reason given", "#999999"),
)
TRAIN_SHARES = (
    ("early_exit_rate", "rollouts that finished early", "#000000", "solid"),
    ("filtered_share", "groups filtered", OKABE_ITO[1], "dash"),
    ("trainable_token_share", "tokens trained on", OKABE_ITO[0], "solid"),
)
# The views of the advantage-by-turn heatmap: column, label (its button's and its
# colour bar's), colour bar format.
TURN_VIEWS = (
    ("mean_advantage", "mean advantage", "+.2f"),
    ("negative_share", "share below 0", ".0%"),
    ("std_advantage", "std of advantages", ".2f"),
)
GROUP_BASIS = {
    "rollouts": "counted from the rollouts: a group is filtered when its scores' std is below"
    " {min_group_std:g}",
    "trainer-log": "as the trainer logged them (its own min_group_std)",
    "tracker": "from the tracker's train/groups_kept and train/groups_filtered",
}
EVAL_MISSING = (
    "No eval statistics for this run: land its eval files with obs ingest eval-logs DIR"
    " --run RUN (or its console log with obs ingest trainer-log), then obs build"
)
GROUPS_MISSING = (
    "No group summary for this run: it needs rollouts with group_id, num_turns/max_turns or"
    " exit_reason, or the trainer's console log (obs ingest trainer-log)"
)
TURNS_MISSING = (
    "No turn advantages for this run: it needs rollouts with turn_advantages or"
    " turn_rewards, or the trainer's console log with its advantage tables"
)


def _agent_empty(title: str, reason: str) -> go.Figure:
    """An empty chart saying why, its reason wrapped to fit a half-width chart."""
    return empty(title, "<br>".join(textwrap.wrap(reason, 70)))


def _mode(frame: pd.DataFrame) -> str:
    return "lines+markers" if len(frame) <= 60 else "lines"


def _step_axis(figure: go.Figure, title: str, steps: np.ndarray) -> None:
    """The x axis of a chart over steps (a tick at each step when there are few), a unified
    hover, and the legend under the chart in trace order."""
    ticks = sorted({float(s) for s in steps if not np.isnan(s)})
    if len(ticks) <= 12:
        low, high = ticks[0], ticks[-1]
        # room for half a bar beyond the first and the last step
        gaps = np.diff(ticks)
        pad = 0.6 * float(gaps.min()) if len(gaps) else 1.5
        figure.update_xaxes(range=[low - pad, high + pad])
    figure.update_xaxes(title_text=title, **whole_ticks(ticks))
    figure.update_layout(
        hovermode="x unified",
        legend={"orientation": "h", "x": 0, "y": -0.2, "yanchor": "top", "traceorder": "normal"},
        margin={"b": 120},
    )


def agent_eval_rates(frame: pd.DataFrame, *, title: str) -> go.Figure:
    """Accuracy, attempted, found and read rates and the idk share, one line each;
    the beat rate where a baseline was compared; a baseline as dotted reference lines."""
    steps = frame[~frame["is_baseline"].astype(bool)]
    baseline = frame[frame["is_baseline"].astype(bool)]
    if steps.empty:
        return _agent_empty(title, EVAL_MISSING)
    figure = go.Figure()
    x = floats(steps, "step")
    drawn = []
    for column, label, colour, dash, width in EVAL_RATES:
        y = floats(steps, column)
        if np.isnan(y).all():
            continue
        drawn.append((column, label, colour))
        figure.add_trace(
            go.Scatter(
                x=x,
                y=y,
                name=label,
                mode=_mode(steps),
                line={"color": colour, "dash": dash, "width": width},
                hovertemplate="%{y:.1%}",
            )
        )
    beat = floats(steps, "beat_rate_shown")
    if not np.isnan(beat).all():
        figure.add_trace(
            go.Scatter(
                x=x,
                y=beat,
                name="beat the baseline (share of queries)",
                mode=_mode(steps),
                line={"color": "#000000", "dash": "dashdot", "width": 2},
                hovertemplate="%{y:.1%}",
            )
        )
    notes = []
    if not baseline.empty:
        row = baseline.iloc[0]
        marked = False
        for column, label, colour in drawn:
            value = row[column]
            if pd.isna(value):
                continue
            figure.add_hline(
                y=float(value),
                line={"color": colour, "dash": "dot", "width": 1.5},
                annotation_text=f"baseline {label.split(' (')[0]}: {float(value):.1%}"
                if not marked
                else "",
                annotation_position="top left",
                annotation_font={"size": 11, "color": colour},
            )
            marked = True
        if marked:
            figure.add_trace(
                go.Scatter(
                    x=[None],
                    y=[None],
                    mode="lines",
                    name="dotted: the baseline, before training",
                    line={"color": MUTED, "dash": "dot", "width": 1.5},
                    hoverinfo="skip",
                )
            )
    if np.isnan(beat).all():
        notes.append("beat rate not shown: no baseline was compared")
    figure.update_yaxes(
        title_text="share of eval samples", tickformat=".0%", range=[0, 1.04], rangemode="tozero"
    )
    _step_axis(figure, "training step", x)
    count = len(steps)
    subtitle = f"{count} eval step{'s' if count != 1 else ''}"
    return layout(figure, title, "; ".join([subtitle, *notes]), height=500)


def agent_eval_searches(frame: pd.DataFrame, *, title: str) -> go.Figure:
    """All, distinct and repeated searches of each eval (counts), one line each."""
    steps = frame[~frame["is_baseline"].astype(bool)]
    if steps.empty or steps["total_searches"].isna().all():
        return _agent_empty(title, "No search counts in this run's eval statistics")
    figure = go.Figure()
    x = floats(steps, "step")
    for column, label, colour, dash in EVAL_SEARCHES:
        figure.add_trace(
            go.Scatter(
                x=x,
                y=floats(steps, column),
                name=label,
                mode=_mode(steps),
                line={"color": colour, "dash": dash, "width": 2},
                customdata=np.column_stack(
                    [floats(steps, "repeated_search_share"), floats(steps, "avg_search_attempts")]
                ),
                hovertemplate="%{y:,.0f}"
                + (
                    " (%{customdata[0]:.0%} of all)"
                    if column == "total_repeated_searches"
                    else " (%{customdata[1]:.2f} a sample)"
                    if column == "total_searches"
                    else ""
                ),
            )
        )
    figure.update_yaxes(title_text="searches in the eval", rangemode="tozero")
    _step_axis(figure, "training step", x)
    return layout(figure, title, "repeated = all - distinct", height=440)


def agent_eval_turns(frame: pd.DataFrame, *, title: str) -> go.Figure:
    """Mean turns of correct and of "I don't know" answers (lines, left axis), and the
    number of "I don't know" answers (bars, right axis)."""
    steps = frame[~frame["is_baseline"].astype(bool)]
    correct = floats(steps, "avg_turns_correct_shown")
    idk = floats(steps, "avg_turns_idk_shown")
    if steps.empty or (np.isnan(correct).all() and np.isnan(idk).all()):
        return _agent_empty(title, "No turn averages in this run's eval statistics")
    figure = go.Figure()
    x = floats(steps, "step")
    counts = floats(steps, "num_idk")
    if not np.isnan(counts).all():
        figure.add_trace(
            go.Bar(
                x=x,
                y=counts,
                name='"I don\'t know" answers (right axis)',
                marker={"color": "#c8ccd2"},
                hovertemplate="%{y:,.0f} answers",
            )
        )
    for values, label, colour in (
        (correct, "turns of a correct answer", OKABE_ITO[0]),
        (idk, 'turns of an "I don\'t know"', OKABE_ITO[1]),
    ):
        figure.add_trace(
            go.Scatter(
                x=x,
                y=values,
                name=label,
                mode=_mode(steps),
                yaxis="y2",
                line={"color": colour, "width": 2},
                hovertemplate="%{y:.2f} turns",
            )
        )
    figure.update_layout(
        yaxis={"title": {"text": '"I don\'t know" answers'}, "side": "right", "showgrid": False},
        yaxis2={
            "title": {"text": "mean turns"},
            "overlaying": "y",
            "side": "left",
            "rangemode": "tozero",
            "tickmode": "auto",
        },
        bargap=0.5,
    )
    _step_axis(figure, "training step", x)
    return layout(figure, title, "a mean is left out where no sample gave that answer", 440)


def _basis_note(frame: pd.DataFrame) -> str:
    notes = []
    for basis, rows in frame.groupby("basis", sort=True):
        threshold = rows["min_group_std"].dropna()
        text = GROUP_BASIS.get(str(basis), f"from {basis}")
        notes.append(text.format(min_group_std=threshold.iloc[0] if not threshold.empty else 0))
    return "; ".join(notes)


def agent_groups(frame: pd.DataFrame, *, title: str) -> go.Figure:
    """Groups kept and filtered per iteration, stacked; an x where every group was filtered."""
    rows = frame[frame["groups_total"].notna()]
    if rows.empty:
        return _agent_empty(title, GROUPS_MISSING)
    figure = go.Figure()
    x = floats(rows, "iteration")
    custom = np.column_stack([floats(rows, "groups_total"), floats(rows, "filtered_share")])
    for column, label, colour in (
        ("groups_kept", "kept for training", OKABE_ITO[0]),
        ("groups_filtered", "filtered (low variance)", OKABE_ITO[1]),
    ):
        figure.add_trace(
            go.Bar(
                x=x,
                y=floats(rows, column),
                name=label,
                marker={"color": colour},
                customdata=custom,
                hovertemplate=f"{label}: %{{y:,.0f}} of %{{customdata[0]:,.0f}}<extra></extra>",
            )
        )
    skipped = rows[rows["all_groups_filtered"].astype(bool)]
    if not skipped.empty:
        figure.add_trace(
            go.Scatter(
                x=floats(skipped, "iteration"),
                y=floats(skipped, "groups_total"),
                mode="markers",
                name="every group filtered: step skipped",
                marker={"symbol": "x", "size": 11, "color": "#000000"},
                hovertemplate="iteration %{x}: every group filtered<extra></extra>",
            )
        )
    figure.update_layout(barmode="stack", bargap=0.25)
    figure.update_yaxes(title_text="groups (queries)", rangemode="tozero")
    _step_axis(figure, "iteration (training step)", x)
    return layout(figure, title, _basis_note(rows), height=440)


def agent_early_exits(frame: pd.DataFrame, *, title: str) -> go.Figure:
    """Rollouts that finished early per iteration: stacked by reason when counted from
    rollouts, the total where a log or tracker gave only that."""
    rows = frame[frame["finished_early"].notna()]
    if rows.empty:
        return _agent_empty(title, "No early exits could be told for this run")
    figure = go.Figure()
    x = floats(rows, "iteration")
    total = floats(rows, "rollouts")
    counted = rows["basis"].eq("rollouts")
    for column, label, colour in EARLY_REASONS:
        y = np.where(counted, floats(rows, column), np.nan)
        if column == "early_other" and not np.nansum(y):
            continue
        if np.isnan(y).all():
            continue
        figure.add_trace(
            go.Bar(
                x=x,
                y=y,
                name=label,
                marker={"color": colour},
                customdata=total,
                hovertemplate=f"{label}: %{{y:,.0f}} of %{{customdata:,.0f}}",
            )
        )
    logged = floats(rows, "early_logged")
    if not np.isnan(logged).all():
        figure.add_trace(
            go.Bar(
                x=x,
                y=logged,
                name="finished early (the logged total; no reasons)",
                marker={"color": OKABE_ITO[4]},
                customdata=total,
                hovertemplate="finished early: %{y:,.0f} of %{customdata:,.0f}",
            )
        )
    figure.update_layout(barmode="stack", bargap=0.25)
    figure.update_yaxes(title_text="rollouts that finished early", rangemode="tozero")
    _step_axis(figure, "iteration (training step)", x)
    notes = []
    if counted.any():
        notes.append(
            "from rollouts: fewer turns than max_turns, or an exit other than running out of"
            " turns (errors included)"
        )
    if not counted.all():
        notes.append("as the trainer logged them (its rule leaves error exits out)")
    return layout(figure, title, "; ".join(notes), height=440)


def agent_train_shares(frame: pd.DataFrame, *, title: str) -> go.Figure:
    """The early-exit rate, the filtered share and the trainable-token share, as lines."""
    present = [c for c, _, _, _ in TRAIN_SHARES if frame[c].notna().any()]
    if frame.empty or not present:
        return _agent_empty(title, GROUPS_MISSING)
    figure = go.Figure()
    x = floats(frame, "iteration")
    for column, label, colour, dash in TRAIN_SHARES:
        if column not in present:
            continue
        figure.add_trace(
            go.Scatter(
                x=x,
                y=floats(frame, column),
                name=label,
                mode=_mode(frame),
                line={"color": colour, "dash": dash, "width": 2},
                hovertemplate="%{y:.1%}",
            )
        )
    figure.update_yaxes(title_text="share", tickformat=".0%", range=[0, 1.04])
    _step_axis(figure, "iteration (training step)", x)
    missing = [label for c, label, _, _ in TRAIN_SHARES if c not in present]
    note = "of the iteration's rollouts, groups and tokens"
    if missing:
        note += "; not logged: " + ", ".join(missing)
    return layout(figure, title, note, height=400)


def advantage_group_title(title: str, entry: dict) -> str:
    """The group heatmap's title for one selector entry (the page redraws it on a pick)."""
    rollouts = len(entry["rollouts"])
    subtitle = (
        f"iteration {entry['iteration']} · group {plain_text(entry['group_id'])} · {rollouts}"
        f" rollout{'s' if rollouts != 1 else ''} · {entry['origin']} · grey: turn not reached"
    )
    return titled(title, subtitle)


def agent_advantage_group(entry: dict | None, zmax: float, *, title: str) -> go.Figure:
    """One group's advantages, rollout by turn, diverging around 0 (range ±``zmax``).

    ``entry`` is one selector entry (agent_dashboard): the page redraws the chart
    with another entry's ``z``, ``rollouts``, ``turns``, ``how`` and title."""
    if entry is None:
        return _agent_empty(title, TURNS_MISSING)
    figure = go.Figure(
        go.Heatmap(
            x=entry["turns"],
            y=entry["rollouts"],
            z=entry["z"],
            customdata=[
                [None if code is None else ADVANTAGE_ORIGINS[code] for code in row]
                for row in entry["how"]
            ],
            zmin=-zmax,
            zmax=zmax,
            colorscale=DIVERGING,
            colorbar={"title": {"text": "advantage"}},
            hoverongaps=False,
            xgap=2,
            ygap=2,
            texttemplate="%{z:+.2f}" if entry["text"] else "",
            hovertemplate="rollout %{y}, turn %{x}<br>advantage %{z:+.3f}<br>%{customdata}"
            "<extra></extra>",
        )
    )
    figure.update_xaxes(title_text="turn", dtick=1, showgrid=False, zeroline=False)
    figure.update_yaxes(
        title_text="rollout", dtick=1, autorange="reversed", showgrid=False, zeroline=False
    )
    figure = layout(figure, title, height=entry["height"])
    figure.update_layout(
        title={"text": advantage_group_title(title, entry)}, plot_bgcolor=NOT_REACHED
    )
    return figure


def _turn_grid(frame: pd.DataFrame, column: str) -> list[list[float | None]]:
    """A turn x iteration grid of ``column`` (rows: turns from 1), None where no rollout was."""
    grid = frame.pivot(index="turn", columns="iteration", values=column)
    grid = grid.reindex(
        index=sorted(frame["turn"].unique()), columns=sorted(frame["iteration"].unique())
    )
    return [[None if pd.isna(v) else float(v) for v in row] for row in grid.to_numpy()]


def agent_turn_means(frame: pd.DataFrame, *, title: str) -> go.Figure:
    """The advantages at each turn index, iteration by iteration (a heatmap with a
    menu: mean, share below 0, spread). The mean by default when the run's
    advantages were given; computed ones average 0 at every turn by their rule."""
    if frame.empty:
        return _agent_empty(title, TURNS_MISSING)
    given = bool(frame["any_given"].iloc[0])
    mean_range = float(frame["mean_advantage_range"].iloc[0] or 0)
    std_range = float(frame["std_advantage_range"].iloc[0] or 0)
    # the colour ranges: symmetric around 0 for the mean (±1 when every mean is 0)
    half = mean_range if mean_range > 1e-9 else 1.0
    views = {
        "mean_advantage": (-half, half),
        "negative_share": (0.0, 1.0),
        "std_advantage": (0.0, std_range if std_range > 0 else 1.0),
    }
    scales = {
        "mean_advantage": DIVERGING,
        "negative_share": WHITE_TO_ORANGE,
        "std_advantage": WHITE_TO_BLUE,
    }
    grids = {column: _turn_grid(frame, column) for column, _, _ in TURN_VIEWS}
    custom = np.stack(
        [
            np.array(_turn_grid(frame, c), dtype=float)
            for c in (
                "rollouts_active",
                "rollouts",
                "mean_advantage",
                "std_advantage",
                "negative_share",
            )
        ],
        axis=-1,
    )
    shown = "mean_advantage" if given else "negative_share"
    labels = {column: (short, spec) for column, short, spec in TURN_VIEWS}
    turns = sorted(int(t) for t in frame["turn"].unique())
    iterations = sorted(int(i) for i in frame["iteration"].unique())

    def style(column: str) -> dict:
        low, high = views[column]
        short, spec = labels[column]
        return {
            "z": [grids[column]],
            "zmin": [low],
            "zmax": [high],
            "colorscale": [scales[column]],
            "colorbar.title.text": [short],
            "colorbar.title.side": ["right"],
            "colorbar.tickformat": [spec],
        }

    first = style(shown)
    figure = go.Figure(
        go.Heatmap(
            x=iterations,
            y=turns,
            z=grids[shown],
            zmin=first["zmin"][0],
            zmax=first["zmax"][0],
            colorscale=scales[shown],
            colorbar={
                "title": {"text": first["colorbar.title.text"][0], "side": "right"},
                "tickformat": labels[shown][1],
            },
            customdata=custom,
            hoverongaps=False,
            hovertemplate="iteration %{x}, turn %{y}<br>mean advantage %{customdata[2]:+.3f}"
            " (std %{customdata[3]:.3f})<br>below 0: %{customdata[4]:.0%}<br>"
            "%{customdata[0]:,.0f} of %{customdata[1]:,.0f} rollouts reached it<extra></extra>",
        )
    )
    # The views as a row of buttons above the plot, in the top margin: a dropdown's open
    # list would cover the heatmap's top rows.
    figure.update_layout(
        updatemenus=[
            {
                "type": "buttons",
                "direction": "right",
                "x": 0.0,
                "xanchor": "left",
                "y": 1.0,
                "yanchor": "bottom",
                "pad": {"b": 10},
                "active": [c for c, _, _ in TURN_VIEWS].index(shown),
                "showactive": True,
                "bgcolor": "#ffffff",
                "font": {"size": 11},
                "buttons": [
                    {"label": short, "method": "restyle", "args": [style(column)]}
                    for column, short, _ in TURN_VIEWS
                ],
            }
        ],
        plot_bgcolor=NOT_REACHED,
    )
    figure.add_annotation(
        text="show:",
        x=0.0,
        xref="paper",
        xanchor="right",
        xshift=-6,
        y=1.0,
        yref="paper",
        yanchor="bottom",
        yshift=14,
        showarrow=False,
        font={"color": MUTED},
    )
    iteration_axis(figure, np.array(iterations), "iteration (training step)")
    figure.update_yaxes(title_text="turn", **whole_ticks(turns, each=30), showgrid=False)
    if given:
        note = "advantages as the source gave them; grey: no rollout reached the turn"
    else:
        note = (
            "computed advantages average 0 at each turn by their rule: shown is the share below 0"
        )
    figure = layout(figure, title, note, height=max(420, min(800, 240 + 34 * len(turns))))
    figure.update_layout(margin={"t": 125})
    return figure


def agent_turn_active(frame: pd.DataFrame, *, title: str) -> go.Figure:
    """The share of an iteration's rollouts that reached each turn."""
    if frame.empty:
        return _agent_empty(title, TURNS_MISSING)
    turns = sorted(int(t) for t in frame["turn"].unique())
    custom = np.stack(
        [np.array(_turn_grid(frame, c), dtype=float) for c in ("rollouts_active", "rollouts")],
        axis=-1,
    )
    figure = go.Figure(
        go.Heatmap(
            x=sorted(int(i) for i in frame["iteration"].unique()),
            y=turns,
            z=_turn_grid(frame, "active_share"),
            zmin=0.0,
            zmax=1.0,
            colorscale=WHITE_TO_BLUE,
            colorbar={
                "title": {"text": "rollouts still going", "side": "right"},
                "tickformat": ".0%",
            },
            customdata=custom,
            hoverongaps=False,
            hovertemplate="iteration %{x}, turn %{y}<br>%{customdata[0]:,.0f} of"
            " %{customdata[1]:,.0f} rollouts reached it (%{z:.0%})<extra></extra>",
        )
    )
    figure.update_layout(plot_bgcolor=NOT_REACHED)
    iteration_axis(figure, frame["iteration"].unique(), "iteration (training step)")
    figure.update_yaxes(title_text="turn", **whole_ticks(turns, each=30), showgrid=False)
    note = "share of the iteration's rollouts (with turn data) that reached the turn"
    figure = layout(figure, title, note, height=max(420, min(800, 240 + 34 * len(turns))))
    figure.update_layout(margin={"t": 125})
    return figure
