"""Pure ``DataFrame -> plotly Figure`` functions, one per dashboard chart. No I/O.

Each takes the rows its query in ``reports/queries/`` returns for one run. Large
arrays go in as numpy arrays so Plotly writes them in its compact binary form.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go

RED_TO_GREEN = [[0.0, "#b2182b"], [0.5, "#f7f7f7"], [1.0, "#1a9850"]]
WHITE_TO_BLUE = [[0.0, "#f7fbff"], [1.0, "#08306b"]]
PRIORITY_COLOURS = {"high": "#f4a3a3", "medium": "#fde6a8", "low": "#d9f0d3"}
QUADRANT_COLOURS = {
    "fast_learner": "#1a9850",
    "slow_learner": "#91cf60",
    "quick_failure": "#fc8d59",
    "hard_failed": "#d73027",
}


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

# The fourteen charts, with the seed's file names, in dashboard order.
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
        "finding prompts whose score stopped moving (plateaued in red)",
        SECTIONS[1],
    ),
    "forgetting_analysis": ChartInfo(
        "Forgetting analysis",
        "catching prompts the policy learned and then lost (drops in red)",
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
        "Instruction interference: joint success of pairs",
        "spotting pairs that interfere (low joint success) or a broken verifier (stuck cells)",
        SECTIONS[4],
    ),
}


def _layout(figure: go.Figure, name: str, subtitle: str = "", height: int = 520) -> go.Figure:
    info = CHARTS[name]
    title = info.title + (f"<br><sup>{subtitle}</sup>" if subtitle else "")
    figure.update_layout(
        title={"text": title, "x": 0.01},
        height=height,
        margin={"l": 60, "r": 30, "t": 80, "b": 60},
        template="plotly_white",
    )
    return figure


def _empty(name: str, reason: str) -> go.Figure:
    figure = go.Figure()
    figure.add_annotation(text=reason, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    figure.update_xaxes(visible=False)
    figure.update_yaxes(visible=False)
    return _layout(figure, name, height=300)


def _cap_note(shown: int, total: int | None, how: str) -> str:
    if total is None or shown >= total:
        return f"all {shown} prompts"
    return f"{shown} of {total} prompts, {how}; the rest are one SQL query away"


def _prompt_rows(
    figure: go.Figure, name: str, labels: list[str], total: int | None, order: str
) -> go.Figure:
    """Axes, cap note and height shared by the heatmaps with one row per prompt."""
    figure.update_xaxes(title_text="iteration")
    figure.update_yaxes(
        title_text=f"prompt ({order} on top)",
        autorange="reversed",
        showticklabels=len(labels) <= 40,
    )
    note = _cap_note(len(labels), total, "the most informative")
    return _layout(figure, name, note, height=max(420, min(1400, 14 * len(labels) + 160)))


def prompt_heatmap(
    frame: pd.DataFrame,
    name: str,
    value: str,
    total_prompts: int | None = None,
    zmin: float | None = 0.0,
    zmax: float | None = 1.0,
    colorscale: object = "Viridis",
    colorbar_title: str = "",
) -> go.Figure:
    """Prompts (rows, ordered by first success) x iterations, coloured by ``value``."""
    if frame.empty:
        return _empty(name, "no prompt iterations in this selection")
    rows = frame.drop_duplicates("prompt_hash").sort_values("display_order")
    labels = rows["prompt_label"].tolist()
    iterations = np.sort(frame["iteration"].unique())
    grid = frame.pivot_table(index="prompt_label", columns="iteration", values=value)
    grid = grid.reindex(index=labels, columns=iterations)
    figure = go.Figure(
        go.Heatmap(
            z=grid.to_numpy(dtype=float),
            x=iterations.astype(float),
            y=labels,
            zmin=zmin,
            zmax=zmax,
            colorscale=colorscale,
            colorbar={"title": {"text": colorbar_title}},
            hovertemplate="%{y}<br>iteration %{x}<br>" + value + " %{z:.3f}<extra></extra>",
        )
    )
    return _prompt_rows(figure, name, labels, total_prompts, "earliest first success")


def forgetting_heatmap(frame: pd.DataFrame, total_prompts: int | None = None) -> go.Figure:
    """Iteration-to-iteration change of strict accuracy; rows by forgetting count."""
    name = "forgetting_analysis"
    if frame.empty:
        return _empty(name, "no prompt was observed at two iterations")
    rows = frame.drop_duplicates("prompt_hash").sort_values(
        ["num_forgetting_events", "prompt_hash"], ascending=[False, True]
    )
    labels = [
        f"{label}  ({events} drops)"
        for label, events in zip(rows["prompt_label"], rows["num_forgetting_events"], strict=True)
    ]
    iterations = np.sort(frame["iteration"].unique())
    grid = frame.pivot_table(index="prompt_hash", columns="iteration", values="strict_acc_change")
    grid = grid.reindex(index=rows["prompt_hash"], columns=iterations)
    figure = go.Figure(
        go.Heatmap(
            z=grid.to_numpy(dtype=float),
            x=iterations.astype(float),
            y=labels,
            zmin=-1,
            zmax=1,
            colorscale=RED_TO_GREEN,
            colorbar={"title": {"text": "change"}, "tickvals": [-1, 0, 1]},
            hovertemplate="%{y}<br>iteration %{x}<br>strict acc change %{z:+.0f}<extra></extra>",
        )
    )
    return _prompt_rows(figure, name, labels, total_prompts, "most forgetting")


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
    grid = grid.reindex(index=rows["instruction_id"], columns=iterations)
    figure = go.Figure(
        go.Heatmap(
            z=grid.to_numpy(dtype=float),
            x=iterations.astype(float),
            y=labels,
            zmin=0,
            zmax=1,
            colorscale=RED_TO_GREEN,
            colorbar={"title": {"text": "success"}},
            hovertemplate="%{y}<br>iteration %{x}<br>success %{z:.1%}<extra></extra>",
        )
    )
    figure.update_xaxes(title_text="iteration")
    figure.update_yaxes(title_text="instruction type [tier]", autorange="reversed")
    return _layout(figure, name, height=max(380, 28 * len(labels) + 160))


def reward_case_evolution(frame: pd.DataFrame) -> go.Figure:
    """Stacked area of each reward case's share per iteration."""
    name = "reward_case_evolution"
    if frame.empty:
        return _empty(name, "no rollout carries a reward_case label")
    figure = go.Figure()
    for case, rows in frame.groupby("reward_case", sort=True):
        figure.add_trace(
            go.Scatter(
                x=rows["iteration"].to_numpy(dtype=float),
                y=rows["share"].to_numpy(dtype=float),
                name=str(case),
                mode="lines",
                stackgroup="cases",
                hovertemplate=f"{case}<br>iteration %{{x}}<br>share %{{y:.1%}}<extra></extra>",
            )
        )
    figure.update_xaxes(title_text="iteration")
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
    never_x = float(learned.max() + 2) if not learned.empty else 2.0
    x = frame["iterations_to_learn"].fillna(never_x).to_numpy(dtype=float)
    hover = [
        f"{label}<br>{quadrant}"
        for label, quadrant in zip(frame["prompt_label"], frame["efficiency_quadrant"], strict=True)
    ]
    figure = go.Figure(
        go.Scatter(
            x=x,
            y=frame["final_score"].to_numpy(dtype=float),
            mode="markers",
            marker={
                "color": frame["num_instructions"].fillna(0).to_numpy(dtype=float),
                "colorscale": "Plasma",
                "showscale": True,
                "colorbar": {"title": {"text": "instructions"}},
                "size": 9,
                "opacity": 0.8,
            },
            text=hover,
            hovertemplate="%{text}<br>iterations to learn %{x}<br>final %{y:.3f}<extra></extra>",
        )
    )
    divide = fast_iterations + 0.5
    figure.add_vline(x=divide, line_dash="dash", line_color="#777")
    figure.add_hline(y=good_score, line_dash="dash", line_color="#777")
    corners = [
        (0, 1.04, "fast learner", "left"),
        (never_x, 1.04, "slow learner", "right"),
        (0, -0.06, "quick failure", "left"),
        (never_x, -0.06, "hard / failed", "right"),
    ]
    for cx, cy, text, anchor in corners:
        figure.add_annotation(
            x=cx, y=cy, text=f"<b>{text}</b>", showarrow=False, xanchor=anchor, font={"size": 12}
        )
    figure.add_annotation(
        x=never_x, y=0.5, text="never solved", showarrow=False, textangle=-90, xshift=18
    )
    figure.update_xaxes(title_text="iterations to first success (never solved at the right)")
    figure.update_yaxes(title_text="final score", range=[-0.12, 1.1])
    return _layout(figure, name, _cap_note(len(frame), total, "the most informative"))


