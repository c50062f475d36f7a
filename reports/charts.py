"""The chart registry: every chart of every dashboard, defined once.

An entry names a chart (its file name with ``--output-dir``), gives its title
and its "use for" line, the page and tab it sits in, the queries of
``reports/queries/`` it draws from (and so the marts it reads), and its figure
function. The training dashboard (``render``), the reward and agent pages
(``reward_dashboard``, ``agent_dashboard``), the one-file-per-chart output and
the PNG export (``chart_files``) and the dashboards' dbt exposures
(``exposures``) all read it; a page runs the queries its charts name.

A figure function takes the chart's ``ChartData`` and its title: the rows of
the page's queries (one run's, or every compared run's for the comparison)
and the few values the page works out once (the build's thresholds, the
colours, the run's prompt count).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from obs.reports.figures import agent, comparison, curriculum, instructions, prompts, rewards
from obs.reports.headline import Success, solved_means
from obs.reports.sql import relations_read


@dataclass(frozen=True)
class Page:
    """A dashboard: its tabs, the queries it runs beside its charts', and its dbt exposure."""

    exposure: str  # the dbt exposure's name
    label: str  # ... its label
    description: str  # ... and what it shows (one paragraph)
    tabs: tuple[str, ...]
    # Rows the page shows beside its charts, one query each, per run (header numbers).
    queries: tuple[str, ...] = ()
    # Queries the page runs once: the build's thresholds, which runs have its data.
    lookups: tuple[str, ...] = ()


@dataclass(frozen=True)
class ChartData:
    """What a chart is drawn from."""

    # The page's query rows by query name: one run's (every compared run's in the
    # run comparison).
    rows: Mapping[str, pd.DataFrame]
    # The build's thresholds (dashboard_settings.sql: the dbt vars the marts used).
    settings: Mapping[str, Any] = field(default_factory=dict)
    # The run's prompts, for the note of a chart that shows some of them.
    prompts: int | None = None
    # A colour per run (the run comparison) or per reward function (the reward page).
    colours: Mapping[str, str] = field(default_factory=dict)
    # The agent page's group selector entries, latest iteration first.
    groups: Sequence[dict[str, Any]] = ()


# A chart's figure function: its data and its title to a figure.
FigureFunction = Callable[[ChartData, str], go.Figure]


@dataclass(frozen=True)
class Chart:
    """One chart: where it sits, what it reads and what draws it."""

    name: str  # its id in the page, and its file name with --output-dir
    title: str
    use_for: str  # the "Use for:" line above it
    page: Page
    tab: str  # one of page.tabs, or COMPARISON
    queries: tuple[str, ...]  # the files of reports/queries/ its rows come from
    figure: FigureFunction
    wide: bool = True  # the full width of the agent page; False: half, beside another

    def draw(self, data: ChartData) -> go.Figure:
        return self.figure(data, self.title)

    @property
    def marts(self) -> tuple[str, ...]:
        """The marts and rpt_ relations its queries read."""
        return marts_read(self.queries)


def query_marts(query: str) -> frozenset[str]:
    """The marts and rpt_ relations one query of reports/queries/ reads."""
    return relations_read(query)


def marts_read(queries: Iterable[str]) -> tuple[str, ...]:
    """The marts ``queries`` read, sorted."""
    return tuple(sorted(set().union(*(query_marts(q) for q in queries))))


# ---------------------------------------------------------------- the pages

TRAINING = Page(
    exposure="training_dashboard",
    label="Training dashboard",
    description="`obs render-dashboard`: per-prompt learning, forgetting, plateaus,"
    " upsampling, instruction difficulty and interference, reward cases, score"
    " distributions and V_i/S_i, and the comparison of several runs.",
    tabs=(
        "Core dynamics",
        "Curriculum & data selection",
        "Exploration & stability",
        "Reward analysis",
        "Instruction analysis",
    ),
    queries=("header", "prompt_counts"),
    lookups=("dashboard_settings",),
)
CORE, CURRICULUM, EXPLORATION, REWARD_ANALYSIS, INSTRUCTIONS = TRAINING.tabs
# Several runs side by side: the training dashboard's first tab when it holds two
# or more runs with rollouts (the other tabs show one run at a time, the one
# picked in the page).
COMPARISON = "Run comparison"

