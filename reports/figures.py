"""Pure ``DataFrame -> plotly Figure`` functions, one per dashboard chart. No I/O.

Each takes the rows its query in ``reports/queries/`` returns for one run. Large
arrays go in as numpy arrays so Plotly writes them in its compact binary form.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from html import escape

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

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
# Solved or not (two categories): ColorBrewer PuOr's ends, orange and purple.
UNSOLVED, SOLVED = "#f1a340", "#542788"
SOLVED_SCALE = [[0.0, UNSOLVED], [0.5, UNSOLVED], [0.5, SOLVED], [1.0, SOLVED]]
# Upsampling priority: one hue (ColorBrewer Oranges), darker for higher priority.
PRIORITY_COLOURS = {"high": "#fdae6b", "medium": "#fdd9b5", "low": "#fff5eb"}
# Heatmap cells with no value (a prompt not observed at an iteration, a pair
# with too few rollouts) show this grey: no scale above uses it.
NO_VALUE = "#cfd4da"


@dataclass(frozen=True)
class ChartInfo:
    title: str
    use_for: str
    section: str


SECTIONS = (
    "Core dynamics",
    "Curriculum & data selection",
    "Exploration & stability",
    "Reward analysis",
    "Instruction analysis",
)

# The fourteen charts, with their file names, in dashboard order.
CHARTS: dict[str, ChartInfo] = {
    "prompt_dynamics_fi": ChartInfo(
        "Prompt dynamics: mean score (F_i)",
        "when each prompt is learned, and whether it stays learned",
        SECTIONS[0],
    ),
    "prompt_dynamics_vi": ChartInfo(
        "Prompt dynamics: verifiable reward (V_i)",
        "tracking the verifiable reward component prompt by prompt",
        SECTIONS[0],
    ),
    "prompt_dynamics_si": ChartInfo(
        "Prompt dynamics: soft reward (S_i)",
        "tracking the soft (quality) reward component prompt by prompt",
        SECTIONS[0],
    ),
    "prompt_accuracy": ChartInfo(
        "Prompt strict accuracy",
        "seeing which prompts any rollout solved (all instructions followed) at each iteration",
        SECTIONS[0],
    ),
    "upsampling_candidates": ChartInfo(
        "Top 20 upsampling candidates",
        "choosing which prompts to upsample in the next run",
        SECTIONS[1],
    ),
    "sample_efficiency": ChartInfo(
        "Sample efficiency",
        "separating fast learners from slow learners and prompts that never land",
        SECTIONS[1],
    ),
    "plateau_detection": ChartInfo(
        "Plateau detection",
        "finding prompts whose score stopped moving (plateaued in orange)",
        SECTIONS[1],
    ),
    "forgetting_analysis": ChartInfo(
        "Forgetting analysis",
        "catching prompts the policy learned and then lost (drops in red, gains in blue)",
        SECTIONS[1],
    ),
    "exploration": ChartInfo(
        "Exploration: score spread within each group",
        "seeing where the policy still explores; a zero spread gives GRPO no gradient",
        SECTIONS[2],
    ),
    "score_distribution": ChartInfo(
        "Score distribution by iteration",
        "seeing how the whole score distribution moves, not just its mean",
        SECTIONS[2],
    ),
    "reward_case_evolution": ChartInfo(
        "Reward case evolution",
        "watching the mix of reward cases shift as training goes on",
        SECTIONS[3],
    ),
    "vi_si_correlation": ChartInfo(
        "V_i vs S_i",
        "checking whether the verifiable and the soft reward agree",
        SECTIONS[3],
    ),
    "instruction_types": ChartInfo(
        "Instruction types by iteration (hardest first)",
        "finding instruction types that stay hard and deserve more data",
        SECTIONS[4],
    ),
    "instruction_interference": ChartInfo(
        "Instruction interference: lift of pairs",
        "spotting pairs that interfere (joint success below what the two success rates"
        " predict, in red) or a broken verifier (stuck cells)",
        SECTIONS[4],
    ),
}

# Several runs side by side: the first tab of the combined dashboard when it
# holds two or more runs with rollouts (the other tabs show one run at a time,
# the one picked in the page).
COMPARE_SECTION = "Run comparison"
COMPARE_CHARTS: dict[str, ChartInfo] = {
    "compare_learning_curves": ChartInfo(
        "Runs side by side: learning curves",
        "telling which run learns faster and further: mean score, the share of prompts"
        " solved and the share of groups that give GRPO no gradient, iteration by iteration",
        COMPARE_SECTION,
    ),
    "compare_prompt_outcomes": ChartInfo(
        "Runs side by side: what happened to the prompts",
        "comparing how many prompts each run learned, forgot, left on a plateau or never"
        " moved, as a share of the prompts it saw",
        COMPARE_SECTION,
    ),
    "compare_instruction_difficulty": ChartInfo(
        "Runs side by side: instruction difficulty",
        "seeing which instruction types each run finds hard (hardest first), and where one"
        " run does better than another",
        COMPARE_SECTION,
    ),
}

# Reward monitoring: the GRPO reward monitor's seven views, as the sections
# of `obs render-dashboard --kind rewards` (and extra tabs of the combined
# dashboard for runs with reward data).
REWARD_SECTIONS = (
    "Summary statistics",
    "Reward signal",
    "Reward functions",
    "Training dynamics",
    "Reward quality",
    "Alerts & hacking",
    "Raw data",
)

# The reward monitoring charts, in page order (the tiles, the advice lists
# and the raw table are HTML, not charts).
REWARD_CHARTS: dict[str, ChartInfo] = {
    "reward_signal_overview": ChartInfo(
        "Reward Signal Overview",
        "watching the total reward's level and spread; a falling signal-to-noise ratio means"
        " the reward stops telling good samples from bad ones",
        REWARD_SECTIONS[1],
    ),
    "reward_functions_over_time": ChartInfo(
        "Reward Functions Over Time",
        "seeing which reward function moves the total, and one that rises alone",
        REWARD_SECTIONS[2],
    ),
    "reward_function_contributions": ChartInfo(
        "Reward Function Contributions (%)",
        "checking that no single function dominates the reward at the latest step",
        REWARD_SECTIONS[2],
    ),
    "reward_function_importance": ChartInfo(
        "Reward function importance",
        "ranking the functions by impact (contribution x variability): a large contribution"
        " that never varies gives GRPO no gradient",
        REWARD_SECTIONS[2],
    ),
    "training_dynamics": ChartInfo(
        "Training Dynamics",
        "catching the policy drifting from the reference (KL rising), collapsing (entropy"
        " falling) or advantages that vanish",
        REWARD_SECTIONS[3],
    ),
    "reward_quality_score": ChartInfo(
        "Reward quality score",
        "judging the reward signal at a glance, and finding the part that pulls it down",
        REWARD_SECTIONS[4],
    ),
    "reward_function_quality": ChartInfo(
        "Reward function quality (lowest score first)",
        "finding the reward function to fix first, and what to do about it",
        REWARD_SECTIONS[4],
    ),
    "reward_quality_metrics": ChartInfo(
        "Reward Quality Metrics",
        "following signal-to-noise, entropy and variance together over training",
        REWARD_SECTIONS[4],
    ),
    "reward_alerts_timeline": ChartInfo(
        "Alerts and reward hacking over training",
        "lining alerts, anomalies and suspected reward hacking up with the reward and the"
        " performance metric",
        REWARD_SECTIONS[5],
    ),
    "reward_alerts_table": ChartInfo(
        "Alerts",
        "reading every alert with its step, level, rule and message",
        REWARD_SECTIONS[5],
    ),
}

# Agentic runs (a multi-turn agent trained with GRPO): the sections of
# `obs render-dashboard --kind agent` (and extra tabs of the combined
# dashboard for runs with agent data).
AGENT_SECTIONS = (
    "Eval over steps",
    "Groups & early exits",
    "Turn advantages",
)

# The agentic run charts, in page order (the tiles and the group selector are HTML).
AGENT_CHARTS: dict[str, ChartInfo] = {
    "agent_eval_rates": ChartInfo(
        "Eval results over training",
        "tracking accuracy over time, and whether the agent finds and reads the right e-mail"
        ' more often and answers "I don\'t know" less',
        AGENT_SECTIONS[0],
    ),
    "agent_eval_searches": ChartInfo(
        "Searches per eval",
        "judging search efficiency: fewer searches for the same results, and fewer repeats",
        AGENT_SECTIONS[0],
    ),
    "agent_eval_turns": ChartInfo(
        'Turns per eval answer: correct vs "I don\'t know"',
        "seeing whether the agent answers in fewer turns, and how long it searches before it"
        " gives up",
        AGENT_SECTIONS[0],
    ),
    "agent_groups": ChartInfo(
        "Groups per iteration: kept for training vs filtered",
        "seeing how many groups give GRPO a gradient (a filtered group's rollouts all scored"
        " about the same)",
        AGENT_SECTIONS[1],
    ),
    "agent_early_exits": ChartInfo(
        "Rollouts that finished early, by reason",
        "learning when the agent learns to stop early: by answering, by saying"
        ' "I don\'t know", or by an error',
        AGENT_SECTIONS[1],
    ),
    "agent_train_shares": ChartInfo(
        "Early-exit rate, filtered groups and trainable tokens",
        "following the shares behind the counts above: how many rollouts stop early, how"
        " many groups are dropped, how much of the text is trained on",
        AGENT_SECTIONS[1],
    ),
    "agent_advantage_group": ChartInfo(
        "Turn-by-turn advantages of one group",
        "reading which turns of which rollouts GRPO rewarded (blue) or penalised (red);"
        " pick the iteration and group above the chart",
        AGENT_SECTIONS[2],
    ),
    "agent_turn_means": ChartInfo(
        "Advantage by turn over training",
        "seeing which turns GRPO pushes up or down, and how that changes as training goes on",
        AGENT_SECTIONS[2],
    ),
    "agent_turn_active": ChartInfo(
        "Rollouts still going at each turn",
        "seeing how many turns rollouts take, and how that changes over training",
        AGENT_SECTIONS[2],
    ),
}

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
# Alert levels by colour and by marker shape, so neither alone carries the level.
ALERT_STYLES = {
    "info": ("#56B4E9", "circle"),
    "warning": ("#E69F00", "triangle-up"),
    "error": ("#D55E00", "x"),
    "critical": ("#000000", "diamond"),
}
ALERT_FILLS = {"info": "#e6f3fb", "warning": "#fbefd6", "error": "#f7dccb", "critical": "#d9d9d9"}
HACKING_FILLS = {"high": ("#D55E00", 0.22), "medium": ("#F0E442", 0.35)}


def chart_title(name: str, subtitle: str = "") -> str:
    """A chart's title as Plotly shows it: the title, and the subtitle in small type."""
    info = (
        CHARTS.get(name)
        or COMPARE_CHARTS.get(name)
        or REWARD_CHARTS.get(name)
        or AGENT_CHARTS[name]
    )
    return info.title + (f"<br><sup>{subtitle}</sup>" if subtitle else "")


