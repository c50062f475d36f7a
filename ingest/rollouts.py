"""Land rollouts (iteration dumps and rollout tables) as canonical parquet.

Two sources share one reader:

* iteration dumps: a folder of ``{iteration}.jsonl`` / ``.jsonl.gz`` files, one
  rollout a line (``input``, ``output``, ``score``, IFEval fields, ``gts``, ...);
* rollout tables: one parquet or jsonl file (``prompt``, ``response``,
  ``data_idx``, ``sample_idx``, ``reward``, ``original_*``, ...).

Parsing is done by DuckDB's JSON and parquet readers, straight into parquet, so
a clean file costs one pass at the speed of the parser. A file that fails that
fast path (a malformed line, a wrong type, a missing required field, a blank
line) is read again line by line in Python to decide, line by line, what lands
and what goes to ``_rejects`` with its reason; the good lines then take the same
SQL path. Nothing here computes analytics: it parses, validates and normalises.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import mmap
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json
import pyarrow.parquet as pq
from obs.ingest._parquet import part_name, partition_dir, publish, temporary_path, write_table
from obs.ingest.errors import IngestError
from obs.ingest.manifest import ManifestEntry, append_manifest, read_manifest
from obs.ingest.rewards import load_reward, score_rows
from obs.ingest.schema import REJECT_SCHEMA, REJECTS, ROLLOUT_COLUMNS, ROLLOUTS

logger = logging.getLogger(__name__)

DUMP_NAME = re.compile(r"^(\d+)\.jsonl(\.gz)?$")

# Fields the reader knows, with the DuckDB type each is read as. Both
# vocabularies are accepted: dumps say input/output/score, tables say
# prompt/response/reward. Everything else lands in ``extra``.
KNOWN_FIELDS: dict[str, str] = {
    "input": "VARCHAR",
    "prompt": "VARCHAR",
    "output": "VARCHAR",
    "response": "VARCHAR",
    "score": "DOUBLE",
    "reward": "DOUBLE",
    "V_i": "DOUBLE",
    "S_i": "DOUBLE",
    "alpha_threshold": "DOUBLE",
    "reward_case": "VARCHAR",
    "prompt_strict_acc": "DOUBLE",
    "inst_strict_acc": "DOUBLE",
    "num_instructions": "DOUBLE",  # checked whole, then BIGINT
    "num_followed": "DOUBLE",  # checked whole, then BIGINT
    "format_score": "DOUBLE",
    "gts": "JSON",
    "follow_instruction_list": "BOOLEAN[]",
    "instruction_id_list": "VARCHAR[]",
    "step": "DOUBLE",  # checked whole, then BIGINT
    "iteration": "DOUBLE",  # checked whole, then BIGINT
    "data_idx": "DOUBLE",  # checked whole, then BIGINT
    "sample_idx": "DOUBLE",  # checked whole, then BIGINT
    "ground_truth": "JSON",
    "reward_model": "JSON",
}
# Read as DOUBLE so that a fraction is seen, then checked whole (see col()).
INTEGER_FIELDS = frozenset(
    {"num_instructions", "num_followed", "step", "iteration", "data_idx", "sample_idx"}
)
REQUIRED = (("input", "prompt"), ("output", "response"), ("score", "reward"))
LINE_FIELD = "__obs_line"
# What only the careful path handles: a blank line (DuckDB would skip it and
# shift the line numbers) or a prompt/response whose value is not a string
# (DuckDB would turn 7 into '7'). The fast path runs while this screen scans
# the file, and its output is discarded when the screen finds either.
# Two patterns, not one alternation: each keeps the regex engine's fast scan.
BLANK_LINE = re.compile(rb"\n\r?\n")
NON_TEXT_VALUE = re.compile(rb'"(?:input|output|prompt|response)":\s*[^"n\s]')


@dataclass(frozen=True)
class SourceFile:
    """One file to ingest and what is known about it before reading."""

    path: Path
    kind: str  # "jsonl" or "parquet"
    iteration: int | None  # from the file name, or --iteration
    selector: str = ""  # e.g. "iterations=0,1" for a filtered table

    @property
    def key(self) -> str:
        resolved = str(self.path.resolve())
        return f"{resolved}|{self.selector}" if self.selector else resolved


@dataclass
class FileResult:
    source: Path
    rows_landed: int = 0
    rows_rejected: int = 0
    skipped: bool = False  # already ingested, nothing new
    note: str = ""  # why it was skipped, or a warning
    reject_reasons: list[str] = field(default_factory=list)


@dataclass
class IngestResult:
    run_id: str
    files: list[FileResult]

    @property
    def rows_landed(self) -> int:
        return sum(f.rows_landed for f in self.files)

    @property
    def rows_rejected(self) -> int:
        return sum(f.rows_rejected for f in self.files)

    @property
    def files_skipped(self) -> int:
        return sum(1 for f in self.files if f.skipped)


@dataclass(frozen=True)
class _Reject:
    line: int
    reason: str
    raw: str


# --------------------------------------------------------------------------- planning


def default_run_id(path: Path) -> str:
    """The run id used when ``--run`` is not given: the dump folder's or table's name."""
    path = path.resolve()
    if path.is_dir():
        return path.name
    if DUMP_NAME.match(path.name):
        return path.parent.name
    return path.name.split(".")[0]


def plan_rollouts(
    path: Path, *, iterations: Sequence[int] | None = None, iteration: int | None = None
) -> list[SourceFile]:
    """The files that ``obs ingest rollouts PATH`` reads, in iteration order."""
    if not path.exists():
        raise IngestError(f"{path}: no such file or folder; pass a dump folder or a rollout table")
    wanted = set(iterations) if iterations else None
    if path.is_dir():
        found = []
        for child in path.iterdir():
            match = DUMP_NAME.match(child.name)
            if match and child.is_file():
                found.append((int(match.group(1)), child))
        if not found:
            raise IngestError(
                f"{path}: no {{iteration}}.jsonl or .jsonl.gz dumps in this folder; "
                "point at verl's rollout_data_dir or pass one rollout table file"
            )
        found.sort()
        plan = [
            SourceFile(child, "jsonl", number)
            for number, child in found
            if wanted is None or number in wanted
        ]
        if not plan:
            listed = " ".join(str(i) for i in sorted(wanted or ()))
            raise IngestError(f"{path}: none of the iterations {listed} has a dump file here")
        return plan
    name = path.name.lower()
    selector = "iterations=" + ",".join(str(i) for i in sorted(wanted)) if wanted else ""
    match = DUMP_NAME.match(path.name)
    if match:
        return [SourceFile(path, "jsonl", int(match.group(1)))]
    if name.endswith(".parquet"):
        return [SourceFile(path, "parquet", iteration, selector)]
    if name.endswith((".jsonl", ".jsonl.gz", ".ndjson", ".json")):
        return [SourceFile(path, "jsonl", iteration, selector)]
    raise IngestError(
        f"{path}: unknown format; expected a folder of {{iteration}}.jsonl dumps, "
        "a .parquet or a .jsonl rollout table"
    )


# --------------------------------------------------------------------------- reading

BATCH_ROWS = 65_536
SNIFF_HEAD_LINES = 2_000
SNIFF_TAIL_BYTES = 1 << 20

_ARROW_TYPES = {
    "BIGINT": pa.int64(),
    "VARCHAR": pa.string(),
    "DOUBLE": pa.float64(),
    "JSON": pa.string(),
    "VARCHAR[]": pa.list_(pa.string()),
    "BOOLEAN[]": pa.list_(pa.bool_()),
    "TIMESTAMP": pa.timestamp("us"),
}
# Every rollout parquet file, whichever path wrote it, has exactly this schema.
ROLLOUT_SCHEMA = pa.schema([(name, _ARROW_TYPES[kind]) for name, kind in ROLLOUT_COLUMNS.items()])


def _load_tokenizer(path: Path) -> Any:
    """A local ``tokenizer.json`` (Hugging Face ``tokenizers``), for response token counts."""
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise IngestError(
            f"{path}: --tokenizer needs the tokenizers package; pip install tokenizers"
        ) from exc
    try:
        return Tokenizer.from_file(str(path))
    except Exception as exc:
        raise IngestError(f"{path}: not a tokenizer.json ({exc})") from exc


def _add_token_counts(table: pa.Table, tokenizer: Any) -> pa.Table:
    """A ``response_tokens`` column (it lands in ``extra``) from the response text."""
    name = "response" if "response" in table.column_names else "output"
    texts = [t or "" for t in table.column(name).to_pylist()]
    counts = [len(encoding.ids) for encoding in tokenizer.encode_batch(texts)]
    existing = [c for c in table.column_names if c == "response_tokens"]
    return table.drop_columns(existing).append_column(
        "response_tokens", pa.array(counts, pa.int64())
    )


def _parquet_writer(path: Path) -> pq.ParquetWriter:
    """A rollout file writer; dictionaries only where values repeat (not responses)."""
    return pq.ParquetWriter(
        path,
        ROLLOUT_SCHEMA,
        compression="snappy",
        use_dictionary=["prompt_hash", "prompt", "reward_case", "source_file", "instruction_ids"],
    )


class _NeedsCarefulPath(Exception):
    """The fast path met something only the line-by-line path can judge."""


def _load(path: Path) -> bytes | mmap.mmap:
    """The file's bytes: memory-mapped (no copy) when plain, decompressed when gzip."""
    if path.name.endswith(".gz") or path.stat().st_size == 0:
        return _read_bytes(path)
    try:
        with path.open("rb") as handle:
            return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as exc:
        raise IngestError(f"{path}: cannot read ({exc.strerror}); check permissions") from exc


