"""The fast path for clean JSON-lines rollout files: pyarrow's parser, then checks in bulk.

The row rules are ``RolloutBuilder``'s (rollouts.py); this path only lands a file
when it can prove that those rules would land every row of it, with the same
values. Anything it cannot prove (a line that is not one JSON object, a blank
line, a NaN token, a value out of range, a field that needs a rule applied row
by row) returns None, and the file is read line by line by the rule-holding
path instead. ``tests/unit/test_ingest_fastpath.py`` lands the same files both
ways and compares them.

Everything here works on whole columns: the line screen is one numpy pass over
the bytes, the JSON text columns are built by pyarrow's string kernels (DuckDB
builds them when a value's text is one pyarrow cannot vouch for), and no value
goes through a Python object on the way. Nothing here needs pandas, which
pyarrow would otherwise import (0.3 s) on its first conversion of a Python
value: that is why arrays are built from buffers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json
from obs.core.identity import prompt_hash
from obs.ingest.rollout_values import VERL_UID_RE2
from obs.ingest.schema import AGENT_ROLLOUT_FIELDS, ROLLOUT_TABLE

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
ROW_BY_ROW = frozenset({"ground_truth", "reward_model", "rewards", *AGENT_ROLLOUT_FIELDS})
NUMBER_LIMIT = 1e100
_SCHEMA = pa.schema(list(KNOWN.items()))
_PARSE = pa_json.ParseOptions(explicit_schema=_SCHEMA, unexpected_field_behavior="infer")
NEWLINE, OPEN = 0x0A, ord("{")
SCREEN_PIECE = 1 << 20  # bytes the line screen takes at a time
BOM = b"\xef\xbb\xbf"
# Python writes numbers smaller than this with an exponent (1e-05); pyarrow does not.
SMALLEST_FIXED = 1e-4


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
    kind = column.type
    if pa.types.is_floating(kind):
        if column.null_count == len(column):
            return True
        good = pc.is_finite(column)
        if as_written:
            good = pc.and_(good, pc.not_equal(column, pc.floor(column)))
        return bool(pc.all(good).as_py())  # nulls are skipped
    if pa.types.is_struct(kind):
        array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        names = [kind.field(i).name.lower() for i in range(kind.num_fields)]
        if len(set(names)) != len(names):
            return False  # DuckDB reads struct members without regard to case
        return all(_finite(array.field(i), as_written=as_written) for i in range(kind.num_fields))
    if pa.types.is_list(kind):
        return _finite(pc.list_flatten(column), as_written=as_written)
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
    given = [pc.is_valid(c) for c in present]
    for i, first in enumerate(given):
        for second in given[i + 1 :]:
            if pc.any(pc.and_(first, second)).as_py():
                return None
    return pc.coalesce(*present) if len(present) > 1 else present[0]


def _in_range(column: pa.ChunkedArray) -> bool:
    if column.null_count == len(column):
        return True
    largest = pc.max(pc.abs(column)).as_py()
    return largest is None or largest <= NUMBER_LIMIT


# --------------------------------------------------------------------------- arrays from buffers
# pa.array(), pa.scalar() and Array.to_numpy() ask pyarrow's pandas shim, which
# imports pandas; these build and read arrays from their buffers instead.


def _int64s(values: np.ndarray) -> pa.Array:
    data = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(data), [None, pa.py_buffer(data)])


def _numpy(array: pa.Array, dtype: type[np.generic]) -> np.ndarray:
    """The values of a primitive array without nulls, as a read-only numpy view."""
    assert array.null_count == 0
    width = np.dtype(dtype).itemsize
    return np.frombuffer(array.buffers()[1], dtype, len(array), array.offset * width)


def _fixed_texts(data: bytes, width: int, count: int) -> pa.Array:
    """``count`` texts of ``width`` bytes each, one after the other in ``data``."""
    offsets = np.arange(count + 1, dtype=np.int32) * np.int32(width)
    return pa.StringArray.from_buffers(count, pa.py_buffer(offsets), pa.py_buffer(data))


def _repeat(text: str, count: int) -> pa.Array:
    """``text`` ``count`` times, as a string array."""
    data = text.encode("utf-8")
    if len(data) * count >= 2**31:
        raise OverflowError("text column too large for one string array")
    return _fixed_texts(data * count, len(data), count)


def _text(text: str) -> pa.Scalar:
    return _repeat(text, 1)[0]


_EMPTY, _NULL, _QUOTE = _text(""), _text("null"), _text('"')
_OPEN, _CLOSE, _NO_MEMBERS = _text("{"), _text("}"), _text("{}")
_OPEN_LIST, _CLOSE_LIST, _NO_ITEMS = _text("["), _text("]"), _text("[]")
_OPEN_TEXTS, _CLOSE_TEXTS = _text('["'), _text('"]')
_NO_LENGTH = pa.Array.from_buffers(pa.int32(), 1, [None, pa.py_buffer(np.zeros(1, np.int32))])[0]


# --------------------------------------------------------------------------- the line screen


def _lines(chunk: memoryview) -> int | None:
    """How many lines ``chunk`` holds, when each is one object's line; else None.

    Every line must start an object (the first after an optional byte-order
    mark), and the chunk must end a line: no blank or indented line can then
    hide a line that holds two objects, which pyarrow would read as two rows.
    The parse then proves one row a line. One numpy pass, a piece at a time
    (its mask stays in cache), finds the line ends.
    """
    data = np.frombuffer(chunk, dtype=np.uint8)
    size = len(data)
    if not size or data[-1] != NEWLINE:
        return None
    head = bytes(data[:4])
    if not (head.startswith(b"{") or head.startswith(BOM + b"{")):
        return None
    mask = np.empty(min(size, SCREEN_PIECE), dtype=np.bool_)
    count = 0
    for at in range(0, size, SCREEN_PIECE):
        piece = data[at : at + SCREEN_PIECE]
        found = mask[: len(piece)]
        np.equal(piece, NEWLINE, out=found)
        starts = np.flatnonzero(found) + (at + 1)  # the byte after each line end
        count += len(starts)
        if len(starts) and starts[-1] == size:
            starts = starts[:-1]
        if not bool(np.all(data[starts] == OPEN)):
            return None
    return count


# --------------------------------------------------------------------------- JSON text in bulk
# The text the rules write (readers.finite_json): compact, UTF-8 kept, objects
# without their null members, list items that are null kept as null. Object
# members come in the order of the parsed struct's fields, as the DuckDB path
# writes them.

# Python's JSON escapes of the control characters (\n, \u0001, ...).
_CONTROL = {code: json.dumps(chr(code))[1:-1] for code in range(0x20)}


def _json_text(array: pa.Array) -> pa.Array | None:
    """Each value's JSON text (null for a null value), or None when pyarrow cannot vouch for it."""
    kind = array.type
    if pa.types.is_null(kind):
        return pa.nulls(len(array), pa.string())
    if pa.types.is_string(kind):
        return _quoted(array)
    if pa.types.is_int64(kind) or pa.types.is_boolean(kind):
        return pc.cast(array, pa.string())  # 12, -3, true, false
    if pa.types.is_float64(kind):
        return _number_text(array)
    if pa.types.is_struct(kind):
        return _object_text(array)
    if pa.types.is_list(kind):
        return _list_text(array)
    return None