def plateau_detection(
    frame: pd.DataFrame, threshold: float, floor: float, total: int | None = None
) -> go.Figure:
    """Recent variance of each prompt's mean score, lowest first, plateaued in red.

    The axis is logarithmic, so a variance of 0 (a flat prompt) is drawn at
    ``floor`` (the query's ``drawn_variance``); the hover gives the real value.
    """
    name = "plateau_detection"
    if frame.empty:
        return _empty(name, "no prompt has two observed iterations yet")
    colours = np.where(frame["is_plateau"].to_numpy(dtype=bool), "#d73027", "#4575b4")
    figure = go.Figure(
        go.Bar(
            x=frame["prompt_label"].tolist(),
            y=frame["drawn_variance"].to_numpy(dtype=float),
            customdata=frame["recent_variance"].to_numpy(dtype=float),
            marker={"color": colours.tolist()},
            hovertemplate="%{x}<br>recent variance %{customdata:.6f}<extra></extra>",
        )
    )
    figure.add_hline(
        y=threshold,
        line_dash="dash",
        line_color="#d73027",
        annotation_text=f"plateau threshold {threshold:g}",
    )
    figure.update_xaxes(title_text="prompt (lowest recent variance first)", showticklabels=False)
    figure.update_yaxes(title_text="recent variance of mean score", type="log")
    note = _cap_note(len(frame), total, "those with the lowest variance")
    return _layout(figure, name, f"{note}; a variance of 0 is drawn at {floor:g}")


