"""obs's executor: the compiled plan run in DAG order on one DuckDB connection.

``obs build`` and ``obs watch`` run the dbt project without dbt's per-node
cost: each selected node's compiled SQL (``obs.runner.plan``) runs as one
statement, or a few, on one connection, and every selected data test runs in
one batched query. A table is ``create or replace table ... as``; an
incremental model either that (a full build) or its incremental SQL into a
temporary table, then the project's delete-by-keys and an insert; a view is
created only when its SQL changed; a seed is read with its declared column
types. Data tests follow dbt's rules (fail_calc, warn_if, error_if,
severity) and a failure is described as ``obs build`` always did.

Which groups an incremental model recomputes is decided here, exactly: the
build lists the lake's part files before it starts; a model's changed groups
are those with rows in the parts of its upstream lake tables that were not in
the listing its last successful build started from (per run, from the oldest
such part's publish time on; a run that lost a part is read whole). A part
published while a build runs is in no listing that build records, so the
next build reads it: nothing is missed, whatever the timing, and no time
window is needed.

The SQL of that selection is not written here: the macros of
``macros/incremental.sql`` compile it into each marker (the lookup query of the
changed groups, a run's condition in it, the predicate on the groups, the
changed-runs query and its predicate, the newly published rows), with slots for
the values (``SLOT``); the executor only fills the slots (``fill``) with the runs,
groups and times its listing gives, so a dbt run and the executor select by one
text.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from obs.core.lake_layout import TIME_FOLDER, part_time_literal, run_of
from obs.runner.dbt import FAILURE_ROWS, project_dir
from obs.runner.plan import DATABASE_PLACEHOLDER, LAKE_PLACEHOLDER, CompiledPlan, Node

log = logging.getLogger(__name__)

MARKER = re.compile(
    r"/\*obs:(?P<kind>lake|groups|runs|since) (?P<spec>\{.*?\})\*/"
    r"(?:(?P<present>.*?)/\*obs:else\*/(?P<absent>.*?)/\*obs:end\*/)?",
    re.DOTALL,
)

# A slot of a marker's SQL (macros/incremental.sql) the executor fills with a value.
SLOT = re.compile(r"__obs_(run|runs|values|time|conditions)__")

# A listing of the lake: lake table -> run -> part files (relative paths).
Listing = dict[str, dict[str, set[str]]]


def list_lake(lake: Path, tables: Iterable[str]) -> Listing:
    """Every published part file of these lake tables, by run."""
    listing: Listing = {}
    for table in tables:
        runs: dict[str, set[str]] = {}
        folder = lake / table
        try:
            run_dirs = [(e, run_of(e.name)) for e in folder.iterdir()]
        except OSError:
            run_dirs = []
        for run_dir, run in run_dirs:
            if run is None:
                continue
            files: set[str] = set()
            try:
                parts = list(run_dir.iterdir())
            except OSError:
                continue
            for part in parts:
                if not TIME_FOLDER.match(part.name):
                    continue
                try:
                    files.update(
                        f"{run_dir.name}/{part.name}/{f.name}"
                        for f in part.iterdir()
                        if f.name.endswith(".parquet")
                    )
                except OSError:
                    continue
            if files:
                runs[run] = files
        listing[table] = runs
    return listing


def listing_record(listing: Listing) -> dict[str, dict[str, list[str]]]:
    return {t: {r: sorted(files) for r, files in runs.items()} for t, runs in listing.items()}


def listing_from_record(record: Any) -> Listing:
    return {t: {r: set(files) for r, files in runs.items()} for t, runs in record.items()}


@dataclass
class Changes:
    """What a model has not read yet: per run, the oldest new part's time, or None
    (the run lost a part: read it whole)."""

    runs: dict[str, str | None] = field(default_factory=dict)

    @property
    def oldest(self) -> str | None:
        times = [t for t in self.runs.values() if t is not None]
        if any(t is None for t in self.runs.values()):
            return "1970-01-01 00:00:00"
        return min(times) if times else None


def changes_between(now: Listing, before: Listing | None, tables: Iterable[str]) -> Changes:
    changes = Changes()
    for table in tables:
        held = (before or {}).get(table, {})
        current = now.get(table, {})
        for run in set(current) | set(held):
            new = current.get(run, set()) - held.get(run, set())
            if held.get(run, set()) - current.get(run, set()):
                changes.runs[run] = None
            elif new and changes.runs.get(run, "") is not None:
                oldest = min(part_time_literal(f) for f in new)
                previous = changes.runs.get(run)
                changes.runs[run] = oldest if previous is None else min(previous, oldest)
    return changes


def quote_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def fill(template: str, **values: str) -> str:
    """A marker's SQL with its slots (``__obs_<name>__``) filled, in one pass: a value
    is never read again for slots."""
    return SLOT.sub(lambda m: values[m[1]], template)


@dataclass
class Outcome:
    models_run: int = 0
    passed: int = 0
    failed: int = 0
    warned: int = 0
    skipped: int = 0
    failures: list[str] = field(default_factory=list)
    # unique ids of the models and seeds that built successfully
    built: set[str] = field(default_factory=set)
    views: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def success(self) -> bool:
        return self.failed == 0


class Executor:
    """Runs a plan's selected nodes on one connection to the warehouse."""

    def __init__(self, plan: CompiledPlan, con: Any, lake: Path, listing: Listing) -> None:
        self.plan = plan
        self.con = con
        self.lake = lake.resolve()
        self.listing = listing
        self.database = con.execute("select current_database()").fetchone()[0]
        self.by_relation = {n.relation: n for n in plan.nodes.values() if n.relation}
        self.existing = {
            (schema, name)
            for schema, name in con.execute(
                "select schema_name, table_name from duckdb_tables() "
                "where database_name = current_database()"
            ).fetchall()
        }
        self.columns: dict[tuple[str, str], list[str]] = {}
        for schema, name, column in con.execute(
            "select schema_name, table_name, column_name from duckdb_columns() "
            "where database_name = current_database() "
            "order by schema_name, table_name, column_index"
        ).fetchall():
            self.columns.setdefault((schema, name), []).append(column)
        self.lookups: dict[str, list[tuple]] = {}
        self.existing_views = {
            (schema, name)
            for schema, name in con.execute(
                "select schema_name, view_name from duckdb_views() "
                "where database_name = current_database() and not internal"
            ).fetchall()
        }

    def with_connection(self, con: Any) -> Executor:
        """The same executor on another connection to the same database (a thread's)."""
        twin = object.__new__(Executor)
        twin.__dict__.update(self.__dict__)
        twin.con = con
        return twin

    # ---------- SQL rendering

    def _plain(self, text: str) -> str:
        text = text.replace(LAKE_PLACEHOLDER, str(self.lake).replace("'", "''"))
        return text.replace(DATABASE_PLACEHOLDER, self.database)

    def render(self, node: Node, sql: str, changes: Callable[[str], Changes]) -> str:
        out: list[str] = []
        position = 0
        for match in MARKER.finditer(sql):
            out.append(self._plain(sql[position : match.start()]))
            position = match.end()
            spec = json.loads(match["spec"])
            kind = match["kind"]
            if kind == "lake":
                chosen = match["present"] if self.listing.get(spec["table"]) else match["absent"]
                out.append(self._plain(chosen))
            elif kind == "groups":
                out.append(self._groups(node, spec, changes))
            elif kind == "runs":
                out.append(self._runs(spec))
            else:
                oldest = changes(node.unique_id).oldest
                out.append(
                    "false" if oldest is None else fill(spec["predicate"], time=quote_text(oldest))
                )
        out.append(self._plain(sql[position:]))
        return "".join(out)

    def changed_groups(self, node: Node, specs: Sequence[dict], changes: Callable) -> dict:
        """run -> values of the grain's second column (or [None]): the groups to recompute."""
        by_run: dict[str, list[Any]] = {}
        for spec in specs:
            grain = spec["grain"]
            source = self.by_relation.get(spec["lookup"])
            tables = self.plan.lake_tables_of(source.unique_id) if source else None
            found = changes(node.unique_id, tables)
            conditions = [
                fill(spec["whole"], run=quote_text(run))
                if oldest is None
                else fill(spec["since"], run=quote_text(run), time=quote_text(oldest))
                for run, oldest in sorted(found.runs.items())
            ]
            if not conditions:
                continue
            query = fill(self._plain(spec["query"]), conditions=" or ".join(conditions))
            # Models downstream of one lookup with the same changes ask the
            # same question: ask DuckDB once.
            rows = self.lookups.get(query)
            if rows is None:
                rows = self.con.execute(query).fetchall()
                self.lookups[query] = rows
            for row in rows:
                values = by_run.setdefault(row[0], [])
                value = row[1] if len(grain) > 1 else None
                if value not in values:
                    values.append(value)
        return by_run

    def _groups(self, node: Node, spec: dict, changes: Callable) -> str:
        by_run = self.changed_groups(node, spec["specs"], changes)
        return groups_predicate(by_run, spec["term"])

    def _runs(self, spec: dict) -> str:
        """The changed-runs marker: its query's runs, in its predicate."""
        rows = self.con.execute(self._plain(spec["query"])).fetchall()
        if not rows:
            return "false"
        return fill(spec["predicate"], runs=", ".join(quote_text(r[0]) for r in rows))

    # ---------- nodes

    def exists(self, node: Node) -> bool:
        return node_schema_name(node) in self.existing

    def exists_view(self, node: Node) -> bool:
        return node_schema_name(node) in self.existing_views

    def run_model(self, node: Node, full: bool, changes: Callable) -> str | None:
        """Build one model or seed; the view SQL hash for views. A model's pre-hooks
        run first, then its sql_header and its statements, then its post-hooks (as
        dbt-duckdb runs them)."""
        relation = self._plain(node.relation)
        self._drop_other_kind(node, relation)
        if node.kind == "seed":
            self._seed(node, relation)
            return None
        for hook in node.pre_hooks:
            self.con.execute(self._plain(hook))
        if node.sql_header:
            self.con.execute(self._plain(node.sql_header))
        view_hash = None
        if node.materialized == "view":
            sql = self.render(node, node.sql, changes)
            self.con.execute(f"create or replace view {relation} as (\n{sql}\n)")
            view_hash = hashlib.sha1(sql.encode()).hexdigest()
        elif node.materialized == "incremental" and not full and self.exists(node):
            sql = self.render(node, node.incremental_sql or node.sql, changes)
            self._merge(node, relation, sql)
        else:
            sql = self.render(node, node.sql, changes)
            self.con.execute(f"create or replace table {relation} as (\n{sql}\n)")
        for hook in node.post_hooks:
            self.con.execute(self._plain(hook))
        return view_hash

    def _drop_other_kind(self, node: Node, relation: str) -> None:
        """Drop a table where the node is now a view, or a view where it is now a table
        (a mart that became a view of an intermediate table): DuckDB's `create or
        replace` does not replace a relation of the other kind."""
        if node.materialized == "view" and self.exists(node):
            self.con.execute(f"drop table {relation}")
        elif node.materialized != "view" and self.exists_view(node):
            self.con.execute(f"drop view {relation}")

    def view_sql_hash(self, node: Node, changes: Callable) -> str:
        return hashlib.sha1(self.render(node, node.sql, changes).encode()).hexdigest()

    def _merge(self, node: Node, relation: str, sql: str) -> None:
        """The project's delete+insert: replace the groups the new rows hold."""
        new = f"obs_new_{node.name}"
        self.con.execute(f"create or replace temporary table {new} as (\n{sql}\n)")
        self._replace_keys(node, relation, new)
        self.con.execute(f"drop table {new}")

    def _replace_keys(self, node: Node, relation: str, new: str) -> None:
        """The model's delete+insert (delete_insert_sql, compiled into the plan)."""
        if not node.merge_sql:
            raise ValueError(f"{node.name}: the plan holds no delete+insert for it")
        columns = ", ".join(f'"{c}"' for c in self.columns[node_schema_name(node)])
        self.con.execute(
            node.merge_sql.replace("__obs_target__", relation)
            .replace("__obs_new__", new)
            .replace("__obs_columns__", columns)
        )

    def _seed(self, node: Node, relation: str) -> None:
        columns = ", ".join(f"{quote_text(name)}: 'varchar'" for name, _ in node.seed_columns)
        casts = ", ".join(
            f'cast("{name}" as {kind}) as "{name}"' for name, kind in node.seed_columns
        )
        self.con.execute(
            f"create or replace table {relation} as select {casts} from read_csv("
            f"{quote_text(str(project_dir() / (node.seed_path or '')))}, header = true, "
            f"columns = {{{columns}}}, "
            "auto_detect = false, quote = '\"', escape = '\"')"
        )

    # ---------- tests

    def run_tests(self, tests: Sequence[Node], outcome: Outcome) -> None:
        """Every test in one query; a test whose SQL fails is run alone to say so."""
        if not tests:
            return
        parts = [self._test_query(i, t) for i, t in enumerate(tests)]
        try:
            rows = self.con.execute("\nunion all\n".join(parts)).fetchall()
        except Exception:  # one broken test: find it
            rows = []
            for i, test in enumerate(tests):
                try:
                    rows += self.con.execute(parts[i]).fetchall()
                except Exception as exc:  # a test that cannot run is a failure
                    outcome.failed += 1
                    outcome.failures.append(f"{test.name}: {first_line(exc)}")
        for index, _failures, should_warn, should_error in sorted(rows):
            test = tests[index]
            if test.severity == "error" and should_error:
                outcome.failed += 1
                outcome.failures.extend(self.describe_failure(test))
            elif should_warn:
                outcome.warned += 1
            else:
                outcome.passed += 1

    def _test_query(self, index: int, test: Node) -> str:
        sql = self.render(test, test.sql, lambda *a: Changes())
        limit = f"\nlimit {int(test.limit)}" if test.limit is not None else ""
        return (
            f"select {index} as test_index, failures, should_warn, should_error from ("
            f"select {test.fail_calc} as failures, "
            f"{test.fail_calc} {test.warn_if} as should_warn, "
            f"{test.fail_calc} {test.error_if} as should_error "
            f"from (\n{sql}{limit}\n) as dbt_internal_test) as obs_test_{index}"
        )

    def describe_failure(self, test: Node) -> list[str]:
        """A failed test's rows, one line per broken rule, as ``obs build`` prints them."""
        sql = self.render(test, test.sql, lambda *a: Changes())
        try:
            cursor = self.con.execute(f"select * from ({sql}) as failing limit {FAILURE_ROWS}")
            names = [column[0] for column in cursor.description or []]
            rows = cursor.fetchall()
        except Exception:
            rows = []
        if not rows:
            return [f"{test.name}: failed"]
        if names[:2] == ["rule", "failing_rows"]:
            return [f"{test.name}: {rule} ({count} rows)" for rule, count, *_ in rows]
        return [
            f"{test.name}: " + ", ".join(f"{n}={v!r}" for n, v in zip(names, row, strict=True))
            for row in rows
        ]


def first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def groups_predicate(by_run: dict, term: str) -> str:
    """The predicate the macro groups_predicate writes for these groups: each run's
    ``term`` (the macro's group_term, with slots) filled, joined by ``or``."""
    if not by_run:
        return "false"
    terms = [
        fill(term, run=quote_text(run), values=", ".join(str(v) for v in values))
        for run, values in by_run.items()
    ]
    return "(\n    " + "\n    or ".join(terms) + "\n)"


def node_schema_name(node: Node) -> tuple[str, str]:
    parts = [p.strip('"') for p in node.relation.split(".")]
    return parts[-2], parts[-1]