# Reward monitoring: the GRPO reward monitor's seven views, as the tabs of
# `obs render-dashboard --kind rewards` (and extra tabs of the training
# dashboard for runs with reward data). The tiles, the advice lists and the
# raw table are HTML, not charts.
REWARDS = Page(
    exposure="reward_dashboard",
    label="Reward monitoring dashboard",
    description="`obs render-dashboard --kind rewards`: reward signal, functions and their"
    " importance, training dynamics, quality, alerts and hacking.",
    tabs=(
        "Summary statistics",
        "Reward signal",
        "Reward functions",
        "Training dynamics",
        "Reward quality",
        "Alerts & hacking",
        "Raw data",
    ),
    queries=("reward_summary",),
)
(
    REWARD_SUMMARY,
    REWARD_SIGNAL,
    REWARD_FUNCTIONS,
    TRAINING_DYNAMICS,
    REWARD_QUALITY,
    ALERTS,
    RAW_DATA,
) = REWARDS.tabs

# Agentic runs (a multi-turn agent trained with GRPO): the tabs of
# `obs render-dashboard --kind agent` (and extra tabs of the training dashboard
# for runs with agent data). The tiles and the group selector are HTML.
AGENT = Page(
    exposure="agent_dashboard",
    label="Agentic run dashboard",
    description="`obs render-dashboard --kind agent`: eval rates, searches and turns, groups"
    " kept and filtered, early exits, turn advantages.",
    tabs=("Eval over steps", "Groups & early exits", "Turn advantages"),
    queries=("agent_summary",),
    lookups=("agent_runs",),
)
EVALS, GROUPS, TURNS = AGENT.tabs

PAGES = (TRAINING, REWARDS, AGENT)

# The note in place of the V_i / S_i heatmaps of a run whose rollouts carry no such field.
COMPONENT_MISSING = (
    "this run's rollouts carry no {part}, only a score (TRL completions and plain"
    " rollout tables do not split the reward); land rollouts with a {field} field to see"
    " it prompt by prompt"
)
ALERT_ROWS = 500  # alerts in each run's alert table (the first ones)


# ---------------------------------------------------------------- figure functions
# The ones that do more than hand one query's rows to a figure.


def _prompt_heatmap(value: str, **options: Any) -> FigureFunction:
    """A prompt heatmap of ``value`` (prompt_heatmap.sql), with its colour bar and notes."""

    def draw(data: ChartData, title: str) -> go.Figure:
        return prompts.prompt_heatmap(
            data.rows["prompt_heatmap"], value, data.prompts, **options, title=title
        )

    return draw


def _prompt_accuracy(data: ChartData, title: str) -> go.Figure:
    """Solved or not under the build's one success rule (var success), as every count."""
    threshold = data.settings["pass_threshold"]
    rule = Success.of(data.settings)
    if rule.kind in ("score", "function") and rule.threshold is not None:
        solved = solved_means(rule.kind, threshold, rule) + " (var success)"
    else:
        solved = (
            "every instruction followed, or (a rollout without instruction"
            f" results) a score of at least {threshold:g}"
        )
    return prompts.prompt_heatmap(
        data.rows["prompt_heatmap"],
        "solved",
        data.prompts,
        scale="solved",
        colorbar_title="any rollout",
        note=f"solved: {solved}",
        title=title,
    )


def _sample_efficiency(data: ChartData, title: str) -> go.Figure:
    return curriculum.sample_efficiency(
        data.rows["sample_efficiency"],
        float(data.settings["fast_learning_iterations"]),
        float(data.settings["sample_efficiency_good_score"]),
        data.prompts,
        title=title,
    )


def _plateau_detection(data: ChartData, title: str) -> go.Figure:
    return curriculum.plateau_detection(
        data.rows["plateau"],
        float(data.settings["plateau_variance_threshold"]),
        curriculum.VARIANCE_FLOOR,
        data.prompts,
        title=title,
    )


