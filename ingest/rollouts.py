"""Rollouts: which files a path holds, and how a source row becomes a canonical rollout.

Formats (a folder may mix them; each file says by its name what it is):

* iteration dumps, ``{N}.jsonl`` / ``.jsonl.gz`` (verl's ``rollout_data_dir``,
  IFEval+GRPO dumps): ``input``, ``output``, ``score``, ... one rollout a line.
  verl's V1 trainer (``trainer.use_v1``, its default) adds ``uid``
  (``{uuid}_{session}_{output}``, its TransferQueue key; see
  ``rollout_values.VERL_UID``): the rollout's ``group_id`` is the uuid, the
  prompt's GRPO group at that step, and ``uid`` itself stays in ``extra``;
* verl validation dumps, ``val_{N}.jsonl``: land in the run ``<run>:val``
  (the V1 trainer writes them as ``{N}.jsonl`` into ``validation_data_dir``:
  ingest that folder with ``--run <run>:val``);
* NeMo-RL ``train_data_step{N}.jsonl`` (and ``val_data_step{N}.jsonl`` into
  ``<run>:val``): every value wrapped in a one-element list, the conversation in
  ``content``;
* TRL ``completions_{step}.parquet`` (GRPOTrainer's ``log_completions``, in
  ``<output_dir>/completions/``): ``step``, ``prompt``, ``completion``, one column
  per reward function, ``advantage``;
* prime-rl's episode traces, ``rollouts/step_{N}/{train|eval}/{all|effective}/
  traces.jsonl`` in its run folder (found from the run folder or its
  ``rollouts/``): one rollout per trace of the policy, eval into ``<run>:val``;
  see ``traces.py`` for the record and the rules;
* rollout tables: any other ``.parquet`` / ``.jsonl`` file with ``prompt``,
  ``response``, ``reward`` (or scored at ingest with ``--reward``).

``group_id`` holds the trainer's group of a rollout where the source names it
(verl's uid, prime-rl's ``group.id``, an agent's ``group_id``, which also stays
in ``extra`` for the agentic marts); the marts group by prompt.

The row rules live in ``RolloutBuilder``; the landing core (``appended.py``) does
the rest. Nothing here computes analytics.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from obs.core.identity import prompt_hash
from obs.ingest import lake as lake_files
from obs.ingest import traces
from obs.ingest.appended import (
    FileResult,
    IngestResult,
    Reject,
    SourceFile,
    land,
)
from obs.ingest.errors import IngestError
from obs.ingest.numbering import Numbering
from obs.ingest.readers import GzipLimit, Record, RowError, finite_json
from obs.ingest.rollout_plan import default_run_id, plan_rollouts
from obs.ingest.rollout_tokens import take_arrays, token_row
from obs.ingest.rollout_tokens import to_table as tokens_table
from obs.ingest.rollout_values import (
    as_double,
    as_flags,
    as_int,
    as_rewards,
    as_texts,
    kind_of,
    unwrap_nemo,
    verl_group,
)
from obs.ingest.rollouts_fast import applies, fast_rollouts
from obs.ingest.schema import (
    AGENT_COUNTS,
    AGENT_ROLLOUT_FIELDS,
    ROLLOUT_TABLE,
    ROLLOUT_TOKEN_TABLE,
    ROLLOUT_TOKENS,
    ROLLOUTS,
    TURN_LISTS,
    TableSpec,
)

# Numbers outside this range are rejected: their squares would overflow a
# double, and a variance over them would break the build of every run.
DOUBLE_FIELDS = {
    "V_i": "v_i",
    "v_i": "v_i",
    "S_i": "s_i",
    "s_i": "s_i",
    "alpha_threshold": "alpha_threshold",
    "prompt_strict_acc": "prompt_strict_acc",
    "inst_strict_acc": "inst_strict_acc",
    "format_score": "format_score",
}
INT_FIELDS = {
    "num_instructions": "num_instructions",
    "num_followed": "num_followed",
    "data_idx": "data_idx",
}
PROMPT_FIELDS = ("input", "prompt")
RESPONSE_FIELDS = ("output", "response", "completion")
SCORE_FIELDS = ("score", "reward")
ITERATION_FIELDS = ("iteration", "step")
# TRL completion columns that are not reward functions.
TRL_COLUMNS = {"step", "prompt", "completion", "advantage", "image", "images"}


# --------------------------------------------------------------------------- builder


@dataclass(frozen=True)
class RolloutOptions:
    iteration: int | None = None  # --iteration
    reward: str | None = None  # --reward
    tokenizer: Path | None = None  # --tokenizer (a local tokenizer.json)
    # --reward-weights: (function, weight) pairs, sorted
    reward_weights: tuple[tuple[str, float], ...] = ()


NUMBERING = Numbering(("iteration", "prompt_hash"), "sample_idx")
_TOKENIZERS: dict[Path, Any] = {}


@dataclass(frozen=True)
class RolloutFactory:
    """Makes the builder of each rollout file (pickles into worker processes)."""

    options: RolloutOptions
    table: str = ROLLOUTS
    schema: pa.Schema = ROLLOUT_TABLE.schema
    numbering: Numbering = NUMBERING

    @property
    def parallel(self) -> bool:
        # --reward scores in worker processes of its own.
        return self.options.reward is None

    def __call__(self, source: SourceFile) -> RolloutBuilder:
        return RolloutBuilder(self.options, tokens=source.format in ("nemo", "traces"))


class RolloutBuilder:
    """The row rules of the rollouts table, for one file (see the README's "What bad input gets").

    ``sample_idx`` counts from 0 within each (iteration, prompt) group of the
    file; the landing core continues it past what the run already holds.

    ``tokens`` (NeMo-RL's files, prime-rl's traces): a rollout's per-token arrays land in the
    companion table ``rollout_tokens`` (``rollout_tokens.py``), keyed as the
    rollout is, never in ``extra``. A line rejected as a rollout lands no
    tokens; a rollout whose arrays cannot land lands without them, its arrays
    rejected (table ``rollout_tokens``) with the reason.
    """

    table = ROLLOUTS
    numbering = NUMBERING

    def __init__(self, options: RolloutOptions, *, tokens: bool = False) -> None:
        self.options = options
        self.companion: TableSpec | None = ROLLOUT_TOKEN_TABLE if tokens else None
        self._token_rows: list[dict[str, Any]] = []
        self._hashes: dict[str, str] = {}
        self._counts: dict[tuple[int, str], int] = {}
        self.tokenizer: Any = None
        if options.tokenizer is not None:
            if options.tokenizer not in _TOKENIZERS:
                _TOKENIZERS[options.tokenizer] = load_tokenizer(options.tokenizer)
            self.tokenizer = _TOKENIZERS[options.tokenizer]

    def fast(
        self,
        source: SourceFile,
        content: bytes,
        start: int,
        end: int,
        first_line: int,
        *,
        threads: bool = True,
    ) -> pa.Table | None:
        """The whole file through the bulk path, or None to read it row by row.

        ``threads``: parse with all cores (False when other files are read meanwhile).
        """
        if self.options.reward is not None or self.tokenizer is not None:
            return None
        if self.options.reward_weights:
            return None
        if not applies(source.path, source.format) or source.reader != "jsonl":
            return None
        return fast_rollouts(
            content,
            start,
            end,
            first_line,
            claimed=source.claimed_iteration,
            fixed=self.options.iteration,
            path=str(source.path.resolve()),
            threads=threads,
            uid_groups=source.format == "dump",
        )

    def _number(self, iteration: int, prompt_hash: str) -> int:
        key = (iteration, prompt_hash)
        value = self._counts.get(key, 0)
        self._counts[key] = value + 1
        return value

    def _hash(self, prompt: str) -> str:
        known = self._hashes.get(prompt)
        if known is None:
            if len(self._hashes) > 100_000:
                self._hashes.clear()
            known = prompt_hash(prompt)
            self._hashes[prompt] = known
        return known

    def build(self, source: SourceFile, records: list[Record]) -> tuple[pa.Table, list[Reject]]:
        rejects: list[Reject] = []
        good: list[Record] = []
        for record in records:
            if record.error is not None:
                rejects.append(Reject(record.line, record.error, record.raw))
            elif not isinstance(record.value, dict):
                reason = f"not a JSON object ({kind_of(record.value)})"
                rejects.append(Reject(record.line, reason, record.as_written()))
            else:
                good.append(record)
        if source.format == "traces":
            episodes = self._trace_rows(source, good, rejects)
            rejects.sort(key=lambda r: r.line)
            return _to_table(episodes), rejects
        arrays: dict[int, dict[str, Any]] = {}
        if source.format == "nemo":
            for record in good:
                record.value = unwrap_nemo(record.value)
                if self.companion is not None:
                    arrays[record.line] = take_arrays(record.value)
        if self.options.reward is not None:
            good = self._score(good, rejects)
        if self.tokenizer is not None:
            self._count_tokens(good)
        rows: list[tuple[Any, ...]] = []
        path = str(source.path.resolve())
        for record in good:
            try:
                row = self._row(source, record.value, path, record.line, record.numeric)
            except RowError as exc:
                raw = record.as_written()
                rejects.append(Reject(record.line, exc.reason, raw, exc.fixable_by, exc.whole_file))
                continue
            rows.append(row)
            if record.line in arrays:
                self._add_tokens(row, arrays[record.line], record, rejects)
        rejects.sort(key=lambda r: r.line)
        return _to_table(rows), rejects

    def _add_tokens(
        self, row: tuple[Any, ...], arrays: dict[str, Any], record: Record, rejects: list[Reject]
    ) -> None:
        """The landed rollout ``row``'s tokens row, or the reject of its arrays."""
        self._tokens_or_reject(lambda: token_row(arrays, record.value), row, record, rejects)

    def _tokens_or_reject(
        self,
        make: Callable[[], dict[str, Any] | None],
        row: tuple[Any, ...],
        record: Record,
        rejects: list[Reject],
    ) -> None:
        """Keep the tokens row ``make`` gives for the landed ``row`` (none: no arrays), or
        reject only it, with its reason: the rollout stays landed."""
        try:
            tokens = make()
        except RowError as exc:
            raw = record.as_written()
            rejects.append(Reject(record.line, exc.reason, raw, table=ROLLOUT_TOKENS))
            return
        if tokens is not None:
            self._keep_tokens(tokens, row)

    def _keep_tokens(self, tokens: dict[str, Any], row: tuple[Any, ...]) -> None:
        """A tokens row, keyed as its landed rollout ``row``."""
        tokens.update(
            iteration=row[0],
            prompt_hash=row[1],
            sample_idx=row[2],
            source_file=row[22],
            source_line=row[23],
        )
        self._token_rows.append(tokens)

    def take_companion(self) -> pa.Table:
        """The ``rollout_tokens`` rows of the last ``build`` (appended.Builder)."""
        rows, self._token_rows = self._token_rows, []
        return tokens_table(rows)

    def _trace_rows(
        self, source: SourceFile, records: list[Record], rejects: list[Reject]
    ) -> list[tuple[Any, ...]]:
        """prime-rl episode records: one row per trace of the policy (see traces.py).

        An episode lands whole or not at all: a reason to reject one of its
        traces rejects its line.
        """
        subset = traces.layout(source.path).subset
        path = str(source.path.resolve())
        rows: list[tuple[Any, ...]] = []
        for record in records:
            try:
                found = traces.rollouts_of(record.value, subset)
                iteration = self._trace_iteration(source, found[0].step)
            except RowError as exc:
                raw = record.as_written()
                rejects.append(Reject(record.line, exc.reason, raw, exc.fixable_by))
                continue
            if self.tokenizer is not None:
                encodings = self.tokenizer.encode_batch([r.response for r in found])
                for rollout, encoding in zip(found, encodings, strict=True):
                    rollout.extra["response_tokens"] = len(encoding.ids)
            for rollout in found:
                out: list[Any] = [None] * _WIDTH
                out[3] = rollout.data_idx
                row = self._finish(
                    out,
                    iteration,
                    rollout.prompt,
                    rollout.response,
                    rollout.score,
                    rollout.rewards,
                    rollout.extra,
                    rollout.group_id,
                    path,
                    record.line,
                )
                rows.append(row)
                if self.companion is not None:
                    self._add_trace_tokens(row, rollout, record, rejects)
        return rows

    def _add_trace_tokens(
        self,
        row: tuple[Any, ...],
        rollout: traces.TraceRollout,
        record: Record,
        rejects: list[Reject],
    ) -> None:
        """The landed trace ``row``'s tokens row, or the reject of its arrays."""
        index = rollout.extra["trace_index"]
        self._tokens_or_reject(lambda: traces.token_arrays(rollout, index), row, record, rejects)

    def _trace_iteration(self, source: SourceFile, step: Any) -> int:
        """The step_N of the file's place, else the episode's run.work.step, else --iteration."""
        if source.claimed_iteration is not None:
            return source.claimed_iteration
        number = as_int("run.work.step", step)
        if number is None:
            number = self.options.iteration
        if number is None:
            raise RowError(
                "no iteration: the file is not in rollouts/step_N/... and the episode has no "
                "run.work.step",
                fixable_by="--iteration N",
            )
        return number

    def _score(self, records: list[Record], rejects: list[Reject]) -> list[Record]:
        from obs.ingest.rewards import score_rows  # here: the ingest workers never score

        assert self.options.reward is not None
        scored = score_rows(self.options.reward, [r.value for r in records])
        kept = []
        for record, outcome in zip(records, scored, strict=True):
            if outcome.error is not None:
                rejects.append(Reject(record.line, outcome.error, record.as_written()))
                continue
            row = record.value
            for name in SCORE_FIELDS:
                if name in row:
                    row[f"source_{name}"] = row.pop(name)
            row["reward"] = outcome.reward
            kept.append(record)
        return kept

    def _count_tokens(self, records: list[Record]) -> None:
        texts = []
        for record in records:
            value = next((record.value.get(n) for n in RESPONSE_FIELDS if record.value.get(n)), "")
            texts.append(value if isinstance(value, str) else "")
        encodings = self.tokenizer.encode_batch(texts)
        for record, encoding in zip(records, encodings, strict=True):
            record.value["response_tokens"] = len(encoding.ids)

    def _row(
        self,
        source: SourceFile,
        value: dict[str, Any],
        path: str,
        line: int,
        numeric: frozenset[str] = frozenset(),
    ) -> tuple[Any, ...]:
        """One canonical rollout (in ROLLOUT_TABLE's column order) from one source row.

        One pass over the row's fields: each known field goes to its slot
        (checked), every other field to ``extra``. Raises RowError when the row
        cannot land.
        """
        out: list[Any] = [None] * _WIDTH
        picks: dict[str, tuple[int, str, Any]] = {}  # role -> (rank, name, value)
        extra: dict[str, Any] = {}
        trl = source.format == "trl"
        scored = self.options.reward is not None
        for name, item in value.items():
            if trl:
                function = _trl_function(name, numeric, scored)
                if function is not None:
                    picks.setdefault("trl", (0, "", []))[2].append((function, item))
                    continue
            slot = _SLOTS.get(name)
            if slot is None:
                extra[name] = item
                continue
            role, rank = slot
            if role in _ALIASED:
                if item is None:
                    extra[name] = item
                    continue
                known = picks.get(role)
                if known is None or rank < known[0]:
                    if known is not None:
                        extra[known[1]] = known[2]
                    picks[role] = (rank, name, item)
                else:
                    extra[name] = item
            elif role == "double":
                if item is None:
                    continue
                if out[rank] is not None:
                    extra[name] = item  # V_i beside v_i: the second is kept, not lost
                else:
                    out[rank] = as_double(name, item)
            elif role == "int":
                out[rank] = as_int(name, item)
            else:
                picks[role] = (0, name, item)
        prompt = _pick_text(picks, "prompt", PROMPT_FIELDS[0], "the prompt")
        response = _pick_text(picks, "response", RESPONSE_FIELDS[0], "the response")
        rewards = None
        if trl and self.options.reward is None:
            rewards = _trl_rewards(picks.get("trl", (0, "", []))[2])
            if not rewards:
                raise RowError(
                    "no reward column with a value (TRL completions)",
                    fixable_by="--reward gsm8k (or package.module:function)",
                    whole_file=True,
                )
            # TRL's total: the weights given (--reward-weights), else TRL's default of 1
            # (the file holds no weights).
            weights = dict(self.options.reward_weights)
            score = math.fsum(weights.get(name, 1.0) * v for name, v in rewards)
            if "rewards" in picks:
                extra["rewards"] = picks["rewards"][2]
        else:
            chosen = picks.get("score")
            if chosen is None:
                raise RowError(
                    "missing required field 'score' (or 'reward')",
                    fixable_by="--reward gsm8k (or package.module:function)",
                    whole_file=True,
                )
            score = as_double(chosen[1], chosen[2])  # type: ignore[assignment]
            if trl:  # scored at ingest: the reward columns are still per-function rewards
                rewards = _trl_rewards(picks.get("trl", (0, "", []))[2])
            if "rewards" in picks:
                rewards = as_rewards(picks["rewards"][2])
                if rewards is None:
                    extra["rewards"] = picks["rewards"][2]
        # The iteration: from the file's name, else the row's field, else --iteration.
        iteration = source.claimed_iteration
        given = picks.get("iteration")
        if given is not None:
            number = as_int(given[1], given[2])
            if iteration is None:
                iteration = number
            elif number != iteration:
                extra[given[1]] = given[2]
        if iteration is None:
            iteration = self.options.iteration
        if iteration is None:
            raise RowError(
                "no iteration: no 'step' or 'iteration' field, none in the file name",
                fixable_by="--iteration N",
            )
        case = picks.get("reward_case", (0, "", None))[2]
        if case is not None and not isinstance(case, str):
            raise RowError(f"field 'reward_case' must be text, got {kind_of(case)}")
        self._instructions(picks, extra, out)
        if not AGENT_ROLLOUT_FIELDS.isdisjoint(extra):
            _agent_fields(extra)
        # The trainer's group: an agent's group_id (kept in extra too, where the
        # agentic marts read it), else the group of a verl dump's uid.
        group = extra.get("group_id")
        uid = extra.get("uid")
        if group is None and source.format == "dump" and isinstance(uid, str):
            group = verl_group(uid)
        out[10] = case
        if self.options.reward_weights and rewards:
            # the weights the user gave, where the reward marts find a rollout's own
            extra["reward_weights"] = dict(self.options.reward_weights)
        return self._finish(
            out, iteration, prompt, response, score, rewards, extra, group, path, line
        )

    def _finish(
        self,
        out: list[Any],
        iteration: int,
        prompt: str,
        response: str,
        score: float,
        rewards: list[tuple[str, float]] | None,
        extra: dict[str, Any],
        group: str | None,
        path: str,
        line: int,
    ) -> tuple[Any, ...]:
        """The columns every rollout fills the same way, then the row (numbered: it lands)."""
        prompt_hash = self._hash(prompt)
        out[0] = iteration
        out[1] = prompt_hash
        out[2] = self._number(iteration, prompt_hash)
        out[4] = prompt
        out[5] = response
        out[6] = score
        out[20] = rewards or None
        text = finite_json(extra) if extra else None
        out[21] = None if text == "{}" else text
        out[22] = path
        out[23] = line
        out[24] = len(response)
        out[25] = group
        return tuple(out)

    @staticmethod
    def _instructions(
        picks: dict[str, tuple[int, str, Any]], extra: dict[str, Any], out: list[Any]
    ) -> None:
        """IFEval fields: instruction ids, flags and kwargs (JSON); the ground truth (JSON)."""
        gts = picks.get("gts", (0, "", None))[2]
        ids = as_texts("instruction_id_list", picks.get("instruction_id_list", (0, "", None))[2])
        kwargs_text = None
        if isinstance(gts, dict):
            if ids is None:
                ids = as_texts("gts.instruction_id_list", gts.get("instruction_id_list"))
            if gts.get("kwargs") is not None:
                kwargs_text = finite_json(gts["kwargs"])
        out[16] = ids
        out[17] = as_flags(
            "follow_instruction_list", picks.get("follow_instruction_list", (0, "", None))[2]
        )
        out[18] = kwargs_text
        truth = picks.get("ground_truth", (0, "", None))[2]
        model = picks.get("reward_model")
        if model is not None:
            extra["reward_model"] = model[2]
            if truth is None and isinstance(model[2], dict):
                truth = model[2].get("ground_truth")
        if truth is not None:
            out[19] = finite_json(truth)
            if gts is not None:
                extra["gts"] = gts
        elif gts is not None:
            out[19] = finite_json(gts)


def _agent_fields(extra: dict[str, Any]) -> None:
    """Check a multi-turn rollout's fields in ``extra``, numbers made numbers; RowError if bad.

    Turn lists hold one finite number per turn; counts are whole and not
    negative; exit_reason is text; group_id is text (a number becomes text).
    """
    for name in TURN_LISTS:
        value = extra.get(name)
        if value is None:
            continue
        if not isinstance(value, list):
            raise RowError(
                f"field {name!r} must be a list of numbers (one per turn), got {kind_of(value)}"
            )
        checked = []
        for index, item in enumerate(value):
            if item is None:
                raise RowError(
                    f"field {name!r} has null at turn {index + 1}; give one number per turn"
                )
            checked.append(as_double(f"{name}[{index}]", item))
        extra[name] = checked
    for name in AGENT_COUNTS:
        value = extra.get(name)
        if value is None:
            continue
        number = as_int(name, value)
        if number is not None and number < 0:
            raise RowError(f"field {name!r} must not be negative, got {number}")
        extra[name] = number
    reason = extra.get("exit_reason")
    if reason is not None and not isinstance(reason, str):
        raise RowError(
            "field 'exit_reason' must be text (answered, idk, error, exhausted), "
            f"got {kind_of(reason)}"
        )
    group = extra.get("group_id")
    if group is not None:
        if isinstance(group, bool) or not isinstance(group, str | int):
            raise RowError(f"field 'group_id' must be text or a whole number, got {kind_of(group)}")
        extra["group_id"] = str(group)


def _pick_text(picks: dict[str, tuple[int, str, Any]], role: str, first: str, label: str) -> str:
    chosen = picks.get(role)
    if chosen is None:
        raise RowError(f"missing required field {first!r} ({label})")
    if not isinstance(chosen[2], str):
        raise RowError(f"field {chosen[1]!r} must be text, got {kind_of(chosen[2])}")
    return chosen[2]


# Column positions in ROLLOUT_TABLE, and each source field's role and slot.
_WIDTH = len(ROLLOUT_TABLE.names)
_COLUMN = {name: index for index, name in enumerate(ROLLOUT_TABLE.names)}
_ALIASED = frozenset({"prompt", "response", "score", "iteration"})
# _row writes these positions directly; they must stay where the schema puts them.
assert [_COLUMN[c] for c in ("iteration", "prompt_hash", "sample_idx", "prompt", "response")] == [
    0,
    1,
    2,
    4,
    5,
]
assert [_COLUMN[c] for c in ("score", "reward_case", "instruction_ids")] == [6, 10, 16]
assert [
    _COLUMN[c]
    for c in (
        "instruction_followed",
        "instruction_kwargs",
        "ground_truth",
        "rewards",
        "extra",
        "source_file",
        "source_line",
        "response_chars",
        "group_id",
    )
] == list(range(17, 26))
_SLOTS: dict[str, tuple[str, int]] = {
    **{name: ("prompt", rank) for rank, name in enumerate(PROMPT_FIELDS)},
    **{name: ("response", rank) for rank, name in enumerate(RESPONSE_FIELDS)},
    **{name: ("score", rank) for rank, name in enumerate(SCORE_FIELDS)},
    **{name: ("iteration", rank) for rank, name in enumerate(ITERATION_FIELDS)},
    **{name: ("double", _COLUMN[column]) for name, column in DOUBLE_FIELDS.items()},
    **{name: ("int", _COLUMN[column]) for name, column in INT_FIELDS.items()},
    **{
        name: (name, 0)
        for name in (
            "reward_case",
            "rewards",
            "gts",
            "instruction_id_list",
            "follow_instruction_list",
            "ground_truth",
            "reward_model",
        )
    },
}


# Text columns that are never null: built from one joined buffer (see _text_array).
_PLAIN_TEXT = frozenset({"prompt_hash", "prompt", "response", "source_file"})


def _to_table(rows: list[tuple[Any, ...]]) -> pa.Table:
    """Rows in ROLLOUT_TABLE's column order as one arrow table."""
    schema = ROLLOUT_TABLE.schema
    if not rows:
        return schema.empty_table()
    columns = list(zip(*rows, strict=True))
    arrays = [
        _text_array(values) if f.name in _PLAIN_TEXT else pa.array(values, type=f.type)
        for values, f in zip(columns, schema, strict=True)
    ]
    return pa.Table.from_arrays(arrays, schema=schema)


def _text_array(values: Sequence[str]) -> pa.Array:
    """A string array from non-null texts: one join and one encode, not one per text.

    When the joined text is ASCII, each text's UTF-8 length is its length, so
    the offsets come from the lengths; otherwise pyarrow converts text by text.
    """
    joined = "".join(values)
    data = joined.encode("utf-8")
    if len(data) != len(joined) or len(data) >= 2**31:
        return pa.array(values, type=pa.string())
    offsets = np.zeros(len(values) + 1, dtype=np.int32)
    np.cumsum(np.fromiter(map(len, values), dtype=np.int32, count=len(values)), out=offsets[1:])
    return pa.StringArray.from_buffers(len(values), pa.py_buffer(offsets), pa.py_buffer(data))


def _trl_function(name: str, numeric: frozenset[str], scored: bool) -> str | None:
    """The reward function a TRL completions field holds, or None for any other field.

    TRL writes ``step``, ``prompt``, ``completion``, ``advantage`` (and images)
    and one numeric column per reward function, named after the function:
    ``reward`` and ``score`` are function names there too, not the score. With
    ``--reward`` the row's ``reward`` is the reward given at ingest, and the
    file's own column of that name was kept as ``source_reward`` (``_score``).
    """
    if scored:
        if name in SCORE_FIELDS:
            return None
        original = name.removeprefix("source_")
        if original != name and original in SCORE_FIELDS and original in numeric:
            return original
    if name in numeric and name not in TRL_COLUMNS:
        return name
    return None


def _trl_rewards(columns: list[tuple[str, Any]]) -> list[tuple[str, float]]:
    """TRL's per-function reward columns (numeric columns TRL does not name itself).

    A null or NaN is a function that returned None for the sample: no key.
    """
    pairs = []
    for name, number in columns:
        if number is None or (isinstance(number, float) and math.isnan(number)):
            continue
        pairs.append((name, as_double(name, number)))
    return pairs  # type: ignore[return-value]


# --------------------------------------------------------------------------- entry point


def load_tokenizer(path: Path) -> Any:
    """A local ``tokenizer.json`` (Hugging Face ``tokenizers``), for response token counts."""
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise IngestError(
            f"{path}: --tokenizer needs the tokenizers package: "
            "pip install 'obs-warehouse[tokenizers]'"
        ) from exc
    try:
        return Tokenizer.from_file(str(path))
    except Exception as exc:
        raise IngestError(f"{path}: not a tokenizer.json ({exc})") from exc


def ingest_rollouts(
    path: Path,
    *,
    lake: Path,
    run_id: str | None = None,
    iterations: Sequence[int] | None = None,
    iteration: int | None = None,
    reward: str | None = None,
    tokenizer: Path | None = None,
    strict: bool = False,
    on_file: Callable[[FileResult], None] | None = None,
    workers: int | None = None,
    reward_weights: dict[str, float] | None = None,
    gzip_limit: GzipLimit | None = None,
) -> IngestResult:
    """Land every rollout file under ``path``; see the module docstring.

    ``workers``: processes reading files in parallel (default: the cores, up to
    4, for calls of 16 MiB or more; 1 reads in this process). ``reward_weights``:
    each reward function's weight in the total the trainer optimised, kept on
    every rollout that has per-function rewards (``extra.reward_weights``) and
    used for a TRL completion's score (default 1 each). ``gzip_limit``: how far
    a ``.gz`` file may expand before it is cut (default: ``GzipLimit.from_env``,
    the ratio OBS_GZIP_MAX_RATIO sets, else 50).
    """
    run = lake_files.check_run_id(run_id) if run_id is not None else default_run_id(path)
    if reward is not None:
        from obs.ingest.rewards import load_reward  # here: the ingest workers never score

        load_reward(reward)  # a bad name fails before any file is read
    if tokenizer is not None:
        load_tokenizer(tokenizer)  # a bad file fails before any file is read
    options = RolloutOptions(
        iteration=iteration,
        reward=reward,
        tokenizer=tokenizer,
        reward_weights=tuple(sorted((reward_weights or {}).items())),
    )
    passed_over: list[tuple[Path, str]] = []
    plan = plan_rollouts(
        path, run, iterations=iterations, iteration=iteration, passed_over=passed_over
    )
    if reward_weights and any(source.format == "traces" for source in plan):
        raise IngestError(
            f"{path}: --reward-weights weights rows that carry none; prime-rl traces carry "
            "their own (ingest them without --reward-weights)"
        )
    if reward is not None and any(source.format == "traces" for source in plan):
        raise IngestError(
            f"{path}: --reward scores rows that carry no reward; prime-rl traces carry "
            "their own (ingest them without --reward)"
        )
    result = land(
        plan,
        RolloutFactory(options),
        lake,
        strict=strict,
        on_file=on_file,
        workers=workers,
        gzip_limit=gzip_limit,
    )
    # Entries of the folder not read: each a line of its own, the rest of the call landed.
    for entry, why in passed_over:
        result.files.append(FileResult(entry, run, status="passed over", note=why))
    return result