# The charts' look (white background, light grid). Setting it on each figure costs
# Plotly a deep copy and a validation of the whole template (about 50 ms a chart,
# most of a dashboard's time), so the figures leave it out and each page applies it
# once, in the browser (base.html); ``themed`` sets it for a figure used on its own.
THEME = "plotly_white"


def themed(figure: go.Figure) -> go.Figure:
    """The figure with the dashboards' template set (for ``fig.show()`` or an image)."""
    return figure.update_layout(template=THEME)


def _layout(figure: go.Figure, name: str, subtitle: str = "", height: int = 520) -> go.Figure:
    figure.update_layout(
        title={"text": chart_title(name, subtitle), "x": 0.01},
        height=height,
        margin={"l": 60, "r": 30, "t": 80, "b": 60},
    )
    return figure


def _empty(name: str, reason: str) -> go.Figure:
    figure = go.Figure()
    figure.add_annotation(text=reason, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    figure.update_xaxes(visible=False)
    figure.update_yaxes(visible=False)
    return _layout(figure, name, height=300)


def _no_data(name: str, reason: str) -> go.Figure:
    """A chart's place when the run has none of its data: a note saying why, and what
    would fill it (as the reward and agent pages do)."""
    return _empty(name, "<br>".join(textwrap.wrap(f"No data: {reason}", 90)))


def _finite(values: object) -> np.ndarray:
    array = np.asarray(values, dtype=float).ravel()
    return array[np.isfinite(array)]


def symmetric_range(values: object) -> tuple[float, float]:
    """A colour range centred on 0: ± the largest absolute value (±1 when all are 0)."""
    finite = _finite(values)
    half = float(np.abs(finite).max()) if finite.size else 0.0
    if half < 1e-12:
        half = 1.0
    return -half, half


def sequential_range(values: object, low: float | None = None) -> tuple[float, float]:
    """A colour range over the data: [min, max] (from ``low`` when given).

    A flat grid (every value the same) gets a range around its value, so the
    colour bar still reads it.
    """
    finite = _finite(values)
    if not finite.size:
        return (0.0 if low is None else low), 1.0
    start = float(finite.min()) if low is None else low
    end = float(finite.max())
    if end - start < 1e-12:
        if low is not None:
            return start, start + 1.0
        pad = max(abs(start) * 0.1, 0.5)
        return start - pad, end + pad
    return start, end


def score_scale(values: object) -> dict[str, object]:
    """Colours for a score: diverging around 0 (symmetric) when any value is below 0,
    else sequential over the values' range."""
    finite = _finite(values)
    if finite.size and finite.min() < 0:
        low, high = symmetric_range(finite)
        return {"zmin": low, "zmax": high, "colorscale": DIVERGING}
    low, high = sequential_range(finite)
    return {"zmin": low, "zmax": high, "colorscale": SEQUENTIAL}


def _cap_note(shown: int, total: int | None, how: str) -> str:
    if total is None or shown >= total:
        return f"all {shown} prompts"
    return f"{shown} of {total} prompts, {how}; the rest are one SQL query away"


def _short(label: str, width: int = 56) -> str:
    return label if len(label) <= width else label[: width - 1].rstrip() + "\u2026"


def _iteration_axis(figure: go.Figure, iterations: np.ndarray, title: str = "iteration") -> None:
    """An iteration axis with a tick at each iteration when there are few (never 1.5)."""
    figure.update_xaxes(title_text=title, showgrid=False, zeroline=False)
    if 0 < len(iterations) <= 25:
        figure.update_xaxes(tickmode="array", tickvals=[float(i) for i in iterations])


def _prompt_rows(
    figure: go.Figure,
    name: str,
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
    _iteration_axis(figure, iterations)
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
            ticktext=ticktext or [_short(label) for label in labels],
        )
    figure.update_layout(plot_bgcolor=NO_VALUE)
    note = "; ".join([_cap_note(len(labels), total, "the most informative"), *notes])
    return _layout(figure, name, note, height=max(420, min(1400, 14 * len(labels) + 160)))


# The prompt heatmaps' colour scales: "score" follows the data (diverging
# around 0 when any value is below 0); "spread" is sequential from 0 (no
# spread) to the largest; "solved" has two colours.
HEATMAP_SCALES = ("score", "spread", "solved")


def prompt_heatmap(
    frame: pd.DataFrame,
    name: str,
    value: str,
    total_prompts: int | None = None,
    scale: str = "score",
    colorbar_title: str = "",
    missing: str = "",
    note: str = "",
) -> go.Figure:
    """Prompts (rows, ordered by first success) x iterations, coloured by ``value``.

    ``missing`` is the note shown instead when no row has ``value`` (a source
    without V_i or S_i); ``note`` goes in the subtitle.
    """
    if scale not in HEATMAP_SCALES:
        raise ValueError(f"scale {scale!r}: one of {', '.join(HEATMAP_SCALES)}")
    if frame.empty:
        return _empty(name, "no prompt iterations in this selection")
    if frame[value].isna().all():
        return _no_data(name, missing or f"no rollout of this run carries {value}")
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
        figure, name, labels, iterations, total_prompts, "earliest first success", notes
    )


