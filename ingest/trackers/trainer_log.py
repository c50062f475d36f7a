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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from obs.core.agent_log import ADVANTAGE_TABLE, GROUP_SUMMARY, RUBRIC_STATISTICS
from obs.ingest.errors import IngestError
from obs.ingest.schema import EVAL_STEPS, STEP_GROUPS, TURN_ADVANTAGES
from obs.ingest.trackers.base import RecordBlock, RunHistory, relative_name, safe_run_id

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
INT_CHARS = 26  # the longest count read (2**63 with thousands separators)

NO_STEP = "no 'Step N' line before it"
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

COLLECTING = re.compile(r"Collecting (\S+) rollouts? for (\S+) quer")
GROUPS = re.compile(
    r"Groups: ([^\s/]+)/([^\s/]+) kept \(([^\s)]+) filtered\)"
    r"(?:,\s*([^\s/]+)/([^\s/]+) finished early)?"
)
INT_TEXT = re.compile(r"\d{1,3}(?:,\d{3})+|\d+")
FLOAT_TEXT = re.compile(
    r"[+-]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
    r"|[+-]?(?:nan|inf|infinity)",
    re.IGNORECASE,
)
SECONDS = re.compile(r"(\S+?)(?:\s*(?:seconds?|secs?|s))?(?:\s|\(|$)")
EVAL_FILE = re.compile(r"eval_step_(\d+)\.json\b")
REPEATED = re.compile(r"([^\s(]+)\s*\(total:\s*(\S+?),\s+unique:\s*([^\s)]+)\)")


class _Malformed(ValueError):
    """A recognised line whose numbers cannot be read."""


def _int(text: str) -> int:
    text = text.strip()
    if len(text) > INT_CHARS or not INT_TEXT.fullmatch(text):
        raise _Malformed(text)
    return int(text.replace(",", ""))


def _float(text: str) -> float:
    text = text.strip()
    if not FLOAT_TEXT.fullmatch(text):
        raise _Malformed(text)
    return float(text.replace(",", ""))


def _seconds(text: str) -> float:
    """``45.3s``, ``45.3 s``, ``45.3 seconds`` (and trailing words) as seconds."""
    match = SECONDS.match(text.strip())
    if match is None:
        raise _Malformed(text)
    return _float(match.group(1))


def _after(body: str, label: str) -> str:
    """The text after ``label`` (which ``body`` starts with)."""
    return body[len(label) :].strip()


def _fraction(text: str) -> tuple[int, int]:
    """``95/100 (95.0%)`` -> (95, 100)."""
    part, _, rest = text.partition("/")
    return _int(part), _int(rest.split("(")[0])


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


def _quoted(text: str) -> str:
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


@dataclass
class _Occurrence:
    """One stretch of the log under one ``Step`` line (or before the first one)."""

    index: int
    step: int | None
    max_steps: int | None = None
    started: bool = False  # opened by a start line (its end line continues it)
    ended: bool = False
    unreadable: str = ""  # why its Step line gives no step
    fields: dict[str, Any] = field(default_factory=dict)
    first: int = 0  # the line of its first group-summary field
    raw: list[str] = field(default_factory=list)
    tokens_trained: int | None = None
    rejected: bool = False
    group: tuple[str, int] | None = None  # the last GROUP g/G line: (g, G)
    tables: int = 0
    eval_rollouts: bool = False  # inside an eval rollout collection
    groups_seen: set[str] = field(default_factory=set)

    def no_step(self) -> str:
        return NO_STEP + self.unreadable


@dataclass
class _Table:
    line: int
    header: str
    turns: list[int]
    occurrence: _Occurrence
    group_id: str
    groups_in_step: int | None
    skip: bool
    rows: list[dict[str, Any]] = field(default_factory=list)
    rollouts: dict[int, int] = field(default_factory=dict)  # rollout number -> its line
    underlined: bool = False
    error: str = ""
    bad_row: str = ""


@dataclass
class _Eval:
    line: int
    occurrence: _Occurrence
    fields: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    checkpoint: int | None = None
    file_step: int | None = None
    results: bool = False
    rubric: bool = False
    rejected: bool = False
    raw: list[str] = field(default_factory=list)