def _sha1(data: bytes | mmap.mmap, length: int) -> str:
    if length == len(data):
        return hashlib.sha1(data).hexdigest()
    return hashlib.sha1(memoryview(data)[:length]).hexdigest()


def _passes_screen(data: bytes | mmap.mmap) -> bool:
    return BLANK_LINE.search(data) is None and NON_TEXT_VALUE.search(data) is None


def _count_lines(data: bytes | mmap.mmap, start: int, end: int) -> int:
    """Newlines in data[start:end], read in slices so a mapped file is never copied whole."""
    step = 16 << 20
    return sum(data[at : min(at + step, end)].count(b"\n") for at in range(start, end, step))


def _blank(chunk: bytes | mmap.mmap) -> bool:
    """True when the chunk holds nothing but white space (stops at the first character)."""
    head = bytes(chunk[:4096])
    if head.strip():
        return False
    return not bytes(chunk).strip()


def _top_level_keys(lines: list[bytes]) -> set[str] | None:
    """The union of the lines' top-level keys; None when a line is not a JSON object.

    pyarrow's C++ reader gets the keys of thousands of lines in milliseconds;
    lines it cannot type consistently (a field that is a number here and an
    object there) fall back to json.loads line by line.
    """
    if not lines:
        return set()
    block = b"\n".join(line.rstrip(b"\r\n") for line in lines) + b"\n"
    try:
        table = pa_json.read_json(
            pa.BufferReader(block),
            read_options=pa_json.ReadOptions(use_threads=False, block_size=len(block) + 1),
        )
        return set(table.column_names)
    except pa.ArrowException:
        pass
    keys: set[str] = set()
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:
            return None
        if not isinstance(row, dict):
            return None
        keys.update(row)
    return keys