def forgetting_heatmap(frame: pd.DataFrame, total_prompts: int | None = None) -> go.Figure:
    """Iteration-to-iteration change of strict accuracy; rows by forgetting count."""
    name = "forgetting_analysis"
    if frame.empty:
        return _empty(name, "no prompt was observed at two iterations")
    rows = frame.drop_duplicates("prompt_hash").sort_values(
        ["num_forgetting_events", "prompt_hash"], ascending=[False, True]
    )
    drops = [
        f"  ({events} drop{'' if events == 1 else 's'})" for events in rows["num_forgetting_events"]
    ]
    labels = [label + d for label, d in zip(rows["prompt_label"], drops, strict=True)]
    ticktext = [_short(label, 46) + d for label, d in zip(rows["prompt_label"], drops, strict=True)]
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
        figure, name, labels, iterations, total_prompts, "most forgetting", notes, ticktext
    )


def instruction_types(frame: pd.DataFrame) -> go.Figure:
    """Instruction success rate by iteration, hardest first, tier in the label."""
    name = "instruction_types"
    if frame.empty:
        return _empty(name, "no rollout carries IFEval instruction ids")
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
    _iteration_axis(figure, iterations)
    figure.update_yaxes(
        title_text="instruction type [tier]", autorange="reversed", showgrid=False, zeroline=False
    )
    figure.update_layout(plot_bgcolor=NO_VALUE)
    note = f"colours span the success rates seen, {low:.0%} to {high:.0%}"
    if np.isnan(z).any():
        note += "; grey: not observed at that iteration"
    return _layout(figure, name, note, height=max(380, 28 * len(labels) + 160))


def run_colours(runs: list[str]) -> dict[str, str]:
    """One Okabe-Ito colour per run, in the order given (the same in every comparison chart;
    past eight runs the colours repeat)."""
    return {run: OKABE_ITO[i % len(OKABE_ITO)] for i, run in enumerate(runs)}


# The learning-curve panels: (column, axis title, tick format).
CURVES = (
    ("mean_score", "mean score", ".2f"),
    ("prompt_strict_acc", "prompts solved", ".0%"),
    ("zero_variance_share", "zero-variance groups", ".0%"),
)


def compare_learning_curves(frame: pd.DataFrame, colours: dict[str, str]) -> go.Figure:
    """Mean score, share of prompts solved and share of zero-variance groups by iteration:
    one line per run in each of three stacked panels sharing the iteration axis."""
    name = "compare_learning_curves"
    if frame.empty:
        return _empty(name, "no run iterations in this selection")
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
                    x=_values(rows, "iteration"),
                    y=_values(rows, column),
                    name=run,
                    legendgroup=run,
                    showlegend=panel == 1,
                    mode="lines+markers" if len(rows) <= 60 else "lines",
                    marker={"size": 5},
                    line={"color": colour, "width": 2},
                    customdata=_values(rows, "n_prompts"),
                    hovertemplate=f"run {_text(run)}<br>iteration %{{x}}<br>%{{y:{spec}}}"
                    " over %{customdata} prompts<extra></extra>",
                ),
                row=panel,
                col=1,
            )
    for panel, (_, title, spec) in enumerate(CURVES, start=1):
        figure.update_yaxes(title_text=title, tickformat=spec, row=panel, col=1)
        if spec.endswith("%"):
            figure.update_yaxes(rangemode="tozero", row=panel, col=1)
    _iteration_axis(figure, np.sort(frame["iteration"].unique()))
    # every panel reads its own iterations; only the bottom one names the axis
    figure.update_xaxes(showticklabels=True, title_text=None)
    figure.update_xaxes(title_text="iteration", row=len(CURVES), col=1)
    figure.update_layout(
        legend={"orientation": "h", "x": 1, "xanchor": "right", "y": 1.04, "yanchor": "bottom"}
    )
    runs = frame["run_id"].nunique()
    note = f"{runs} runs; iterations as each run numbered them"
    figure = _layout(figure, name, note, height=820)
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


