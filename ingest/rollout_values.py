"""The values of a rollout row: JSON numbers, flags, texts and reward lists, checked.

Each reader of a row's field returns the value the lake holds or raises
``RowError`` naming the field and what it holds instead (the row is then
rejected with that reason). NeMo-RL rows are unwrapped to the plain shape
first.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any

from obs.ingest.readers import RowError

NUMBER_LIMIT = 1e100
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
JSON_NUMBER = re.compile(r"^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$")

# verl's V1 trainer dumps each rollout's key as ``uid``: ``{uuid}_{session}_{output}``,
# where the uuid names the prompt's GRPO group (a fresh one every step), the session
# is one of its n samples and the output one of the session's outputs (0 unless its
# agent loop returns several). The group is the uid without the last two numbers;
# a uid of another shape is a group by itself. (Both patterns: the same match.)
VERL_UID = re.compile(r"(.+)_[0-9]+_[0-9]+", re.DOTALL)
VERL_UID_RE2 = r"(?s)^(?P<group>.+)_[0-9]+_[0-9]+$"


def verl_group(uid: str) -> str:
    """The GRPO group a verl uid names (see VERL_UID)."""
    found = VERL_UID.fullmatch(uid)
    return found.group(1) if found else uid


def kind_of(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def as_double(name: str, value: object) -> float | None:
    """A JSON number (or text holding one), finite and within +-1e100; else RowError."""
    kind = type(value)
    if kind is float or kind is int:
        if -NUMBER_LIMIT <= value <= NUMBER_LIMIT:  # type: ignore[operator]
            return float(value)  # type: ignore[arg-type]
    elif value is None:
        return None
    if isinstance(value, Decimal):
        value = float(value)
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise RowError(f"field {name!r} must be a number, got {kind_of(value)}")
    if isinstance(value, str) and not JSON_NUMBER.match(value.strip()):
        raise RowError(f"field {name!r} must be a number, got text {value[:40]!r}")
    try:
        number = float(value)
    except OverflowError:
        raise RowError(f"field {name!r} is out of range (at most 1e100 in size)") from None
    if not math.isfinite(number):
        raise RowError(f"field {name!r} is not a finite number ({number})")
    if abs(number) > NUMBER_LIMIT:
        raise RowError(f"field {name!r} is out of range ({number:g}; at most 1e100 in size)")
    return number


def as_int(name: str, value: object) -> int | None:
    """A whole JSON number (2 or 2.0, or text holding one) within BIGINT; else RowError."""
    if type(value) is int and INT64_MIN <= value <= INT64_MAX:  # type: ignore[operator]
        return value  # type: ignore[return-value]
    if value is None:
        return None
    if isinstance(value, Decimal):
        value = int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise RowError(f"field {name!r} must be a whole number, got {kind_of(value)}")
    if isinstance(value, str):
        text = value.strip()
        if not JSON_NUMBER.match(text):
            raise RowError(f"field {name!r} must be a whole number, got text {value[:40]!r}")
        value = int(text) if re.fullmatch(r"-?\d+", text) else float(text)
    if isinstance(value, float):
        if not math.isfinite(value) or value != math.floor(value):
            raise RowError(f"field {name!r} must be a whole number, got {value}")
        if not -(2.0**63) <= value < 2.0**63:
            raise RowError(f"field {name!r} is out of range for a 64-bit integer ({value:g})")
        value = int(value)
    if not INT64_MIN <= value <= INT64_MAX:
        raise RowError(f"field {name!r} is out of range for a 64-bit integer ({value})")
    return value


def as_flags(name: str, value: object) -> list[bool | None] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise RowError(f"field {name!r} must be a list of true/false, got {kind_of(value)}")
    out: list[bool | None] = []
    for item in value:
        if item is None or isinstance(item, bool):
            out.append(item)
        elif isinstance(item, int | float) and item in (0, 1):
            out.append(bool(item))
        else:
            raise RowError(f"field {name!r} must be a list of true/false (or 0/1), holds {item!r}")
    return out


def as_texts(name: str, value: object) -> list[str | None] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(v is None or isinstance(v, str) for v in value):
        raise RowError(f"field {name!r} must be a list of text, got {kind_of(value)}")
    return value


def as_rewards(value: object) -> list[tuple[str, float]] | None:
    """A ``rewards`` object of per-function numbers; None when it is not one."""
    if not isinstance(value, dict) or not value:
        return None
    pairs = []
    for key, number in value.items():
        if number is None or (isinstance(number, float) and math.isnan(number)):
            continue  # the function did not apply to this sample
        pairs.append((key, as_double(f"rewards.{key}", number)))
    return pairs  # type: ignore[return-value]


def unwrap_nemo(row: dict[str, Any]) -> dict[str, Any]:
    """NeMo-RL writes each value as a one-element list; take the element."""
    out = {}
    for key, value in row.items():
        out[key] = value[0] if isinstance(value, list) and len(value) == 1 else value
    content = out.pop("content", None)
    if isinstance(content, list) and content:
        if all(isinstance(m, dict) for m in content):
            split = next((i for i, m in enumerate(content) if m.get("role") == "assistant"), 1)
            split = max(split, 1)
            out["prompt"] = "".join(str(m.get("content", "")) for m in content[:split])
            out["response"] = "".join(str(m.get("content", "")) for m in content[split:])
            out["roles"] = [m.get("role") for m in content]
        elif all(isinstance(m, str) for m in content):
            out["prompt"] = content[0]
            out["response"] = "".join(content[1:])
        out["num_messages"] = len(content)
    elif content is not None:
        out["content"] = content
    if "rewards" in out and not isinstance(out["rewards"], dict):
        out["reward"] = out.pop("rewards")
    return out
