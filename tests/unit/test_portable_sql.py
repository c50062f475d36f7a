"""Every model runs on DuckDB and on Spark with one copy of its SQL.

A construct only one engine has (DuckDB's QUALIFY, `::` casts, list
literals, `arg_max`, JSON arrows, ...) lives in a macro dispatched with
``adapter.dispatch`` (``duckdb__``/``spark__``), never in a model. This test
reads each model (and singular data test) as written, Jinja comments
taken out, and fails on a listed DuckDB-only construct in its SQL or in the
SQL text it passes to a macro. Every model is ported: none is left out
of a Spark build, and a model not ported would have to be allow-listed in
NOT_PORTED and disabled on Spark in dbt_project.yml (the two kept equal).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]

# name: pattern of a construct Spark 4.0 lacks or spells otherwise, and the macro
# (or portable spelling) to use instead.
CONSTRUCTS: dict[str, str] = {
    "qualify (newest_rows, or a ranked CTE)": r"\bqualify\b",
    ":: cast (cast(x as t))": r"::",
    "varchar (string)": r"\bvarchar\b",
    "json type (as_json)": r"\bas\s+json\b",
    "list literal, index or slice": r"\[",
    "struct literal {'k': v} (named_struct)": r"\{\s*'",
    "list()/ordered string_agg": r"\b(list|string_agg|group_concat|listagg|array_agg)\s*\(",
    "list_* functions (filter/transform lambdas)": r"\blist_\w+\s*\(",
    "len (list_size)": r"\blen\s*\(",
    "unnest (explode)": r"\bunnest\s*\(",
    "range() table function (sequence)": r"\brange\s*\(",
    "arg_max/arg_min (macros arg_max, arg_min)": r"\barg_(max|min)(_null)?\s*\(",
    "quantile_cont/median (macro quantile)": (
        r"\b(quantile_cont|quantile_disc|quantile|median)\s*\("
    ),
    "JSON arrows (get_json_object)": r"->>?\s*'",
    "json_* functions": r"\bjson_\w+\s*\(",
    "regexp_matches (rlike)": r"\bregexp_matches\s*\(",
    "regexp_replace (first match only on DuckDB)": r"\bregexp_replace\s*\(",
    "strptime/strftime (lake_time)": r"\b(strptime|strftime)\s*\(",
    "read_parquet/glob (lake_source)": r"\b(read_parquet|read_json\w*|glob)\s*\(",
    "hash() (stable_hash)": r"\bhash\s*\(",
    "* exclude/replace": r"\*\s*(exclude|replace)\b",
    "union by name": r"\bunion\s+(all\s+)?by\s+name\b",
    "columns(*)": r"\bcolumns\s*\(",
    "isfinite/isinf (is_finite)": r"\b(isfinite|isinf)\s*\(",
    "order/group by all": r"\b(order|group)\s+by\s+all\b",
    "to_seconds and friends (interval_seconds)": (
        r"\bto_(seconds|minutes|hours|days|milliseconds)\s*\("
    ),
    "to_timestamp(epoch) (epoch_timestamp)": r"\bto_timestamp\s*\(",
    "count(distinct) in a window (count_distinct_over)": r"count\s*\(\s*distinct[^()]*\)\s*over\b",
    "filter (where) in a window": r"filter\s*\(\s*where[^()]*(\([^()]*\)[^()]*)*\)\s*over\b",
    "recursive CTE": r"\bwith\s+recursive\b",
    "pivot/unpivot (unpivot_columns)": r"\b(un)?pivot\b",
    "double-quoted identifier (a string on Spark)": r"\bas\s+\"",
    "log() is log10 on DuckDB, ln on Spark (log10, ln)": r"\blog\s*\(",
    "sha256 (sha2)": r"\bsha256\s*\(",
    "// integer division (div)": r"//",
    "date_diff/datediff argument order": r"\bdate_?diff\s*\(",
    "epoch()": r"\bepoch(_ms|_us)?\s*\(",
    "string_split/split_part": r"\b(string_split|str_split|split_part|string_split_regex)\s*\(",
    "struct_pack/struct_extract": r"\bstruct_(pack|extract|insert)\s*\(",
    "interval literal (interval_seconds)": r"\binterval\b",
    "printf (format_fixed: Java's rounding on Spark)": r"\bprintf\s*\(",
    "array_to_string (list_join)": r"\barray_to_string\s*\(",
    "a window frame bounded by a column (Spark: literal bounds)": (
        r"\b(between|and)\s+(?!unbounded\b|current\b)[a-z_][\w.]*\s+(preceding|following)\b"
    ),
    "round(x, <expression>) (round_to)": r"\bround\s*\(",  # refined in _constructs
}

# The models not ported to Spark yet, disabled there by dbt_project.yml: none
# (a model would be listed here while it still used a construct above, or read a
# model that does).
NOT_PORTED: set[str] = set()

JINJA_COMMENT = re.compile(r"\{#.*?#\}", re.S)
JINJA_CODE = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.S)
JINJA_STRING = re.compile(r"'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"", re.S)
SQL_STRING = re.compile(r"'(?:[^']|'')*'")
SQL_COMMENT = re.compile(r"--[^\n]*")


def _sql_of(text: str) -> str:
    """The SQL a model writes: its text outside Jinja, plus the strings its Jinja passes
    to macros (SQL text handed to exact_float and the like); no comments, no SQL
    string literals (their content is data)."""
    text = JINJA_COMMENT.sub(" ", text)
    passed = [
        a or b
        for code in JINJA_CODE.findall(text)
        for a, b in JINJA_STRING.findall(code)
        # a column or macro argument such as 'run_id' is no SQL construct
        if not re.fullmatch(r"[\w.]*", a or b)
    ]
    sql = "\n".join([JINJA_CODE.sub(" ", text), *passed])
    sql = SQL_COMMENT.sub(" ", sql)
    return SQL_STRING.sub("''", sql).lower()


def _round_with_expression(sql: str) -> bool:
    """round(x, p) where p is not an integer literal (Spark's scale is a constant)."""
    for found in re.finditer(r"\bround\s*\(", sql):
        depth, args, start = 1, [], found.end()
        for i in range(found.end(), len(sql)):
            if sql[i] == "(":
                depth += 1
            elif sql[i] == ")":
                depth -= 1
                if depth == 0:
                    args.append(sql[start:i])
                    break
            elif sql[i] == "," and depth == 1:
                args.append(sql[start:i])
                start = i + 1
        if len(args) > 1 and not re.fullmatch(r"\s*-?\d+\s*", args[1]):
            return True
    return False


def _constructs(path: Path) -> list[str]:
    """The listed DuckDB-only constructs a model's SQL uses."""
    if path.suffix == ".py":
        return ["a Python model (dbt-spark runs none outside Databricks)"]
    sql = _sql_of(path.read_text())
    found = []
    for name, pattern in CONSTRUCTS.items():
        if name.startswith("round("):
            if _round_with_expression(sql):
                found.append(name)
        elif re.search(pattern, sql):
            found.append(name)
    return found


def _models() -> dict[str, Path]:
    paths = [*(ROOT / "models").rglob("*.sql"), *(ROOT / "models").rglob("*.py")]
    return {path.stem: path for path in sorted(paths)}


def _checked() -> list[Path]:
    singular = sorted((ROOT / "data-tests").glob("*.sql"))
    return [path for name, path in _models().items() if name not in NOT_PORTED] + singular


@pytest.mark.parametrize("path", _checked(), ids=lambda path: path.stem)
def test_portable_sql_a_ported_model_uses_no_duckdb_only_construct(path: Path) -> None:
    assert _constructs(path) == [], (
        f"{path.relative_to(ROOT)}: DuckDB-only SQL; put it in a dispatched macro (macros/)"
    )


def _spark_enabled(project: dict) -> dict[Path, bool]:
    """Each folder or model of dbt_project.yml that sets +enabled: whether Spark builds it
    (False for the duckdb_only ones)."""
    found: dict[Path, bool] = {}

    def walk(config: dict, folder: Path) -> None:
        for key, value in config.items():
            if key == "+enabled":
                found[folder] = "target.type != 'spark'" not in str(value)
            elif isinstance(value, dict) and not key.startswith("+"):
                walk(value, folder / key)

    walk(project["models"]["obs"], ROOT / "models")
    return found


def _left_out_on_spark(models: dict[str, Path], project: dict) -> set[str]:
    """The models Spark does not build: the most specific +enabled over each (a model of a
    duckdb_only folder may be enabled on its own, by name)."""
    enabled = _spark_enabled(project)
    left_out = set()
    for name, path in models.items():
        deciding = [
            node for node in enabled if node == path.with_suffix("") or path.is_relative_to(node)
        ]
        if deciding and not enabled[max(deciding, key=lambda node: len(node.parts))]:
            left_out.add(name)
    return left_out


def test_portable_sql_the_allow_list_names_models_and_only_shrinks() -> None:
    """Every allow-listed model exists, and is one dbt_project.yml leaves out on Spark:
    none, now that every model is ported."""
    models = _models()
    assert models.keys() >= NOT_PORTED, NOT_PORTED - models.keys()
    project = yaml.safe_load((ROOT / "dbt_project.yml").read_text())
    assert _left_out_on_spark(models, project) == NOT_PORTED


def test_portable_sql_a_model_disabled_on_spark_is_found() -> None:
    """What keeps NOT_PORTED and dbt_project.yml equal: a folder or model disabled on
    Spark is left out (a model of such a folder enabled by name is not)."""
    models = _models()
    disabled = {"+enabled": "{{ target.type != 'spark' }}"}
    project = {
        "models": {
            "obs": {
                "marts": {
                    "rewards": {**disabled, "fct_reward_steps": {"+enabled": True}},
                    "prompts": {"dim_prompts": disabled},
                }
            }
        }
    }
    rewards = {n for n, p in models.items() if p.parent.name == "rewards" and "marts" in p.parts}
    assert _left_out_on_spark(models, project) == (rewards - {"fct_reward_steps"}) | {"dim_prompts"}


def test_portable_sql_a_construct_outside_a_macro_fails(tmp_path: Path) -> None:
    """A model writing a DuckDB-only construct in its SQL is caught; the same through
    its macro (or in a comment or a string) is not."""
    model = tmp_path / "fct_example.sql"
    model.write_text(
        "{# qualify, printf in a comment #}\n"
        "select {{ format_fixed('x', 4) }}, {{ list_join('l', \"', '\") }} from t\n"
        "where s = 'printf(''%.4f'')'\n"
        "qualify row_number() over (partition by a order by b) = 1\n"
    )
    assert _constructs(model) == ["qualify (newest_rows, or a ranked CTE)"]
    model.write_text(
        "select printf('%.4f', x), array_to_string(l, ', '), regr_slope(y, x) over (\n"
        "    order by step range between span_length preceding and current row\n"
        ") from t"
    )
    assert _constructs(model) == [
        "printf (format_fixed: Java's rounding on Spark)",
        "array_to_string (list_join)",
        "a window frame bounded by a column (Spark: literal bounds)",
    ]
    model.write_text(
        "select count(*) over (order by i rows between {{ window - 1 }} preceding and current row),"
        " sum(x) over (order by i rows between unbounded preceding and 2 following) from t"
    )
    assert _constructs(model) == []


def test_portable_sql_the_check_finds_the_constructs() -> None:
    """The check itself: DuckDB spellings are found, their portable forms are not."""
    duckdb_sql = (
        "select x::double, [1, 2], {'a': 1}, arg_max(a, b), len(l), col->>'k',"
        " round(x, 2 - floor(y)) from t qualify row_number() over () = 1"
    )
    portable = (
        "select cast(x as double), {{ arg_max('a', 'b') }}, round(x, 2) "
        "{# qualify in a comment #} from t where s = 'a [b]'"
    )
    found = _sql_of(duckdb_sql)
    assert re.search(CONSTRUCTS["qualify (newest_rows, or a ranked CTE)"], found)
    assert _round_with_expression(found)
    clean = _sql_of(portable)
    assert not any(
        re.search(p, clean) for n, p in CONSTRUCTS.items() if not n.startswith("round(")
    ), clean
    assert not _round_with_expression(clean)


def _doubled_quotes(text: str) -> list[str]:
    """The string literals of a model's SQL (outside Jinja; comments out) that hold a
    doubled quote: DuckDB reads 'it''s' as it's, Spark as two adjacent literals ('it'
    's', so its)."""
    sql = JINJA_CODE.sub(" ", JINJA_COMMENT.sub(" ", text))
    return [
        m.group(0)
        for line in sql.splitlines()  # the models write no literal over two lines
        for m in SQL_STRING.finditer(SQL_COMMENT.sub(" ", line))
        if "''" in m.group(0)[1:-1]
    ]


@pytest.mark.parametrize("path", _checked(), ids=lambda path: path.stem)
def test_portable_sql_a_string_literal_holds_no_doubled_quote(path: Path) -> None:
    assert _doubled_quotes(path.read_text()) == [], (
        f"{path.relative_to(ROOT)}: a quote inside a string literal reads otherwise on "
        "Spark; say it without the apostrophe"
    )


def test_portable_sql_the_doubled_quote_check_finds_one() -> None:
    assert _doubled_quotes("select 'the trainer''s' as a, '' as b -- it''s\n") == [
        "'the trainer''s'"
    ]
    assert _doubled_quotes("select '' as empty, 'plain' as b {# it''s #} {{ f(\"'\") }}") == []
