"""The blocks of an agentic trainer's console log: what ``trainer_log`` builds, field by field.

A step's stretch of the log (``Occurrence``), a turn-advantage table
(``AdvantageTable``) and an eval block (``EvalBlock``) are filled as their
lines go by. ``SUMMARY_FIELDS`` and ``EVAL_FIELDS`` map a labelled line to
the function that reads it; a number that does not read raises
``Malformed`` (its record is then rejected, the line quoted).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

INT_CHARS = 26  # the longest count read (2**63 with thousands separators)
NO_STEP = "no 'Step N' line before it"
EVAL_FILE = re.compile(r"eval_step_(\d+)\.json\b")
REPEATED = re.compile(r"([^\s(]+)\s*\(total:\s*(\S+?),\s+unique:\s*([^\s)]+)\)")

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


class Malformed(ValueError):
    """A recognised line whose numbers cannot be read."""


def as_int(text: str) -> int:
    text = text.strip()
    if len(text) > INT_CHARS or not INT_TEXT.fullmatch(text):
        raise Malformed(text)
    return int(text.replace(",", ""))


def as_float(text: str) -> float:
    text = text.strip()
    if not FLOAT_TEXT.fullmatch(text):
        raise Malformed(text)
    return float(text.replace(",", ""))


def as_seconds(text: str) -> float:
    """``45.3s``, ``45.3 s``, ``45.3 seconds`` (and trailing words) as seconds."""
    match = SECONDS.match(text.strip())
    if match is None:
        raise Malformed(text)
    return as_float(match.group(1))


def after(body: str, label: str) -> str:
    """The text after ``label`` (which ``body`` starts with)."""
    return body[len(label) :].strip()


def fraction(text: str) -> tuple[int, int]:
    """``95/100 (95.0%)`` -> (95, 100)."""
    part, _, rest = text.partition("/")
    return as_int(part), as_int(rest.split("(")[0])


@dataclass
class Occurrence:
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
class AdvantageTable:
    line: int
    header: str
    turns: list[int]
    occurrence: Occurrence
    group_id: str
    groups_in_step: int | None
    skip: bool
    rows: list[dict[str, Any]] = field(default_factory=list)
    rollouts: dict[int, int] = field(default_factory=dict)  # rollout number -> its line
    underlined: bool = False
    error: str = ""
    bad_row: str = ""


@dataclass
class EvalBlock:
    line: int
    occurrence: Occurrence
    fields: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    checkpoint: int | None = None
    file_step: int | None = None
    results: bool = False
    rubric: bool = False
    rejected: bool = False
    raw: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- fields
# Each reads one recognised line into a step's fields (or an eval's); a number
# that does not read raises Malformed.


def collecting(occurrence: Occurrence, match: re.Match[str]) -> None:
    occurrence.fields["rollouts_per_query"] = as_int(match.group(1))
    occurrence.fields["queries"] = as_int(match.group(2))


def groups_fields(occurrence: Occurrence, body: str) -> None:
    match = GROUPS.match(body)
    if match is None:
        raise Malformed(body)
    kept, total, filtered, early, rollouts = match.groups()
    found = {
        "groups_kept": as_int(kept),
        "groups_total": as_int(total),
        "groups_filtered": as_int(filtered),
    }
    if early is not None:
        found["finished_early"] = as_int(early)
        found["rollouts"] = as_int(rollouts)
    occurrence.fields.update(found)


def _value(body: str) -> str:
    """The text after a label's colon."""
    _, colon, rest = body.partition(":")
    if not colon:
        raise Malformed(body)
    return rest.strip()


def _first(text: str) -> str:
    """The first word of ``text`` ("" for none)."""
    words = text.split(None, 1)
    return words[0] if words else ""


def grad_norm(occurrence: Occurrence, body: str) -> None:
    occurrence.fields["grad_norm"] = as_float(_first(_value(body)))


def tokens_trained(occurrence: Occurrence, body: str) -> None:
    occurrence.tokens_trained = as_int(_first(_value(body)))


def total_loss(occurrence: Occurrence, body: str) -> None:
    occurrence.fields["total_loss"] = as_float(_first(_value(body)))


def all_filtered(occurrence: Occurrence, body: str) -> None:
    occurrence.fields["all_filtered"] = True


def _summary_int(name: str) -> Callable[[Occurrence, str], None]:
    def read_field(occurrence: Occurrence, body: str) -> None:
        value = _value(body)
        occurrence.fields[name] = as_int(value.split("(")[0])

    return read_field


