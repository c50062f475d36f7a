"""One read layer: every query obs runs is a file of reports/queries/, read through reports.sql.

The Python of reports/ and serve/ holds no SQL: a string literal that reads like
a query fails here, and so does a call of the loader naming a query that is not
a file. Each query's parameters have a value in reports/queries/.sqlfluff, so
`make lint` lints every one.
"""

from __future__ import annotations

import ast
import configparser
import re
from pathlib import Path

import pytest
from obs.reports.sql import PARAMETER, parameters, query_text, relations_read

ROOT = Path(__file__).resolve().parents[2]
QUERIES = ROOT / "reports" / "queries"
PYTHON = sorted([*(ROOT / "reports").rglob("*.py"), *(ROOT / "serve").rglob("*.py")])
LOADERS = {"frame", "query_rows", "query_row", "query_value", "query_arrow", "query_text"}

# What SQL reads like (lower-case, as the project writes it): a select of columns from
# a relation, a with-clause's first CTE, a statement that writes, or a model read by
# name. Prose in a message ("select a run", "from the marts") does not match.
SQL = re.compile(
    r"\bselect\s+(?:distinct\s+)?(?:\*|[a-z_][\w.]*(?:\s*\(|\s*,|\s+as\b|\s+from\b))"
    r"|\bwith\s+[a-z_]\w*\s+as\s*\("
    r"|\b(?:insert\s+into|delete\s+from|create\s+(?:or\s+replace\s+)?(?:table|view))\b"
    r"|\b(?:from|join)\s+(?:information_schema|(?:fct|dim|rpt|stg|int)_\w+\s+(?:where|as|order|group|limit))\b"
)


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes of a module, its classes and functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def _literals(path: Path) -> list[tuple[int, str]]:
    """Every string literal of a file (an f-string's text parts joined), but docstrings
    and the `obs sql` commands a message tells people to type."""
    tree = ast.parse(path.read_text())
    skipped = _docstrings(tree)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = "".join(
                part.value if isinstance(part, ast.Constant) else "{}" for part in node.values
            )
            out.append((node.lineno, text))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in skipped
        ):
            out.append((node.lineno, node.value))
    return [(line, text) for line, text in out if "obs sql " not in text]


@pytest.mark.parametrize("path", PYTHON, ids=lambda p: str(p.relative_to(ROOT)))
def test_queries_no_sql_in_the_python_of_reports_and_serve(path: Path) -> None:
    found = [(line, text) for line, text in _literals(path) if SQL.search(text.lower())]
    assert not found, f"SQL in {path.relative_to(ROOT)}: write it in reports/queries/: {found}"


@pytest.mark.parametrize(
    "text",
    [
        "select * from fct_alerts",
        "select run_id, name from dim_runs where run_id = ?",
        "select distinct iteration from {} where run_id = ? order by 1",
        "select count(*) from fct_reward_steps",
        "with keys as (select 1)",
        "select column_name from information_schema.columns",
        "create table fct_x as select 1",
        "from fct_prompt_iteration where run_id = ?",
    ],
)
def test_queries_the_sql_pattern_finds_sql(text: str) -> None:
    assert SQL.search(text)


@pytest.mark.parametrize(
    "text",
    [
        "select a run with --run",
        "fct_run_findings is not built",
        "no rows from the marts",
        "read from fct_iteration_summary",
        "choose one of percentile, pass_rate",
    ],
)
def test_queries_the_sql_pattern_leaves_prose(text: str) -> None:
    assert not SQL.search(text)


def _loaded(path: Path) -> list[str]:
    """The query names the file's loader calls give as literals."""
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if called not in LOADERS:
            continue
        args = node.args[1:] if called != "query_text" else node.args
        if args and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
            names.append(args[0].value)
    return names


def test_queries_every_query_a_loader_names_is_a_file() -> None:
    files = {p.stem for p in QUERIES.glob("*.sql")}
    named = {name for path in [*PYTHON, *(ROOT / "cli").rglob("*.py")] for name in _loaded(path)}
    assert named and named <= files, sorted(named - files)


def test_queries_every_parameter_has_a_lint_value() -> None:
    """sqlfluff's placeholder templater needs a value for each $parameter of a query."""
    config = configparser.ConfigParser()
    config.read(QUERIES / ".sqlfluff")
    values = set(config["sqlfluff:templater:placeholder"]) - {"param_style"}
    used = {p for path in QUERIES.glob("*.sql") for p in parameters(path.stem)}
    assert used <= values, sorted(used - values)


def test_queries_parameters_are_whole_names() -> None:
    """`$run` is not the start of `$runs`: each query binds only the names it takes."""
    assert PARAMETER.findall("where run_id = $run and list_contains($runs, x)") == [
        "run",
        "runs",
    ]


def test_queries_relations_read_skip_comments() -> None:
    """A model a comment names is not read (the served prompt page reads staging)."""
    assert "fct_run_findings" in query_text("finding_alerts")
    assert relations_read("prompt_rollouts") == {"stg_rollouts"}
    assert relations_read("findings") == {"fct_run_findings"}


def test_queries_every_mart_a_run_kind_reads_has_its_query() -> None:
    """The resolver reads a mart's runs through ``run_ids_<mart>`` (a name it builds)."""
    from obs.reports import resolve
    from obs.reports.agent_dashboard import AGENT_MARTS

    kinds = [v for v in vars(resolve).values() if isinstance(v, resolve.RunKind)]
    marts = {mart for kind in kinds for mart in kind.marts} | set(AGENT_MARTS)
    missing = [m for m in sorted(marts) if not (QUERIES / f"run_ids_{m}.sql").is_file()]
    assert not missing
