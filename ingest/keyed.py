"""Run histories into the lake: find each tracker's sources, read them, land what is new.

Trackers do not append to one file the way rollout dumps do: TRL rewrites
``trainer_state.json`` at every save (and copies it into each checkpoint), a
W&B run folder and a TensorBoard folder grow, an MLflow store holds many runs
in many small files. So a history lands by *key*, not by bytes: a run holds one
value per (step, key). Reading a source again lands only the points the run
does not hold yet; a copy of a landed source lands nothing; a grown source
lands its new steps. Within one source a key logged twice at one step keeps
the last value (a restarted trainer logs the steps after its checkpoint again).

The rest is the run writer's (``writer.py``), as for rollouts: one ingest of a
run at a time (its lock), the debris of a killed ingest removed, parts staged
and published by atomic rename, then recorded in the run's manifest, the skip
index; damaged records go to ``_rejects`` with file, line and reason while the
rest lands; ``strict`` publishes nothing unless every source is clean.

A run's attributes (name, state, tags, config, summary, ...) land in ``runs``
as one row each time they change; the newest row wins in ``stg_runs``.

Per-sample rewards (the reward monitor's ``reward_scores``) land in
``reward_samples`` by block: a (step, reward function) whose rewards the run
already holds lands nothing; one whose rewards differ (a step file written
again) lands again, whole, and the newest part is the value
(``stg_reward_samples``).

Keyed records (an agent's eval steps, a trainer log's group summaries and
turn-advantage tables) land by block: a block whose content hash is the
newest the run holds for its key and source lands nothing; any other lands
whole, and the newest part is the value in staging.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import logging
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from obs.ingest import lake as lake_files
from obs.ingest.errors import IngestError
from obs.ingest.lake import ManifestEntry
from obs.ingest.schema import (
    METRIC_TABLE,
    METRICS,
    RECORD_KEYS,
    RECORD_TABLES,
    REJECT_TABLE,
    REJECTS,
    REWARD_SAMPLE_TABLE,
    REWARD_SAMPLES,
    RUN_TABLE,
    RUNS,
)
from obs.ingest.trackers.base import (
    HistoryReject,
    RecordBlock,
    RunHistory,
    SampleBlock,
    clean_text,
)
from obs.ingest.writer import (
    WRITE_OPTIONS,
    FileResult,
    IngestResult,
    LakeWriter,
    RunLanding,
    SourceIndex,
)

logger = logging.getLogger(__name__)

# Reader modules under obs.ingest.trackers, in the order sources are looked for.
READERS = (
    "wandb_files",
    "tensorboard_files",
    "mlflow_store",
    "trackio",
    "trl_state",
    "jsonl_metrics",
    "reward_monitor",
    "eval_logs",
    "trainer_log",
)
# Reward samples are written in row groups of about this many rows, dictionary
# encoding only the text columns (a dictionary of rewards costs memory and gains little).
SAMPLE_CHUNK_ROWS = 1 << 17
SAMPLE_WRITE_OPTIONS: dict[str, Any] = {
    **WRITE_OPTIONS,
    "use_dictionary": ["reward_function", "source", "source_file"],
}


def readers() -> list[ModuleType]:
    """The reader modules (imported here: their libraries load only when used)."""
    return [importlib.import_module(f"obs.ingest.trackers.{name}") for name in READERS]


def formats() -> dict[str, str]:
    """Every format name ``--format`` accepts, with what it reads."""
    out: dict[str, str] = {}
    for module in readers():
        out.update(module.FORMATS)
    return out


@dataclass(frozen=True)
class Source:
    """One thing to read: a file or a folder, in one format, by one reader."""

    reader: ModuleType
    format: str
    origin: Path


def plan(path: Path, fmt: str = "auto", hints: bool = True) -> list[Source]:
    """Every tracker source at or under ``path`` (one format, or all with ``auto``). With
    ``hints``, the error for a folder of rollouts names the command that lands them."""
    if not path.exists():
        raise IngestError(f"{path}: no such file or folder; give a tracker's run folder or file")
    known = formats()
    if fmt != "auto" and fmt not in known:
        raise IngestError(f"--format {fmt}: unknown; use auto or one of {', '.join(known)}")
    found: list[Source] = []
    seen: set[Path] = set()
    for module in readers():
        if fmt != "auto" and fmt not in module.FORMATS:
            continue  # (another reader's search of a large folder costs time)
        for kind, origin in module.find(path):
            if fmt not in {"auto", kind}:
                continue
            resolved = origin.resolve()
            if resolved in seen:
                continue
            seen.add(resolved)
            found.append(Source(module, kind, origin))
    if not found:
        wanted = "source" if fmt == "auto" else f"{fmt} source"
        otherwise = "; point at the run's folder or file, or name the format with --format"
        raise IngestError(
            f"{path}: found no {wanted} here (`obs ingest metrics --help` lists what it "
            "reads)" + ((hints and _rollouts_hint(path)) or otherwise)
        )
    return found


def _rollouts_hint(path: Path) -> str:
    """``; it holds rollouts: land them with obs ingest rollouts PATH`` when the rollout
    planner finds files at ``path``, else ""."""
    from obs.ingest.rollout_plan import plan_rollouts

    try:
        found = plan_rollouts(path, "hint", hints=False)
    except IngestError:
        return ""
    return (
        f"; it holds rollouts ({len(found)} file(s)): land them with `obs ingest rollouts {path}`"
    )


# --------------------------------------------------------------------------- one run's landing


def _digest(files: list[Path]) -> tuple[int, int, str]:
    """Total size, newest mtime and a hash of the listing (name, size, mtime) of ``files``."""
    hasher = hashlib.sha1()
    size = newest = 0
    for file in sorted(files):
        with contextlib.suppress(OSError):
            stat = file.stat()
            size += stat.st_size
            newest = max(newest, stat.st_mtime_ns)
            hasher.update(f"{file}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return size, newest, hasher.hexdigest()


def _points(history: RunHistory) -> pa.Table:
    return pa.table(
        {
            "step": pa.array(history.steps, pa.int64()),
            "key": pa.array(history.keys, pa.string()),
            "value": pa.array(history.values, pa.float64()),
            "wall_time": pa.array(history.wall_times, pa.float64()),
            "ord": pa.array(range(history.points), pa.int64()),
        }
    )


def _new_points(con: Any, history: RunHistory, parts: list[str]) -> tuple[pa.Table, int, int, int]:
    """The points the run does not hold yet, or holds with another value.

    One per step and key (the last logged in this source). ``parts`` are the
    run's metric parts oldest first; the newest value a key landed with is the
    one compared (``stg_metrics`` reads the same newest value). Also: how many
    keys this source logged again at a step with another value, how many
    distinct (step, key) it holds, and how many landed points it changes.
    """
    con.register("points", _points(history))
    try:
        latest = (
            "select step, key, value, wall_time from points "
            "qualify row_number() over (partition by step, key order by ord desc) = 1"
        )
        # A key logged again at a step with the same value is no news; with
        # another value it is worth a note (the last is kept).
        counted = con.execute(
            "select count(*), count(distinct (step, key)) from "
            "(select distinct step, key, value from points)"
        ).fetchone()
        repeated = counted[0] - counted[1] if counted else 0
        distinct = counted[1] if counted else 0
        if not parts:
            fresh = _table(con.execute(f"{latest} order by step, key").arrow())
            changed = 0
        else:
            con.execute("create or replace temp table part_order (filename varchar, rank int)")
            con.executemany(
                "insert into part_order values (?, ?)", [[p, n] for n, p in enumerate(parts)]
            )
            query = f"""
                with landed as (
                    select m.step, m.key, arg_max(m.value, o.rank) as value
                    from read_parquet($parts, filename = true) m
                    join part_order o using (filename)
                    group by m.step, m.key
                )
                select p.*, l.step is not null as was_landed
                from ({latest}) p left join landed l using (step, key)
                where l.step is null or p.value is distinct from l.value
                order by step, key
            """
            fresh = _table(con.execute(query, {"parts": parts}).arrow())
            changed = int(pc.sum(fresh.column("was_landed")).as_py() or 0)
            fresh = fresh.drop_columns(["was_landed"])
    finally:
        con.unregister("points")
    return fresh, repeated, distinct, changed


def _new_samples(con: Any, history: RunHistory, parts: list[str]) -> tuple[list[int], int]:
    """The sample blocks (indexes into ``history.samples``) the run does not hold yet.

    A block is held when the run's newest part holding its (step, reward
    function) holds as many samples with the same rewards. Blocks are
    compared by their size and a digest (the XOR of DuckDB's hash of each
    (sample_idx, reward)), both sides computed by the same query, so the
    comparison streams over the landed parts instead of joining every sample.
    ``parts`` are the run's reward_samples parts, oldest first. Also: how
    many of the blocks returned replace rewards that landed before.
    """
    blocks = history.samples
    if not blocks:
        return [], 0
    if not parts:
        return list(range(len(blocks))), 0
    lengths = np.fromiter((len(b.rewards) for b in blocks), np.int64, len(blocks))
    starts = np.zeros(len(blocks), np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    samples = pa.table(
        {
            "block": np.repeat(np.arange(len(blocks), dtype=np.int32), lengths),
            "sample_idx": np.arange(int(lengths.sum()), dtype=np.int64)
            - np.repeat(starts, lengths),
            "reward": np.concatenate([b.rewards for b in blocks]),
        }
    )
    described = pa.table(
        {
            "block": pa.array(range(len(blocks)), pa.int32()),
            "step": pa.array([b.step for b in blocks], pa.int64()),
            "reward_function": pa.array([b.reward_function for b in blocks], pa.string()),
        }
    )
    con.register("new_samples", samples)
    con.register("new_blocks", described)
    try:
        con.execute("create or replace temp table sample_part_order (filename varchar, rank int)")
        con.executemany(
            "insert into sample_part_order values (?, ?)", [[p, n] for n, p in enumerate(parts)]
        )
        query = """
            with landed as (
                select s.step, s.reward_function, o.rank, count(*) as size,
                    bit_xor(hash(s.sample_idx, s.reward)) as digest
                from read_parquet($parts, filename = true) s
                join sample_part_order o using (filename)
                where s.step in (select step from new_blocks)
                group by all
            ),
            held as (
                select step, reward_function,
                    arg_max(size, rank) as size, arg_max(digest, rank) as digest
                from landed
                group by all
            ),
            incoming as (
                select block, count(*) as size, bit_xor(hash(sample_idx, reward)) as digest
                from new_samples
                group by block
            )
            select b.block, h.step is not null as was_landed
            from new_blocks b
            join incoming i using (block)
            left join held h using (step, reward_function)
            where h.step is null or h.size != i.size or h.digest != i.digest
            order by b.block
        """
        rows = con.execute(query, {"parts": parts}).fetchall()
    finally:
        con.unregister("new_samples")
        con.unregister("new_blocks")
    return [int(block) for block, _ in rows], sum(1 for _, landed in rows if landed)


def _stage_samples(
    landing: RunLanding, blocks: list[SampleBlock], source: str, origin: str
) -> tuple[Path, int]:
    """Stage ``blocks`` as one reward_samples part, written a row group at a time; its rows."""
    path = landing.part_path(REWARD_SAMPLES)
    schema = REWARD_SAMPLE_TABLE.schema
    rows = 0
    with pq.ParquetWriter(path, schema, **SAMPLE_WRITE_OPTIONS) as writer:
        chunk: list[SampleBlock] = []
        size = 0
        for block in [*blocks, None]:
            if block is not None:
                chunk.append(block)
                size += len(block.rewards)
            if chunk and (block is None or size >= SAMPLE_CHUNK_ROWS):
                writer.write_table(_samples_chunk(chunk, source, origin, schema))
                rows += size
                chunk, size = [], 0
    return path, rows


def _samples_chunk(
    blocks: list[SampleBlock], source: str, origin: str, schema: pa.Schema
) -> pa.Table:
    """Rows of ``blocks``: texts repeated through dictionary indexes (one copy of each)."""
    lengths = np.fromiter((len(b.rewards) for b in blocks), np.int64, len(blocks))
    count = int(lengths.sum())
    starts = np.zeros(len(blocks), np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])

    def repeated(texts: list[str]) -> pa.Array:
        unique = list(dict.fromkeys(texts))
        code = {text: n for n, text in enumerate(unique)}
        indexes = np.repeat(np.array([code[t] for t in texts], np.int32), lengths)
        dictionary = pa.array([clean_text(t) for t in unique], pa.string())
        return pa.DictionaryArray.from_arrays(pa.array(indexes), dictionary).cast(pa.string())

    files = [origin if b.file is None else str(b.file.resolve()) for b in blocks]
    return pa.table(
        {
            "step": np.repeat(np.array([b.step for b in blocks], np.int64), lengths),
            "reward_function": repeated([b.reward_function for b in blocks]),
            "sample_idx": np.arange(count, dtype=np.int64) - np.repeat(starts, lengths),
            "reward": np.concatenate([b.rewards for b in blocks]),
            "source": repeated([source] * len(blocks)),
            "source_file": repeated(files),
        },
        schema=schema,
    )


def _table(result: pa.Table | pa.RecordBatchReader) -> pa.Table:
    """A query's rows, read now (a reader would read them after the view is gone)."""
    return result.read_all() if isinstance(result, pa.RecordBatchReader) else result


