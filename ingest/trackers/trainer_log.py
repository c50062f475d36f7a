"""An agentic GRPO trainer's console log (its stdout captured to a file), as keyed records.

A multi-turn e-mail search agent's GRPO trainer prints, among much else, the
blocks this reader keeps:

* ``📍 Step 10/200`` at a step's start (``📍 STEP 10`` in verbose mode) and
  ``📍 Step 10/200 (5.0%) | ETA: 0:09:30`` at its end: the step the lines
  in between belong to. A start line of a step the log already showed is a
  restarted trainer: that step's records are replaced by the new ones.
* the step's group summary -> one ``step_groups`` row per step: ``📊 Collecting
  3 rollouts for 8 queries...``, ``Groups: 6/8 kept (2 filtered), 18/48
  finished early``, the verbose ``📊 Group Summary:`` bullets, ``✓ Grad norm
  (clipped)``, ``✓ Tokens trained``, ``✓ Total loss`` and the ``⚠️  All
  groups filtered out!`` warning;
* each ``Rollout | Turn  1 | ...`` table -> ``turn_advantages`` rows, one per
  printed cell (a ``---`` cell is a turn the rollout did not take: no row). Its
  group is the last ``📊 GROUP g/G COMPLETED`` line of its step, else
  ``table<k>`` (its order within the step). Tables printed while the trainer
  collects eval rollouts (after ``ROLLOUT COLLECTION (EVAL ...)``) belong to no
  training step and are left out;
* each eval block (``📊 EVALUATION RESULTS`` or ``📊 Detailed Rubric
  Statistics:`` up to ``💾 Eval stats saved to: ...``) -> one ``eval_steps``
  row. Its step is the ``Checkpoint:`` line's, else the number in the saved
  file's name, else the current step. The trainer prints the block and then
  logs a copy of it: the two copies of one eval are merged (the later wins).

Lines may carry a logging prefix (``INFO:name:``, ``%(asctime)s - name -
LEVEL - ``, loguru's, ``[time] LEVEL``, rich's), ANSI colours, CRLF ends,
progress-bar carriage returns (the text after the last one is the line), a
byte-order mark and invalid UTF-8 (replaced). Lines are keyed on their ASCII
text; the emoji may be missing or mangled. Everything else is skipped.

Bad input: a table with a cell that is neither a number nor ``---``, more
cells than turns, or a rollout printed twice is rejected whole (its header's
line; the reason names the row); a recognised line with a malformed number
rejects its record (the line; the reason quotes it); records with no step
are rejected. The rest of the log still lands. A last line with no newline
is still being written and is left for the next ingest, as is a table or
eval block the log ends inside (``truncated``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from obs.core.agent_log import ADVANTAGE_TABLE, GROUP_SUMMARY, RUBRIC_STATISTICS
from obs.ingest.errors import IngestError
from obs.ingest.schema import EVAL_STEPS, STEP_GROUPS, TURN_ADVANTAGES
from obs.ingest.trackers.base import RecordBlock, RunHistory, relative_name, safe_run_id
from obs.ingest.trackers.trainer_log_fields import (
    COLLECTING,
    EVAL_FIELDS,
    SUMMARY_FIELDS,
    AdvantageTable,
    EvalBlock,
    Malformed,
    Occurrence,
    after,
    all_filtered,
    as_float,
    as_int,
    collecting,
    grad_norm,
    groups_fields,
    tokens_trained,
    total_loss,
)

FORMAT = "trainer-log"
FORMATS = {
    FORMAT: "an agentic GRPO trainer's console log "
    "(turn-advantage tables, group summaries, eval statistics)"
}
CHUNK = 8 << 20  # bytes read at a time
SNIFF_BYTES = 4 << 20  # find() looks for a block marker in the first 4 MiB
BINARY_SNIFF = 64 << 10  # a NUL byte in the first 64 KiB: not a text log
GENERIC_STEMS = frozenset({"train", "training", "stdout", "output", "log", "console", "nohup"})
LOG_SUFFIXES = frozenset({".log", ".txt", ".out", ".err"})
QUOTED = 80  # characters of a line a reject's reason quotes

TABLE_NO_STEP = "turn-advantage table with no 'Step N' line before it"
EVAL_NO_STEP = "eval statistics with no step"
TRUNCATED = "the log ends inside a block still being written; it lands once complete"
PARTIAL = "its last line is not complete yet; it lands once it is written"

# --------------------------------------------------------------------------- lines

MARKERS = (
    ADVANTAGE_TABLE.encode(),
    f"{GROUP_SUMMARY}:".encode(),
    RUBRIC_STATISTICS.encode(),
)
GROUPS_MARKER = re.compile(rb"Groups: \d+/\d+ kept")
# A line outside every block matters only if it holds one of these (cheap, on bytes).
PREFILTER = re.compile(
    rb"Step|STEP|GROUP|Group|Rollout|ROLLOUT|Collecting|Grad norm|Tokens trained"
    rb"|Total loss|All groups|EVALUATION|Detailed Rubric"
)
ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
ANSI_BYTES = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
LEVEL = r"(?:TRACE|DEBUG|INFO|NOTICE|SUCCESS|WARNING|WARN|ERROR|CRITICAL|FATAL)"
STAMP = r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
NAME = r"[\w.<>-]+"
END = r"(?:\s|$)"  # a prefix's last space (gone when an editor trimmed an empty message)
PREFIX = re.compile(
    rf"""(?:
      {LEVEL}(?::(?:{NAME})?:|\s+-{END})                  # INFO:grpo.trainer:  /  INFO -
    | {STAMP}\s*(?:
          \|\s*{LEVEL}\s*\|\s*[^\s|]+\s+-{END}          # loguru: | INFO | name:fn:12 -
        | -\s+(?:{NAME}\s+-\s+)?{LEVEL}\s+-{END}        # asctime - name - LEVEL -
        | {LEVEL}{END}                                 # asctime LEVEL
      )
    | \[[\d/:.,T\ -]{{8,32}}\]\s*(?:\[{NAME}\]\s*)?(?:\[{LEVEL}\](?:\s+-)?|{LEVEL}){END}
                                                   # [time] INFO, rich, [time][name][INFO] -
    | \s{{8,}}{LEVEL}{END}                              # rich, its time left out
    )""",
    re.VERBOSE,
)
RICH_PATH = re.compile(r"[\w.<>-]+\.py:\d+")  # rich's "file.py:120" at the right
LEAD = re.compile(r"\W*")  # emoji, bullets, ticks, spaces, a mangled emoji's "?"
RULE = re.compile(r"(?:─{10,}|-{10,}|={10,}|━{10,})")

STEP_LINE = re.compile(r"Step ([^\s/]+) ?/ ?([^\s/(|]+)(?:\s*([(|].*))?$")
VERBOSE_STEP = re.compile(r"STEP (\d+)$")
GROUP_LINE = re.compile(r"GROUP ([^\s/]+)/(\S+)")
HEADER = re.compile(r"Rollout\s*\|")
HEADER_CELL = re.compile(r"Turn\s*(\d+)")
ROW_START = re.compile(r"[^\s|]+\s*\|")


def message(raw: bytes) -> str:
    """A physical line's message: decoded, without colours, logging prefix and ends."""
    line = raw.rstrip(b"\r\n")
    cut = line.rfind(b"\r")
    if cut >= 0:  # a progress bar redrawn in place: the terminal shows the last part
        line = line[cut + 1 :]
    text = line.decode("utf-8", "replace")
    if "\x1b" in text:
        text = ANSI.sub("", text)
    text = text.lstrip("\ufeff")
    prefix = PREFIX.match(text)
    if prefix is None:
        return text.strip()
    text = text[prefix.end() :].strip()
    # (found without a searching regex: one over a long run of spaces backtracks)
    cut = text.rfind(" ")
    if cut > 0 and text[cut - 1] == " " and RICH_PATH.fullmatch(text, cut + 1):
        text = text[:cut].rstrip()
    return text