def upsampling_table(frame: pd.DataFrame) -> go.Figure:
    """The top 20 upsampling candidates, rows coloured by priority."""
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
    return _layout(figure, name, "high / medium / low priority by upsampling score", 640)


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
            marker_color="#4575b4",
            boxmean="sd",
        )
    )
    figure.update_xaxes(title_text="iteration")
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
                "colorscale": "Viridis",
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
            line_color="#d73027",
            annotation_text=f"alpha {float(alpha.median()):g}",
        )
    figure.update_xaxes(title_text="V_i (verifiable reward)")
    figure.update_yaxes(title_text="S_i (soft reward)")
    return _layout(figure, name, f"{len(frame)} sampled rollouts")


def instruction_interference(frame: pd.DataFrame) -> go.Figure:
    """Joint success of every co-occurring pair, low in red; lift and n on hover."""
    name = "instruction_interference"
    if frame.empty:
        return _empty(name, "no prompt carries two instructions")
    names = sorted(set(frame["instruction_a"]) | set(frame["instruction_b"]))
    index = {n: i for i, n in enumerate(names)}
    joint = np.full((len(names), len(names)), np.nan)
    hover = np.full((len(names), len(names)), "", dtype=object)
    for row in frame.itertuples(index=False):
        a, b = index[row.instruction_a], index[row.instruction_b]
        stuck = " STUCK" if row.is_stuck_at_one or row.is_stuck_at_zero else ""
        lift = "-" if pd.isna(row.lift) else f"{row.lift:.2f}"
        text = f"n {row.n}, lift {lift}{stuck}"
        joint[a, b] = joint[b, a] = row.joint_success_rate
        hover[a, b] = hover[b, a] = text
    figure = go.Figure(
        go.Heatmap(
            z=joint,
            x=names,
            y=names,
            zmin=0,
            zmax=1,
            colorscale=RED_TO_GREEN,
            customdata=hover,
            colorbar={"title": {"text": "joint success"}},
            hovertemplate="%{y} + %{x}<br>joint success %{z:.1%}<br>%{customdata}<extra></extra>",
        )
    )
    figure.update_xaxes(title_text="instruction", tickangle=40)
    figure.update_yaxes(title_text="instruction", autorange="reversed")
    return _layout(figure, name, height=max(480, 34 * len(names) + 260))
