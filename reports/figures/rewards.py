"""The reward charts: the training dashboard's reward analysis (reward cases,
V_i against S_i) and the reward monitoring page's views (the GRPO reward
monitor's signal, functions, training dynamics, quality, alerts and hacking).
Each takes the rows its reward query returns for one run.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from obs.reports.figures.base import (
    MUTED,
    OKABE_ITO,
    SEQUENTIAL,
    as_strings,
    empty,
    floats,
    formatted,
    iteration_axis,
    layout,
    plain_text,
    step_axis,
)
from plotly.subplots import make_subplots

# Alert levels by colour and by marker shape, so neither alone carries the level.
ALERT_STYLES = {
    "info": ("#56B4E9", "circle"),
    "warning": ("#E69F00", "triangle-up"),
    "error": ("#D55E00", "x"),
    "critical": ("#000000", "diamond"),
}
ALERT_FILLS = {"info": "#e6f3fb", "warning": "#fbefd6", "error": "#f7dccb", "critical": "#d9d9d9"}
HACKING_FILLS = {"high": ("#D55E00", 0.22), "medium": ("#F0E442", 0.35)}


def reward_case_evolution(frame: pd.DataFrame, *, title: str) -> go.Figure:
    """Stacked area of each reward case's share per iteration."""
    if frame.empty:
        return empty(title, "no rollout carries a reward_case label")
    figure = go.Figure()
    for number, (case, rows) in enumerate(frame.groupby("reward_case", sort=True)):
        figure.add_trace(
            go.Scatter(
                x=rows["iteration"].to_numpy(dtype=float),
                y=rows["share"].to_numpy(dtype=float),
                name=str(case),
                mode="lines",
                stackgroup="cases",
                line={"color": OKABE_ITO[number % len(OKABE_ITO)]},
                hovertemplate=f"{case}<br>iteration %{{x}}<br>share %{{y:.1%}}<extra></extra>",
            )
        )
    iteration_axis(figure, np.sort(frame["iteration"].unique()))
    figure.update_yaxes(title_text="share of rollouts", tickformat=".0%", range=[0, 1])
    return layout(figure, title)


def vi_si_correlation(frame: pd.DataFrame, *, title: str) -> go.Figure:
    """V_i against S_i for a seeded sample of rollouts, coloured by iteration."""
    if frame.empty:
        return empty(title, "no rollout carries V_i and S_i")
    text = [
        f"{h} {p}<br>{c}"
        for h, p, c in zip(
            frame["prompt_hash"], frame["prompt_preview"], frame["reward_case"], strict=True
        )
    ]
    figure = go.Figure(
        go.Scattergl(
            x=frame["v_i"].to_numpy(dtype=float),
            y=frame["s_i"].to_numpy(dtype=float),
            mode="markers",
            marker={
                "color": frame["iteration"].to_numpy(dtype=float),
                "colorscale": SEQUENTIAL,
                "showscale": True,
                "colorbar": {"title": {"text": "iteration"}},
                "size": 6,
                "opacity": 0.6,
            },
            text=text,
            hovertemplate="%{text}<br>V_i %{x:.3f}  S_i %{y:.3f}<extra></extra>",
        )
    )
    alpha = frame["alpha_threshold"].dropna()
    if not alpha.empty:
        figure.add_hline(
            y=float(alpha.median()),
            line_dash="dash",
            line_color="#000000",
            annotation_text=f"alpha {float(alpha.median()):g}",
        )
    figure.update_xaxes(title_text="V_i (verifiable reward)")
    figure.update_yaxes(title_text="S_i (soft reward)")
    return layout(figure, title, f"{len(frame)} sampled rollouts")


# ---------------------------------------------------------------- reward monitoring
# Each takes the rows its reward_*.sql query returns for one run.