def _body(text: str) -> str:
    """The text without its leading emoji, bullets and spaces."""
    match = LEAD.match(text)
    return text[match.end() :] if match else text


def quoted(text: str) -> str:
    return "'" + (text if len(text) <= QUOTED else text[:QUOTED] + "...") + "'"


# --------------------------------------------------------------------------- finding


def find(path: Path) -> list[tuple[str, Path]]:
    """The file itself when it is a trainer log; a folder is never searched."""
    return [(FORMAT, path)] if path.is_file() and is_trainer_log(path) else []


def is_trainer_log(path: Path) -> bool:
    """Whether the file's first 4 MiB hold one of the trainer's block markers."""
    try:
        with path.open("rb") as handle:
            head = handle.read(SNIFF_BYTES)
    except OSError:
        return False
    if b"\x00" in head[:BINARY_SNIFF]:
        return False
    if b"\x1b" in head:
        head = ANSI_BYTES.sub(b"", head)
    return any(marker in head for marker in MARKERS) or GROUPS_MARKER.search(head) is not None


def stat_files(fmt: str, origin: Path) -> list[Path]:
    return [origin]


def run_name(origin: Path, root: Path) -> str:
    """The file's name, its folder's for a generic one (``train.log``), below ``root``."""
    stem = origin.stem if origin.suffix.lower() in LOG_SUFFIXES else origin.name
    folder = relative_name(origin.parent, root)
    if stem.lower() in GENERIC_STEMS:
        return folder
    base = root.resolve()
    inside = origin.resolve().parent != (base.parent if base.is_file() else base)
    return f"{folder}.{stem}" if inside else stem