def compare_prompt_outcomes(frame: pd.DataFrame, colours: dict[str, str]) -> go.Figure:
    """Per run, the share of its prompts in each outcome (grouped bars, a colour per run)."""
    name = "compare_prompt_outcomes"
    if frame.empty:
        return _empty(name, "no prompts in this selection")
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
                hovertemplate=f"run {_text(run)}<br>%{{y}}: %{{x:.1%}}"
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
    return _layout(figure, name, note, height=height)


def compare_instruction_difficulty(frame: pd.DataFrame, colours: dict[str, str]) -> go.Figure:
    """Per instruction type (hardest first, by the mean over runs), each run's success rate:
    grouped horizontal bars, a colour per run."""
    name = "compare_instruction_difficulty"
    if frame.empty:
        return _empty(name, "no rollout of these runs carries IFEval instruction ids")
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
                hovertemplate=f"run {_text(run)}<br>%{{y}} [%{{text}}]<br>success %{{x:.1%}}"
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
        ticktext=[_short(i, 44) for i in order],
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
    return _layout(figure, name, note, height=height)


def reward_case_evolution(frame: pd.DataFrame) -> go.Figure:
    """Stacked area of each reward case's share per iteration."""
    name = "reward_case_evolution"
    if frame.empty:
        return _empty(name, "no rollout carries a reward_case label")
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
    _iteration_axis(figure, np.sort(frame["iteration"].unique()))
    figure.update_yaxes(title_text="share of rollouts", tickformat=".0%", range=[0, 1])
    return _layout(figure, name)


def sample_efficiency(
    frame: pd.DataFrame, fast_iterations: float, good_score: float, total: int | None = None
) -> go.Figure:
    """Iterations to first success vs final score; never-solved prompts on the right."""
    name = "sample_efficiency"
    if frame.empty:
        return _empty(name, "no prompts")
    learned = frame["iterations_to_learn"].dropna()
    # never-solved prompts sit two iterations right of the last learner and of the divide
    never_x = max(float(learned.max()) if not learned.empty else 0.0, fast_iterations) + 2
    x = frame["iterations_to_learn"].fillna(never_x).to_numpy(dtype=float)
    y = frame["final_score"].to_numpy(dtype=float)
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
            hovertemplate="%{text}<br>iterations to learn %{x}<br>final %{y:.3f}<extra></extra>",
        )
    )
    divide = fast_iterations + 0.5
    figure.add_vline(x=divide, line_dash="dash", line_color="#777")
    figure.add_hline(y=good_score, line_dash="dash", line_color="#777")
    # the score axis follows the data (a run's scores can be negative) and keeps the divide
    low, high = sequential_range(np.append(_finite(y), good_score))
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
        dtick=1 if never_x <= 30 else None,
    )
    figure.update_yaxes(title_text="final score", range=[bottom, top])
    return _layout(figure, name, _cap_note(len(frame), total, "the most informative"))


PLATEAUED, MOVING = OKABE_ITO[1], OKABE_ITO[0]  # orange, blue


def plateau_detection(
    frame: pd.DataFrame, threshold: float, floor: float, total: int | None = None
) -> go.Figure:
    """Recent variance of each prompt's mean score, lowest first, plateaued in orange.

    The axis is logarithmic, so a variance of 0 (a flat prompt) is drawn at
    ``floor`` (the query's ``drawn_variance``); the hover gives the real value.
    """
    name = "plateau_detection"
    if frame.empty:
        return _empty(name, "no prompt has two observed iterations yet")
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
    drawn = _finite(frame["drawn_variance"])
    bottom = min(float(drawn.min()) if drawn.size else floor, threshold)
    top = max(float(drawn.max()) if drawn.size else threshold, threshold)
    figure.update_yaxes(range=[np.log10(bottom) - 1, np.log10(top) + 0.5])
    note = _cap_note(len(frame), total, "those with the lowest variance")
    return _layout(
        figure, name, f"{note}; plateaued in orange; a variance of 0 is drawn at {floor:g}"
    )


def upsampling_table(frame: pd.DataFrame) -> go.Figure:
    """The top 20 upsampling candidates, rows shaded by priority."""
    name = "upsampling_candidates"
    if frame.empty:
        return _empty(name, "no prompts")
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
    figure = _layout(figure, name, "high / medium / low priority by upsampling score", height)
    figure.update_layout(margin={"b": 20})
    return figure


def score_distribution(frame: pd.DataFrame) -> go.Figure:
    """A box per iteration drawn from the quantile mart (whiskers at p05 and p95)."""
    name = "score_distribution"
    if frame.empty:
        return _empty(name, "no scores")
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
    _iteration_axis(figure, np.sort(frame["iteration"].unique()))
    figure.update_yaxes(title_text="score (box p25-p75, whiskers p05-p95, dashed mean ± sd)")
    return _layout(figure, name)


def vi_si_correlation(frame: pd.DataFrame) -> go.Figure:
    """V_i against S_i for a seeded sample of rollouts, coloured by iteration."""
    name = "vi_si_correlation"
    if frame.empty:
        return _empty(name, "no rollout carries V_i and S_i")
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
    return _layout(figure, name, f"{len(frame)} sampled rollouts")


LIFT_FLOOR = -4.0  # rpt_instruction_interference draws a lift below 1/16 at log2 = -4


def _lift_ticks(half: float) -> tuple[list[float], list[str]]:
    """Colour bar ticks of a log2(lift) scale, labelled as lifts (x0.5, x1, x2)."""
    whole = [float(v) for v in range(-int(half), int(half) + 1)]
    values = sorted({-half, *whole, half})
    return values, [f"\u00d7{2**v:.2g}" for v in values]


def instruction_interference(frame: pd.DataFrame, min_rollouts: int | None = None) -> go.Figure:
    """Each co-occurring pair coloured by lift (log2, diverging around a lift of 1);
    pairs with fewer than ``min_rollouts`` rollouts grey; n, joint and expected
    success on hover."""
    name = "instruction_interference"
    if frame.empty:
        return _empty(name, "no prompt carries two instructions")
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
    note = "lift = joint success / the product of the two success rates: red below 1 (interfere)"
    if (marks != "").any():
        note += "; a % in a cell: stuck at 0% or 100% (a broken verifier?)"
    if min_rollouts is not None:
        note += f"; grey: fewer than {min_rollouts} rollouts"
    return _layout(figure, name, note, height=max(480, 34 * len(names) + 260))


