"""The fast path for clean JSON-lines rollout files: pyarrow's parser, then checks in bulk.

The row rules are ``RolloutBuilder``'s (rollouts.py); this path only lands a file
when it can prove that those rules would land every row of it, with the same
values. Anything it cannot prove (a line that is not one JSON object, a blank
line, a NaN token, a value out of range, a field that needs a rule applied row
by row) returns None, and the file is read line by line by the rule-holding
path instead. ``tests/unit/test_ingest_fastpath.py`` lands the same files both
ways and compares them.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json
from obs.ingest.schema import ROLLOUT_TABLE

# Fields read with the type the rules demand; a value of another type fails the parse.
_TEXT, _DOUBLE, _INT = pa.string(), pa.float64(), pa.int64()
KNOWN: dict[str, pa.DataType] = {
    "input": _TEXT,
    "prompt": _TEXT,
    "output": _TEXT,
    "response": _TEXT,
    "completion": _TEXT,
    "score": _DOUBLE,
    "reward": _DOUBLE,
    "iteration": _INT,
    "step": _INT,
    "V_i": _DOUBLE,
    "v_i": _DOUBLE,
    "S_i": _DOUBLE,
    "s_i": _DOUBLE,
    "alpha_threshold": _DOUBLE,
    "prompt_strict_acc": _DOUBLE,
    "inst_strict_acc": _DOUBLE,
    "format_score": _DOUBLE,
    "num_instructions": _INT,
    "num_followed": _INT,
    "data_idx": _INT,
    "reward_case": _TEXT,
    "instruction_id_list": pa.list_(_TEXT),
    "follow_instruction_list": pa.list_(pa.bool_()),
}
ALIASES = {
    "prompt": ("input", "prompt"),
    "response": ("output", "response", "completion"),
    "score": ("score", "reward"),
    "iteration": ("iteration", "step"),
    "v_i": ("V_i", "v_i"),
    "s_i": ("S_i", "s_i"),
}
DOUBLES = ("alpha_threshold", "prompt_strict_acc", "inst_strict_acc", "format_score")
# Fields whose rules need a row at a time: such files take the line-by-line path.
ROW_BY_ROW = frozenset({"ground_truth", "reward_model", "rewards"})
NUMBER_LIMIT = 1e100
_SCHEMA = pa.schema(list(KNOWN.items()))


def _plain(kind: pa.DataType) -> bool:
    """Types whose JSON form pyarrow keeps: text, int64, double, bool, null, and nests of them."""
    if pa.types.is_struct(kind):
        return all(_plain(kind.field(i).type) for i in range(kind.num_fields))
    if pa.types.is_list(kind):
        return _plain(kind.value_type)
    return (
        pa.types.is_string(kind)
        or pa.types.is_int64(kind)
        or pa.types.is_float64(kind)
        or pa.types.is_boolean(kind)
        or pa.types.is_null(kind)
    )


def _finite(column: pa.ChunkedArray | pa.Array, *, as_written: bool = False) -> bool:
    """No NaN or Infinity anywhere in the column, nested values included.

    With ``as_written``, floating values must also have a fraction: pyarrow
    reads ``1`` beside ``2.5`` as ``1.0`` (and a 20-digit integer as a
    rounded double), so a whole value's JSON text cannot be told from them.
    """
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    kind = array.type
    if pa.types.is_floating(kind):
        if array.null_count == len(array):
            return True
        good = pc.is_finite(array)
        if as_written:
            good = pc.and_(good, pc.not_equal(array, pc.floor(array)))
        return bool(pc.all(pc.or_kleene(pc.is_null(array), good)).as_py())
    if pa.types.is_struct(kind):
        names = [kind.field(i).name.lower() for i in range(kind.num_fields)]
        if len(set(names)) != len(names):
            return False  # DuckDB reads struct members without regard to case
        return all(_finite(array.field(i), as_written=as_written) for i in range(kind.num_fields))
    if pa.types.is_list(kind):
        return _finite(array.flatten(), as_written=as_written)
    return True


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _json_sql(expression: str, kind: pa.DataType, depth: int = 0) -> str:
    """SQL giving the JSON text of a value, objects without their null members (as the rules do).

    Built as text: ``concat_ws`` skips the NULL of an absent member.
    """
    if pa.types.is_null(kind):
        return "NULL::VARCHAR"
    if pa.types.is_struct(kind):
        members = []
        for i in range(kind.num_fields):
            field = kind.field(i)
            value = _json_sql(
                f"struct_extract({expression}, {_literal(field.name)})", field.type, depth + 1
            )
            key = _literal(json.dumps(field.name, ensure_ascii=False) + ":")
            members.append(f"{key} || {value}")
        body = f"concat_ws(',', {', '.join(members)})" if members else "''"
        return f"(case when {expression} is null then NULL else '{{' || {body} || '}}' end)"
    if pa.types.is_list(kind):
        item = f"x{depth}"
        inner = _json_sql(item, kind.value_type, depth + 1)
        return (
            f"(case when {expression} is null then NULL else '[' || array_to_string("
            f"list_transform({expression}, {item} -> coalesce({inner}, 'null')), ',') || ']' end)"
        )
    return f"to_json({expression})::VARCHAR"


def _one_of(table: pa.Table, names: tuple[str, ...]) -> pa.ChunkedArray | None:
    """The role's value from whichever alias a row gives; None when a row gives two."""
    present = [table.column(n) for n in names if table.column(n).null_count < table.num_rows]
    if not present:
        return table.column(names[0])
    if len(present) > 1:
        given = sum(pc.cast(pc.is_valid(c), pa.int8()).to_numpy() for c in present)
        if int(np.max(given)) > 1:
            return None
    return pc.coalesce(*present) if len(present) > 1 else present[0]