class _Reader:
    """The log's state as its lines go by: the step, the open block, the records so far."""

    def __init__(self, history: RunHistory, origin: Path) -> None:
        self.history = history
        self.origin = origin
        self.occurrence = _Occurrence(0, None)
        self.table: _Table | None = None
        self.eval: _Eval | None = None
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
            self.eval = _Eval(number, self.occurrence)
            self._eval_line(number, text, raw)
            return
        if head == "G":
            if body.startswith("Group Summary"):
                self.summary = True
            elif body.startswith("GROUP "):
                self._group(body)
            elif body.startswith("Groups:") and " kept" in body:
                self._step_field(number, text, raw, _groups_fields, body)
            elif body.startswith("Grad norm"):
                self._step_field(number, text, raw, _grad_norm, body)
            return
        if body.startswith("Collecting "):
            match = COLLECTING.match(body)
            if match is not None:
                self._step_field(number, text, raw, _collecting, match)
        elif body.startswith("Tokens trained"):
            self._step_field(number, text, raw, _tokens_trained, body)
        elif body.startswith("Total loss"):
            self._step_field(number, text, raw, _total_loss, body)
        elif body.startswith("All groups filtered"):
            self._step_field(number, text, raw, _all_filtered, body)

    # ---- steps

    def _step(self, number: int, body: str) -> bool:
        """A Step line: a new stretch of the log, or the end line of the current one."""
        top: int | None = None
        match = STEP_LINE.match(body) or VERBOSE_STEP.match(body)
        if match is None:
            return False
        end = match.re is STEP_LINE and match.group(3) is not None
        try:
            step: int | None = _int(match.group(1))
            if match.re is STEP_LINE:
                top = _int(match.group(2))
        except _Malformed:
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
        following = _Occurrence(current.index + 1, step, top, started=not end, ended=end)
        if step is None:
            following.unreadable = f" (line {number}, {_quoted(body)}, is not a readable one)"
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
        except _Malformed:
            occurrence.rejected = True
            reason = f"malformed number in {_quoted(text)}"
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
            occurrence.group = (str(_int(match.group(1))), _int(match.group(2)))
        except _Malformed:
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
        self.table = _Table(
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
            rollout = _int(first)
        except _Malformed:
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
                advantage = _float(value)
            except _Malformed:
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
                read_field(block, _after(body, label))
            except _Malformed:
                block.rejected = True
                reason = f"malformed number in {_quoted(text)}"
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


# --------------------------------------------------------------------------- fields
# Each reads one recognised line into a step's fields (or an eval's); a number
# that does not read raises _Malformed.


def _collecting(occurrence: _Occurrence, match: re.Match[str]) -> None:
    occurrence.fields["rollouts_per_query"] = _int(match.group(1))
    occurrence.fields["queries"] = _int(match.group(2))


def _groups_fields(occurrence: _Occurrence, body: str) -> None:
    match = GROUPS.match(body)
    if match is None:
        raise _Malformed(body)
    kept, total, filtered, early, rollouts = match.groups()
    found = {
        "groups_kept": _int(kept),
        "groups_total": _int(total),
        "groups_filtered": _int(filtered),
    }
    if early is not None:
        found["finished_early"] = _int(early)
        found["rollouts"] = _int(rollouts)
    occurrence.fields.update(found)


def _value(body: str) -> str:
    """The text after a label's colon."""
    _, colon, rest = body.partition(":")
    if not colon:
        raise _Malformed(body)
    return rest.strip()


def _first(text: str) -> str:
    """The first word of ``text`` ("" for none)."""
    words = text.split(None, 1)
    return words[0] if words else ""


def _grad_norm(occurrence: _Occurrence, body: str) -> None:
    occurrence.fields["grad_norm"] = _float(_first(_value(body)))


def _tokens_trained(occurrence: _Occurrence, body: str) -> None:
    occurrence.tokens_trained = _int(_first(_value(body)))


def _total_loss(occurrence: _Occurrence, body: str) -> None:
    occurrence.fields["total_loss"] = _float(_first(_value(body)))


def _all_filtered(occurrence: _Occurrence, body: str) -> None:
    occurrence.fields["all_filtered"] = True


def _summary_int(name: str) -> Callable[[_Occurrence, str], None]:
    def read_field(occurrence: _Occurrence, body: str) -> None:
        value = _value(body)
        occurrence.fields[name] = _int(value.split("(")[0])

    return read_field


def _summary_seconds(name: str) -> Callable[[_Occurrence, str], None]:
    def read_field(occurrence: _Occurrence, body: str) -> None:
        occurrence.fields[name] = _seconds(_value(body))

    return read_field


def _finished_early(occurrence: _Occurrence, body: str) -> None:
    early, rollouts = _fraction(_value(body))
    occurrence.fields["finished_early"] = early
    occurrence.fields["rollouts"] = rollouts


SUMMARY_FIELDS: tuple[tuple[str, Callable[[_Occurrence, str], None]], ...] = (
    ("Total groups", _summary_int("groups_total")),
    ("Groups kept", _summary_int("groups_kept")),
    ("Groups filtered", _summary_int("groups_filtered")),
    ("Rollouts that finished early", _finished_early),
    ("Finished early", _finished_early),
    ("Total rollout time", _summary_seconds("rollout_time_s")),
    ("Total training time", _summary_seconds("training_time_s")),
    ("Total tokens", _summary_int("total_tokens")),
    ("Trainable tokens", _summary_int("trainable_tokens")),
)


def _checkpoint(block: _Eval, text: str) -> None:
    block.checkpoint = _int(text)


def _accuracy(block: _Eval, text: str) -> None:
    percent, _, counts = text.partition("%")
    counts = counts.strip()
    if counts:
        if not (counts.startswith("(") and counts.endswith(")")):
            raise _Malformed(text)
        correct, total = _fraction(counts[1:-1])
        block.fields["correct_answers"] = correct
        block.fields["total_samples"] = total
        block.fields["accuracy"] = correct / total if total else _float(percent) / 100
    else:
        block.fields["accuracy"] = _float(percent) / 100


def _beat(block: _Eval, text: str) -> None:
    percent, sign, rest = text.partition("%")
    if not sign:
        raise _Malformed(text)
    block.fields["beat_rate"] = _float(percent) / 100
    block.fields["has_baseline"] = True
    if "avg=" in rest:
        delta = rest.split("avg=", 1)[1].split(")")[0]
        block.extra["beat_control_avg_delta"] = _float(delta)


def _eval_time(block: _Eval, text: str) -> None:
    block.fields["eval_time"] = _seconds(text)


def _average(block: _Eval, text: str) -> None:
    value, _, rest = text.partition("(")
    block.fields["avg_reward"] = _float(value)
    if rest:
        std = rest.strip()
        if not (std.startswith("std:") and std.endswith(")")):
            raise _Malformed(text)
        block.fields["std_reward"] = _float(std[4:-1])


def _median(block: _Eval, text: str) -> None:
    block.fields["median_reward"] = _float(text)


def _range(block: _Eval, text: str) -> None:
    if not (text.startswith("[") and text.endswith("]")):
        raise _Malformed(text)
    parts = text[1:-1].split(",")
    if len(parts) != 2:
        raise _Malformed(text)
    block.fields["min_reward"] = _float(parts[0])
    block.fields["max_reward"] = _float(parts[1])


def _rubric_count(name: str) -> Callable[[_Eval, str], None]:
    def read_field(block: _Eval, text: str) -> None:
        count, total = _fraction(text)
        block.fields[name] = count
        block.fields.setdefault("total_samples", total)

    return read_field


def _repeated(block: _Eval, text: str) -> None:
    match = REPEATED.match(text)
    if match is None:
        raise _Malformed(text)
    block.fields["total_repeated_searches"] = _int(match.group(1))
    block.fields["total_searches"] = _int(match.group(2))
    block.fields["total_unique_searches"] = _int(match.group(3))


def _turns(text: str) -> float:
    return _float(_first(text))


def _turns_correct(block: _Eval, text: str) -> None:
    block.fields["avg_turns_correct"] = _turns(text)


def _turns_idk(block: _Eval, text: str) -> None:
    # (the label stops before the apostrophe, which logs print in several ways)
    label, colon, text = text.partition("):")
    if not colon or not label.endswith("t know"):
        raise _Malformed(text)
    value, _, count = text.partition("(")
    block.fields["avg_turns_idk"] = _turns(value)
    if count:
        count = count.strip().rstrip(")")
        if not count.startswith("count:"):
            raise _Malformed(text)
        block.fields["num_idk"] = _int(count[6:])


def _search_attempts(block: _Eval, text: str) -> None:
    block.fields["avg_search_attempts"] = _float(text)


def _saved(block: _Eval, text: str) -> None:
    block.extra["stats_file"] = text
    match = EVAL_FILE.search(text)
    if match is not None:
        block.file_step = _int(match.group(1))


def _marker(block: _Eval, text: str) -> None:
    """A block's title line (handled by the caller)."""


EVAL_FIELDS: tuple[tuple[str, Callable[[_Eval, str], None]], ...] = (
    ("EVALUATION RESULTS", _marker),
    ("Detailed Rubric Statistics", _marker),
    ("Checkpoint:", _checkpoint),
    ("Accuracy:", _accuracy),
    ("Beat control:", _beat),
    ("Time taken:", _eval_time),
    ("Average reward:", _average),
    ("Median reward:", _median),
    ("Range:", _range),
    ("Reward range:", _range),
    ("Attempted answers:", _rubric_count("attempted_answer")),
    ("Found correct email:", _rubric_count("found_correct_email")),
    ("Read correct email:", _rubric_count("read_correct_email")),
    ("Repeated searches:", _repeated),
    ("Avg turns (correct):", _turns_correct),
    ("Avg turns (I don", _turns_idk),
    ("Avg search attempts:", _search_attempts),
    ("Eval stats saved to:", _saved),
)