# The weights of fct_reward_quality's quality_score, shown beside each part.
QUALITY_PARTS = (
    ("consistency", 0.25),
    ("discriminability", 0.35),
    ("stability", 0.25),
    ("coverage", 0.15),
)
# The reward signal overview's lower panels: column of reward_steps.sql, its name in
# the hover and in the note of a panel without it, colour, hover format. Both come
# from the reward's spread, which a run that logged only the mean reward (a tracker
# history, no rollouts) does not have.
SPREAD_PANELS = (
    ("signal_to_noise", "|mean| / std", "the signal-to-noise ratio", OKABE_ITO[2], ".3f"),
    ("variance", "variance", "the reward variance", OKABE_ITO[1], ".4f"),
)
SPREAD_MISSING = (
    "No data: {what} was not logged<br>(it needs the reward's std or per-sample rewards)"
)
# Reward quality metrics: column of reward_steps.sql, label, colour, dash.
QUALITY_SERIES = (
    ("signal_to_noise", "Signal-to-Noise Ratio", OKABE_ITO[2], "solid"),
    ("entropy", "Reward Entropy", OKABE_ITO[0], "solid"),
    ("variance_scaled", "Variance (normalised)", OKABE_ITO[1], "dash"),
)
# The training dynamics panels: column of reward_steps.sql, panel title, colour.
DYNAMICS_PANELS = (
    ("kl_divergence", "KL Divergence", OKABE_ITO[5]),
    ("policy_entropy", "Policy Entropy", OKABE_ITO[0]),
    ("advantage_mean", "Advantage Mean", OKABE_ITO[2]),
    ("advantage_std", "Advantage Std", OKABE_ITO[1]),
)


def _panel_note(figure: go.Figure, row: int, col: int, text: str) -> None:
    """Write ``text`` in the middle of a subplot panel and hide the panel's axes."""
    panel = figure.get_subplot(row, col)
    figure.add_annotation(
        text=text,
        showarrow=False,
        x=sum(panel.xaxis.domain) / 2,
        y=sum(panel.yaxis.domain) / 2,
        xref="paper",
        yref="paper",
        xanchor="center",
        yanchor="middle",
        font={"color": MUTED},
    )
    figure.update_xaxes(visible=False, row=row, col=col)
    figure.update_yaxes(visible=False, row=row, col=col)


def _reward_table(
    title: str,
    columns: list[tuple[str, list[str]]],
    widths: list[int],
    align: list[str],
    fills: list[str] | None = None,
    subtitle: str = "",
    lines: list[int] | None = None,
) -> go.Figure:
    """A table chart: the header, then one row per entry (``lines``: text lines of each)."""
    rows = len(columns[0][1])
    figure = go.Figure(
        go.Table(
            columnwidth=widths,
            header={
                "values": [f"<b>{c}</b>" for c, _ in columns],
                "fill_color": "#e0e0e0",
                "align": align,
            },
            cells={
                "values": [v for _, v in columns],
                "fill_color": [fills or ["#ffffff"] * rows] * len(columns),
                "align": align,
                "height": 24,
            },
        )
    )
    # as tall as its rows: 24 px a one-line row, 18 px more a wrapped line; scrolls past 720
    body = sum(max(24, 18 * n + 8) for n in lines or [1] * rows)
    figure = layout(figure, title, subtitle, max(200, min(720, 150 + body)))
    figure.update_layout(margin={"b": 20})
    return figure


def reward_function_colours(names: list[str]) -> dict[str, str]:
    """One Okabe-Ito colour per reward function, by name, the same in every chart."""
    return {n: OKABE_ITO[i % len(OKABE_ITO)] for i, n in enumerate(sorted(names))}