def _summary_seconds(name: str) -> Callable[[Occurrence, str], None]:
    def read_field(occurrence: Occurrence, body: str) -> None:
        occurrence.fields[name] = as_seconds(_value(body))

    return read_field


def _finished_early(occurrence: Occurrence, body: str) -> None:
    early, rollouts = fraction(_value(body))
    occurrence.fields["finished_early"] = early
    occurrence.fields["rollouts"] = rollouts


SUMMARY_FIELDS: tuple[tuple[str, Callable[[Occurrence, str], None]], ...] = (
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


def _checkpoint(block: EvalBlock, text: str) -> None:
    block.checkpoint = as_int(text)


def _accuracy(block: EvalBlock, text: str) -> None:
    percent, _, counts = text.partition("%")
    counts = counts.strip()
    if counts:
        if not (counts.startswith("(") and counts.endswith(")")):
            raise Malformed(text)
        correct, total = fraction(counts[1:-1])
        block.fields["correct_answers"] = correct
        block.fields["total_samples"] = total
        block.fields["accuracy"] = correct / total if total else as_float(percent) / 100
    else:
        block.fields["accuracy"] = as_float(percent) / 100


def _beat(block: EvalBlock, text: str) -> None:
    percent, sign, rest = text.partition("%")
    if not sign:
        raise Malformed(text)
    block.fields["beat_rate"] = as_float(percent) / 100
    block.fields["has_baseline"] = True
    if "avg=" in rest:
        delta = rest.split("avg=", 1)[1].split(")")[0]
        block.extra["beat_control_avg_delta"] = as_float(delta)


def _eval_time(block: EvalBlock, text: str) -> None:
    block.fields["eval_time"] = as_seconds(text)


def _average(block: EvalBlock, text: str) -> None:
    value, _, rest = text.partition("(")
    block.fields["avg_reward"] = as_float(value)
    if rest:
        std = rest.strip()
        if not (std.startswith("std:") and std.endswith(")")):
            raise Malformed(text)
        block.fields["std_reward"] = as_float(std[4:-1])


def _median(block: EvalBlock, text: str) -> None:
    block.fields["median_reward"] = as_float(text)


def _range(block: EvalBlock, text: str) -> None:
    if not (text.startswith("[") and text.endswith("]")):
        raise Malformed(text)
    parts = text[1:-1].split(",")
    if len(parts) != 2:
        raise Malformed(text)
    block.fields["min_reward"] = as_float(parts[0])
    block.fields["max_reward"] = as_float(parts[1])


def _rubric_count(name: str) -> Callable[[EvalBlock, str], None]:
    def read_field(block: EvalBlock, text: str) -> None:
        count, total = fraction(text)
        block.fields[name] = count
        block.fields.setdefault("total_samples", total)

    return read_field


def _repeated(block: EvalBlock, text: str) -> None:
    match = REPEATED.match(text)
    if match is None:
        raise Malformed(text)
    block.fields["total_repeated_searches"] = as_int(match.group(1))
    block.fields["total_searches"] = as_int(match.group(2))
    block.fields["total_unique_searches"] = as_int(match.group(3))


def _turns(text: str) -> float:
    return as_float(_first(text))


def _turns_correct(block: EvalBlock, text: str) -> None:
    block.fields["avg_turns_correct"] = _turns(text)


def _turns_idk(block: EvalBlock, text: str) -> None:
    # (the label stops before the apostrophe, which logs print in several ways)
    label, colon, text = text.partition("):")
    if not colon or not label.endswith("t know"):
        raise Malformed(text)
    value, _, count = text.partition("(")
    block.fields["avg_turns_idk"] = _turns(value)
    if count:
        count = count.strip().rstrip(")")
        if not count.startswith("count:"):
            raise Malformed(text)
        block.fields["num_idk"] = as_int(count[6:])


def _search_attempts(block: EvalBlock, text: str) -> None:
    block.fields["avg_search_attempts"] = as_float(text)


def _saved(block: EvalBlock, text: str) -> None:
    block.extra["stats_file"] = text
    match = EVAL_FILE.search(text)
    if match is not None:
        block.file_step = as_int(match.group(1))


def _marker(block: EvalBlock, text: str) -> None:
    """A block's title line (handled by the caller)."""


EVAL_FIELDS: tuple[tuple[str, Callable[[EvalBlock, str], None]], ...] = (
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