def _run_row(history: RunHistory, origin: str) -> dict[str, Any]:
    row: dict[str, Any] = {
        "source": history.source,
        "project": _text(history.project),
        "entity": _text(history.entity),
        "name": _text(history.name),
        "state": _text(history.state),
        "tags": _tags(history.tags),
        "created_at": history.created_at,
        "config": _json(history.config),
        "summary": _json(history.summary),
        "artifacts": _json(history.artifacts),
        "source_file": origin,
    }
    content = json.dumps({k: v for k, v in row.items() if k != "source_file"}, default=str)
    row["record_hash"] = hashlib.sha1(content.encode()).hexdigest()
    return row


def _text(value: Any) -> str | None:
    return None if value is None else clean_text(str(value))


def _tags(value: Any) -> list[str]:
    """A source's tags as a list of texts (a single text is one tag)."""
    if isinstance(value, str):
        return [clean_text(value)]
    if isinstance(value, list | tuple):
        return [clean_text(str(t)) for t in value if t is not None]
    return []


def _json(value: Any) -> str:
    """JSON text; NaN and Infinity become null (JSON has no such values)."""
    return json.dumps(_finite(value), ensure_ascii=False, default=str, sort_keys=True)


def _finite(value: Any) -> Any:
    """JSON-ready: NaN and Infinity as null, lone surrogates replaced (no UTF-8 form)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(str(k)): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _held_hashes(parts: list[str]) -> set[str]:
    """The record hashes of every version of the run's attributes landed so far.

    A version the run holds never lands again (``(run_id, record_hash)`` is
    the runs table's key): not when a second source of the run (a trainer's
    log and its reward monitor under one ``--run``) is read again after the
    other's newer attributes, nor when a copy of a source (TRL's
    ``checkpoint-N/trainer_state.json``) says what the run holds already.
    """
    held: set[str] = set()
    for part in parts:
        held.update(str(h) for h in pq.read_table(part, columns=["record_hash"])[0].to_pylist())
    return held


def record_hash(block: RecordBlock) -> str:
    """SHA-1 of a block's table and rows (lines aside: a copy of a log with one more
    line at its top holds the same records)."""
    rows = [{k: v for k, v in row.items() if k != "source_line"} for row in block.rows]
    text = json.dumps([block.table, rows], sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha1(clean_text(text).encode("utf-8")).hexdigest()


def _new_records(
    history: RunHistory, landing: RunLanding
) -> tuple[dict[str, list[tuple[RecordBlock, str]]], int]:
    """Per record table, the blocks to land (with their hashes); and how many replace one.

    A block lands unless the newest block the run holds for its key, from this
    kind of source, has the same hash. Two blocks of one key in one source:
    the last wins.
    """
    latest: dict[tuple[str, tuple[Any, ...]], RecordBlock] = {}
    for block in history.records:
        keys = RECORD_KEYS[block.table]
        latest[(block.table, tuple(block.rows[0].get(k) for k in keys))] = block
    out: dict[str, list[tuple[RecordBlock, str]]] = {}
    replaced = 0
    for table in sorted({t for t, _ in latest}):
        keys = RECORD_KEYS[table]
        newest: dict[tuple[Any, ...], str] = {}
        for part in landing.parts(table):  # oldest first
            held = pq.read_table(part, columns=[*keys, "source", "record_hash"]).to_pylist()
            for row in held:
                if row["source"] == history.source:
                    newest[tuple(row[k] for k in keys)] = row["record_hash"]
        for (name, key), block in latest.items():
            if name != table:
                continue
            digest = record_hash(block)
            known = newest.get(key)
            if known == digest:
                continue
            replaced += known is not None
            out.setdefault(table, []).append((block, digest))
    return out, replaced


def _records_table(table: str, blocks: list[tuple[RecordBlock, str]], source: str) -> pa.Table:
    spec = RECORD_TABLES[table]
    rows = []
    for block, digest in blocks:
        where = clean_text(str(block.file.resolve()))
        for row in block.rows:
            full = {name: row.get(name) for name in spec.names}
            full["source"] = source
            full["source_file"] = where
            full["source_line"] = row.get("source_line", block.line)
            full["record_hash"] = digest
            rows.append(full)
    return pa.Table.from_pylist(rows, schema=spec.schema)


def _new_rejects(history: RunHistory, parts: list[str]) -> list[HistoryReject]:
    """The rejects the run has not recorded yet (a source read again rejects again)."""
    if not history.rejects or not parts:
        return history.rejects
    seen: set[tuple[str, str, int, str]] = set()
    for part in parts:
        table = pq.read_table(part, columns=["table_name", "source_file", "source_line", "reason"])
        for row in table.to_pylist():
            seen.add((row["table_name"], row["source_file"], row["source_line"], row["reason"]))
    return [
        r for r in history.rejects if (r.table, str(r.file.resolve()), r.line, r.reason) not in seen
    ]


def _land_one(
    history: RunHistory,
    source: Source,
    landing: RunLanding,
    con: Any,
    stat: tuple[int, int, str],
) -> FileResult:
    """Stage one history's new points, run row and rejects; its result."""
    origin = str(source.origin.resolve())
    result = FileResult(source.origin, landing.run_id)
    fresh, repeated, distinct, changed = _new_points(con, history, landing.parts(METRICS))
    new_blocks, replaced = _new_samples(con, history, landing.parts(REWARD_SAMPLES))
    staged: list[tuple[str, Path]] = []
    if fresh.num_rows:
        table = pa.table(
            {
                "step": fresh.column("step"),
                "key": fresh.column("key"),
                "value": fresh.column("value"),
                "wall_time": fresh.column("wall_time"),
                "source": pa.array([history.source] * fresh.num_rows, pa.string()),
                "source_file": pa.array([origin] * fresh.num_rows, pa.string()),
            },
            schema=METRIC_TABLE.schema,
        )
        staged.append((METRICS, landing.stage(METRICS, table)))
    samples_landed = 0
    sample_steps: list[int] = []
    if new_blocks:
        blocks = [history.samples[n] for n in new_blocks]
        path, samples_landed = _stage_samples(landing, blocks, history.source, origin)
        staged.append((REWARD_SAMPLES, path))
        sample_steps = [blocks[0].step, blocks[-1].step, *(b.step for b in blocks)]
    row = _run_row(history, origin)
    # A source that gave nothing but rejects (a file of garbage) names no run.
    says_something = (
        history.points or history.samples or history.config or history.summary or history.state
    )
    records, records_replaced = _new_records(history, landing)
    record_rows = 0
    record_steps: list[int] = []
    for record_table, kept in records.items():
        staged_table = _records_table(record_table, kept, history.source)
        staged.append((record_table, landing.stage(record_table, staged_table)))
        record_rows += staged_table.num_rows
        result.records_landed[record_table] = len(kept)
        record_steps += [s for s in staged_table.column("step").to_pylist() if s is not None]
    says_something = says_something or bool(history.records)
    if says_something and row["record_hash"] not in _held_hashes(landing.parts(RUNS)):
        table = pa.Table.from_pylist([row], schema=RUN_TABLE.schema)
        staged.append((RUNS, landing.stage(RUNS, table)))
    fresh_rejects = _new_rejects(history, landing.parts(REJECTS))
    if fresh_rejects:
        rejects = pa.table(
            {
                "table_name": [r.table for r in fresh_rejects],
                "source_file": [str(r.file.resolve()) for r in fresh_rejects],
                "source_line": [r.line for r in fresh_rejects],
                "reason": [r.reason for r in fresh_rejects],
                "raw": [r.raw for r in fresh_rejects],
            },
            schema=REJECT_TABLE.schema,
        )
        staged.append((REJECTS, landing.stage(REJECTS, rejects)))
    steps = fresh.column("step").to_pylist() if fresh.num_rows else []
    steps += sample_steps
    steps += [min(record_steps), max(record_steps)] if record_steps else []
    steps = [s for s in steps if s >= 0]  # a baseline eval is step -1
    size, mtime, digest = stat
    entry = ManifestEntry(
        table_name=METRICS,
        source_file=origin,
        size_bytes=size,
        mtime_ns=mtime,
        content_hash=digest,
        bytes_consumed=size,
        lines_consumed=history.points + history.sample_count + len(history.records),
        rows_landed=fresh.num_rows + samples_landed + record_rows,
        rows_rejected=len(fresh_rejects),
        claimed_iteration=None,
        iteration_min=min(steps) if steps else None,
        iteration_max=max(steps) if steps else None,
        parts=[],
        status="truncated" if history.truncated else "complete",
        recorded_at=lake_files.utc_now(),
    )
    if staged:  # a source that adds nothing leaves the manifest as it was
        landing.entries.append(entry)
        landing.add(entry, staged)
    result.rows_landed = fresh.num_rows + samples_landed + record_rows
    result.samples_landed = samples_landed
    result.record_rows = record_rows
    result.rows_rejected = len(fresh_rejects)
    result.reject_reasons = [r.reason for r in fresh_rejects]
    result.reject_lines = [r.line for r in fresh_rejects]
    notes = list(history.notes)
    if not result.rows_landed and (history.points or history.samples or history.records):
        result.status = "unchanged"
        notes.insert(0, "already ingested")
    else:
        if distinct > fresh.num_rows:
            notes.append(f"{distinct - fresh.num_rows:,} points the run already holds")
        held_blocks = len(history.samples) - len(new_blocks)
        if held_blocks and new_blocks:
            notes.append(f"{held_blocks:,} reward-sample blocks the run already holds")
        held_records = len(history.records) - sum(result.records_landed.values())
        if held_records > 0 and result.records_landed:
            noun = "record" if held_records == 1 else "records"
            notes.append(f"{held_records:,} {noun} the run already holds")
    if changed:
        notes.append(f"{changed:,} values differ from what landed before (the newer kept)")
    if replaced:
        notes.append(
            f"{replaced:,} reward-sample blocks (step, function) differ from what landed "
            "before (a step file written again; the newer kept)"
        )
    if records_replaced:
        noun = "record differs" if records_replaced == 1 else "records differ"
        notes.append(
            f"{records_replaced:,} {noun} from what landed before for the same step "
            "(a file written again; the newer kept)"
        )
    if repeated and result.status != "unchanged":
        notes.append(f"{repeated:,} keys logged again at a step with another value (the last kept)")
    result.note = "; ".join(notes)
    return result


