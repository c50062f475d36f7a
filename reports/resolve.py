"""Which run a command or a page means: one resolver for every kind of run.

Each kind of data has its runs (a ``RunKind``): the runs with rollouts, with
a tracker history, with reward data, with an agent's eval steps, group
summaries or turn advantages. ``resolve_run`` finds the one run a command
names among a kind's runs: by its id, or where the command allows by a
tracker run's display name, and when it is not there says so in one line,
naming the runs there are (or, for a run the warehouse knows without that
data, what would land it). ``choose_runs`` checks the runs a page is asked
for, or falls back to the page's default runs; ``runs_with_data`` splits a
page's runs into those with its data and those without.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple

import duckdb
from obs.reports.errors import ReportError
from obs.reports.warehouse import run_list, table_names, unknown_run


@dataclass(frozen=True)
class RunKind:
    """The runs with one kind of data: those with a row in any of ``marts`` (of those built)."""

    marts: tuple[str, ...]
    # What they have, as errors word it ("reward data": "runs with reward data");
    # empty for runs of any kind ("runs").
    data: str = ""
    # How to land that data, for a run that has none ({run}: the run's id).
    how: str = ""
    # What an error about a run the warehouse does not know ends with.
    hint: str = ""

    @property
    def what(self) -> str:
        return f"runs with {self.data}" if self.data else "runs"


WITH_ROLLOUTS = RunKind(("fct_iteration_summary",))
WITH_HISTORY = RunKind(
    ("dim_runs",),
    hint="`obs runs` lists them, `obs ingest metrics PATH` then `obs build` adds one",
)
WITH_REWARDS = RunKind(
    ("fct_reward_steps",),
    "reward data",
    how="land per-function rewards with `obs ingest rollouts DIR --run {run}` (a `rewards`"
    " object per sample) or a tracker log with reward metrics, then `obs build`",
)
WITH_TURN_ADVANTAGES = RunKind(
    ("fct_turn_advantages",),
    "turn advantages",
    how="land rollouts with `turn_advantages` or `turn_rewards` (`obs ingest rollouts DIR"
    " --run {run}`) or the trainer's console log (`obs ingest trainer-log FILE --run {run}`),"
    " then `obs build`",
)
WITH_GROUP_SUMMARIES = RunKind(
    ("fct_group_summary",),
    "group summaries",
    how="land rollouts with `group_id`, `num_turns`/`max_turns` or `exit_reason` (`obs ingest"
    " rollouts DIR --run {run}`) or the trainer's console log (`obs ingest trainer-log FILE"
    " --run {run}`), then `obs build`",
)
WITH_EVAL_STEPS = RunKind(
    ("fct_eval_steps",),
    "eval steps",
    how="land the eval files with `obs ingest eval-logs DIR --run {run}`, then `obs build`",
)


class FoundRun(NamedTuple):
    run_id: str
    has_data: bool  # False only for a run resolved without the kind's data (required=False)


def runs_of(con: duckdb.DuckDBPyConnection, *kinds: RunKind) -> list[str]:
    """Every run of ``kinds``, sorted (none of a kind whose marts are not built)."""
    present = table_names(con)
    marts = [mart for mart in dict.fromkeys(m for k in kinds for m in k.marts) if mart in present]
    if not marts:
        return []
    union = " union ".join(f"select run_id from {mart}" for mart in marts)
    found = con.execute(f"select distinct run_id from ({union}) order by 1").fetchall()
    return [str(row[0]) for row in found]


def has_run(con: duckdb.DuckDBPyConnection, kind: RunKind, run: str) -> bool:
    """Whether ``run`` is an id of one of ``kind``'s runs."""
    present = table_names(con)
    return any(
        con.execute(f"select 1 from {mart} where run_id = ? limit 1", [run]).fetchall()
        for mart in kind.marts
        if mart in present
    )


def _named(con: duckdb.DuckDBPyConnection, warehouse: Path, name: str, strict: bool) -> str | None:
    """The id of the tracker run whose display name is ``name``, when one run has it.

    Several runs with that name: an error asking for the id (``strict``), else None.
    """
    if "dim_runs" not in table_names(con):
        return None
    named = [
        str(r[0])
        for r in con.execute("select run_id from dim_runs where name = ?", [name]).fetchall()
    ]
    if len(named) == 1:
        return named[0]
    if len(named) > 1 and strict:
        raise ReportError(
            f"{warehouse}: {len(named)} runs are named '{name}' ({', '.join(named)}); "
            "give the run id"
        )
    return None


def resolve_run(
    con: duckdb.DuckDBPyConnection,
    warehouse: Path,
    run: str,
    kind: RunKind,
    *,
    known: Sequence[RunKind] = (),
    by_name: Literal["unique", "strict"] | None = None,
    listed: RunKind | None = None,
    required: bool = True,
) -> FoundRun:
    """The run ``run`` names among ``kind``'s runs.

    ``run`` is a run id; with ``by_name`` also a tracker run's display name when
    one run has it ("strict": a name several runs share is an error asking for
    the id). ``known`` are other runs the warehouse knows: one of them without
    ``kind``'s data is an error saying what would land it, or (not ``required``)
    comes back with ``has_data`` False. A run found nowhere is an error naming
    ``listed``'s runs (default: ``kind``'s; ``kind``'s too when ``listed``'s
    marts are not built).
    """
    if has_run(con, kind, run):
        return FoundRun(run, True)
    found = run if any(has_run(con, other, run) for other in known) else None
    if found is None and by_name is not None:
        found = _named(con, warehouse, run, strict=by_name == "strict")
        if found is not None and has_run(con, kind, found):
            return FoundRun(found, True)
    if found is None:
        present = table_names(con)
        built = listed is not None and any(mart in present for mart in listed.marts)
        named = listed if listed is not None and built else kind
        raise unknown_run(warehouse, run, runs_of(con, named), what=named.what, hint=named.hint)
    if required:
        raise ReportError(
            f"{warehouse}: run '{run}' has no {kind.data} ({kind.what}:"
            f" {run_list(runs_of(con, kind))}); " + kind.how.format(run=found)
        )
    return FoundRun(found, False)


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

    A run the warehouse does not know at all (no rollouts, no tracker history,
    no row in ``marts``) is an error naming the runs it knows.
    """
    known = runs_of(con, WITH_ROLLOUTS, WITH_HISTORY, RunKind(tuple(marts)))
    asked = choose_runs(warehouse, runs, with_data, known)
    return [r for r in asked if r in with_data], [r for r in runs or () if r not in with_data]