# ---------------------------------------------------------------- reward monitoring
# Each takes the rows its reward_*.sql query returns for one run.

# The weights of fct_reward_quality's quality_score, shown beside each part.
QUALITY_PARTS = (
    ("consistency", 0.25),
    ("discriminability", 0.35),
    ("stability", 0.25),
    ("coverage", 0.15),
)
# The training dynamics panels: column of reward_steps.sql, panel title, colour.
DYNAMICS_PANELS = (
    ("kl_divergence", "KL Divergence", OKABE_ITO[5]),
    ("policy_entropy", "Policy Entropy", OKABE_ITO[0]),
    ("advantage_mean", "Advantage Mean", OKABE_ITO[2]),
    ("advantage_std", "Advantage Std", OKABE_ITO[1]),
)
MUTED = "#616e7c"


def _values(frame: pd.DataFrame, column: str) -> np.ndarray:
    """A numeric column as floats, nulls as NaN (Plotly draws them as gaps)."""
    return pd.to_numeric(frame[column], errors="coerce").astype("float64").to_numpy()


def _format(values: pd.Series, spec: str) -> list[str]:
    return ["-" if pd.isna(v) else format(float(v), spec) for v in values]


def _text(value: object) -> str:
    """Free text for a table cell: Plotly reads a few HTML tags in it."""
    return escape(str(value), quote=False)


def as_strings(value: object) -> list[str]:
    """A VARCHAR[] cell as a Python list (null: empty)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return []
    # (a list or a numpy array)
    return [str(v) for v in value]  # type: ignore[attr-defined]


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
    name: str,
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
    figure = _layout(figure, name, subtitle, max(200, min(720, 150 + body)))
    figure.update_layout(margin={"b": 20})
    return figure


def reward_function_colours(names: list[str]) -> dict[str, str]:
    """One Okabe-Ito colour per reward function, by name, the same in every chart."""
    return {n: OKABE_ITO[i % len(OKABE_ITO)] for i, n in enumerate(sorted(names))}


def reward_signal_overview(frame: pd.DataFrame) -> go.Figure:
    """The monitor's 2x2 overview: mean ± std, the per-step means' box, SNR, variance."""
    name = "reward_signal_overview"
    if frame.empty:
        return _empty(name, "no reward statistics for this run")
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
    x = _values(frame, "step")
    mean = _values(frame, "mean")
    figure.add_trace(
        go.Scatter(
            x=x,
            y=_values(frame, "band_high"),
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
            y=_values(frame, "band_low"),
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
            customdata=_values(frame, "std"),
            hovertemplate="step %{x}<br>mean %{y:.3f} ± %{customdata:.3f}<extra></extra>",
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
    figure.add_trace(
        go.Scatter(
            x=x,
            y=_values(frame, "signal_to_noise"),
            mode="lines",
            name="signal-to-noise",
            line={"color": OKABE_ITO[2], "width": 2},
            showlegend=False,
            hovertemplate="step %{x}<br>|mean| / std %{y:.3f}<extra></extra>",
        ),
        row=2,
        col=1,
    )
    figure.add_trace(
        go.Scatter(
            x=x,
            y=_values(frame, "variance"),
            mode="lines",
            name="variance",
            line={"color": OKABE_ITO[1], "width": 2},
            showlegend=False,
            hovertemplate="step %{x}<br>variance %{y:.4f}<extra></extra>",
        ),
        row=2,
        col=2,
    )
    figure.update_xaxes(title_text="step", row=1, col=1)
    figure.update_xaxes(title_text="step", row=2, col=1)
    figure.update_xaxes(title_text="step", row=2, col=2)
    figure.update_yaxes(title_text="reward", row=1, col=1)
    figure.update_yaxes(title_text="mean reward of a step", row=1, col=2)
    figure.update_yaxes(title_text="|mean| / std", row=2, col=1)
    figure.update_yaxes(title_text="variance", row=2, col=2)
    figure.update_layout(
        legend={"orientation": "h", "x": 1, "xanchor": "right", "y": 1.07, "yanchor": "bottom"}
    )
    note = f"{len(frame)} steps; the band is the mean ± 1 std of the total reward"
    if frame["basis"].nunique() > 1:
        note += "; some steps as the trainer logged them, others from per-sample rewards"
    figure = _layout(figure, name, note, height=760)
    figure.update_layout(margin={"t": 110})
    return figure


def reward_functions_over_time(frame: pd.DataFrame, colours: dict[str, str]) -> go.Figure:
    """One line per reward function: its mean at each step."""
    name = "reward_functions_over_time"
    if frame.empty:
        return _empty(name, "no per-function rewards: the run logged only the total reward")
    figure = go.Figure()
    for function, rows in frame.groupby("reward_function", sort=True):
        figure.add_trace(
            go.Scatter(
                x=_values(rows, "step"),
                y=_values(rows, "mean"),
                name=str(function),
                mode="lines+markers" if len(rows) <= 60 else "lines",
                marker={"size": 5},
                line={"color": colours.get(str(function), OKABE_ITO[0]), "width": 2},
                customdata=_values(rows, "std"),
                hovertemplate="%{fullData.name}<br>step %{x}<br>mean %{y:.3f}, "
                "std %{customdata:.3f}<extra></extra>",
            )
        )
    figure.update_xaxes(title_text="step")
    figure.update_yaxes(title_text="mean reward of the function")
    functions = frame["reward_function"].nunique()
    return _layout(figure, name, f"{functions} reward functions", height=480)


def reward_function_contributions(frame: pd.DataFrame, colours: dict[str, str]) -> go.Figure:
    """Each function's share of the total reward at the latest step (a bar each)."""
    name = "reward_function_contributions"
    if frame.empty:
        return _empty(name, "no per-function rewards at any step")
    step = int(frame["step"].iloc[0])
    share = _values(frame, "contribution_pct")
    if np.isnan(share).all():
        return _empty(name, f"no contributions at step {step}: its total reward is not positive")
    functions = frame["reward_function"].astype(str).tolist()
    figure = go.Figure(
        go.Bar(
            x=functions,
            y=share,
            marker={"color": [colours.get(f, OKABE_ITO[0]) for f in functions]},
            text=_format(frame["contribution_pct"], ".1f"),
            texttemplate="%{text}%",
            textposition="outside",
            cliponaxis=False,
            customdata=_values(frame, "mean"),
            hovertemplate="%{x}<br>%{y:.1f}% of the total reward<br>"
            "mean %{customdata:.3f}<extra></extra>",
        )
    )
    figure.update_xaxes(title_text="reward function")
    figure.update_yaxes(title_text="contribution (%)", rangemode="tozero")
    figure.update_layout(bargap=0.45)
    return _layout(figure, name, f"step {step}, the latest with per-function rewards", 440)