def _interference(data: ChartData, title: str) -> go.Figure:
    return instructions.instruction_interference(
        data.rows["interference"], int(data.settings["stuck_cell_min_samples"]), title=title
    )


def _alerts_timeline(data: ChartData, title: str) -> go.Figure:
    return rewards.reward_alerts_timeline(
        data.rows["reward_steps"],
        data.rows["reward_alerts"],
        data.rows["reward_hacking_windows"],
        data.rows["reward_anomalies"],
        title=title,
    )


def _alerts_table(data: ChartData, title: str) -> go.Figure:
    alerts = data.rows["reward_alerts"]
    return rewards.reward_alerts_table(alerts.head(ALERT_ROWS), len(alerts), title=title)


def _advantage_group(data: ChartData, title: str) -> go.Figure:
    """The latest iteration's first group; the page redraws it with the group picked."""
    cells = data.rows["agent_advantage_cells"]
    zmax = float(cells["advantage_range"].iloc[0]) if not cells.empty else 1.0
    first = data.groups[0] if data.groups else None
    return agent.agent_advantage_group(first, zmax if zmax > 0 else 1.0, title=title)


# ---------------------------------------------------------------- the charts
# In page order: a tab shows its charts in this order.

CHARTS: dict[str, Chart] = {
    chart.name: chart
    for chart in (
        # ---- training dashboard, one run at a time
        Chart(
            "prompt_dynamics_fi",
            "Prompt dynamics: mean score (F_i)",
            "when each prompt is learned, and whether it stays learned",
            TRAINING,
            CORE,
            ("prompt_heatmap", "prompt_counts"),
            _prompt_heatmap("mean_score", colorbar_title="mean score"),
        ),
        Chart(
            "prompt_dynamics_vi",
            "Prompt dynamics: verifiable reward (V_i)",
            "tracking the verifiable reward component prompt by prompt",
            TRAINING,
            CORE,
            ("prompt_heatmap", "prompt_counts"),
            _prompt_heatmap(
                "mean_v_i",
                colorbar_title="mean V_i",
                missing=COMPONENT_MISSING.format(part="verifiable reward (V_i)", field="v_i"),
            ),
        ),
        Chart(
            "prompt_dynamics_si",
            "Prompt dynamics: soft reward (S_i)",
            "tracking the soft (quality) reward component prompt by prompt",
            TRAINING,
            CORE,
            ("prompt_heatmap", "prompt_counts"),
            _prompt_heatmap(
                "mean_s_i",
                colorbar_title="mean S_i",
                missing=COMPONENT_MISSING.format(part="soft reward (S_i)", field="s_i"),
            ),
        ),
        Chart(
            "prompt_accuracy",
            "Prompt strict accuracy",
            "seeing which prompts any rollout solved (under the build's success rule) at each"
            " iteration",
            TRAINING,
            CORE,
            ("prompt_heatmap", "prompt_counts", "dashboard_settings"),
            _prompt_accuracy,
        ),
        Chart(
            "upsampling_candidates",
            "Top 20 upsampling candidates",
            "choosing which prompts to upsample in the next run",
            TRAINING,
            CURRICULUM,
            ("upsampling_top",),
            lambda data, title: curriculum.upsampling_table(
                data.rows["upsampling_top"], title=title
            ),
        ),
        Chart(
            "sample_efficiency",
            "Sample efficiency",
            "separating fast learners from slow learners and prompts that never land",
            TRAINING,
            CURRICULUM,
            ("sample_efficiency", "prompt_counts", "dashboard_settings"),
            _sample_efficiency,
        ),
        Chart(
            "plateau_detection",
            "Plateau detection",
            "finding prompts whose score stopped moving (plateaued in orange)",
            TRAINING,
            CURRICULUM,
            ("plateau", "prompt_counts", "dashboard_settings"),
            _plateau_detection,
        ),
        Chart(
            "forgetting_analysis",
            "Forgetting analysis",
            "catching prompts the policy learned and then lost (drops in red, gains in blue)",
            TRAINING,
            CURRICULUM,
            ("forgetting", "prompt_counts"),
            lambda data, title: prompts.forgetting_heatmap(
                data.rows["forgetting"], data.prompts, title=title
            ),
        ),
        Chart(
            "exploration",
            "Exploration: score spread within each group",
            "seeing where the policy still explores; a zero spread gives GRPO no gradient",
            TRAINING,
            EXPLORATION,
            ("prompt_heatmap", "prompt_counts"),
            _prompt_heatmap("std_score", scale="spread", colorbar_title="score std"),
        ),
        Chart(
            "score_distribution",
            "Score distribution by iteration",
            "seeing how the whole score distribution moves, not just its mean",
            TRAINING,
            EXPLORATION,
            ("score_distribution",),
            lambda data, title: prompts.score_distribution(
                data.rows["score_distribution"], title=title
            ),
        ),
        Chart(
            "reward_case_evolution",
            "Reward case evolution",
            "watching the mix of reward cases shift as training goes on",
            TRAINING,
            REWARD_ANALYSIS,
            ("reward_cases",),
            lambda data, title: rewards.reward_case_evolution(
                data.rows["reward_cases"], title=title
            ),
        ),
        Chart(
            "vi_si_correlation",
            "V_i vs S_i",
            "checking whether the verifiable and the soft reward agree",
            TRAINING,
            REWARD_ANALYSIS,
            ("vi_si",),
            lambda data, title: rewards.vi_si_correlation(data.rows["vi_si"], title=title),
        ),
        Chart(
            "instruction_types",
            "Instruction types by iteration (hardest first)",
            "finding instruction types that stay hard and deserve more data",
            TRAINING,
            INSTRUCTIONS,
            ("instruction_types",),
            lambda data, title: instructions.instruction_types(
                data.rows["instruction_types"], title=title
            ),
        ),
        Chart(
            "instruction_interference",
            "Instruction interference: lift of pairs",
            "spotting pairs that interfere (joint success below what the two success rates"
            " predict, in red) or a broken verifier (stuck cells)",
            TRAINING,
            INSTRUCTIONS,
            ("interference", "dashboard_settings"),
            _interference,
        ),
        # ---- training dashboard, the run comparison (every run in one chart)
        Chart(
            "compare_learning_curves",
            "Runs side by side: learning curves",
            "telling which run learns faster and further: mean score, the share of prompts"
            " solved and the share of groups that give GRPO no gradient, iteration by"
            " iteration",
            TRAINING,
            COMPARISON,
            ("compare_iterations",),
            lambda data, title: comparison.compare_learning_curves(
                data.rows["compare_iterations"], dict(data.colours), title=title
            ),
        ),
        Chart(
            "compare_prompt_outcomes",
            "Runs side by side: what happened to the prompts",
            "comparing how many prompts each run learned, forgot, left on a plateau or never"
            " moved, as a share of the prompts it saw",
            TRAINING,
            COMPARISON,
            ("compare_prompts",),
            lambda data, title: comparison.compare_prompt_outcomes(
                data.rows["compare_prompts"], dict(data.colours), title=title
            ),
        ),
        Chart(
            "compare_instruction_difficulty",
            "Runs side by side: instruction difficulty",
            "seeing which instruction types each run finds hard (hardest first), and where one"
            " run does better than another",
            TRAINING,
            COMPARISON,
            ("compare_instructions",),
            lambda data, title: comparison.compare_instruction_difficulty(
                data.rows["compare_instructions"], dict(data.colours), title=title
            ),
        ),
        # ---- reward monitoring
        Chart(
            "reward_signal_overview",
            "Reward Signal Overview: the total reward R",
            "watching the total reward's level and spread; a falling signal-to-noise ratio"
            " means the reward stops telling good samples from bad ones",
            REWARDS,
            REWARD_SIGNAL,
            ("reward_steps",),
            lambda data, title: rewards.reward_signal_overview(
                data.rows["reward_steps"], title=title
            ),
        ),
        Chart(
            "reward_functions_over_time",
            "Reward Functions Over Time",
            "seeing which reward function moves the total, and one that rises alone",
            REWARDS,
            REWARD_FUNCTIONS,
            ("reward_function_steps",),
            lambda data, title: rewards.reward_functions_over_time(
                data.rows["reward_function_steps"], dict(data.colours), title=title
            ),
        ),
        Chart(
            "reward_function_contributions",
            "Reward Function Contributions (%)",
            "checking that no single function dominates the reward at the latest step",
            REWARDS,
            REWARD_FUNCTIONS,
            ("reward_contributions", "reward_function_steps"),
            lambda data, title: rewards.reward_function_contributions(
                data.rows["reward_contributions"], dict(data.colours), title=title
            ),
        ),
        Chart(
            "reward_function_importance",
            "Reward function importance",
            "ranking the functions by impact (contribution x variability): a large"
            " contribution that never varies gives GRPO no gradient",
            REWARDS,
            REWARD_FUNCTIONS,
            ("reward_importance",),
            lambda data, title: rewards.reward_function_importance(
                data.rows["reward_importance"], title=title
            ),
        ),
        Chart(
            "training_dynamics",
            "Training Dynamics",
            "catching the policy drifting from the reference (KL rising), collapsing (entropy"
            " falling) or advantages that vanish",
            REWARDS,
            TRAINING_DYNAMICS,
            ("reward_steps",),
            lambda data, title: rewards.training_dynamics(data.rows["reward_steps"], title=title),
        ),
        Chart(
            "reward_quality_score",
            "Reward quality score",
            "judging the reward signal at a glance, and finding the part that pulls it down",
            REWARDS,
            REWARD_QUALITY,
            ("reward_quality",),
            lambda data, title: rewards.reward_quality_score(
                data.rows["reward_quality"], title=title
            ),
        ),
        Chart(
            "reward_function_quality",
            "Reward function quality (lowest score first)",
            "finding the reward function to fix first, and what to do about it",
            REWARDS,
            REWARD_QUALITY,
            ("reward_function_quality",),
            lambda data, title: rewards.reward_function_quality(
                data.rows["reward_function_quality"], title=title
            ),
        ),
        Chart(
            "reward_quality_metrics",
            "Reward Quality Metrics of the total reward R",
            "following signal-to-noise, entropy and variance together over training",
            REWARDS,
            REWARD_QUALITY,
            ("reward_steps",),
            lambda data, title: rewards.reward_quality_metrics(
                data.rows["reward_steps"], title=title
            ),
        ),
        Chart(
            "reward_alerts_timeline",
            "Alerts and reward hacking over training",
            "lining alerts, anomalies and suspected reward hacking up with the reward and the"
            " performance metric",
            REWARDS,
            ALERTS,
            ("reward_steps", "reward_alerts", "reward_hacking_windows", "reward_anomalies"),
            _alerts_timeline,
        ),
        Chart(
            "reward_alerts_table",
            "Alerts",
            "reading every alert with its step, level, rule and message",
            REWARDS,
            ALERTS,
            ("reward_alerts",),
            _alerts_table,
        ),
        # ---- agentic runs
        Chart(
            "agent_eval_rates",
            "Eval results over training",
            "tracking accuracy over time, and whether the agent finds and reads the right"
            ' e-mail more often and answers "I don\'t know" less',
            AGENT,
            EVALS,
            ("agent_eval_steps",),
            lambda data, title: agent.agent_eval_rates(data.rows["agent_eval_steps"], title=title),
        ),
        Chart(
            "agent_eval_searches",
            "Searches per eval",
            "judging search efficiency: fewer searches for the same results, and fewer repeats",
            AGENT,
            EVALS,
            ("agent_eval_steps",),
            lambda data, title: agent.agent_eval_searches(
                data.rows["agent_eval_steps"], title=title
            ),
            wide=False,
        ),
        Chart(
            "agent_eval_turns",
            'Turns per eval answer: correct vs "I don\'t know"',
            "seeing whether the agent answers in fewer turns, and how long it searches before"
            " it gives up",
            AGENT,
            EVALS,
            ("agent_eval_steps",),
            lambda data, title: agent.agent_eval_turns(data.rows["agent_eval_steps"], title=title),
            wide=False,
        ),
        Chart(
            "agent_groups",
            "Groups per iteration: kept for training vs filtered",
            "seeing how many groups give GRPO a gradient (a filtered group's rollouts all"
            " scored about the same)",
            AGENT,
            GROUPS,
            ("agent_group_summary",),
            lambda data, title: agent.agent_groups(data.rows["agent_group_summary"], title=title),
            wide=False,
        ),
        Chart(
            "agent_early_exits",
            "Rollouts that finished early, by reason",
            "learning when the agent learns to stop early: by answering, by saying"
            ' "I don\'t know", or by an error',
            AGENT,
            GROUPS,
            ("agent_group_summary",),
            lambda data, title: agent.agent_early_exits(
                data.rows["agent_group_summary"], title=title
            ),
            wide=False,
        ),
        Chart(
            "agent_train_shares",
            "Early-exit rate, filtered groups and trainable tokens",
            "following the shares behind the counts above: how many rollouts stop early, how"
            " many groups are dropped, how much of the text is trained on",
            AGENT,
            GROUPS,
            ("agent_group_summary",),
            lambda data, title: agent.agent_train_shares(
                data.rows["agent_group_summary"], title=title
            ),
        ),
        Chart(
            "agent_advantage_group",
            "Turn-by-turn advantages of one group",
            "reading which turns of which rollouts GRPO rewarded (blue) or penalised (red);"
            " pick the iteration and group above the chart",
            AGENT,
            TURNS,
            ("agent_advantage_cells",),
            _advantage_group,
        ),
        Chart(
            "agent_turn_means",
            "Advantage by turn over training",
            "seeing which turns GRPO pushes up or down, and how that changes as training goes on",
            AGENT,
            TURNS,
            ("agent_turn_summary",),
            lambda data, title: agent.agent_turn_means(
                data.rows["agent_turn_summary"], title=title
            ),
            wide=False,
        ),
        Chart(
            "agent_turn_active",
            "Rollouts still going at each turn",
            "seeing how many turns rollouts take, and how that changes over training",
            AGENT,
            TURNS,
            ("agent_turn_summary",),
            lambda data, title: agent.agent_turn_active(
                data.rows["agent_turn_summary"], title=title
            ),
            wide=False,
        ),
    )
}