def _index_key(source: Source, run_id: str | None) -> str:
    """The source's name in the skip index: its format, path and ``--run``."""
    return f"{source.format}\0{source.origin.resolve()}\0{run_id or ''}"


def land_histories(
    sources: list[Source],
    lake: Path,
    *,
    root: Path,
    run_id: str | None = None,
    strict: bool = False,
    on_source: Callable[[FileResult], None] | None = None,
) -> IngestResult:
    """Read every source and land each run's new points (see the module docstring)."""
    if run_id is not None:
        lake_files.check_run_id(run_id)
    index = SourceIndex(lake)
    results: list[FileResult] = []
    skipped: Counter[str] = Counter()
    read: list[tuple[Source, tuple[int, int, str], RunHistory]] = []
    done: list[tuple[Source, tuple[int, int, str]]] = []
    unchanged_runs: set[str] = set()

    def report(result: FileResult) -> None:
        results.append(result)
        if on_source is not None:
            on_source(result)

    for source in sources:
        stat = _digest(source.reader.stat_files(source.format, source.origin))
        indexed = index.unchanged(_index_key(source, run_id), stat)
        if indexed is not None:
            unchanged_runs.update(indexed.runs)
            named = ", ".join(indexed.runs)
            report(FileResult(source.origin, named, "unchanged", note="already ingested"))
            continue
        try:
            histories = source.reader.read(source.format, source.origin, root)
        except Exception as exc:  # one source's reader failing must not lose the others
            result = FileResult(source.origin, run_id or "-", "unreadable")
            if isinstance(exc, IngestError):
                result.note = str(exc).removeprefix(f"{source.origin}: ")
            else:
                logger.debug("reading %s failed", source.origin, exc_info=True)
                result.note = f"could not be read ({type(exc).__name__}: {exc}); nothing landed"
            report(result)
            continue
        for history in histories:
            skipped.update(history.skipped)
            read.append((source, stat, history))
        done.append((source, stat))
    by_run: dict[str, list[tuple[Source, tuple[int, int, str], RunHistory]]] = {}
    per_source = Counter(id(source) for source, _, _ in read)
    for source, stat, history in read:
        # A source that landed before as one run keeps that run's id, however
        # PATH names it now (a TensorBoard folder's id is its path under PATH).
        alone = per_source[id(source)] == 1
        earlier = index.landed_as(_index_key(source, None)) if alone else None
        target = run_id or earlier or history.run_id
        try:
            lake_files.check_run_id(target, origin="its run id")
        except IngestError as exc:
            note = f"{exc}; pass --run"
            results.append(FileResult(source.origin, target, "unreadable", note=note))
            continue
        by_run.setdefault(target, []).append((source, stat, history))
    import duckdb

    con = duckdb.connect()
    try:
        with LakeWriter(lake, by_run, strict=strict) as writer:
            for target, items in by_run.items():
                with writer.run(target) as landing:
                    for source, stat, history in items:
                        report(_land_one(history, source, landing, con, stat))
            strict_failed = writer.finish(results)
    finally:
        con.close()
    if not strict_failed:
        for source, stat in done:
            runs = sorted({run_id or h.run_id for s, _, h in read if s is source})
            index.record(_index_key(source, run_id), source.origin, stat, runs)
    return IngestResult(
        results,
        strict_failed,
        skipped=skipped,
        sources=len(sources),
        runs=sorted(set(by_run) | unchanged_runs),
    )


def ingest_metrics(
    path: Path,
    *,
    lake: Path,
    run_id: str | None = None,
    fmt: str = "auto",
    strict: bool = False,
    on_source: Callable[[FileResult], None] | None = None,
) -> IngestResult:
    """Land every tracker history at or under ``path`` (the Python entry point)."""
    return land_histories(
        plan(path, fmt), lake, root=path, run_id=run_id, strict=strict, on_source=on_source
    )


def describe_skipped(skipped: Counter[str]) -> str:
    """``40 histograms, 3 images`` for the summary line."""
    parts = []
    for kind, count in skipped.most_common():
        noun = kind if count == 1 or kind.endswith("s") else kind + "s"
        parts.append(f"{count:,} {noun}")
    return ", ".join(parts)