def reward_signal_overview(frame: pd.DataFrame, *, title: str) -> go.Figure:
    """The monitor's 2x2 overview: mean ± std, the per-step means' box, SNR, variance."""
    if frame.empty:
        return empty(title, "no reward statistics for this run")
    figure = make_subplots(
        rows=2,
        cols=2,
        subplot_titles=(
            "Mean Reward Over Time",
            "Reward Distribution",
            "Signal-to-Noise Ratio",
            "Reward Variance",
        ),
        vertical_spacing=0.16,
        horizontal_spacing=0.1,
    )
    x = floats(frame, "step")
    mean = floats(frame, "mean")
    std = floats(frame, "std")
    banded = bool(np.isfinite(std).any())
    if banded:  # a band only where the std was logged or computed, and a legend entry for it
        figure.add_trace(
            go.Scatter(
                x=x,
                y=floats(frame, "band_high"),
                mode="lines",
                line={"width": 0},
                showlegend=False,
                hoverinfo="skip",
            ),
            row=1,
            col=1,
        )
        figure.add_trace(
            go.Scatter(
                x=x,
                y=floats(frame, "band_low"),
                mode="lines",
                line={"width": 0},
                fill="tonexty",
                fillcolor="rgba(0, 114, 178, 0.18)",
                name="±1 std",
                hoverinfo="skip",
            ),
            row=1,
            col=1,
        )
    figure.add_trace(
        go.Scatter(
            x=x,
            y=mean,
            mode="lines",
            name="mean reward",
            line={"color": OKABE_ITO[0], "width": 2},
            customdata=std,
            hovertemplate="step %{x}<br>mean %{y:.3f}"
            + (" ± %{customdata:.3f}" if banded else "")
            + "<extra></extra>",
        ),
        row=1,
        col=1,
    )
    figure.add_trace(
        go.Box(
            y=mean,
            name="per-step mean reward",
            marker_color=OKABE_ITO[0],
            boxpoints="outliers",
            showlegend=False,
        ),
        row=1,
        col=2,
    )
    step_axis(figure, x, row=1, col=1)
    for col, (column, label, what, colour, spec) in enumerate(SPREAD_PANELS, start=1):
        values = floats(frame, column)
        if not np.isfinite(values).any():
            _panel_note(figure, 2, col, SPREAD_MISSING.format(what=what))
            continue
        figure.add_trace(
            go.Scatter(
                x=x,
                y=values,
                mode="lines",
                name=label,
                line={"color": colour, "width": 2},
                showlegend=False,
                hovertemplate=f"step %{{x}}<br>{label} %{{y:{spec}}}<extra></extra>",
            ),
            row=2,
            col=col,
        )
        step_axis(figure, x, row=2, col=col)
    figure.update_yaxes(title_text="reward", row=1, col=1)
    figure.update_yaxes(title_text="mean reward of a step", row=1, col=2)
    figure.update_yaxes(title_text="|mean| / std", row=2, col=1)
    figure.update_yaxes(title_text="variance", row=2, col=2)
    figure.update_layout(
        legend={"orientation": "h", "x": 1, "xanchor": "right", "y": 1.07, "yanchor": "bottom"}
    )
    note = f"{len(frame)} steps; " + (
        "the band is the mean ± 1 std of the total reward"
        if banded
        else "no band: the run logged no reward std (and has no per-sample rewards)"
    )
    if frame["basis"].nunique() > 1:
        note += "; some steps as the trainer logged them, others from per-sample rewards"
    figure = layout(figure, title, note, height=760)
    figure.update_layout(margin={"t": 110})
    return figure


def reward_functions_over_time(
    frame: pd.DataFrame, colours: dict[str, str], *, title: str
) -> go.Figure:
    """One line per reward function: its mean at each step."""
    if frame.empty:
        return empty(title, "no per-function rewards: the run logged only the total reward")
    figure = go.Figure()
    for function, rows in frame.groupby("reward_function", sort=True):
        figure.add_trace(
            go.Scatter(
                x=floats(rows, "step"),
                y=floats(rows, "mean"),
                name=str(function),
                mode="lines+markers" if len(rows) <= 60 else "lines",
                marker={"size": 5},
                line={"color": colours.get(str(function), OKABE_ITO[0]), "width": 2},
                customdata=floats(rows, "std"),
                hovertemplate="%{fullData.name}<br>step %{x}<br>mean %{y:.3f}, "
                "std %{customdata:.3f}<extra></extra>",
            )
        )
    step_axis(figure, floats(frame, "step"))
    figure.update_yaxes(title_text="mean reward of the function")
    functions = frame["reward_function"].nunique()
    return layout(figure, title, f"{functions} reward functions", height=480)