def _escaped(array: pa.Array) -> pa.Array:
    """Text as it stands between JSON quotes (Python's escapes; UTF-8 kept)."""
    data = array.buffers()[2]
    if data is None or not data.size:
        return array
    raw = np.frombuffer(data, dtype=np.uint8)
    text = array
    if np.any(raw == 0x5C):  # the backslash first: the others add backslashes
        text = pc.replace_substring(text, "\\", "\\\\")
    if np.any(raw == 0x22):
        text = pc.replace_substring(text, '"', '\\"')
    if raw.min() < 0x20:
        for code in np.unique(raw[raw < 0x20]).tolist():
            text = pc.replace_substring(text, chr(code), _CONTROL[code])
    return text


def _quoted(array: pa.Array) -> pa.Array:
    return pc.binary_join_element_wise(_QUOTE, _escaped(array), _QUOTE, _EMPTY)


def _number_text(array: pa.Array) -> pa.Array | None:
    """Python's repr of each double, where pyarrow writes the same digits.

    pyarrow writes the shortest digits that read back, as Python does, but
    switches to an exponent at other sizes: only texts in plain notation with
    a fraction, of numbers at least 1e-4 in size, are Python's.
    """
    text = pc.cast(array, pa.string())
    if array.null_count == len(array):
        return text
    smallest = pc.min(pc.abs(array)).as_py()
    if smallest is None or smallest < SMALLEST_FIXED:
        return None
    if not pc.all(pc.match_substring(text, ".")).as_py():
        return None
    if pc.any(pc.match_substring(text, "e")).as_py():
        return None
    return text