def reward_function_importance(frame: pd.DataFrame) -> go.Figure:
    """The functions ranked by impact score, with what the score is made of."""
    name = "reward_function_importance"
    if frame.empty:
        return _empty(name, "no per-function rewards: nothing to rank")
    columns = [
        ("rank", frame["rank"].astype(str).tolist()),
        ("function", [_text(f) for f in frame["reward_function"]]),
        ("contribution (%)", _format(frame["contribution"], ".1f")),
        ("impact score", _format(frame["impact_score"], ".2f")),
        ("variability", _format(frame["variability"], ".3f")),
        ("mean", _format(frame["mean"], ".3f")),
        ("std", _format(frame["std"], ".3f")),
        ("corr. with total", _format(frame["correlation_with_total"], "+.2f")),
        ("corr. with performance", _format(frame["correlation_with_performance"], "+.2f")),
    ]
    return _reward_table(
        name,
        columns,
        widths=[40, 160, 100, 90, 90, 70, 70, 110, 140],
        align=["right", "left", "right", "right", "right", "right", "right", "right", "right"],
        subtitle="rank 1 = the largest impact score (contribution x variability) over the run",
    )


def training_dynamics(frame: pd.DataFrame) -> go.Figure:
    """KL, policy entropy and the advantages' mean and std, a panel each."""
    name = "training_dynamics"
    logged = [column for column, _, _ in DYNAMICS_PANELS if frame[column].notna().any()]
    if frame.empty or not logged:
        return _empty(name, "No data: the run logged no KL, policy entropy or advantages")
    figure = make_subplots(
        rows=2,
        cols=2,
        subplot_titles=[title for _, title, _ in DYNAMICS_PANELS],
        vertical_spacing=0.16,
        horizontal_spacing=0.1,
    )
    for panel, (column, title, colour) in enumerate(DYNAMICS_PANELS, start=1):
        row, col = (panel - 1) // 2 + 1, (panel - 1) % 2 + 1
        if column not in logged:
            _panel_note(figure, row, col, f"No data: {column} was not logged")
            continue
        rows = frame[frame[column].notna()]
        figure.add_trace(
            go.Scatter(
                x=_values(rows, "step"),
                y=_values(rows, column),
                mode="lines",
                name=title,
                line={"color": colour, "width": 2},
                showlegend=False,
                hovertemplate=f"step %{{x}}<br>{column} %{{y:.4f}}<extra></extra>",
            ),
            row=row,
            col=col,
        )
        figure.update_xaxes(title_text="step", row=row, col=col)
    missing = len(DYNAMICS_PANELS) - len(logged)
    note = f"{missing} of the four series not logged" if missing else "as the trainer logged them"
    figure = _layout(figure, name, note, height=700)
    figure.update_layout(margin={"t": 110})
    return figure


def reward_quality_score(frame: pd.DataFrame) -> go.Figure:
    """The run's quality score (a gauge) and its four parts in [0, 1] (bars)."""
    name = "reward_quality_score"
    if frame.empty:
        return _empty(name, "no quality report for this run")
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
    return _layout(figure, name, f"{row['steps']} steps, {row['reward_functions']} functions", 380)


def _advice(row: pd.Series) -> list[str]:
    return (
        [f"❌ {_text(v)}" for v in as_strings(row["issues"])]
        + [f"⚠️ {_text(v)}" for v in as_strings(row["warnings"])]
        + [f"💡 {_text(v)}" for v in as_strings(row["recommendations"])]
    )


def reward_function_quality(frame: pd.DataFrame) -> go.Figure:
    """Each function's quality score and parts, with its issues and advice."""
    name = "reward_function_quality"
    if frame.empty:
        return _empty(name, "no per-function rewards: nothing to score")
    advice = [_advice(row) for _, row in frame.iterrows()]
    columns = [
        ("function", [_text(f) for f in frame["reward_function"]]),
        ("score", _format(frame["quality_score"], ".1f")),
        ("consistency", _format(frame["consistency"], ".2f")),
        ("discriminability", _format(frame["discriminability"], ".2f")),
        ("stability", _format(frame["stability"], ".2f")),
        ("coverage", _format(frame["coverage"], ".2f")),
        ("issues, warnings, recommendations", ["<br>".join(a) or "-" for a in advice]),
    ]
    return _reward_table(
        name,
        columns,
        widths=[120, 55, 85, 105, 70, 70, 420],
        align=["left", "right", "right", "right", "right", "right", "left"],
        subtitle="score = 100 x (0.25 consistency + 0.35 discriminability + 0.25 stability"
        " + 0.15 coverage)",
        lines=[max(1, len(a)) for a in advice],
    )


def reward_quality_metrics(frame: pd.DataFrame) -> go.Figure:
    """Signal-to-noise, reward entropy and the variance (dashed, on the SNR scale)."""
    name = "reward_quality_metrics"
    if frame.empty:
        return _empty(name, "no reward statistics for this run")
    x = _values(frame, "step")
    figure = go.Figure()
    series = (
        ("signal_to_noise", "Signal-to-Noise Ratio", OKABE_ITO[2], "solid"),
        ("entropy", "Reward Entropy", OKABE_ITO[0], "solid"),
        ("variance_scaled", "Variance (normalised)", OKABE_ITO[1], "dash"),
    )
    for column, label, colour, dash in series:
        figure.add_trace(
            go.Scatter(
                x=x,
                y=_values(frame, column),
                mode="lines",
                name=label,
                line={"color": colour, "width": 2, "dash": dash},
                hovertemplate="%{fullData.name}<br>step %{x}<br>%{y:.3f}<extra></extra>",
            )
        )
    figure.update_xaxes(title_text="step")
    figure.update_yaxes(title_text="metric value")
    figure.update_layout(legend={"orientation": "h", "x": 0, "y": 1.0, "yanchor": "bottom"})
    return _layout(
        figure, name, "the variance is scaled so its largest value meets the largest SNR", 480
    )