# --------------------------------------------------------------------------- reading


def read(fmt: str, origin: Path, root: Path) -> list[RunHistory]:
    name = run_name(origin, root)
    history = RunHistory(run_id=safe_run_id(name), source=FORMAT, origin=origin, name=name)
    reader = _Reader(history, origin)
    try:
        with origin.open("rb") as handle:
            partial = _scan(handle, reader)
    except OSError as exc:
        raise IngestError(f"{origin}: cannot be read ({exc})") from exc
    reader.finish(partial_line=bool(partial.strip()))
    return [history]


def _scan(handle: BinaryIO, reader: _Reader) -> bytes:
    """Feed ``reader`` the lines it needs; the last line's bytes when it has no newline.

    Outside a block only a line holding a keyword can matter, so the search
    for the next one runs over a whole chunk (newlines are only counted); in
    a block every line goes to the reader.
    """
    buffer = b""
    number = 1  # the line buffer[0] starts
    while chunk := handle.read(CHUNK):
        buffer += chunk
        end = buffer.rfind(b"\n") + 1  # the complete lines
        at = 0
        while at < end:
            if reader.idle:
                hit = PREFILTER.search(buffer, at, end)
                if hit is None:
                    number += buffer.count(b"\n", at, end)
                    break
                newline = buffer.rfind(b"\n", at, hit.start())
                start = at if newline < 0 else newline + 1
                number += buffer.count(b"\n", at, start)
                at = start
            stop = buffer.index(b"\n", at, end) + 1
            reader.line(number, buffer[at:stop])
            number += 1
            at = stop
        buffer = buffer[end:]
    return buffer