def _masked(text: pa.Array, array: pa.Array) -> pa.Array:
    """Null where ``array`` is null."""
    if not array.null_count:
        return text
    return pc.if_else(pc.is_valid(array), text, pa.nulls(len(array), pa.string()))


def _object_text(array: pa.Array, given: dict[str, pa.Array] | None = None) -> pa.Array | None:
    """Objects without their null members; ``given`` holds members' texts already built."""
    count = len(array)
    members = []
    for field, child in zip(array.type, array.flatten(), strict=True):
        text = given[field.name] if given and field.name in given else _json_text(child)
        if text is None:
            return None
        if text.null_count == count:
            continue  # absent (or null) in every row: never written
        key = _text("," + json.dumps(field.name, ensure_ascii=False) + ":")
        member = pc.binary_join_element_wise(key, text, _EMPTY)  # null where the value is
        members.append(pc.coalesce(member, _EMPTY) if member.null_count else member)
    if not members:
        return _masked(pa.nulls(count, pa.string()).fill_null(_NO_MEMBERS), array)
    joined = pc.binary_join_element_wise(*members, _EMPTY) if len(members) > 1 else members[0]
    body = pc.utf8_slice_codeunits(joined, 1)  # the first member's comma
    return _masked(pc.binary_join_element_wise(_OPEN, body, _CLOSE, _EMPTY), array)


def _list_text(array: pa.Array) -> pa.Array | None:
    values = array.values
    if pa.types.is_string(values.type) and not values.null_count:
        # Lists of text: '["' + items joined by '","' + '"]' (or '[]' when empty).
        lists = pa.ListArray.from_arrays(array.offsets, _escaped(values))
        body = pc.binary_join(lists, _text('","'))
        text = pc.binary_join_element_wise(_OPEN_TEXTS, body, _CLOSE_TEXTS, _EMPTY)
        empty = pc.equal(pc.list_value_length(array), _NO_LENGTH)
        if pc.any(empty).as_py():
            text = pc.if_else(empty, _NO_ITEMS, text)
        return _masked(text, array)
    items = _json_text(values)
    if items is None:
        return None
    # The offsets of this array's own slice, into all of its values.
    lists = pa.ListArray.from_arrays(array.offsets, pc.coalesce(items, _NULL))
    body = pc.binary_join(lists, _text(","))
    return _masked(pc.binary_join_element_wise(_OPEN_LIST, body, _CLOSE_LIST, _EMPTY), array)


# --------------------------------------------------------------------------- the file