def reward_alerts_timeline(
    steps: pd.DataFrame, alerts: pd.DataFrame, windows: pd.DataFrame, anomalies: pd.DataFrame
) -> go.Figure:
    """The mean reward with the alerts and anomalies on it, hacking stretches shaded,
    and the performance metric on a second axis."""
    name = "reward_alerts_timeline"
    if steps.empty:
        return _empty(name, "no reward statistics for this run")
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
            x=_values(steps, "step"),
            y=_values(steps, "mean"),
            mode="lines",
            name="mean reward",
            line={"color": OKABE_ITO[0], "width": 2},
            hovertemplate="step %{x}<br>mean reward %{y:.3f}<extra></extra>",
        )
    )
    if not measured.empty:
        figure.add_trace(
            go.Scatter(
                x=_values(measured, "step"),
                y=_values(measured, "performance"),
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
                x=_values(anomalies, "step"),
                y=_values(anomalies, "mean_reward"),
                mode="markers",
                name="anomaly",
                marker={
                    "symbol": "circle-open",
                    "size": 16,
                    "color": OKABE_ITO[3],
                    "line": {"width": 2.5},
                },
                customdata=_values(anomalies, "z_score"),
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
            text=("message", lambda m: "<br>".join(_text(v) for v in m)),
        )
        colour, symbol = ALERT_STYLES.get(level, ("#999999", "circle"))
        figure.add_trace(
            go.Scatter(
                x=marks.index.to_numpy(dtype=float),
                y=_values(marks, "mean_reward"),
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
            + (f" ({_text(suspects)})" if suspects else ""),
            annotation_position="top left",
            annotation_font={"size": 11, "color": "#1f2933"},
        )
    figure.update_xaxes(title_text="step")
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
    figure = _layout(figure, name, note, height=560)
    figure.update_layout(margin={"b": 110})
    return figure


def reward_alerts_table(alerts: pd.DataFrame, total: int | None = None) -> go.Figure:
    """Every alert (up to the page's cap), rows tinted by level."""
    name = "reward_alerts_table"
    if alerts.empty:
        return _empty(name, "no alert fired in this run")
    columns = [
        ("step", alerts["step"].astype(str).tolist()),
        ("level", alerts["level"].astype(str).tolist()),
        ("rule", [_text(v) for v in alerts["rule_name"]]),
        ("message", [_text(v) for v in alerts["message"]]),
        ("value", _format(alerts["value"], ".4g")),
        ("threshold", _format(alerts["threshold"], ".4g")),
    ]
    shown = len(alerts)
    note = "the most severe first within a step"
    if total is not None and total > shown:
        note = f"the first {shown} of {total} alerts; the rest are one SQL query away"
    return _reward_table(
        name,
        columns,
        widths=[50, 70, 170, 520, 70, 70],
        align=["right", "left", "left", "left", "right", "right"],
        fills=[ALERT_FILLS.get(level, "#ffffff") for level in alerts["level"]],
        subtitle=note,
        lines=[1 + len(str(m)) // 90 for m in alerts["message"]],
    )


# ---------------------------------------------------------------- agentic runs
# Each takes the rows its agent_*.sql query returns for one run.

# DIVERGING (above): red below 0 (penalised), blue above (rewarded).
WHITE_TO_ORANGE = [[0.0, "#fff7ec"], [1.0, "#b35806"]]
# Cells with no value (a turn the rollout did not reach) show the plot's background.
NOT_REACHED = "#cfd4da"
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
# The views of the advantage-by-turn heatmap: column, label, colour bar format.
TURN_VIEWS = (
    ("mean_advantage", "mean advantage", "mean advantage", "+.2f"),
    ("negative_share", "share of advantages below 0", "share below 0", ".0%"),
    ("std_advantage", "spread of advantages (std)", "std of advantages", ".2f"),
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


def _agent_empty(name: str, reason: str) -> go.Figure:
    """An empty chart saying why, its reason wrapped to fit a half-width chart."""
    return _empty(name, "<br>".join(textwrap.wrap(reason, 70)))


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
        figure.update_xaxes(tickmode="array", tickvals=ticks, range=[low - pad, high + pad])
    figure.update_xaxes(title_text=title)
    figure.update_layout(
        hovermode="x unified",
        legend={"orientation": "h", "x": 0, "y": -0.2, "yanchor": "top", "traceorder": "normal"},
        margin={"b": 120},
    )


def agent_eval_rates(frame: pd.DataFrame) -> go.Figure:
    """Accuracy, attempted, found and read rates and the idk share, one line each;
    the beat rate where a baseline was compared; a baseline as dotted reference lines."""
    name = "agent_eval_rates"
    steps = frame[~frame["is_baseline"].astype(bool)]
    baseline = frame[frame["is_baseline"].astype(bool)]
    if steps.empty:
        return _agent_empty(name, EVAL_MISSING)
    figure = go.Figure()
    x = _values(steps, "step")
    drawn = []
    for column, label, colour, dash, width in EVAL_RATES:
        y = _values(steps, column)
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
    beat = _values(steps, "beat_rate_shown")
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
    return _layout(figure, name, "; ".join([subtitle, *notes]), height=500)


def agent_eval_searches(frame: pd.DataFrame) -> go.Figure:
    """All, distinct and repeated searches of each eval (counts), one line each."""
    name = "agent_eval_searches"
    steps = frame[~frame["is_baseline"].astype(bool)]
    if steps.empty or steps["total_searches"].isna().all():
        return _agent_empty(name, "No search counts in this run's eval statistics")
    figure = go.Figure()
    x = _values(steps, "step")
    for column, label, colour, dash in EVAL_SEARCHES:
        figure.add_trace(
            go.Scatter(
                x=x,
                y=_values(steps, column),
                name=label,
                mode=_mode(steps),
                line={"color": colour, "dash": dash, "width": 2},
                customdata=np.column_stack(
                    [_values(steps, "repeated_search_share"), _values(steps, "avg_search_attempts")]
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
    return _layout(figure, name, "repeated = all - distinct", height=440)


def agent_eval_turns(frame: pd.DataFrame) -> go.Figure:
    """Mean turns of correct and of "I don't know" answers (lines, left axis), and the
    number of "I don't know" answers (bars, right axis)."""
    name = "agent_eval_turns"
    steps = frame[~frame["is_baseline"].astype(bool)]
    correct = _values(steps, "avg_turns_correct_shown")
    idk = _values(steps, "avg_turns_idk_shown")
    if steps.empty or (np.isnan(correct).all() and np.isnan(idk).all()):
        return _agent_empty(name, "No turn averages in this run's eval statistics")
    figure = go.Figure()
    x = _values(steps, "step")
    counts = _values(steps, "num_idk")
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
    return _layout(figure, name, "a mean is left out where no sample gave that answer", 440)


def _basis_note(frame: pd.DataFrame) -> str:
    notes = []
    for basis, rows in frame.groupby("basis", sort=True):
        threshold = rows["min_group_std"].dropna()
        text = GROUP_BASIS.get(str(basis), f"from {basis}")
        notes.append(text.format(min_group_std=threshold.iloc[0] if not threshold.empty else 0))
    return "; ".join(notes)


def agent_groups(frame: pd.DataFrame) -> go.Figure:
    """Groups kept and filtered per iteration, stacked; an x where every group was filtered."""
    name = "agent_groups"
    rows = frame[frame["groups_total"].notna()]
    if rows.empty:
        return _agent_empty(name, GROUPS_MISSING)
    figure = go.Figure()
    x = _values(rows, "iteration")
    custom = np.column_stack([_values(rows, "groups_total"), _values(rows, "filtered_share")])
    for column, label, colour in (
        ("groups_kept", "kept for training", OKABE_ITO[0]),
        ("groups_filtered", "filtered (low variance)", OKABE_ITO[1]),
    ):
        figure.add_trace(
            go.Bar(
                x=x,
                y=_values(rows, column),
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
                x=_values(skipped, "iteration"),
                y=_values(skipped, "groups_total"),
                mode="markers",
                name="every group filtered: step skipped",
                marker={"symbol": "x", "size": 11, "color": "#000000"},
                hovertemplate="iteration %{x}: every group filtered<extra></extra>",
            )
        )
    figure.update_layout(barmode="stack", bargap=0.25)
    figure.update_yaxes(title_text="groups (queries)", rangemode="tozero")
    _step_axis(figure, "iteration (training step)", x)
    return _layout(figure, name, _basis_note(rows), height=440)


def agent_early_exits(frame: pd.DataFrame) -> go.Figure:
    """Rollouts that finished early per iteration: stacked by reason when counted from
    rollouts, the total where a log or tracker gave only that."""
    name = "agent_early_exits"
    rows = frame[frame["finished_early"].notna()]
    if rows.empty:
        return _agent_empty(name, "No early exits could be told for this run")
    figure = go.Figure()
    x = _values(rows, "iteration")
    total = _values(rows, "rollouts")
    counted = rows["basis"].eq("rollouts")
    for column, label, colour in EARLY_REASONS:
        y = np.where(counted, _values(rows, column), np.nan)
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
    logged = _values(rows, "early_logged")
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
    return _layout(figure, name, "; ".join(notes), height=440)


def agent_train_shares(frame: pd.DataFrame) -> go.Figure:
    """The early-exit rate, the filtered share and the trainable-token share, as lines."""
    name = "agent_train_shares"
    present = [c for c, _, _, _ in TRAIN_SHARES if frame[c].notna().any()]
    if frame.empty or not present:
        return _agent_empty(name, GROUPS_MISSING)
    figure = go.Figure()
    x = _values(frame, "iteration")
    for column, label, colour, dash in TRAIN_SHARES:
        if column not in present:
            continue
        figure.add_trace(
            go.Scatter(
                x=x,
                y=_values(frame, column),
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
    return _layout(figure, name, note, height=400)


def advantage_group_title(entry: dict) -> str:
    """The group heatmap's title for one selector entry (the page redraws it on a pick)."""
    rollouts = len(entry["rollouts"])
    subtitle = (
        f"iteration {entry['iteration']} · group {_text(entry['group_id'])} · {rollouts}"
        f" rollout{'s' if rollouts != 1 else ''} · {entry['origin']} · grey: turn not reached"
    )
    return chart_title("agent_advantage_group", subtitle)


def agent_advantage_group(entry: dict | None, zmax: float) -> go.Figure:
    """One group's advantages, rollout by turn, diverging around 0 (range ±``zmax``).

    ``entry`` is one selector entry (agent_dashboard): the page redraws the chart
    with another entry's ``z``, ``rollouts``, ``turns``, ``how`` and title."""
    name = "agent_advantage_group"
    if entry is None:
        return _agent_empty(name, TURNS_MISSING)
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
    figure = _layout(figure, name, height=entry["height"])
    figure.update_layout(title={"text": advantage_group_title(entry)}, plot_bgcolor=NOT_REACHED)
    return figure


def _turn_grid(frame: pd.DataFrame, column: str) -> list[list[float | None]]:
    """A turn x iteration grid of ``column`` (rows: turns from 1), None where no rollout was."""
    grid = frame.pivot(index="turn", columns="iteration", values=column)
    grid = grid.reindex(
        index=sorted(frame["turn"].unique()), columns=sorted(frame["iteration"].unique())
    )
    return [[None if pd.isna(v) else float(v) for v in row] for row in grid.to_numpy()]


def agent_turn_means(frame: pd.DataFrame) -> go.Figure:
    """The advantages at each turn index, iteration by iteration (a heatmap with a
    menu: mean, share below 0, spread). The mean by default when the run's
    advantages were given; computed ones average 0 at every turn by their rule."""
    name = "agent_turn_means"
    if frame.empty:
        return _agent_empty(name, TURNS_MISSING)
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
    grids = {column: _turn_grid(frame, column) for column, _, _, _ in TURN_VIEWS}
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
    labels = {column: (short, spec) for column, _, short, spec in TURN_VIEWS}
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
    figure.update_layout(
        updatemenus=[
            {
                "type": "dropdown",
                "x": 0.0,
                "xanchor": "left",
                "y": 1.02,
                "yanchor": "bottom",
                "active": [c for c, _, _, _ in TURN_VIEWS].index(shown),
                "showactive": True,
                "bgcolor": "#ffffff",
                "buttons": [
                    {"label": f"show: {label}", "method": "restyle", "args": [style(column)]}
                    for column, label, _, _ in TURN_VIEWS
                ],
            }
        ],
        plot_bgcolor=NOT_REACHED,
    )
    figure.update_xaxes(title_text="iteration (training step)", showgrid=False, zeroline=False)
    figure.update_yaxes(title_text="turn", dtick=1 if len(turns) <= 30 else None, showgrid=False)
    if given:
        note = "advantages as the source gave them; grey: no rollout reached the turn"
    else:
        note = (
            "computed advantages average 0 at each turn by their rule: shown is the share below 0"
        )
    figure = _layout(figure, name, note, height=max(420, min(800, 240 + 34 * len(turns))))
    figure.update_layout(margin={"t": 125})
    return figure


def agent_turn_active(frame: pd.DataFrame) -> go.Figure:
    """The share of an iteration's rollouts that reached each turn."""
    name = "agent_turn_active"
    if frame.empty:
        return _agent_empty(name, TURNS_MISSING)
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
    figure.update_xaxes(title_text="iteration (training step)", showgrid=False, zeroline=False)
    figure.update_yaxes(title_text="turn", dtick=1 if len(turns) <= 30 else None, showgrid=False)
    note = "share of the iteration's rollouts (with turn data) that reached the turn"
    figure = _layout(figure, name, note, height=max(420, min(800, 240 + 34 * len(turns))))
    figure.update_layout(margin={"t": 125})
    return figure