def charts_of(page: Page, tab: str | None = None) -> dict[str, Chart]:
    """The page's charts (only those of ``tab`` when given), by name, in page order.

    The training page's run comparison charts have the tab ``COMPARISON``.
    """
    return {
        name: chart
        for name, chart in CHARTS.items()
        if chart.page is page and (tab is None or chart.tab == tab)
    }


def run_charts(page: Page) -> dict[str, Chart]:
    """The page's charts drawn run by run (all but the run comparison's), in page order."""
    return {name: chart for name, chart in charts_of(page).items() if chart.tab in page.tabs}


def queries_of(charts: Iterable[Chart], page: Page | None = None) -> tuple[str, ...]:
    """The queries ``charts`` read (and ``page``'s own, first), each once, in order.

    The page's lookups are not among them: a page runs those once, on its own terms.
    """
    names = [*(page.queries if page else ()), *(q for c in charts for q in c.queries)]
    lookups = set(page.lookups) if page else set()
    return tuple(name for name in dict.fromkeys(names) if name not in lookups)


def page_queries(page: Page) -> tuple[str, ...]:
    """Every query the page runs: its own, its lookups and its charts'."""
    charts = charts_of(page).values()
    names = [*page.queries, *page.lookups, *(q for c in charts for q in c.queries)]
    return tuple(dict.fromkeys(names))


def page_marts(page: Page) -> tuple[str, ...]:
    """Every mart the page reads, sorted: what its dbt exposure depends on."""
    return marts_read(page_queries(page))