class _Reader:
    """The log's state as its lines go by: the step, the open block, the records so far."""

    def __init__(self, history: RunHistory, origin: Path) -> None:
        self.history = history
        self.origin = origin
        self.occurrence = Occurrence(0, None)
        self.table: AdvantageTable | None = None
        self.eval: EvalBlock | None = None
        self.summary = False
        self.blocks: dict[tuple[str, tuple[Any, ...]], RecordBlock] = {}
        self.eval_merge: dict[tuple[Any, ...], tuple[int, dict[str, Any]]] = {}
        self.steps_seen: set[int] = set()
        self.restarted: set[int] = set()
        self.ungrouped = 0
        self.eval_tables = 0
        self.repeated_groups = 0

    # ---- dispatch

    @property
    def idle(self) -> bool:
        """No block is open: only a line holding a keyword (PREFILTER) can matter."""
        return self.table is None and self.eval is None and not self.summary

    def line(self, number: int, raw: bytes) -> None:
        """One complete line (its newline included)."""
        text = message(raw)
        if self.table is not None and self._table_line(number, text):
            return
        if self.eval is not None and self._eval_line(number, text, raw):
            return
        if self.summary and self._summary_line(number, text, raw):
            return
        self._plain(number, text, raw)

    def _plain(self, number: int, text: str, raw: bytes) -> None:
        body = _body(text)
        if not body:
            return
        head = body[0]
        if head == "S" and self._step(number, body):
            return
        if head == "R":
            if HEADER.match(body):
                self._open_table(number, body)
            elif body.startswith("ROLLOUT COLLECTION"):
                # Eval rollouts print group tables too; they are no training step's.
                if "(EVAL" in body:
                    self.occurrence.eval_rollouts = True
                elif "(TRAIN" in body or "COMPLETE" in body:
                    self.occurrence.eval_rollouts = False
            return
        if body.startswith(("EVALUATION RESULTS", "Detailed Rubric Statistics")):
            self.eval = EvalBlock(number, self.occurrence)
            self._eval_line(number, text, raw)
            return
        if head == "G":
            if body.startswith("Group Summary"):
                self.summary = True
            elif body.startswith("GROUP "):
                self._group(body)
            elif body.startswith("Groups:") and " kept" in body:
                self._step_field(number, text, raw, groups_fields, body)
            elif body.startswith("Grad norm"):
                self._step_field(number, text, raw, grad_norm, body)
            return
        if body.startswith("Collecting "):
            match = COLLECTING.match(body)
            if match is not None:
                self._step_field(number, text, raw, collecting, match)
        elif body.startswith("Tokens trained"):
            self._step_field(number, text, raw, tokens_trained, body)
        elif body.startswith("Total loss"):
            self._step_field(number, text, raw, total_loss, body)
        elif body.startswith("All groups filtered"):
            self._step_field(number, text, raw, all_filtered, body)

    # ---- steps

    def _step(self, number: int, body: str) -> bool:
        """A Step line: a new stretch of the log, or the end line of the current one."""
        top: int | None = None
        match = STEP_LINE.match(body) or VERBOSE_STEP.match(body)
        if match is None:
            return False
        end = match.re is STEP_LINE and match.group(3) is not None
        try:
            step: int | None = as_int(match.group(1))
            if match.re is STEP_LINE:
                top = as_int(match.group(2))
        except Malformed:
            step = None
        current = self.occurrence
        if (
            end
            and step is not None
            and current.step == step
            and current.started
            and not current.ended
        ):
            current.ended = True
            current.max_steps = top if top is not None else current.max_steps
            return True
        self._close_occurrence()
        following = Occurrence(current.index + 1, step, top, started=not end, ended=end)
        if step is None:
            following.unreadable = f" (line {number}, {quoted(body)}, is not a readable one)"
        else:
            if step in self.steps_seen:
                self._drop_step(step)
                self.restarted.add(step)
            self.steps_seen.add(step)
        self.occurrence = following
        return True

    def _drop_step(self, step: int) -> None:
        """A restarted step: the records its earlier run printed give way to the new ones."""
        for key in [k for k in self.blocks if k[0] != EVAL_STEPS and k[1][0] == step]:
            del self.blocks[key]

    def _close_occurrence(self) -> None:
        occurrence = self.occurrence
        if not occurrence.first or occurrence.rejected:
            return
        raw = "\n".join(occurrence.raw)
        if occurrence.step is None:
            self._reject(occurrence.first, occurrence.no_step(), raw, STEP_GROUPS)
            return
        row: dict[str, Any] = {"step": occurrence.step}
        if occurrence.max_steps is not None:
            row["max_steps"] = occurrence.max_steps
        row.update(occurrence.fields)
        if occurrence.fields.get("all_filtered") and "groups_kept" not in row:
            row["groups_kept"] = 0
        if "trainable_tokens" not in row and occurrence.tokens_trained is not None:
            row["trainable_tokens"] = occurrence.tokens_trained
        self._put(STEP_GROUPS, (occurrence.step,), [row], occurrence.first)

    def _step_field(
        self, number: int, text: str, raw: bytes, read_field: Callable[..., None], found: Any
    ) -> None:
        """One group-summary line into the current step's record (or its reject)."""
        occurrence = self.occurrence
        if not occurrence.first:
            occurrence.first = number
        if len(occurrence.raw) < 64:
            occurrence.raw.append(_raw(raw))
        if occurrence.rejected:
            return
        try:
            read_field(occurrence, found)
        except Malformed:
            occurrence.rejected = True
            reason = f"malformed number in {quoted(text)}"
            self._reject(number, reason, _raw(raw), STEP_GROUPS)

    # ---- group summary

    def _summary_line(self, number: int, text: str, raw: bytes) -> bool:
        if not text or RULE.fullmatch(text):
            self.summary = False
            return True
        body = _body(text)
        for label, read_field in SUMMARY_FIELDS:
            if body.startswith(label):
                self._step_field(number, text, raw, read_field, body)
                return True
        if text[0] in "-*•·":
            return True  # a bullet this reader does not keep
        self.summary = False
        return False

    # ---- turn-advantage tables

    def _group(self, body: str) -> None:
        occurrence = self.occurrence
        if occurrence.eval_rollouts:
            return
        match = GROUP_LINE.match(body)
        if match is None:
            return
        try:
            occurrence.group = (str(as_int(match.group(1))), as_int(match.group(2)))
        except Malformed:
            occurrence.group = None

    def _open_table(self, number: int, header: str) -> None:
        occurrence = self.occurrence
        cells = header.split("|")[1:]
        if cells and not cells[-1].strip():
            cells.pop()
        turns: list[int] = []
        error = ""
        for cell in cells:
            match = HEADER_CELL.fullmatch(cell.strip())
            turn = int(match.group(1)) if match is not None and len(match.group(1)) < 7 else 0
            if turn < 1 or (turns and turn <= turns[-1]):
                error = f"header cell {cell.strip()!r} is not the next 'Turn N'"
                break
            turns.append(turn)
        skip = occurrence.eval_rollouts
        if not skip:
            occurrence.tables += 1
        if occurrence.group is not None:
            group_id, groups_in_step = occurrence.group[0], occurrence.group[1]
        else:
            group_id, groups_in_step = f"table{occurrence.tables}", None
        self.table = AdvantageTable(
            number, header, turns, occurrence, group_id, groups_in_step, skip, error=error
        )

    def _table_line(self, number: int, text: str) -> bool:
        table = self.table
        assert table is not None
        if RULE.fullmatch(text):
            if not table.rollouts and not table.underlined:
                table.underlined = True  # the rule under the header
            else:
                self._close_table()
            return True
        if HEADER.match(text) or ROW_START.match(text) is None:
            self._close_table()
            return False
        if table.error:
            return True
        cells = text.split("|")
        first, rest = cells[0].strip(), cells[1:]
        if rest and not rest[-1].strip():
            rest.pop()
        table.underlined = True
        try:
            rollout = as_int(first)
        except Malformed:
            rollout = 0
        if rollout < 1:
            return self._bad_row(number, text, f"rollout {first!r} is not a rollout number")
        if rollout in table.rollouts:
            earlier = table.rollouts[rollout]
            return self._bad_row(
                number, text, f"rollout {rollout} is printed again (first at line {earlier})"
            )
        if len(rest) > len(table.turns):
            return self._bad_row(
                number, text, f"{len(rest)} cells, but the header has {len(table.turns)} turns"
            )
        table.rollouts[rollout] = number
        rows = []
        for turn, cell in zip(table.turns, rest, strict=False):
            value = cell.strip()
            if value == "---":
                continue
            try:
                advantage = as_float(value)
            except Malformed:
                return self._bad_row(
                    number, text, f"cell {value!r} (turn {turn}) is not a number or '---'"
                )
            rows.append({"sample_idx": rollout - 1, "turn": turn, "advantage": advantage})
        for row in rows:
            row["source_line"] = number
        table.rows.extend(rows)
        return True

    def _bad_row(self, number: int, text: str, what: str) -> bool:
        table = self.table
        assert table is not None
        table.error = f"row at line {number}: {what}"
        table.bad_row = text
        return True

    def _close_table(self) -> None:
        table = self.table
        assert table is not None
        self.table = None
        occurrence = table.occurrence
        if table.skip:
            self.eval_tables += bool(table.rows)
            return
        if table.error:
            raw = table.header + ("\n" + table.bad_row if table.bad_row else "")
            reason = f"turn-advantage table: {table.error}"
            self._reject(table.line, reason, raw, TURN_ADVANTAGES)
            return
        if occurrence.step is None:
            reason = TABLE_NO_STEP + occurrence.unreadable
            self._reject(table.line, reason, table.header, TURN_ADVANTAGES)
            return
        if not table.rows:
            return
        if table.groups_in_step is None:
            self.ungrouped += 1
        if table.group_id in occurrence.groups_seen:
            self.repeated_groups += 1
        occurrence.groups_seen.add(table.group_id)
        key = {"step": occurrence.step, "group_id": table.group_id}
        if table.groups_in_step is not None:
            key["groups_in_step"] = table.groups_in_step
        rows = [{**key, **row} for row in table.rows]
        self._put(TURN_ADVANTAGES, (occurrence.step, table.group_id), rows, table.line)

    # ---- eval blocks

    def _eval_line(self, number: int, text: str, raw: bytes) -> bool:
        block = self.eval
        assert block is not None
        if not text or RULE.fullmatch(text):
            return True
        body = _body(text)
        known = next(((k, f) for k, f in EVAL_FIELDS if body.startswith(k)), None)
        if known is None:
            self._close_eval()
            return False
        label, read_field = known
        if label == "EVALUATION RESULTS":
            if block.results or block.rubric or block.fields:
                self._close_eval()
                return False
            block.results = True
            return True
        if label == "Detailed Rubric Statistics":
            if block.rubric:
                self._close_eval()
                return False
            block.rubric = True
            return True
        if len(block.raw) < 64:
            block.raw.append(_raw(raw))
        if not block.rejected:
            try:
                read_field(block, after(body, label))
            except Malformed:
                block.rejected = True
                reason = f"malformed number in {quoted(text)}"
                self._reject(number, reason, _raw(raw), EVAL_STEPS)
        if label == "Eval stats saved to:":
            self._close_eval()
        return True

    def _close_eval(self) -> None:
        block = self.eval
        assert block is not None
        self.eval = None
        if block.rejected or not (block.fields or block.extra):
            return
        step = block.checkpoint
        if step is None:
            step = block.file_step
        if step is None:
            step = block.occurrence.step
        if step is None:
            self._reject(block.line, EVAL_NO_STEP, "\n".join(block.raw), EVAL_STEPS)
            return
        key = (step, False)
        fields, extra = dict(block.fields), dict(block.extra)
        earlier = self.blocks.get((EVAL_STEPS, key))
        merged = self.eval_merge.get(key)
        line = block.line
        if earlier is not None and merged is not None and merged[0] == block.occurrence.index:
            # The printed block and the logged copy of one eval: one record, the later wins.
            fields = {**earlier.rows[0], **fields}
            extra = {**merged[1], **extra}
            line = earlier.line
        self.eval_merge[key] = (block.occurrence.index, extra)
        row: dict[str, Any] = {"step": step, "is_baseline": False}
        row.update({k: v for k, v in fields.items() if k not in row})
        row["extra"] = json.dumps(extra, ensure_ascii=False, sort_keys=True) if extra else None
        self._put(EVAL_STEPS, key, [row], line)

    # ---- records

    def _put(self, table: str, key: tuple[Any, ...], rows: list[dict[str, Any]], line: int) -> None:
        """A record; one of the same table and key before it gives way (moved to the end)."""
        self.blocks.pop((table, key), None)
        self.blocks[(table, key)] = RecordBlock(table, rows, self.origin, line)

    def _reject(self, line: int, reason: str, raw: str, table: str) -> None:
        self.history.reject(self.origin, line, reason, raw, table=table)

    def finish(self, partial_line: bool) -> None:
        cut = False
        if self.table is not None:
            self.table = None  # no rule under it yet: it lands once complete
            cut = True
        if self.eval is not None:
            self.eval = None
            cut = True
        self.summary = False
        self._close_occurrence()
        self.history.records.extend(self.blocks.values())
        notes = self.history.notes
        if self.ungrouped:
            notes.append(
                f"turn-advantage tables with no 'GROUP g/G' line at their step: "
                f"{self.ungrouped:,}; they are named table1, table2, ... by their order "
                "within the step"
            )
        if self.repeated_groups:
            notes.append(
                "turn-advantage tables of a group printed before at their step: "
                f"{self.repeated_groups:,}; the last is kept"
            )
        if self.eval_tables:
            notes.append(
                "turn-advantage tables printed while collecting eval rollouts: "
                f"{self.eval_tables:,}; they belong to no training step and are left out"
            )
        if self.restarted:
            shown = ", ".join(str(s) for s in sorted(self.restarted)[:5])
            more = ", ..." if len(self.restarted) > 5 else ""
            notes.append(
                f"steps that start more than once (a restarted trainer?): {shown}{more}; "
                "the records of each one's last start are kept"
            )
        if cut or partial_line:
            self.history.truncated = True
            notes.append(TRUNCATED if cut else PARTIAL)


def _raw(raw: bytes) -> str:
    return raw.rstrip(b"\r\n").decode("utf-8", "replace")