def reward_function_contributions(
    frame: pd.DataFrame, colours: dict[str, str], *, title: str
) -> go.Figure:
    """Each function's share of the total reward at the latest step (a bar each)."""
    if frame.empty:
        return empty(title, "no per-function rewards at any step")
    step = int(frame["step"].iloc[0])
    share = floats(frame, "contribution_pct")
    if np.isnan(share).all():
        return empty(title, f"no contributions at step {step}: its total reward is not positive")
    functions = frame["reward_function"].astype(str).tolist()
    logged_only = _logged_only(frame)
    texts = [
        "logged only" if only else f"{text}%"
        for only, text in zip(logged_only, formatted(frame["contribution_pct"], ".1f"), strict=True)
    ]
    figure = go.Figure(
        go.Bar(
            x=functions,
            y=np.where(logged_only, 0.0, share),
            marker={"color": [colours.get(f, OKABE_ITO[0]) for f in functions]},
            text=texts,
            texttemplate="%{text}",
            textposition="outside",
            cliponaxis=False,
            customdata=floats(frame, "mean"),
            hovertemplate="%{x}<br>%{y:.1f}% of the total reward<br>"
            "mean %{customdata:.3f}<extra></extra>",
        )
    )
    figure.update_xaxes(title_text="reward function")
    figure.update_yaxes(title_text="contribution (%)", rangemode="tozero")
    figure.update_layout(bargap=0.45)
    note = f"step {step}, the latest with per-function rewards"
    if any(logged_only):
        note += "; a logged-only function (weight 0) is no part of the reward optimised"
    return layout(figure, title, note, 440)


def _logged_only(frame: pd.DataFrame) -> list[bool]:
    """Which rows are a logged-only function (weight 0); none when the column is absent."""
    if "is_logged_only" not in frame:
        return [False] * len(frame)
    return [False if pd.isna(value) else bool(value) for value in frame["is_logged_only"]]


def reward_function_importance(frame: pd.DataFrame, *, title: str) -> go.Figure:
    """The functions ranked by impact score, with what the score is made of."""
    if frame.empty:
        return empty(title, "no per-function rewards: nothing to rank")
    columns = [
        ("rank", frame["rank"].astype(str).tolist()),
        ("function", [plain_text(f) for f in frame["reward_function"]]),
        ("weight", formatted(frame["weight"], "g") if "weight" in frame else [""] * len(frame)),
        (
            "contribution (%)",
            [
                "logged only" if only else text
                for only, text in zip(
                    _logged_only(frame), formatted(frame["contribution"], ".1f"), strict=True
                )
            ],
        ),
        ("impact score", formatted(frame["impact_score"], ".2f")),
        ("variability", formatted(frame["variability"], ".3f")),
        ("mean", formatted(frame["mean"], ".3f")),
        ("std", formatted(frame["std"], ".3f")),
        ("corr. with total", formatted(frame["correlation_with_total"], "+.2f")),
        ("corr. with performance", formatted(frame["correlation_with_performance"], "+.2f")),
    ]
    return _reward_table(
        title,
        columns,
        widths=[40, 160, 60, 100, 90, 90, 70, 70, 110, 140],
        align=["right", "left", *["right"] * 8],
        subtitle="rank 1 = the largest impact score (contribution x variability) over the run",
    )


def training_dynamics(frame: pd.DataFrame, *, title: str) -> go.Figure:
    """KL, policy entropy and the advantages' mean and std, a panel each."""
    logged = [column for column, _, _ in DYNAMICS_PANELS if frame[column].notna().any()]
    if frame.empty or not logged:
        return empty(title, "No data: the run logged no KL, policy entropy or advantages")
    figure = make_subplots(
        rows=2,
        cols=2,
        subplot_titles=[label for _, label, _ in DYNAMICS_PANELS],
        vertical_spacing=0.16,
        horizontal_spacing=0.1,
    )
    for panel, (column, label, colour) in enumerate(DYNAMICS_PANELS, start=1):
        row, col = (panel - 1) // 2 + 1, (panel - 1) % 2 + 1
        if column not in logged:
            _panel_note(figure, row, col, f"No data: {column} was not logged")
            continue
        rows = frame[frame[column].notna()]
        figure.add_trace(
            go.Scatter(
                x=floats(rows, "step"),
                y=floats(rows, column),
                mode="lines",
                name=label,
                line={"color": colour, "width": 2},
                showlegend=False,
                hovertemplate=f"step %{{x}}<br>{column} %{{y:.4f}}<extra></extra>",
            ),
            row=row,
            col=col,
        )
        step_axis(figure, floats(frame, "step"), row=row, col=col)
    missing = len(DYNAMICS_PANELS) - len(logged)
    note = f"{missing} of the four series not logged" if missing else "as the trainer logged them"
    figure = layout(figure, title, note, height=700)
    figure.update_layout(margin={"t": 110})
    return figure