def _sniff_unknown(path: Path) -> list[str] | None:
    """Top-level keys outside KNOWN_FIELDS in the file's first lines and its last MiB.

    None when a sampled line is not a JSON object (the careful path decides).
    A key that first appears in the middle of a file that large is the one
    case this misses; such files are rare, and `obs ingest --careful` reads
    every line.
    """
    size = path.stat().st_size
    with path.open("rb") as handle:
        head = [handle.readline() for _ in range(SNIFF_HEAD_LINES)]
        tail: list[bytes] = []
        if size > SNIFF_TAIL_BYTES:
            handle.seek(size - SNIFF_TAIL_BYTES)
            tail = handle.read().split(b"\n")[1:]
    sampled = [line for line in head + tail if line.strip()]
    keys = _top_level_keys(sampled)
    if keys is None:
        return None
    lowered = {k.lower() for k in KNOWN_FIELDS}
    return sorted(k for k in keys if k.lower() not in lowered)


def _has_required_nulls(batch: pa.RecordBatch) -> bool:
    return any(
        batch.column(name).null_count for name in ("prompt", "response", "score", "iteration")
    )


class _SampleNumbering:
    """Adds prompt_hash and sample_idx to the batches of one file, in line order."""

    def __init__(self) -> None:
        self._hashes: dict[str, str] = {}
        self._seen: dict[tuple[int, str], int] = {}

    def _hash(self, prompt: str) -> str:
        known = self._hashes.get(prompt)
        if known is None:
            known = hashlib.sha256(prompt.encode()).hexdigest()[:16]
            self._hashes[prompt] = known
        return known

    def complete(self, batch: pa.RecordBatch) -> pa.Table:
        encoded = pc.dictionary_encode(batch.column("prompt"))
        prompt_codes = encoded.indices.to_numpy(zero_copy_only=False)
        hashes = [self._hash(p) for p in encoded.dictionary.to_pylist()]
        iterations = batch.column("iteration").to_numpy(zero_copy_only=False)
        # One group per (iteration, prompt): a 1-D key keeps np.unique cheap.
        iteration_values, iteration_codes = np.unique(iterations, return_inverse=True)
        combined = iteration_codes.reshape(-1).astype(np.int64) * len(hashes) + prompt_codes
        group_keys, codes = np.unique(combined, return_inverse=True)
        codes = codes.reshape(-1)
        order = np.argsort(codes, kind="stable")
        sorted_codes = codes[order]
        starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
        run_lengths = np.diff(np.r_[starts, len(sorted_codes)])
        position = np.empty(len(codes), dtype=np.int64)
        position[order] = np.arange(len(codes)) - np.repeat(starts, run_lengths)
        keys = [
            (int(iteration_values[key // len(hashes)]), hashes[key % len(hashes)])
            for key in group_keys.tolist()
        ]
        offsets = np.array([self._seen.get(k, 0) for k in keys], dtype=np.int64)
        for key, count in zip(keys, run_lengths.tolist(), strict=True):
            self._seen[key] = self._seen.get(key, 0) + count
        sample_idx = pa.array(position + offsets[codes])
        given = batch.column("sample_idx")
        if given.null_count < len(given):
            sample_idx = pc.coalesce(given, sample_idx)
        table = pa.Table.from_batches([batch])
        table = table.set_column(
            table.schema.get_field_index("prompt_hash"),
            "prompt_hash",
            pa.array(hashes, pa.string()).take(encoded.indices),
        )
        table = table.set_column(
            table.schema.get_field_index("sample_idx"), "sample_idx", sample_idx
        )
        return table.cast(ROLLOUT_SCHEMA)


def _read_bytes(path: Path) -> bytes:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise IngestError(f"{path}: cannot read ({exc.strerror}); check permissions") from exc
    if path.name.endswith(".gz"):
        try:
            return gzip.decompress(raw)
        except (OSError, EOFError):
            # A gzip stream still being written: keep what decompresses.
            return _decompress_prefix(raw)
    return raw


def _decompress_prefix(raw: bytes) -> bytes:
    decompressor = gzip.zlib.decompressobj(16 + gzip.zlib.MAX_WBITS)  # type: ignore[attr-defined]
    try:
        return decompressor.decompress(raw)
    except gzip.zlib.error:  # type: ignore[attr-defined]
        return b""


def _sql_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _columns_spec(fields: dict[str, str]) -> str:
    parts = [f"{_sql_literal(name)}: {_sql_literal(kind)}" for name, kind in fields.items()]
    return "{" + ", ".join(parts) + "}"


def _json_relation(path: Path, fields: dict[str, str]) -> str:
    return (
        f"read_json({_sql_literal(str(path))}, format = 'newline_delimited', "
        f"columns = {_columns_spec(fields)}, maximum_object_size = 1073741824)"
    )


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _canonical_select(
    relation: str,
    present: set[str],
    unknown: list[str],
    *,
    run_iteration: int | None,
    line_expr: str,
    source_file: str,
    ingested_at: datetime,
    iterations: Sequence[int] | None,
    derive_in_sql: bool = True,
) -> str:
    """SQL turning a raw relation (known fields + unknown ones) into canonical rollouts."""

    def col(name: str, kind: str) -> str:
        if name not in present:
            return f"null::{kind}"
        if kind == "BIGINT":
            # Whole numbers only: a fractional value fails the fast path (and
            # the careful path rejects its line) instead of being rounded.
            value = f"try_cast({_ident(name)} as DOUBLE)"
            message = _sql_literal(f"field '{name}' is not a whole number")
            return (
                f"case when {value} = trunc({value}) then {value}::BIGINT "
                f"when {value} is null then null else error({message}) end"
            )
        return f"try_cast({_ident(name)} as {kind})"

    def first(*names: str, kind: str) -> str:
        values = [col(n, kind) for n in names]
        return values[0] if len(values) == 1 else f"coalesce({', '.join(values)})"

    gts = col("gts", "JSON")
    # Unknown fields as one JSON object holding only the keys the row has.
    entries = ", ".join(f"{{'k': {_sql_literal(u)}, 'v': to_json({_ident(u)})}}" for u in unknown)
    extra = (
        f"nullif(to_json(map_from_entries(list_filter([{entries}], e -> e.v is not null))), "
        "'{}'::JSON)"
        if unknown
        else "null::JSON"
    )
    fixed_iteration = "null::BIGINT" if run_iteration is None else f"{int(run_iteration)}::BIGINT"
    where = ""
    if iterations:
        where = "where iteration in (" + ", ".join(str(int(i)) for i in iterations) + ")"
    if derive_in_sql:
        prompt_hash = "substr(sha256(prompt), 1, 16)"
        sample_idx = (
            "coalesce(given_sample_idx, row_number() over "
            "(partition by iteration, prompt_hash order by source_line) - 1)"
        )
    else:  # added batch by batch in Python (_SampleNumbering)
        prompt_hash, sample_idx = "null::VARCHAR", "given_sample_idx"
    return f"""
with raw as (
    select *, {line_expr} as __line from {relation}
),
typed as (
    select
        coalesce({fixed_iteration}, {first("iteration", "step", kind="BIGINT")}) as iteration,
        {first("input", "prompt", kind="VARCHAR")} as prompt,
        {first("output", "response", kind="VARCHAR")} as response,
        {first("score", "reward", kind="DOUBLE")} as score,
        {col("sample_idx", "BIGINT")} as given_sample_idx,
        {col("data_idx", "BIGINT")} as data_idx,
        {col("V_i", "DOUBLE")} as v_i,
        {col("S_i", "DOUBLE")} as s_i,
        {col("alpha_threshold", "DOUBLE")} as alpha_threshold,
        {col("reward_case", "VARCHAR")} as reward_case,
        {col("prompt_strict_acc", "DOUBLE")} as prompt_strict_acc,
        {col("inst_strict_acc", "DOUBLE")} as inst_strict_acc,
        {col("num_instructions", "BIGINT")} as num_instructions,
        {col("num_followed", "BIGINT")} as num_followed,
        {col("format_score", "DOUBLE")} as format_score,
        coalesce(
            {col("instruction_id_list", "VARCHAR[]")},
            try_cast(json_extract({gts}, '$.instruction_id_list') as VARCHAR[])
        ) as instruction_ids,
        {col("follow_instruction_list", "BOOLEAN[]")} as instruction_followed,
        json_extract({gts}, '$.kwargs') as instruction_kwargs,
        coalesce(
            {col("ground_truth", "JSON")},
            json_extract({col("reward_model", "JSON")}, '$.ground_truth'),
            {gts}
        ) as ground_truth,
        {extra} as extra,
        __line as source_line
    from raw
),
hashed as (
    select *, {prompt_hash} as prompt_hash from typed
)
select
    iteration,
    prompt_hash,
    {sample_idx} as sample_idx,
    data_idx,
    prompt,
    response,
    score,
    v_i,
    s_i,
    alpha_threshold,
    reward_case,
    prompt_strict_acc,
    inst_strict_acc,
    num_instructions,
    num_followed,
    format_score,
    instruction_ids,
    instruction_followed,
    instruction_kwargs,
    ground_truth,
    extra,
    {_sql_literal(source_file)} as source_file,
    source_line,
    {_sql_literal(ingested_at.isoformat(sep=" "))}::TIMESTAMP as ingested_at,
    length(response)::BIGINT as response_chars
from hashed
{where}
"""


# --------------------------------------------------------------------------- validation


def _is_number(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    if isinstance(value, str):
        try:
            float(value)
        except ValueError:
            return False
        return True
    return False


def _type_problem(name: str, value: object, kind: str) -> str | None:
    """Why ``value`` cannot be read as ``kind`` (None when it can).

    The rules match DuckDB's typed JSON reader, so a line lands the same way
    whichever path reads it: conversions without loss are accepted (numeric
    text for numbers, 0/1 or "true" for flags, numbers as text); anything else
    is rejected.
    """
    if value is None:
        return None
    ok: bool
    if kind == "DOUBLE":
        ok = _is_number(value) or isinstance(value, bool)
    elif kind == "BIGINT":
        ok = (_is_number(value) and float(value).is_integer()) or isinstance(value, bool)  # type: ignore[arg-type]
    elif kind == "VARCHAR":
        ok = True
    elif kind == "BOOLEAN[]":
        ok = isinstance(value, list) and all(_is_flag(v) for v in value)
    elif kind == "VARCHAR[]":
        ok = isinstance(value, list) and all(not isinstance(v, dict | list) for v in value)
    else:  # JSON: anything
        ok = True
    if ok:
        return None
    return f"field '{name}' has the wrong type ({type(value).__name__}, expected {kind.lower()})"


def _is_flag(value: object) -> bool:
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, int | float):
        return value in (0, 1)
    return isinstance(value, str) and value.lower() in {"true", "false", "0", "1"}


def _check_row(row: object, need_iteration: bool) -> str | None:
    """Why a parsed JSON line must be rejected (None when it lands)."""
    if not isinstance(row, dict):
        return f"not a JSON object ({type(row).__name__})"
    for names in REQUIRED:
        present = [n for n in names if row.get(n) is not None]
        if not present:
            return f"missing required field '{names[0]}' (or '{names[1]}')"
        value = row[present[0]]
        kind = "DOUBLE" if names[0] == "score" else "VARCHAR"
        if kind == "VARCHAR" and not isinstance(value, str):
            return f"field '{present[0]}' must be text, got {type(value).__name__}"
        problem = _type_problem(present[0], value, kind)
        if problem:
            return problem
    for name, kind in KNOWN_FIELDS.items():
        kind = "BIGINT" if name in INTEGER_FIELDS else kind
        problem = _type_problem(name, row.get(name), kind)
        if problem:
            return problem
    if need_iteration and row.get("iteration") is None and row.get("step") is None:
        return "no iteration: no 'step' or 'iteration' field and none from the file name"
    return None


def _split_lines(
    data: bytes, first_line: int, need_iteration: bool
) -> tuple[list[bytes], set[str], list[_Reject]]:
    """Validate every line: the good ones (tagged with their line number), their keys, rejects."""
    good: list[bytes] = []
    keys: set[str] = set()
    rejects: list[_Reject] = []
    for offset, line in enumerate(data.split(b"\n")):
        number = first_line + offset
        text = line.strip()
        if not text:
            continue
        try:
            row = json.loads(text)
        except (ValueError, UnicodeDecodeError) as exc:
            reason = f"malformed JSON: {exc}".split("\n")[0]
            rejects.append(_Reject(number, reason, line.decode("utf-8", "replace")))
            continue
        problem = _check_row(row, need_iteration)
        if problem:
            rejects.append(_Reject(number, problem, line.decode("utf-8", "replace")))
            continue
        keys.update(row)
        good.append(b'{"%s":%d,' % (LINE_FIELD.encode(), number) + text[1:])
    return good, keys, rejects


# --------------------------------------------------------------------------- landing


class RolloutIngester:
    """Lands rollout files of one run into one lake, file by file."""

    def __init__(
        self,
        lake: Path,
        run_id: str,
        *,
        iterations: Sequence[int] | None = None,
        threads: int | None = None,
        careful: bool = False,
        reward: str | None = None,
        tokenizer: Path | None = None,
    ) -> None:
        self.lake = lake
        self.careful = careful
        self.reward = reward
        self.tokenizer = _load_tokenizer(tokenizer) if tokenizer else None
        if reward is not None:
            load_reward(reward)  # a bad name fails before any file is read
        self.run_id = run_id
        self.iterations = list(iterations) if iterations else None
        self.ingested_at = datetime.now(UTC).replace(tzinfo=None)
        self.manifest = read_manifest(lake, run_id)
        self._new_entries: list[ManifestEntry] = []
        self._scratch = Path(tempfile.mkdtemp(prefix="obs-ingest-"))
        self.con = duckdb.connect()
        if threads:
            self.con.execute(f"set threads = {int(threads)}")
        self.con.execute("set preserve_insertion_order = true")

    def close(self) -> None:
        """Write the manifest for what landed and release the scratch space."""
        try:
            append_manifest(self.lake, self.run_id, self._new_entries)
        finally:
            self._new_entries = []
            self.con.close()
            shutil.rmtree(self._scratch, ignore_errors=True)

    def __enter__(self) -> RolloutIngester:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ per file

    def ingest(self, source: SourceFile) -> FileResult:
        if source.kind == "parquet" or self.reward is not None or self.tokenizer is not None:
            return self._ingest_parquet(source)
        return self._ingest_jsonl(source)

    def _ingest_jsonl(self, source: SourceFile) -> FileResult:
        result = FileResult(source.path)
        data = _load(source.path)
        size = source.path.stat().st_size
        complete_end = data.rfind(b"\n") + 1  # a truncated last line waits for the next ingest
        known = self.manifest.get(source.key)
        start, first_line = 0, 1
        if known is not None:
            if known.bytes_consumed > complete_end or (
                _sha1(data, known.bytes_consumed) != known.content_sha1
            ):
                result.skipped = True
                result.note = (
                    "changed since it was ingested (not an append); "
                    "land it under a new --run to keep both"
                )
                return result
            if known.bytes_consumed == complete_end:
                result.skipped = True
                result.note = "already ingested"
                return result
            start, first_line = known.bytes_consumed, known.lines_consumed + 1
        whole = start == 0 and complete_end == len(data)
        chunk = data if whole else data[start:complete_end]
        lines_in_chunk = _count_lines(data, start, complete_end)
        if _blank(chunk):
            result.skipped = True
            result.note = "no complete lines yet" if complete_end == 0 else "already ingested"
            digest = _sha1(data, complete_end)
            self._remember(source, size, digest, complete_end, first_line - 1 + lines_in_chunk)
            return result

        final = partition_dir(self.lake, ROLLOUTS, self.run_id) / part_name(
            source.path, first_line, source.selector
        )
        rejects: list[_Reject] = []
        landed = None
        fast = (
            not self.careful and whole and isinstance(data, mmap.mmap) and chunk[:2].strip() != b""
        )
        with ThreadPoolExecutor(max_workers=1) as pool:
            # The digest (hashlib releases the GIL) and the text pre-screen run
            # while DuckDB parses; a file that fails the screen is redone carefully.
            digest_job = pool.submit(_sha1, data, complete_end)
            screen_job = pool.submit(_passes_screen, chunk) if fast else None
            if fast:
                landed = self._try_fast_jsonl(source, final)
                if landed is not None and screen_job is not None and not screen_job.result():
                    final.unlink(missing_ok=True)
                    landed = None
            if landed is None:
                landed, rejects = self._slow_jsonl(source, bytes(chunk), final, first_line, start)
            digest = digest_job.result()
        result.rows_landed = landed
        result.rows_rejected = len(rejects)
        result.reject_reasons = [r.reason for r in rejects]
        if rejects:
            self._write_rejects(source, rejects, first_line)
        self._remember(
            source,
            size,
            digest,
            complete_end,
            first_line - 1 + lines_in_chunk,
            landed,
            len(rejects),
        )
        if isinstance(data, mmap.mmap):
            data.close()
        return result

    def _write_query(self, select: str, final: Path) -> int:
        """Stream a canonical query (prompt_hash and sample_idx done in SQL) to ``final``."""
        temporary = temporary_path(final)
        rows = 0
        try:
            reader = self.con.execute(select).to_arrow_reader(BATCH_ROWS)
            with _parquet_writer(temporary) as writer:
                for batch in reader:
                    writer.write_table(pa.Table.from_batches([batch]).cast(ROLLOUT_SCHEMA))
                    rows += batch.num_rows
            if rows:
                publish(temporary, final)
        finally:
            temporary.unlink(missing_ok=True)
        return rows

    def _need_iteration(self, source: SourceFile) -> bool:
        return source.iteration is None

    def _try_fast_jsonl(self, source: SourceFile, final: Path) -> int | None:
        """Land a clean file in one streaming pass; None when it needs the careful path.

        DuckDB parses (typed, in parallel) and numbers the lines; Python adds
        prompt_hash, hashing each batch's distinct prompts once, and sample_idx.
        """
        path = source.path
        unknown = _sniff_unknown(path)
        if unknown is None:
            return None
        fields = dict(KNOWN_FIELDS) | {u: "JSON" for u in unknown}
        select = _canonical_select(
            _json_relation(path, fields) + " with ordinality",
            set(fields),
            unknown,
            run_iteration=source.iteration,
            line_expr="ordinality",
            source_file=str(path.resolve()),
            ingested_at=self.ingested_at,
            iterations=self.iterations if source.selector else None,
            derive_in_sql=False,
        )
        temporary = temporary_path(final)
        numbering = _SampleNumbering()
        rows = 0
        pending: list[Future[None]] = []
        try:
            reader = self.con.execute(select).to_arrow_reader(BATCH_ROWS)
            # Parquet encoding (GIL released) overlaps with DuckDB parsing the
            # next batch; one worker keeps the batches in order, and at most
            # two in flight bound the memory.
            with (
                _parquet_writer(temporary) as writer,
                ThreadPoolExecutor(max_workers=1) as pool,
            ):
                for batch in reader:
                    if _has_required_nulls(batch):
                        raise _NeedsCarefulPath
                    pending.append(pool.submit(writer.write_table, numbering.complete(batch)))
                    rows += batch.num_rows
                    if len(pending) > 1:
                        pending.pop(0).result()
                for job in pending:
                    job.result()
        except (duckdb.Error, _NeedsCarefulPath, pa.ArrowInvalid) as exc:
            logger.debug("fast path failed for %s: %s", path, exc)
            temporary.unlink(missing_ok=True)
            return None
        publish(temporary, final)
        return rows

    def _slow_jsonl(
        self, source: SourceFile, chunk: bytes, final: Path, first_line: int, start: int
    ) -> tuple[int, list[_Reject]]:
        good, keys, rejects = _split_lines(chunk, first_line, self._need_iteration(source))
        if not good:
            return 0, rejects
        scratch = self._scratch / f"{final.stem}.jsonl"
        scratch.write_bytes(b"\n".join(good) + b"\n")
        lowered = {k.lower() for k in KNOWN_FIELDS} | {LINE_FIELD}
        unknown = sorted(k for k in keys if k.lower() not in lowered)
        fields = dict(KNOWN_FIELDS) | {u: "JSON" for u in unknown} | {LINE_FIELD: "BIGINT"}
        select = _canonical_select(
            _json_relation(scratch, fields),
            set(fields),
            unknown,
            run_iteration=source.iteration,
            line_expr=_ident(LINE_FIELD),
            source_file=str(source.path.resolve()),
            ingested_at=self.ingested_at,
            iterations=self.iterations if source.selector else None,
        )
        if start > 0:
            select = self._continue_sample_idx(select, source)
        try:
            count = self._write_query(select, final)
        except (duckdb.Error, pa.ArrowInvalid) as exc:
            message = str(exc).split("\n")[0]
            raise IngestError(f"{source.path}: could not be read ({message})") from exc
        finally:
            scratch.unlink(missing_ok=True)
        return count, rejects

    def _continue_sample_idx(self, select: str, source: SourceFile) -> str:
        """Number samples after those already landed from the same file (a grown dump)."""
        folder = partition_dir(self.lake, ROLLOUTS, self.run_id)
        pattern = _sql_literal(str(folder / "*.parquet"))
        landed = (
            f"select iteration, prompt_hash, count(*) as n from read_parquet({pattern}) "
            f"where source_file = {_sql_literal(str(source.path.resolve()))} group by all"
        )
        return f"""
with fresh as ({select}),
landed as ({landed})
select fresh.* replace (
    fresh.sample_idx + coalesce(landed.n, 0) as sample_idx
)
from fresh
left join landed
    on fresh.iteration = landed.iteration and fresh.prompt_hash = landed.prompt_hash
order by fresh.source_line
"""

    def _ingest_parquet(self, source: SourceFile) -> FileResult:
        """Land a rollout table (parquet, or any source scored with --reward)."""
        result = FileResult(source.path)
        data = source.path.read_bytes()
        digest = hashlib.sha1(data).hexdigest()
        known = self.manifest.get(source.key)
        if known is not None and known.content_sha1 == digest:
            result.skipped = True
            result.note = "already ingested"
            return result
        if known is not None:
            result.skipped = True
            result.note = "changed since it was ingested; land it under a new --run"
            return result
        read_path, line_expr, reward_rejects = source.path, "file_row_number + 1", []
        if self.reward is not None or self.tokenizer is not None:
            read_path, reward_rejects = self._prepare_table(source)
            line_expr = _ident(LINE_FIELD)
        path_sql = _sql_literal(str(read_path))
        try:
            described = self.con.execute(
                f"describe select * from read_parquet({path_sql})"
            ).fetchall()
        except duckdb.Error as exc:
            message = str(exc).split("\n")[0]
            raise IngestError(f"{source.path}: not a readable parquet file ({message})") from exc
        names = [row[0] for row in described if row[0] != LINE_FIELD]
        lowered = {k.lower(): k for k in KNOWN_FIELDS}
        present = {lowered[n.lower()] for n in names if n.lower() in lowered}
        if not {"prompt", "input"} & present or not {"response", "output"} & present:
            raise IngestError(
                f"{source.path}: a rollout table needs 'prompt' and 'response' columns"
            )
        if not {"score", "reward"} & present:
            raise IngestError(
                f"{source.path}: no 'reward' or 'score' column; "
                "score it at ingest with --reward gsm8k or --reward package.module:function"
            )
        if source.iteration is None and not {"iteration", "step"} & present:
            raise IngestError(f"{source.path}: no 'iteration' or 'step' column; pass --iteration N")
        unknown = [n for n in names if n.lower() not in lowered]
        # DuckDB matches identifiers case-insensitively, so "V_i" reads a v_i column.
        relation = f"read_parquet({path_sql}, file_row_number = true)"
        select = _canonical_select(
            relation,
            present,
            unknown,
            run_iteration=source.iteration,
            line_expr=line_expr,
            source_file=str(source.path.resolve()),
            ingested_at=self.ingested_at,
            iterations=self.iterations,
        )
        final = partition_dir(self.lake, ROLLOUTS, self.run_id) / part_name(
            source.path, 1, source.selector
        )
        try:
            self.con.execute(f"create or replace temp table landing as {select}")
            rejected = self.con.execute(
                "select source_line, "
                "case when prompt is null then 'missing required field ''prompt''' "
                "when response is null then 'missing required field ''response''' "
                "when score is null then 'missing or non-numeric ''reward''' "
                "else 'no iteration' end, "
                "to_json(struct_pack(prompt := prompt, response := response, score := score))"
                "::VARCHAR from landing where prompt is null or response is null "
                "or score is null or iteration is null order by source_line"
            ).fetchall()
            landed = self._write_query(
                "select * from landing where prompt is not null and response is not null "
                "and score is not null and iteration is not null order by source_line",
                final,
            )
            self.con.execute("drop table landing")
        except (duckdb.Error, pa.ArrowInvalid) as exc:
            message = str(exc).split("\n")[0]
            raise IngestError(f"{source.path}: could not be read ({message})") from exc
        rejects = [_Reject(int(line), reason, raw) for line, reason, raw in rejected]
        rejects = sorted(reward_rejects + rejects, key=lambda r: r.line)
        if rejects:
            self._write_rejects(source, rejects, 1)
        result.rows_landed = landed
        result.rows_rejected = len(rejects)
        result.reject_reasons = [r.reason for r in rejects]
        self._new_entries.append(
            ManifestEntry(
                source_file=source.key,
                table_name=ROLLOUTS,
                size_bytes=len(data),
                content_sha1=digest,
                bytes_consumed=len(data),
                lines_consumed=0,
                rows_landed=result.rows_landed,
                rows_rejected=result.rows_rejected,
                ingested_at=self.ingested_at,
            )
        )
        return result

    def _prepare_table(self, source: SourceFile) -> tuple[Path, list[_Reject]]:
        """Score rows with --reward and count tokens with --tokenizer, into a scratch parquet.

        Rows whose reward function raised are left out (and rejected with its
        message); the rest keep their own line number in ``__obs_line``.
        """
        path_sql = _sql_literal(str(source.path))
        reader = (
            f"read_parquet({path_sql})"
            if source.kind == "parquet"
            else f"read_json_auto({path_sql}, format = 'newline_delimited')"
        )
        try:
            table = self.con.execute(f"select * from {reader}").to_arrow_table()
        except duckdb.Error as exc:
            message = str(exc).split("\n")[0]
            raise IngestError(
                f"{source.path}: cannot be read for scoring ({message}); "
                "ingest it without --reward to see which lines are bad"
            ) from exc
        keep = list(range(table.num_rows))
        rejects: list[_Reject] = []
        if self.reward is not None:
            rows = table.to_pylist()
            scored = score_rows(self.reward, rows)
            keep = [i for i, s in enumerate(scored) if s.error is None]
            rejects = [
                _Reject(i + 1, s.error, json.dumps(rows[i], default=str)[:10_000])
                for i, s in enumerate(scored)
                if s.error is not None
            ]
            existing = [c for c in table.column_names if c.lower() in {"reward", "score"}]
            table = table.drop_columns(existing).take(pa.array(keep, pa.int64()))
            table = table.append_column(
                "reward", pa.array([scored[i].reward for i in keep], pa.float64())
            )
        table = table.append_column(LINE_FIELD, pa.array([i + 1 for i in keep], pa.int64()))
        if self.tokenizer is not None:
            table = _add_token_counts(table, self.tokenizer)
        scratch = self._scratch / f"{source.path.name}.scored.parquet"
        pq.write_table(table, scratch)
        return scratch, rejects

    # ------------------------------------------------------------------ bookkeeping

    def _write_rejects(self, source: SourceFile, rejects: list[_Reject], first_line: int) -> None:
        table = pa.Table.from_pydict(
            {
                "source_file": [str(source.path.resolve())] * len(rejects),
                "source_line": [r.line for r in rejects],
                "reason": [r.reason for r in rejects],
                "raw": [r.raw for r in rejects],
                "ingested_at": [self.ingested_at] * len(rejects),
            },
            schema=REJECT_SCHEMA,
        )
        final = partition_dir(self.lake, REJECTS, self.run_id) / part_name(
            source.path, first_line, source.selector
        )
        write_table(table, final)

    def _remember(
        self,
        source: SourceFile,
        size: int,
        digest: str,
        consumed: int,
        lines: int,
        landed: int = 0,
        rejected: int = 0,
    ) -> None:
        entry = ManifestEntry(
            source_file=source.key,
            table_name=ROLLOUTS,
            size_bytes=size,
            content_sha1=digest,
            bytes_consumed=consumed,
            lines_consumed=lines,
            rows_landed=landed,
            rows_rejected=rejected,
            ingested_at=self.ingested_at,
        )
        self.manifest[source.key] = entry
        self._new_entries.append(entry)


def ingest_rollouts(
    path: Path,
    *,
    lake: Path,
    run_id: str | None = None,
    iterations: Sequence[int] | None = None,
    iteration: int | None = None,
    on_file: Callable[[FileResult], None] | None = None,
    careful: bool = False,
    reward: str | None = None,
    tokenizer: Path | None = None,
) -> IngestResult:
    """Land every rollout file under ``path`` for one run; see the module docstring."""
    plan = plan_rollouts(path, iterations=iterations, iteration=iteration)
    run = run_id or default_run_id(path)
    results: list[FileResult] = []
    with RolloutIngester(
        lake, run, iterations=iterations, careful=careful, reward=reward, tokenizer=tokenizer
    ) as ingester:
        for source in plan:
            result = ingester.ingest(source)
            results.append(result)
            if on_file is not None:
                on_file(result)
    return IngestResult(run, results)


def iter_reject_reasons(result: IngestResult) -> Iterable[str]:
    for file in result.files:
        yield from file.reject_reasons