def fast_rollouts(
    content: bytes,
    start: int,
    end: int,
    first_line: int,
    *,
    claimed: int | None,
    fixed: int | None,
    path: str,
    threads: bool = True,
    uid_groups: bool = False,
) -> pa.Table | None:
    """The canonical rollouts of content[start:end], or None when the rules need row by row.

    Every line of the chunk is one row (``_lines`` and the row count prove it).
    ``threads``: parse with all cores; when files are read side by side, one
    thread each costs less in all (the reader's threads hand blocks about).
    ``uid_groups``: a text ``uid`` names the rollout's group (verl's dumps).
    """
    chunk = memoryview(content)[start:end]
    lines = _lines(chunk)
    if lines is None:
        return None
    try:
        table = pa_json.read_json(
            pa.BufferReader(pa.py_buffer(chunk)),
            read_options=pa_json.ReadOptions(use_threads=threads),
            parse_options=_PARSE,
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
    # (none is None: checked above)
    prompt, response, score = (picked[r] for r in ("prompt", "response", "score"))
    assert prompt is not None and response is not None and score is not None
    if prompt.null_count or response.null_count or score.null_count or not _in_range(score):
        return None
    doubles = {name: table.column(name) for name in DOUBLES}
    doubles["v_i"], doubles["s_i"] = picked["v_i"], picked["s_i"]
    if not all(_in_range(column) for column in doubles.values()):
        return None
    rows = table.num_rows
    given = picked["iteration"]
    assert given is not None
    base = claimed if claimed is not None else fixed
    if base is not None:
        if given.null_count < len(given):
            bounds = pc.min_max(given).as_py()
            if bounds["min"] != base or bounds["max"] != base:
                return None  # a step that disagrees goes to extra: row by row
        iterations = np.full(rows, base, dtype=np.int64)
    else:
        if given.null_count:
            return None
        iterations = _numpy(given.combine_chunks(), np.int64)
    ids = table.column("instruction_id_list")
    gts = table.column("gts").combine_chunks() if "gts" in table.column_names else None
    if gts is not None and pa.types.is_struct(gts.type):
        names = [field.name for field in gts.type]
        members = dict(zip(names, gts.flatten(), strict=True))
        if "instruction_id_list" in names:
            inner = gts.type.field("instruction_id_list").type
            if not (pa.types.is_null(inner) or inner == pa.list_(_TEXT)):
                return None
            if not pa.types.is_null(inner):
                from_gts = members["instruction_id_list"]
                ids = from_gts if ids.null_count == len(ids) else pc.coalesce(ids, from_gts)
    texts = prompt.combine_chunks()
    prompts = pc.dictionary_encode(texts)
    json_columns = _json_columns(table, unknown, gts, prompts.indices)
    if json_columns is None:
        return None
    kwargs, truth, extra = json_columns
    prompt_hashes, groups, group_count = _prompt_hashes(prompts)
    columns: dict[str, Any] = {
        "iteration": _int64s(iterations),
        "prompt_hash": prompt_hashes,
        "sample_idx": _int64s(_numbers(iterations, groups, group_count)),
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
        "rewards": pa.nulls(rows, ROLLOUT_TABLE.schema.field("rewards").type),
        "extra": extra,
        "source_file": _repeat(path, rows),
        "source_line": _int64s(np.arange(first_line, first_line + rows, dtype=np.int64)),
        "response_chars": pc.cast(pc.utf8_length(response), pa.int64()),
        "group_id": _uid_groups(table, rows) if uid_groups else pa.nulls(rows, pa.string()),
    }
    return pa.table(columns).cast(ROLLOUT_TABLE.schema)


def _uid_groups(table: pa.Table, rows: int) -> pa.Array:
    """group_id from a text ``uid`` (rollout_values.verl_group, in bulk); null where none."""
    if "uid" not in table.column_names or not pa.types.is_string(table.schema.field("uid").type):
        return pa.nulls(rows, pa.string())
    uids = table.column("uid").combine_chunks()
    parts = pc.extract_regex(uids, VERL_UID_RE2)
    return pc.coalesce(pc.struct_field(parts, "group"), uids)  # (null where no match)


def _prompt_hashes(encoded: pa.DictionaryArray) -> tuple[pa.Array, np.ndarray, int]:
    """prompt_hash of every row (SHA-256 of each distinct prompt, once), and its group code.

    Rows are grouped by the hash, as the rules group them, not by the text.
    """
    digests = [prompt_hash(text) for text in encoded.dictionary.to_pylist()]
    distinct = _fixed_texts("".join(digests).encode("ascii"), 16, len(digests))
    hashes = pc.dictionary_encode(distinct)
    codes = _numpy(hashes.indices, np.int32)[_numpy(encoded.indices, np.int32)]
    return distinct.take(encoded.indices), codes, len(hashes.dictionary)


def _numbers(iterations: np.ndarray, groups: np.ndarray, group_count: int) -> np.ndarray:
    """sample_idx: order within each (iteration, prompt) group of the file."""
    _, iteration_codes = np.unique(iterations, return_inverse=True)
    key = iteration_codes.astype(np.int64) * (group_count + 1) + groups
    order = np.argsort(key, kind="stable")
    ordered = key[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    lengths = np.diff(np.r_[starts, len(ordered)])
    position = np.empty(len(key), dtype=np.int64)
    position[order] = np.arange(len(key)) - np.repeat(starts, lengths)
    return position


def _json_columns(
    table: pa.Table, unknown: list[str], gts: pa.Array | None, prompt_codes: pa.Array
) -> tuple[pa.Array, pa.Array, pa.Array] | None:
    """instruction_kwargs, ground_truth and extra as JSON text.

    Built by pyarrow's string kernels; when a value's text is one they cannot
    vouch for (a number Python writes with an exponent, say), by DuckDB.
    """
    rows = table.num_rows
    row = None
    if unknown:
        fields = [table.schema.field(n) for n in unknown]
        row = pa.StructArray.from_arrays(
            [table.column(n).combine_chunks() for n in unknown], fields=fields
        )
    try:
        columns = _texts_of(gts, row, rows, prompt_codes)
    except (pa.ArrowException, OverflowError):
        columns = None
    if columns is None:
        return _duckdb_json_columns(table, gts, row)
    return columns


def _texts_of(
    gts: pa.Array | None, row: pa.Array | None, rows: int, prompt_codes: pa.Array
) -> tuple[pa.Array, pa.Array, pa.Array] | None:
    """The three JSON columns by pyarrow's kernels; None when one cannot be vouched for."""
    nothing = pa.nulls(rows, pa.string())
    kwargs = truth = extra = nothing
    if gts is not None:
        texts = _truth_texts(gts, prompt_codes)
        if texts is None:
            return None
        kwargs, truth = texts
    if row is not None:
        extra = _object_text(row)
        if extra is None:
            return None
        extra = pc.if_else(pc.equal(extra, _NO_MEMBERS), nothing, extra)
    return kwargs, truth, extra


def _truth_texts(gts: pa.Array, prompt_codes: pa.Array) -> tuple[pa.Array, pa.Array] | None:
    """instruction_kwargs and ground_truth, from ``gts``.

    A ground truth belongs to its prompt: when every row's ``gts`` is the one
    of the first row with its prompt, the texts are written for those rows
    only and taken from them (checked value by value, not assumed).
    """
    codes = _numpy(prompt_codes, np.int32)
    firsts = np.unique(codes, return_index=True)[1]  # codes count up from 0 in row order
    if len(firsts) < len(codes) and _same(gts, np.arange(len(codes)), firsts[codes]):
        texts = _truth_texts_of_every_row(gts.take(_int64s(firsts)))
        if texts is None:
            return None
        return texts[0].take(prompt_codes), texts[1].take(prompt_codes)
    return _truth_texts_of_every_row(gts)


def _truth_texts_of_every_row(gts: pa.Array) -> tuple[pa.Array, pa.Array] | None:
    rows = len(gts)
    if not pa.types.is_struct(gts.type):
        truth = _json_text(gts)
        return None if truth is None else (pa.nulls(rows, pa.string()), truth)
    names = [field.name for field in gts.type]
    kwargs = pa.nulls(rows, pa.string())
    given = None
    if "kwargs" in names:
        kwargs = _json_text(gts.flatten()[names.index("kwargs")])
        if kwargs is None:
            return None
        given = {"kwargs": kwargs}
    truth = _object_text(gts, given)
    return None if truth is None else (kwargs, truth)


def _validity(array: pa.Array) -> np.ndarray:
    """Which values are not null, as numpy booleans."""
    if not array.null_count:
        return np.ones(len(array), dtype=np.bool_)
    if pa.types.is_null(array.type):
        return np.zeros(len(array), dtype=np.bool_)
    bits = np.frombuffer(array.buffers()[0], dtype=np.uint8)
    return np.unpackbits(bits, bitorder="little")[array.offset : array.offset + len(array)] == 1


def _same(array: pa.Array, rows: np.ndarray, others: np.ndarray) -> bool:
    """Whether ``array[rows[k]]`` and ``array[others[k]]`` hold one value, for every k.

    The same value down to its JSON text: nulls, list lengths, every item and
    member (text compared by dictionary code, numbers by value: NaN and whole
    doubles never reach here).
    """
    if array.null_count:
        valid = _validity(array)
        if not np.array_equal(valid[rows], valid[others]):
            return False
        rows, others = rows[valid[rows]], others[valid[rows]]
    if not len(rows):
        return True
    kind = array.type
    if pa.types.is_struct(kind):
        return all(_same(child, rows, others) for child in array.flatten())
    if pa.types.is_list(kind):
        offsets = _numpy(array.offsets, np.int32).astype(np.int64)
        lengths = np.diff(offsets)
        counts = lengths[rows]
        if not np.array_equal(counts, lengths[others]):
            return False
        within = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
        return _same(
            array.values,
            np.repeat(offsets[rows], counts) + within,
            np.repeat(offsets[others], counts) + within,
        )
    if pa.types.is_string(kind):
        indices = pc.dictionary_encode(array).indices
        values: np.ndarray = np.frombuffer(
            indices.buffers()[1], np.int32, len(indices), indices.offset * 4
        )
    elif pa.types.is_int64(kind) or pa.types.is_float64(kind):
        dtype = np.int64 if pa.types.is_int64(kind) else np.float64
        values = np.frombuffer(array.buffers()[1], dtype, len(array), array.offset * 8)
    elif pa.types.is_boolean(kind):
        bits = np.frombuffer(array.buffers()[1], dtype=np.uint8)
        values = np.unpackbits(bits, bitorder="little")[array.offset : array.offset + len(array)]
    else:
        return False
    return bool(np.array_equal(values[rows], values[others]))


def _duckdb_json_columns(
    table: pa.Table, gts: pa.Array | None, row: pa.Array | None
) -> tuple[pa.Array, pa.Array, pa.Array] | None:
    """The JSON columns computed by DuckDB (what pyarrow's kernels cannot write)."""
    import duckdb  # here: most files never need it, and the worker processes start faster

    gts_sql = kwargs_sql = extra_sql = "NULL::VARCHAR"
    source = pa.table({"_": pa.nulls(table.num_rows)})
    if gts is not None:
        source = source.append_column("gts", gts)
        gts_sql = _json_sql("gts", gts.type)
        if pa.types.is_struct(gts.type) and gts.type.get_field_index("kwargs") >= 0:
            kind = gts.type.field("kwargs").type
            kwargs_sql = _json_sql("struct_extract(gts, 'kwargs')", kind)
    if row is not None:
        source = source.append_column("__row", row)
        extra_sql = f"nullif({_json_sql('__row', row.type)}, '{{}}')"
    con = duckdb.connect()
    try:
        # Read through the Arrow C stream: DuckDB imports pandas to look at
        # any other Python object it is handed.
        result = (
            con.from_arrow(source.__arrow_c_stream__())
            .query(
                "source",
                f"select ({kwargs_sql})::VARCHAR as kwargs, ({gts_sql})::VARCHAR as truth, "
                f"({extra_sql})::VARCHAR as extra from source",
            )
            .to_arrow_table()
        )
    except duckdb.Error:
        return None
    finally:
        con.close()
    if result.num_rows != table.num_rows:
        return None
    return tuple(result.column(n).combine_chunks() for n in ("kwargs", "truth", "extra"))


def applies(path: Path, fmt: str) -> bool:
    """Whether a file may take the fast path at all (plain JSON lines of a dump or table)."""
    return fmt in {"dump", "table"} and not path.name.endswith(".parquet")