def reward_quality_score(frame: pd.DataFrame, *, title: str) -> go.Figure:
    """The run's quality score (a gauge) and its four parts in [0, 1] (bars)."""
    if frame.empty:
        return empty(title, "no quality report for this run")
    row = frame.iloc[0]
    figure = make_subplots(
        rows=1,
        cols=2,
        specs=[[{"type": "indicator"}, {"type": "xy"}]],
        column_widths=[0.4, 0.6],
        horizontal_spacing=0.16,
    )
    score = row["quality_score"]
    known = not pd.isna(score)
    figure.add_trace(
        go.Indicator(
            mode="gauge+number" if known else "gauge",
            value=float(score) if known else 0.0,
            number={"valueformat": ".1f", "suffix": " / 100", "font": {"size": 36}},
            title={"text": "quality score", "font": {"size": 16}},
            gauge={
                "axis": {"range": [0, 100]},
                "bar": {"color": OKABE_ITO[0]},
                "steps": [
                    {"range": [0, 50], "color": "#f2f2f2"},
                    {"range": [50, 75], "color": "#e6e6e6"},
                    {"range": [75, 100], "color": "#d9d9d9"},
                ],
            },
            domain={"x": [0, 0.36], "y": [0.05, 0.9]},
        ),
        row=1,
        col=1,
    )
    if not known:
        figure.add_annotation(
            text="n/a: coverage needs per-sample rewards",
            showarrow=False,
            x=0.18,
            y=0.3,
            xref="paper",
            yref="paper",
            font={"color": MUTED},
        )
    labels = [f"{part} ({weight:.0%})" for part, weight in QUALITY_PARTS]
    parts = np.array([row[part] for part, _ in QUALITY_PARTS], dtype=float)
    figure.add_trace(
        go.Bar(
            x=np.nan_to_num(parts),
            y=labels,
            orientation="h",
            marker={"color": OKABE_ITO[0]},
            text=["n/a" if np.isnan(v) else f"{v:.2f}" for v in parts],
            textposition="outside",
            cliponaxis=False,
            showlegend=False,
            hovertemplate="%{y}: %{text}<extra></extra>",
        ),
        row=1,
        col=2,
    )
    figure.update_xaxes(title_text="part (0 to 1; its weight in the score)", range=[0, 1.12])
    figure.update_yaxes(autorange="reversed")
    return layout(figure, title, f"{row['steps']} steps, {row['reward_functions']} functions", 380)


# The advice of a reward function, each line led by its kind in words and colour
# (as the page's advice list marks them): no emoji, which needs an emoji font.
ADVICE_KINDS = (
    ("issues", "issue", "#D55E00"),
    ("warnings", "warning", "#B07800"),
    ("recommendations", "recommendation", "#0072B2"),
)


def _advice(row: pd.Series) -> list[str]:
    return [
        f"<span style='color:{colour}'><b>{label}:</b></span> {plain_text(v)}"
        for column, label, colour in ADVICE_KINDS
        for v in as_strings(row[column])
    ]


