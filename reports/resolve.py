"""Which run a command or a page means, and what each run holds: one place for every run.

A run is any run id the warehouse has data of: rollouts, a tracker history,
reward data (per-sample rewards, a reward monitor's files, or a logged
reward), an agent's records. ``holdings`` reads which of those each run holds
(``KINDS``), in one query over the marts, and every reporting command finds
its runs there:

* ``resolve_run`` finds the one run a command names (its id, or where the
  command allows a tracker run's display name). A run the warehouse does not
  have is one line naming the runs it has; a run without the data the
  command needs is one line saying what the run holds and what would land
  the rest (``missing_note``): ``tbx: tracker history only; land rollout dumps
  (obs ingest rollouts PATH --run tbx) to see prompts``.
* ``choose_runs`` checks the runs a page is asked for, or falls back to the
  page's default runs; ``runs_with_data`` splits a page's runs into those
  with its data and those without.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple

import duckdb
from obs.reports.errors import ReportError
from obs.reports.sql import query_rows
from obs.reports.warehouse import run_list, table_names, unknown_run

# The query saying which rows of a mart make a run of a kind (reports/queries/run_ids_<mart>),
# each spelled out so the exposures' scan (reports/exposures.py) reads what runs.
RUN_IDS_QUERIES = {
    "fct_iteration_summary": "run_ids_fct_iteration_summary",
    "dim_runs": "run_ids_dim_runs",
    "fct_reward_steps": "run_ids_fct_reward_steps",
    "fct_eval_steps": "run_ids_fct_eval_steps",
    "fct_group_summary": "run_ids_fct_group_summary",
    "fct_turn_advantages": "run_ids_fct_turn_advantages",
    "fct_turn_summary": "run_ids_fct_turn_summary",
}


@dataclass(frozen=True)
class RunKind:
    """The runs with one kind of data: those with a row in any of ``marts`` (of those built)."""

    marts: tuple[str, ...]
    # What a run of this kind holds, as a one-line note words it ("reward data").
    data: str = ""
    # What lands that data for a run that has none ({run}: the run's id) ...
    lands: str = ""
    # ... and what it shows once landed (a command may say what it would show instead).
    shows: str = ""
    # The word for the kind in `obs runs --format json` ("rollouts", "history", ...).
    key: str = ""

    @property
    def what(self) -> str:
        return f"runs with {self.data}" if self.data else "runs"

    def run_ids(self, con: duckdb.DuckDBPyConnection, present: set[str]) -> set[str]:
        """The runs with a row in a built mart of the kind, each mart read by its query
        (``RUN_IDS_QUERIES``: which of its rows make a run of the kind)."""
        return {
            str(row["run_id"])
            for mart in self.marts
            if mart in present
            for row in query_rows(con, RUN_IDS_QUERIES[mart])
        }


WITH_ROLLOUTS = RunKind(
    ("fct_iteration_summary",),
    "rollouts",
    "rollout dumps (obs ingest rollouts PATH --run {run})",
    "see prompts",
    key="rollouts",
)
WITH_HISTORY = RunKind(
    ("dim_runs",),
    "tracker history",
    "its tracker history (obs ingest metrics PATH --run {run})",
    "see training metrics",
    key="history",
)
WITH_REWARDS = RunKind(
    ("fct_reward_steps",),
    "reward data",
    "per-function rewards (rollouts with reward columns, or obs ingest monitoring DIR"
    " --run {run}) or a tracker history that logs the reward",
    "see reward monitoring",
    key="rewards",
)
WITH_AGENT = RunKind(
    ("fct_eval_steps", "fct_group_summary", "fct_turn_advantages"),
    "agent data",
    "the agent's eval logs (obs ingest eval-logs DIR --run {run}) or console log"
    " (obs ingest trainer-log FILE --run {run})",
    "see its turns",
    # a group summary with only times or tokens is no agent's (run_ids_fct_group_summary)
    key="agent",
)
# What a run can hold, in the order a note lists it.
KINDS = (WITH_ROLLOUTS, WITH_HISTORY, WITH_REWARDS, WITH_AGENT)

# An agent's records one at a time (`obs show`).
WITH_TURN_ADVANTAGES = RunKind(
    ("fct_turn_advantages",),
    "turn advantages",
    "rollouts with `turn_advantages` or `turn_rewards` (obs ingest rollouts DIR"
    " --run {run}) or the trainer's console log (obs ingest trainer-log FILE --run {run})",
    "see its turn advantages",
)
WITH_GROUP_SUMMARIES = RunKind(
    ("fct_group_summary",),
    "group summaries",
    "rollouts with `group_id`, `num_turns`/`max_turns` or `exit_reason` (obs ingest"
    " rollouts DIR --run {run}) or the trainer's console log (obs ingest trainer-log FILE"
    " --run {run})",
    "see its group summaries",
)
WITH_EVAL_STEPS = RunKind(
    ("fct_eval_steps",),
    "eval steps",
    "the eval files (obs ingest eval-logs DIR --run {run})",
    "see its eval steps",
)


class FoundRun(NamedTuple):
    run_id: str
    has_data: bool  # False only for a run resolved without the kind's data (required=False)


# Each run the warehouse has, and the kinds of data it holds (KINDS' order).
Holdings = Mapping[str, tuple[RunKind, ...]]


def holdings(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[RunKind, ...]]:
    """Every run of the warehouse, sorted, with the kinds of data it holds."""
    present = table_names(con)
    found: dict[str, list[RunKind]] = {}
    for kind in KINDS:
        for run in kind.run_ids(con, present):
            found.setdefault(run, []).append(kind)
    return {run: tuple(found[run]) for run in sorted(found)}


def holds(kinds: Sequence[RunKind]) -> str:
    """What a run holds, in words: ``tracker history only``, ``rollouts and reward data``."""
    names = [kind.data for kind in kinds]
    if not names:
        return "nothing"
    if len(names) == 1:
        return f"{names[0]} only"
    return ", ".join(names[:-1]) + " and " + names[-1]


def missing_note(
    runs: Sequence[str], held: Sequence[RunKind], missing: Sequence[RunKind], shows: str = ""
) -> str:
    """The one line for runs that hold ``held`` and not ``missing``: what they hold, what
    would land the rest and what it would show (``shows``, else the first missing kind's).

    ``tbx: tracker history only; land rollout dumps (obs ingest rollouts PATH --run tbx)
    to see prompts``. Several runs holding the same share one line (``--run RUN``).
    """
    run = runs[0] if len(runs) == 1 else "RUN"
    lands = " and ".join(kind.lands.format(run=run) for kind in missing)
    return f"{run_list(runs)}: {holds(held)}; land {lands} to {shows or missing[0].shows}"


def notes_for(found: Holdings, runs: Iterable[str], missing: RunKind, shows: str = "") -> list[str]:
    """A line per set of ``runs`` that hold the same data and not ``missing``."""
    grouped: dict[tuple[RunKind, ...], list[str]] = {}
    for run in runs:
        if missing not in found.get(run, ()):
            grouped.setdefault(found.get(run, ()), []).append(run)
    return [missing_note(names, held, [missing], shows) for held, names in grouped.items()]


def runs_of(con: duckdb.DuckDBPyConnection, *kinds: RunKind) -> list[str]:
    """Every run of ``kinds``, sorted (none of a kind whose marts are not built)."""
    present = table_names(con)
    return sorted(set().union(*(kind.run_ids(con, present) for kind in kinds)))


def has_run(con: duckdb.DuckDBPyConnection, kind: RunKind, run: str) -> bool:
    """Whether ``run`` is an id of one of ``kind``'s runs."""
    return run in kind.run_ids(con, table_names(con))


def _named(con: duckdb.DuckDBPyConnection, warehouse: Path, name: str, strict: bool) -> str | None:
    """The id of the tracker run whose display name is ``name``, when one run has it.

    Several runs with that name: an error asking for the id (``strict``), else None.
    """
    if "dim_runs" not in table_names(con):
        return None
    named = [str(r["run_id"]) for r in query_rows(con, "runs_named", name=name)]
    if len(named) == 1:
        return named[0]
    if len(named) > 1 and strict:
        raise ReportError(
            f"{warehouse}: {len(named)} runs are named '{name}' ({', '.join(named)}); "
            "give the run id"
        )
    return None


def find_run(
    con: duckdb.DuckDBPyConnection,
    warehouse: Path,
    run: str,
    found: Holdings,
    by_name: Literal["unique", "strict"] | None = None,
) -> str:
    """The id of the run ``run`` names: a run id of ``found``, else (``by_name``) a tracker
    run's display name; a run the warehouse does not have is an error naming its runs."""
    if run in found:
        return run
    named = _named(con, warehouse, run, strict=by_name == "strict") if by_name else None
    if named is None:
        raise unknown_run(warehouse, run, found)
    return named


def resolve_run(
    con: duckdb.DuckDBPyConnection,
    warehouse: Path,
    run: str,
    kind: RunKind,
    *,
    by_name: Literal["unique", "strict"] | None = None,
    required: bool = True,
    shows: str = "",
) -> FoundRun:
    """The run ``run`` names, and whether it holds ``kind``'s data.

    ``run`` is a run id; with ``by_name`` also a tracker run's display name
    when one run has it ("strict": a name several runs share is an error
    asking for the id). A run the warehouse does not have is an error naming
    every run it has. A run without ``kind``'s data is an error saying what
    it holds and what would land that data (to show ``shows``), or (not
    ``required``) comes back with ``has_data`` False.
    """
    found = holdings(con)
    run_id = find_run(con, warehouse, run, found, by_name)
    has_data = kind in found[run_id] if kind in KINDS else has_run(con, kind, run_id)
    if not has_data and required:
        raise ReportError(missing_note([run_id], found[run_id], [kind], shows))
    return FoundRun(run_id, has_data)


def choose_runs(
    warehouse: Path,
    runs: Sequence[str] | None,
    default: Sequence[str],
    known: Iterable[str] = (),
) -> list[str]:
    """The runs asked for, or with none asked the ``default`` ones.

    Each run asked for must be one the warehouse knows (in ``default`` or
    ``known``); the first that is not is an error naming those.
    """
    everything = {*default, *known}
    missing = [r for r in runs or () if r not in everything]
    if missing:
        raise unknown_run(warehouse, missing[0], everything)
    return list(runs) if runs else list(default)


def runs_with_data(
    con: duckdb.DuckDBPyConnection,
    warehouse: Path,
    runs: Sequence[str] | None,
    with_data: Sequence[str],
    marts: Sequence[str],
) -> tuple[list[str], list[str]]:
    """A page's runs: those asked for (default: every run ``with_data``) that have its
    data, and those asked for that have none.

    A run the warehouse does not have at all (in no mart of ``KINDS`` or
    ``marts``) is an error naming the runs it has.
    """
    known = [*holdings(con), *runs_of(con, RunKind(tuple(marts)))]
    asked = choose_runs(warehouse, runs, with_data, known)
    return [r for r in asked if r in with_data], [r for r in runs or () if r not in with_data]