def _in_range(column: pa.ChunkedArray) -> bool:
    if column.null_count == len(column):
        return True
    largest = pc.max(pc.abs(column)).as_py()
    return largest is None or largest <= NUMBER_LIMIT


def _numbers(iterations: np.ndarray, hashes: pa.Array) -> np.ndarray:
    """sample_idx: order within each (iteration, prompt) group of the file."""
    encoded = pc.dictionary_encode(hashes)
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    _, iteration_codes = np.unique(iterations, return_inverse=True)
    key = iteration_codes.astype(np.int64) * (len(encoded.dictionary) + 1) + codes
    order = np.argsort(key, kind="stable")
    ordered = key[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    lengths = np.diff(np.r_[starts, len(ordered)])
    position = np.empty(len(key), dtype=np.int64)
    position[order] = np.arange(len(key)) - np.repeat(starts, lengths)
    return position


def fast_rollouts(
    content: bytes,
    start: int,
    end: int,
    first_line: int,
    *,
    claimed: int | None,
    fixed: int | None,
    path: str,
) -> pa.Table | None:
    """The canonical rollouts of content[start:end], or None when the rules need row by row."""
    chunk = content[start:end]
    lines = chunk.count(b"\n")
    # Every line starts an object: no blank or indented line can hide a line
    # that holds two objects (which pyarrow would read as two rows).
    if not lines or not chunk.endswith(b"\n") or chunk.count(b"\n{") != lines - 1:
        return None
    head = chunk[:4]
    if not (head.startswith(b"{") or head.startswith(b"\xef\xbb\xbf{")):
        return None
    try:
        table = pa_json.read_json(
            pa.BufferReader(chunk),
            parse_options=pa_json.ParseOptions(
                explicit_schema=_SCHEMA, unexpected_field_behavior="infer"
            ),
        )
        table.validate(full=True)  # UTF-8
    except (pa.ArrowException, ValueError):
        return None
    if table.num_rows != lines or not all(_finite(c) for c in table.columns):
        return None  # NaN and Infinity: the rules judge them field by field
    unknown = [n for n in table.column_names if n not in KNOWN and n != "gts"]
    if ROW_BY_ROW & set(table.column_names):
        return None
    if len({n.lower() for n in unknown}) != len(unknown):
        return None  # keys differing only by case: DuckDB would mix them up
    written = [table.column(n) for n in [*unknown, "gts"] if n in table.column_names]
    if not all(_finite(c, as_written=True) for c in written):
        return None
    if not all(
        _plain(table.schema.field(n).type) for n in [*unknown, "gts"] if n in table.schema.names
    ):
        return None
    picked = {role: _one_of(table, names) for role, names in ALIASES.items()}
    if any(value is None for value in picked.values()):
        return None
    prompt, response, score = picked["prompt"], picked["response"], picked["score"]
    if prompt.null_count or response.null_count or score.null_count or not _in_range(score):
        return None
    doubles = {name: table.column(name) for name in DOUBLES}
    doubles["v_i"], doubles["s_i"] = picked["v_i"], picked["s_i"]
    if not all(_in_range(column) for column in doubles.values()):
        return None
    given = picked["iteration"]
    base = claimed if claimed is not None else fixed
    if base is not None:
        if (
            given.null_count < len(given)
            and not pc.all(pc.or_kleene(pc.is_null(given), pc.equal(given, base))).as_py()
        ):
            return None  # a step that disagrees goes to extra: row by row
        iterations = np.full(table.num_rows, base, dtype=np.int64)
    else:
        if given.null_count:
            return None
        iterations = given.to_numpy().astype(np.int64)
    ids = table.column("instruction_id_list")
    gts_sql = "NULL::VARCHAR"
    kwargs_sql = "NULL::VARCHAR"
    if "gts" in table.column_names:
        gts_type = table.schema.field("gts").type
        gts_sql = _json_sql("gts", gts_type)
        if pa.types.is_struct(gts_type):
            names = [gts_type.field(i).name for i in range(gts_type.num_fields)]
            if "instruction_id_list" in names:
                inner = gts_type.field("instruction_id_list").type
                if not (pa.types.is_null(inner) or inner == pa.list_(_TEXT)):
                    return None
                from_gts = pc.struct_field(table.column("gts"), "instruction_id_list")
                if not pa.types.is_null(inner):
                    ids = pc.coalesce(ids, from_gts)
            if "kwargs" in names:
                kwargs_sql = _json_sql(
                    "struct_extract(gts, 'kwargs')", gts_type.field("kwargs").type
                )
    extra_sql = "NULL::VARCHAR"
    if unknown:
        row_type = pa.struct([table.schema.field(n) for n in unknown])
        extra_sql = f"nullif({_json_sql('__row', row_type)}, '{{}}')"
    json_columns = _json_columns(table, unknown, gts_sql, kwargs_sql, extra_sql)
    if json_columns is None:
        return None
    kwargs, truth, extra = json_columns
    texts = prompt.combine_chunks()
    unique = pc.unique(texts)
    hashes = [hashlib.sha256(t.encode("utf-8")).hexdigest()[:16] for t in unique.to_pylist()]
    prompt_hashes = pa.array(hashes, pa.string()).take(pc.index_in(texts, value_set=unique))
    columns: dict[str, Any] = {
        "iteration": pa.array(iterations, pa.int64()),
        "prompt_hash": prompt_hashes,
        "sample_idx": pa.array(_numbers(iterations, prompt_hashes), pa.int64()),
        "data_idx": table.column("data_idx"),
        "prompt": texts,
        "response": response,
        "score": score,
        "v_i": doubles["v_i"],
        "s_i": doubles["s_i"],
        "alpha_threshold": doubles["alpha_threshold"],
        "reward_case": table.column("reward_case"),
        "prompt_strict_acc": doubles["prompt_strict_acc"],
        "inst_strict_acc": doubles["inst_strict_acc"],
        "num_instructions": table.column("num_instructions"),
        "num_followed": table.column("num_followed"),
        "format_score": doubles["format_score"],
        "instruction_ids": ids,
        "instruction_followed": table.column("follow_instruction_list"),
        "instruction_kwargs": kwargs,
        "ground_truth": truth,
        "rewards": pa.nulls(table.num_rows, ROLLOUT_TABLE.schema.field("rewards").type),
        "extra": extra,
        "source_file": pa.array([path] * table.num_rows, pa.string()),
        "source_line": pa.array(np.arange(first_line, first_line + table.num_rows), pa.int64()),
        "response_chars": pc.cast(pc.utf8_length(response), pa.int64()),
    }
    return pa.table(columns).cast(ROLLOUT_TABLE.schema)


def _json_columns(
    table: pa.Table, unknown: list[str], gts_sql: str, kwargs_sql: str, extra_sql: str
) -> tuple[pa.ChunkedArray, pa.ChunkedArray, pa.ChunkedArray] | None:
    """instruction_kwargs, ground_truth and extra as JSON text, computed by DuckDB in bulk."""
    source = pa.table({"_": pa.nulls(table.num_rows)})
    if "gts" in table.column_names:
        source = source.append_column("gts", table.column("gts"))
    if unknown:
        fields = [table.schema.field(n) for n in unknown]
        row = pa.StructArray.from_arrays(
            [table.column(n).combine_chunks() for n in unknown], fields=fields
        )
        source = source.append_column("__row", row)
    con = duckdb.connect()
    try:
        con.register("source", source)
        result = con.execute(
            f"select ({kwargs_sql})::VARCHAR as kwargs, ({gts_sql})::VARCHAR as truth, "
            f"({extra_sql})::VARCHAR as extra from source"
        ).to_arrow_table()
    except duckdb.Error:
        return None
    finally:
        con.close()
    if result.num_rows != table.num_rows:
        return None
    return result.column("kwargs"), result.column("truth"), result.column("extra")


def applies(path: Path, fmt: str) -> bool:
    """Whether a file may take the fast path at all (plain JSON lines of a dump or table)."""
    return fmt in {"dump", "table"} and not path.name.endswith(".parquet")