def reward_function_quality(frame: pd.DataFrame, *, title: str) -> go.Figure:
    """Each function's quality score and parts, with its issues and advice."""
    if frame.empty:
        return empty(title, "no per-function rewards: nothing to score")
    advice = [_advice(row) for _, row in frame.iterrows()]
    columns = [
        ("function", [plain_text(f) for f in frame["reward_function"]]),
        ("score", formatted(frame["quality_score"], ".1f")),
        ("consistency", formatted(frame["consistency"], ".2f")),
        ("discriminability", formatted(frame["discriminability"], ".2f")),
        ("stability", formatted(frame["stability"], ".2f")),
        ("coverage", formatted(frame["coverage"], ".2f")),
        ("issues, warnings, recommendations", ["<br>".join(a) or "-" for a in advice]),
    ]
    return _reward_table(
        title,
        columns,
        widths=[120, 55, 85, 105, 70, 70, 420],
        align=["left", "right", "right", "right", "right", "right", "left"],
        subtitle="score = 100 x (0.25 consistency + 0.35 discriminability + 0.25 stability"
        " + 0.15 coverage)",
        lines=[max(1, len(a)) for a in advice],
    )


def reward_quality_metrics(frame: pd.DataFrame, *, title: str) -> go.Figure:
    """Signal-to-noise, reward entropy and the variance (dashed, on the SNR scale)."""
    if frame.empty:
        return empty(title, "no reward statistics for this run")
    logged = [c for c, _, _, _ in QUALITY_SERIES if np.isfinite(floats(frame, c)).any()]
    if not logged:
        return empty(
            title,
            "No data: the run logged no reward std, entropy or variance<br>(and has no"
            " per-sample rewards to compute them from)",
        )
    x = floats(frame, "step")
    figure = go.Figure()
    for column, label, colour, dash in QUALITY_SERIES:
        if column not in logged:
            continue
        figure.add_trace(
            go.Scatter(
                x=x,
                y=floats(frame, column),
                mode="lines",
                name=label,
                line={"color": colour, "width": 2, "dash": dash},
                hovertemplate="%{fullData.name}<br>step %{x}<br>%{y:.3f}<extra></extra>",
            )
        )
    step_axis(figure, x)
    figure.update_yaxes(title_text="metric value")
    figure.update_layout(legend={"orientation": "h", "x": 0, "y": 1.0, "yanchor": "bottom"})
    notes = []
    if "variance_scaled" in logged and "signal_to_noise" in logged:
        notes.append("the variance is scaled so its largest value meets the largest SNR")
    missing = [label for c, label, _, _ in QUALITY_SERIES if c not in logged]
    if missing:
        notes.append("not logged: " + ", ".join(missing))
    return layout(figure, title, "; ".join(notes), 480)


