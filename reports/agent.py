"""A multi-turn agent's training read back from the marts: ``obs show``.

Every number is computed by the dbt models under models/marts/agent
(fct_turn_advantages, fct_group_summary, fct_eval_steps); this module selects
rows and words them the way the agentic GRPO trainer prints them on its
console: the Turn-by-Turn Advantage Table, the end-of-step group summary
(concise and verbose), the eval's Detailed Rubric Statistics, and the eval
trend lines of the trainer's ``analyze_eval_logs``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
from obs.core.agent_log import (
    ADVANTAGE_TITLE,
    ALL_FILTERED,
    GROUP_SUMMARY_TITLE,
    MISSING_CELL,
    RUBRIC_TITLE,
    rule,
)
from obs.reports.errors import ReportError
from obs.reports.resolve import (
    WITH_EVAL_STEPS,
    WITH_GROUP_SUMMARIES,
    WITH_TURN_ADVANTAGES,
    resolve_run,
)
from obs.reports.runs_format import to_json
from obs.reports.sql import query_rows
from obs.reports.warehouse import connect, require_tables

ADVANTAGES, GROUPS, EVALS = "fct_turn_advantages", "fct_group_summary", "fct_eval_steps"
# The trainer's table rules: 80 box-drawing characters (U+2500), wider for a wider header.
# The trainer's block titles and table rules: obs.core.agent_log (shared with
# the reader and the demo's generator).
# How many groups `obs show advantages` prints when no --group is given.
DEFAULT_GROUPS = 3
# How many values an error message or a "more groups" line lists.
LISTED = 10

# The runs with each mart's rows (its error words, and what lands them).
KINDS = {ADVANTAGES: WITH_TURN_ADVANTAGES, GROUPS: WITH_GROUP_SUMMARIES, EVALS: WITH_EVAL_STEPS}
BASIS_NOTES = {
    "trainer-log": "from the trainer log, as logged",
    "tracker": "from the tracker's train/groups_kept, train/groups_filtered, train/num_early_exit",
}


@dataclass
class AdvantageGroup:
    group_id: str
    source: str
    turns: int
    # One row per rollout: (rollout number from 1, advantage per turn 1..turns or None,
    # whether the rollout's advantages were given rather than computed from turn rewards).
    rollouts: list[tuple[int, list[float | None], bool]]

    @property
    def is_given(self) -> bool | None:
        """True: every advantage given; False: every one computed; None: a mix."""
        given = {is_given for _, _, is_given in self.rollouts}
        return given.pop() if len(given) == 1 else None


@dataclass
class AdvantageTables:
    run_id: str
    iteration: int
    groups: list[AdvantageGroup]
    group_ids: list[str]  # every group with turn data at the iteration, in order
    picked: str | None = None  # the --group asked for

    @property
    def more(self) -> list[str]:
        shown = {g.group_id for g in self.groups}
        return [g for g in self.group_ids if g not in shown]


@dataclass
class StepSummaries:
    run_id: str
    iteration: int | None  # None: the whole run
    steps: list[dict[str, Any]]


@dataclass
class EvalSteps:
    run_id: str
    step: int | None  # None: the whole run
    steps: list[dict[str, Any]]


# --------------------------------------------------------------------------- reading


def _open(warehouse: Path, mart: str) -> duckdb.DuckDBPyConnection:
    con = connect(warehouse)
    try:
        require_tables(con, warehouse, mart)
    except ReportError:
        con.close()
        raise
    return con


def listed(values: list[Any]) -> str:
    """``0..12`` for a run of consecutive integers, else the values comma-separated (the
    first ones, the last and how many when there are many)."""
    if not values:
        return "none"
    ints = all(isinstance(v, int) for v in values)
    if ints and len(values) > 2 and values == list(range(values[0], values[-1] + 1)):
        return f"{values[0]}..{values[-1]}"
    if len(values) <= LISTED:
        return ", ".join(str(v) for v in values)
    shown = ", ".join(str(v) for v in values[: LISTED - 1])
    return f"{shown}, ..., {values[-1]} ({len(values)} in all)"


def natural(text: str) -> tuple[tuple[int, int | str], ...]:
    """A sort key reading digit runs as numbers: a log's groups 2 before 10, table2 before
    table10 (ids without digits, like prompt hashes' letters, keep their text order)."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"(\d+)", text) if p)


def _resolve(con: duckdb.DuckDBPyConnection, warehouse: Path, run: str, mart: str) -> str:
    """The run id of ``run`` in ``mart``, else a one-line ReportError naming the runs it has
    (or, for a run another mart knows, what would land this one's rows)."""
    return resolve_run(con, warehouse, run, KINDS[mart], by_name="unique").run_id


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    """A mart row for JSON and formatting: the JSON text of ``extra`` parsed."""
    out = {}
    for key, value in row.items():
        if key == "extra" and isinstance(value, str):
            value = json.loads(value)
        out[key] = value
    return out


def load_advantages(
    warehouse: Path,
    run: str,
    iteration: int,
    group: str | None = None,
    limit: int = DEFAULT_GROUPS,
) -> AdvantageTables:
    """The advantage tables of one iteration: ``group``'s, else the first ``limit`` groups."""
    if limit < 1:
        raise ReportError(f"--groups {limit}: show at least one group")
    con = _open(warehouse, ADVANTAGES)
    try:
        run_id = _resolve(con, warehouse, run, ADVANTAGES)
        iterations = [r["iteration"] for r in query_rows(con, "advantages_iterations", run=run_id)]
        if iteration not in iterations:
            raise ReportError(
                f"{warehouse}: run {run_id} has no turn advantages at iteration {iteration} "
                f"(it has {listed(iterations)}); pick one of those"
            )
        found_ids = query_rows(con, "advantages_groups", run=run_id, iteration=iteration)
        group_ids = sorted((str(r["group_id"]) for r in found_ids), key=natural)
        if group is not None and group not in group_ids:
            raise ReportError(
                f"{warehouse}: run {run_id} has no group '{group}' with turn advantages at "
                f"iteration {iteration} (it has {listed(group_ids)}); pick one of those"
            )
        wanted = [group] if group is not None else group_ids[:limit]
        found = query_rows(con, "advantages_cells", run=run_id, iteration=iteration, groups=wanted)
    finally:
        con.close()
    groups = [_advantage_group(g, [r for r in found if r["group_id"] == g]) for g in wanted]
    return AdvantageTables(run_id, iteration, groups, group_ids, group)


def _advantage_group(group_id: str, found: list[dict[str, Any]]) -> AdvantageGroup:
    turns = max(r["turn"] for r in found)
    by_rollout: dict[int, list[dict[str, Any]]] = {}
    for row in found:
        by_rollout.setdefault(row["sample_idx"], []).append(row)
    rollouts = []
    for sample_idx, cells in sorted(by_rollout.items()):
        values: list[float | None] = [None] * turns
        for cell in cells:
            values[cell["turn"] - 1] = cell["advantage"]
        rollouts.append((sample_idx + 1, values, all(c["is_given"] for c in cells)))
    sources = sorted({r["source"] for r in found})
    return AdvantageGroup(group_id, "+".join(sources), turns, rollouts)


def load_group_summary(warehouse: Path, run: str, iteration: int | None = None) -> StepSummaries:
    """fct_group_summary's row of one iteration, or every row of the run."""
    con = _open(warehouse, GROUPS)
    try:
        run_id = _resolve(con, warehouse, run, GROUPS)
        found = query_rows(con, "agent_group_rows", run=run_id)
    finally:
        con.close()
    if iteration is not None:
        picked = [r for r in found if r["iteration"] == iteration]
        if not picked:
            iterations = [r["iteration"] for r in found]
            raise ReportError(
                f"{warehouse}: run {run_id} has no group summary at iteration {iteration} "
                f"(it has {listed(iterations)}); pick one of those"
            )
        found = picked
    return StepSummaries(run_id, iteration, [_plain(r) for r in found])


def load_eval(warehouse: Path, run: str, step: int | None = None) -> EvalSteps:
    """fct_eval_steps' row of one eval step, or every row of the run (baselines first)."""
    con = _open(warehouse, EVALS)
    try:
        run_id = _resolve(con, warehouse, run, EVALS)
        found = query_rows(con, "agent_eval_rows", run=run_id)
    finally:
        con.close()
    if step is not None:
        picked = [r for r in found if r["step"] == step]
        if not picked:
            steps = [r["step"] for r in found if not r["is_baseline"]]
            baseline = " and a baseline (step -1)" if any(r["is_baseline"] for r in found) else ""
            raise ReportError(
                f"{warehouse}: run {run_id} has no eval at step {step} "
                f"(it has steps {listed(steps)}{baseline}); pick one of those"
            )
        found = picked
    return EvalSteps(run_id, step, [_plain(r) for r in found])


# --------------------------------------------------------------------------- advantages


def advantage_table(group: AdvantageGroup) -> list[str]:
    """The trainer's Turn-by-Turn Advantage Table (``_print_turn_advantage_table``)."""
    header = "Rollout |" + "".join(f" Turn {t:2d} |" for t in range(1, group.turns + 1))
    line = rule(len(header))
    lines = [line, ADVANTAGE_TITLE, line, header, line]
    for number, values, _ in group.rollouts:
        cells = "".join(MISSING_CELL if v is None else f" {v:+6.3f} |" for v in values)
        lines.append(f"   {number:2d}  |{cells}")
    lines.append(line)
    return lines


def _origin(group: AdvantageGroup) -> str:
    if group.source == "trainer-log":
        return "given (trainer log)"
    if group.is_given is None:
        given = sum(1 for _, _, is_given in group.rollouts if is_given)
        return f"given for {given} of {len(group.rollouts)} rollouts, the rest from turn rewards"
    return "given" if group.is_given else "computed from turn rewards"


def advantages_text(tables: AdvantageTables) -> str:
    lines: list[str] = []
    for index, group in enumerate(tables.groups):
        if index:
            lines.append("")
        count = len(group.rollouts)
        lines.append(
            f"Group {group.group_id} · iteration {tables.iteration} · {count} "
            f"rollout{'s' if count != 1 else ''} · {_origin(group)}"
        )
        lines += advantage_table(group)
    more = tables.more
    if more and tables.picked is None:
        total = len(tables.group_ids)
        lines += [
            "",
            f"{len(more)} more group{'s' if len(more) != 1 else ''} at iteration "
            f"{tables.iteration} ({total} in all): {listed(more)}; show one with --group ID, "
            "or more with --groups K",
        ]
    return "\n".join(lines) + "\n"


def advantages_json(tables: AdvantageTables) -> str:
    return to_json(
        {
            "run_id": tables.run_id,
            "iteration": tables.iteration,
            "groups_total": len(tables.group_ids),
            "groups": [
                {
                    "group_id": g.group_id,
                    "source": g.source,
                    "is_given": g.is_given,
                    "turns": g.turns,
                    "rollouts": [
                        {"rollout": number, "is_given": is_given, "advantages": values}
                        for number, values, is_given in g.rollouts
                    ],
                }
                for g in tables.groups
            ],
        }
    )


# --------------------------------------------------------------------------- group summary


def _count(value: Any) -> str:
    return f"{int(value):,}"


def concise_line(row: dict[str, Any]) -> str:
    """The trainer's step-end line: ``  Groups: 6/8 kept (2 filtered), 18/48 finished early``."""
    if row["groups_total"] is None:
        text = "  Groups: not logged"
    else:
        text = (
            f"  Groups: {_count(row['groups_kept'])}/{_count(row['groups_total'])} kept "
            f"({_count(row['groups_filtered'])} filtered)"
        )
    if row["finished_early"] is not None:
        early = _count(row["finished_early"])
        if row["rollouts"] is not None:
            early += f"/{_count(row['rollouts'])}"
        text += f", {early} finished early"
    return text


def verbose_lines(row: dict[str, Any]) -> list[str]:
    """The trainer's verbose ``📊 Group Summary:`` block, then how the counts were made."""
    items: list[tuple[str, str | None]] = [
        ("Total groups", _maybe(row["groups_total"], _count)),
        ("Groups kept for training", _maybe(row["groups_kept"], _count)),
        ("Groups filtered (low variance)", _maybe(row["groups_filtered"], _count)),
    ]
    if row["finished_early"] is not None:
        early = _count(row["finished_early"])
        if row["rollouts"] is not None:
            early += f"/{_count(row['rollouts'])}"
        items.append(("Rollouts that finished early (didn't exhaust turns)", early))
    items += [
        ("Total rollout time", _maybe(row["rollout_time_s"], lambda v: f"{v:.1f}s")),
        ("Total training time", _maybe(row["training_time_s"], lambda v: f"{v:.1f}s")),
        ("Total tokens", _maybe(row["total_tokens"], _count)),
    ]
    if row["trainable_tokens"] is not None:
        trainable = _count(row["trainable_tokens"])
        if row["trainable_token_share"] is not None:
            trainable += f" ({row['trainable_token_share'] * 100:.1f}%)"
        items.append(("Trainable tokens", trainable))
    lines = [GROUP_SUMMARY_TITLE]
    lines += [f"  - {label}: {value}" for label, value in items if value is not None]
    if row["basis"] == "rollouts" and row["finished_early"]:
        reasons = [
            f"answered {_count(row['early_answered'] or 0)}",
            f"idk {_count(row['early_idk'] or 0)}",
            f"error {_count(row['early_error'] or 0)}",
        ]
        if row["early_other"]:
            reasons.append(f"other {_count(row['early_other'])}")
        lines.append(f"  - Early exits by reason: {', '.join(reasons)}")
    lines.append(f"  ({_basis_note(row)})")
    if row["all_groups_filtered"]:
        lines.append(ALL_FILTERED)
    return lines


def _maybe(value: Any, spell: Callable[[Any], str]) -> str | None:
    return None if value is None else spell(value)


def _basis_note(row: dict[str, Any]) -> str:
    if row["basis"] == "rollouts":
        return f"from rollouts; filtered = score std < {row['min_group_std']:g}"
    if row["basis"] is None:
        return "no group counts logged; times and tokens only"
    return BASIS_NOTES.get(row["basis"], f"from {row['basis']}")


def step_text(summaries: StepSummaries, verbose: bool = False) -> str:
    lines: list[str] = []
    if summaries.iteration is not None:
        (row,) = summaries.steps
        lines = verbose_lines(row) if verbose else [concise_line(row)]
        if not verbose and row["all_groups_filtered"]:
            lines.append(ALL_FILTERED)
    elif verbose:
        for index, row in enumerate(summaries.steps):
            if index:
                lines.append("")
            lines += [f"📍 Step {row['iteration']}", *verbose_lines(row)]
    else:
        for row in summaries.steps:
            line = f"Step {row['iteration']:>5}:{concise_line(row)}"
            if row["all_groups_filtered"]:
                line += "  ⚠️  all groups filtered (step skipped)"
            lines.append(line)
    return "\n".join(lines) + "\n"


def step_json(summaries: StepSummaries) -> str:
    return to_json(summaries.steps)


# --------------------------------------------------------------------------- eval


def _pct(part: Any, whole: Any) -> str:
    return f"{part}/{whole} ({part / whole * 100:.1f}%)"


def _share(count: Any, rate: Any, total: Any) -> str | None:
    """``95/100 (95.0%)`` from counts, ``95.0%`` from a rate alone, None when neither."""
    if count is not None and total:
        return _pct(count, total)
    return None if rate is None else f"{rate * 100:.1f}%"


def rubric_lines(row: dict[str, Any]) -> list[str]:
    """The trainer's ``📊 Detailed Rubric Statistics:`` block; a line with no value is left out."""
    total = row["total_samples"]
    items: list[tuple[str, str | None]] = [
        ("Attempted answers", _share(row["attempted_answer"], row["attempted_rate"], total)),
        ("Found correct email", _share(row["found_correct_email"], row["found_rate"], total)),
        ("Read correct email", _share(row["read_correct_email"], row["read_rate"], total)),
    ]
    repeated = row["total_repeated_searches"]
    if repeated is not None:
        searches = str(repeated)
        if row["total_searches"] is not None and row["total_unique_searches"] is not None:
            searches += f" (total: {row['total_searches']}, unique: {row['total_unique_searches']})"
        items.append(("Repeated searches", searches))
    items.append(
        ("Avg turns (correct)", _maybe(row["avg_turns_correct"], lambda v: f"{v:.2f} turns"))
    )
    if row["avg_turns_idk"] is not None:
        idk = f"{row['avg_turns_idk']:.2f} turns"
        if row["num_idk"] is not None:
            idk += f" (count: {row['num_idk']})"
        items.append(("Avg turns (I don't know)", idk))
    items.append(("Avg search attempts", _maybe(row["avg_search_attempts"], lambda v: f"{v:.2f}")))
    shown = [f"   {label}: {value}" for label, value in items if value is not None]
    return [RUBRIC_TITLE, *shown] if shown else []


def eval_headline(row: dict[str, Any]) -> str:
    """``Step 10: accuracy 85.0% (85/100), avg reward 0.723 (std 0.312), ...``."""
    label = "Baseline (step -1)" if row["is_baseline"] else f"Step {row['step']}"
    parts = []
    if row["accuracy"] is not None:
        accuracy = f"accuracy {row['accuracy'] * 100:.1f}%"
        if row["correct_answers"] is not None and row["total_samples"] is not None:
            accuracy += f" ({row['correct_answers']}/{row['total_samples']})"
        parts.append(accuracy)
    if row["avg_reward"] is not None:
        reward = f"avg reward {row['avg_reward']:.3f}"
        if row["std_reward"] is not None:
            reward += f" (std {row['std_reward']:.3f})"
        parts.append(reward)
    if row["median_reward"] is not None:
        parts.append(f"median {row['median_reward']:.3f}")
    if row["min_reward"] is not None and row["max_reward"] is not None:
        parts.append(f"range [{row['min_reward']:.3f}, {row['max_reward']:.3f}]")
    if row["eval_time"] is not None:
        parts.append(f"eval {row['eval_time']:.1f} s")
    return f"{label}: {', '.join(parts) or 'no statistics'}"


CHANGES = (
    ("accuracy", "accuracy_change"),
    ("attempted", "attempted_rate_change"),
    ("found", "found_rate_change"),
    ("read", "read_rate_change"),
    ("repeats share", "repeated_search_share_change"),
    ("idk", "idk_share_change"),
)


def change_line(row: dict[str, Any]) -> str | None:
    """``Change since step 0: accuracy +2.0 pts, ...`` (rates in percentage points)."""
    if row["previous_step"] is None:
        return None
    parts = [f"{label} {row[key] * 100:+.1f} pts" for label, key in CHANGES if row[key] is not None]
    if row["avg_reward_change"] is not None:
        parts.append(f"avg reward {row['avg_reward_change']:+.3f}")
    if not parts:
        return None
    return f"Change since step {row['previous_step']}: {', '.join(parts)}"


def eval_detail_lines(row: dict[str, Any]) -> list[str]:
    lines = [eval_headline(row), *rubric_lines(row)]
    change = change_line(row)
    if change is not None:
        lines.append(change)
    if row["has_baseline"] and not row["is_baseline"] and row["beat_rate"] is not None:
        lines.append(f"Beat control: {row['beat_rate'] * 100:.1f}% of queries")
    return lines


def _trend_share(count: Any, rate: Any, total: Any) -> str:
    if count is not None and total is not None:
        return f"{count}/{total}"
    return "-" if rate is None else f"{rate * 100:5.1f}%"


def trend_line(row: dict[str, Any]) -> str:
    """The trainer's ``analyze_eval_logs`` line:
    ``Step   10: Acc= 85.0%, Found=87/100, Read=82/100, Repeats=15``."""
    label = "Baseline:" if row["is_baseline"] else f"Step {row['step']:4d}:"
    accuracy = "    -" if row["accuracy"] is None else f"{row['accuracy'] * 100:5.1f}%"
    total = row["total_samples"]
    found = _trend_share(row["found_correct_email"], row["found_rate"], total)
    read = _trend_share(row["read_correct_email"], row["read_rate"], total)
    repeats = "-" if row["total_repeated_searches"] is None else row["total_repeated_searches"]
    return f"{label.ljust(10)} Acc={accuracy}, Found={found}, Read={read}, Repeats={repeats}"


def eval_text(evals: EvalSteps) -> str:
    if evals.step is not None:
        lines = eval_detail_lines(evals.steps[0])
    else:
        lines = [trend_line(row) for row in evals.steps]
    return "\n".join(lines) + "\n"


def eval_json(evals: EvalSteps) -> str:
    return to_json(evals.steps)
