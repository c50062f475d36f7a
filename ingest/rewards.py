"""Reward functions that score rollout-table rows at ingest.

A reward function takes one row as a dict (every column of the table) and
returns a float. ``gsm8k`` is built in; any ``package.module:function`` on the
Python path can be named instead. Rows are scored in parallel on every core;
a row whose function raises is rejected with the exception's message, and the
rest of the file lands.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from obs.ingest.errors import IngestError
from obs.ingest.readers import loads

RewardFunction = Callable[[dict[str, Any]], float]

# The answer forms, most explicit first. \u2212 is the Unicode minus sign.
_HASH_ANSWER = re.compile(r"####\s*([^\n]*)")
_BOXED = re.compile(r"\\boxed\s*\{([^{}]*)\}")
_NUMBER = re.compile(r"[-+\u2212]?\s*\$?\s*(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[-+\u2212]?\.\d+")


def parse_number(text: str | None) -> Decimal | None:
    """The first number in ``text`` as an exact Decimal ("$1,234.50." -> 1234.50)."""
    if text is None:
        return None
    match = _NUMBER.search(text)
    if match is None:
        return None
    cleaned = match.group(0).replace(",", "").replace("$", "").replace(" ", "")
    cleaned = cleaned.replace("\u2212", "-").rstrip(".")
    try:
        return Decimal(cleaned)
    except InvalidOperation:
        return None


def extract_gsm8k_answer(response: str | None) -> Decimal | None:
    """The response's final answer: ``#### N``, else ``\\boxed{N}``, else the last number."""
    if not response:
        return None
    hashed = _HASH_ANSWER.findall(response)
    if hashed:
        value = parse_number(hashed[-1])
        if value is not None:
            return value
    boxed = _BOXED.findall(response)
    if boxed:
        value = parse_number(boxed[-1])
        if value is not None:
            return value
    numbers = _NUMBER.findall(response)
    return parse_number(numbers[-1]) if numbers else None


def gsm8k_ground_truth(row: dict[str, Any]) -> Decimal | None:
    """The number after ``####`` in ``original_answer``, or ``reward_model.ground_truth``."""
    answer = row.get("original_answer")
    if isinstance(answer, str) and answer:
        hashed = _HASH_ANSWER.findall(answer)
        return parse_number(hashed[-1] if hashed else answer)
    model = row.get("reward_model")
    if isinstance(model, str):
        try:
            model = loads(model)
        except ValueError:
            model = None
    if isinstance(model, dict) and model.get("ground_truth") is not None:
        return parse_number(str(model["ground_truth"]))
    truth = row.get("ground_truth")
    if truth is not None:
        return parse_number(str(truth))
    return None


def gsm8k_reward(row: dict[str, Any]) -> float:
    """1.0 when the response's final answer equals the ground truth, else 0.0."""
    truth = gsm8k_ground_truth(row)
    if truth is None:
        raise ValueError("no ground truth: need original_answer '#### N' or reward_model")
    answer = extract_gsm8k_answer(row.get("response") or row.get("output"))
    return 1.0 if answer is not None and answer == truth else 0.0


BUILT_IN: dict[str, RewardFunction] = {"gsm8k": gsm8k_reward}


def load_reward(name: str) -> RewardFunction:
    """A built-in reward by name, or ``package.module:function``."""
    if name in BUILT_IN:
        return BUILT_IN[name]
    module_name, _, attribute = name.partition(":")
    if not module_name or not attribute:
        known = ", ".join(sorted(BUILT_IN))
        raise IngestError(f"--reward {name}: not a built-in ({known}) nor package.module:function")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise IngestError(
            f"--reward {name}: cannot import {module_name} ({exc}); check PYTHONPATH"
        ) from exc
    function = getattr(module, attribute, None)
    if not callable(function):
        raise IngestError(f"--reward {name}: {module_name} has no function {attribute}")
    return function  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Scored:
    """One row's outcome: a reward, or the reason it has none."""

    reward: float | None
    error: str | None


def _score_chunk(name: str, rows: Sequence[dict[str, Any]]) -> list[Scored]:
    function = load_reward(name)
    out = []
    for row in rows:
        try:
            value = float(function(row))
        except Exception as exc:
            message = f"{type(exc).__name__}: {exc}".splitlines()[0]
            out.append(Scored(None, f"reward function {name} raised {message}"))
            continue
        out.append(Scored(value, None))
    return out


def _chunks(rows: Sequence[dict[str, Any]], size: int) -> Iterator[Sequence[dict[str, Any]]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def score_rows(
    name: str, rows: Sequence[dict[str, Any]], workers: int | None = None
) -> list[Scored]:
    """Score every row with reward ``name``, in parallel, in row order."""
    load_reward(name)  # fail fast, in this process, on a bad name
    workers = workers or os.cpu_count() or 1
    if workers == 1 or len(rows) < 2_000:
        return _score_chunk(name, rows)
    size = max(500, len(rows) // (workers * 4))
    with ProcessPoolExecutor(max_workers=workers) as pool:
        parts = pool.map(_score_chunk, [name] * (len(rows) // size + 1), _chunks(rows, size))
        return [scored for part in parts for scored in part]