def reward_alerts_timeline(
    steps: pd.DataFrame,
    alerts: pd.DataFrame,
    windows: pd.DataFrame,
    anomalies: pd.DataFrame,
    *,
    title: str,
) -> go.Figure:
    """The mean reward with the alerts and anomalies on it, hacking stretches shaded,
    and the performance metric on a second axis."""
    if steps.empty:
        return empty(title, "no reward statistics for this run")
    metric = steps["performance_metric"].dropna()
    performance_name = str(metric.iloc[0]) if not metric.empty else "performance metric"
    measured = steps[steps["performance"].notna()]
    figure = make_subplots(specs=[[{"secondary_y": not measured.empty}]])
    for verdict in sorted(set(windows["verdict"]), key=list(HACKING_FILLS).index):
        colour, opacity = HACKING_FILLS[verdict]
        figure.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                marker={"symbol": "square", "size": 14, "color": colour, "opacity": opacity + 0.3},
                name=f"reward hacking: {verdict}",
            )
        )
    figure.add_trace(
        go.Scatter(
            x=floats(steps, "step"),
            y=floats(steps, "mean"),
            mode="lines",
            name="mean reward",
            line={"color": OKABE_ITO[0], "width": 2},
            hovertemplate="step %{x}<br>mean reward %{y:.3f}<extra></extra>",
        )
    )
    if not measured.empty:
        figure.add_trace(
            go.Scatter(
                x=floats(measured, "step"),
                y=floats(measured, "performance"),
                mode="lines",
                name=performance_name,
                line={"color": OKABE_ITO[2], "width": 2, "dash": "dot"},
                hovertemplate="step %{x}<br>%{fullData.name} %{y:.4f}<extra></extra>",
            ),
            secondary_y=True,
        )
    if not anomalies.empty:
        figure.add_trace(
            go.Scatter(
                x=floats(anomalies, "step"),
                y=floats(anomalies, "mean_reward"),
                mode="markers",
                name="anomaly",
                marker={
                    "symbol": "circle-open",
                    "size": 16,
                    "color": OKABE_ITO[3],
                    "line": {"width": 2.5},
                },
                customdata=floats(anomalies, "z_score"),
                hovertemplate="anomaly at step %{x}<br>mean %{y:.3f}, z %{customdata:+.1f}"
                "<extra></extra>",
            )
        )
    levels = list(ALERT_STYLES) + sorted(set(alerts["level"]) - set(ALERT_STYLES))
    for level in levels:
        rows = alerts[alerts["level"] == level]
        if rows.empty:
            continue
        marks = rows.groupby("step", sort=True).agg(
            mean_reward=("mean_reward", "first"),
            text=("message", lambda m: "<br>".join(plain_text(v) for v in m)),
        )
        colour, symbol = ALERT_STYLES.get(level, ("#999999", "circle"))
        figure.add_trace(
            go.Scatter(
                x=marks.index.to_numpy(dtype=float),
                y=floats(marks, "mean_reward"),
                mode="markers",
                name=f"alert: {level}",
                marker={"symbol": symbol, "size": 12, "color": colour, "line": {"width": 1}},
                text=marks["text"].tolist(),
                hovertemplate="step %{x}<br>%{text}<extra>" + level + "</extra>",
            )
        )
    for window in windows.itertuples(index=False):
        colour, opacity = HACKING_FILLS.get(window.verdict, ("#999999", 0.2))
        suspects = ", ".join(as_strings(window.suspected_functions))
        figure.add_vrect(
            x0=float(window.start_step) - 0.5,
            x1=float(window.end_step) + 0.5,
            fillcolor=colour,
            opacity=opacity,
            line_width=0,
            layer="below",
            exclude_empty_subplots=False,
            annotation_text=f"{window.verdict} hacking risk"
            + (f" ({plain_text(suspects)})" if suspects else ""),
            annotation_position="top left",
            annotation_font={"size": 11, "color": "#1f2933"},
        )
    step_axis(figure, floats(steps, "step"))
    figure.update_yaxes(title_text="mean reward", secondary_y=False)
    if not measured.empty:
        figure.update_yaxes(
            title_text=performance_name, secondary_y=True, showgrid=False, tickmode="auto"
        )
    figure.update_layout(legend={"orientation": "h", "x": 0, "y": -0.16, "yanchor": "top"})
    note = f"{len(alerts)} alert{'s' if len(alerts) != 1 else ''}"
    note += (
        "; shaded: steps whose sliding-window reward hacking verdict is high or medium"
        if not windows.empty
        else "; no reward hacking suspected"
    )
    if measured.empty:
        note += f"; {performance_name} not logged"
    figure = layout(figure, title, note, height=560)
    figure.update_layout(margin={"b": 110})
    return figure


def reward_alerts_table(alerts: pd.DataFrame, total: int | None = None, *, title: str) -> go.Figure:
    """Every alert (up to the page's cap), rows tinted by level."""
    if alerts.empty:
        return empty(title, "no alert fired in this run")
    columns = [
        ("step", alerts["step"].astype(str).tolist()),
        ("level", alerts["level"].astype(str).tolist()),
        ("rule", [plain_text(v) for v in alerts["rule_name"]]),
        ("message", [plain_text(v) for v in alerts["message"]]),
        ("value", formatted(alerts["value"], ".4g")),
        ("threshold", formatted(alerts["threshold"], ".4g")),
    ]
    shown = len(alerts)
    note = "the most severe first within a step"
    if total is not None and total > shown:
        note = f"the first {shown} of {total} alerts; the rest are one SQL query away"
    return _reward_table(
        title,
        columns,
        widths=[50, 70, 170, 520, 70, 70],
        align=["right", "left", "left", "left", "right", "right"],
        fills=[ALERT_FILLS.get(level, "#ffffff") for level in alerts["level"]],
        subtitle=note,
        lines=[1 + len(str(m)) // 90 for m in alerts["message"]],
    )
