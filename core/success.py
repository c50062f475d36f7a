"""The user's definition of a solved rollout (``obs build --success``), as dbt var ``success``.

An expression is a parameter, never SQL: ``strict``, ``auto``, ``score >= X`` or
``<reward function> >= X`` is parsed here into its kind, function and threshold,
and those travel to dbt as the var (macros/rewards.sql (success_rule) checks them again).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

import yaml

# A reward function's name as the rule may name it (the macro's own pattern).
FUNCTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.:/-]{0,127}")
_RULE = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_.:/-]*)\s*>=\s*(\S+)\s*")
USAGE = "expected strict, auto, 'score >= X' or '<reward function> >= X' (e.g. 'check_answer >= 3')"


class SuccessError(ValueError):
    """An expression that is not a success rule; the message says what is expected."""


def parse_success(text: str) -> dict[str, Any]:
    """``"check_answer >= 3"`` -> ``{"kind": "function", "function": "check_answer",
    "threshold": 3.0}``; ``"score >= 5"`` -> kind ``score``; ``strict``/``auto``."""
    plain = text.strip()
    if plain in ("strict", "auto"):
        return {"kind": plain}
    found = _RULE.fullmatch(text)
    if not found:
        raise SuccessError(f"{text!r}: {USAGE}")
    name, number = found.groups()
    if not FUNCTION_NAME.fullmatch(name):
        raise SuccessError(f"{text!r}: the reward function's name is too long (128 at most)")
    try:
        threshold = float(number)
    except ValueError:
        raise SuccessError(f"{text!r}: the threshold {number!r} is not a number") from None
    if not math.isfinite(threshold):
        raise SuccessError(f"{text!r}: the threshold must be a finite number")
    if name == "score":
        return {"kind": "score", "threshold": threshold}
    return {"kind": "function", "function": name, "threshold": threshold}


def with_success_var(dbt_args: Sequence[str], rule: dict[str, Any]) -> list[str]:
    """``dbt_args`` with var ``success`` set to ``rule``: added to a ``--vars`` the
    arguments already carry (``--vars X`` or ``--vars=X``), else a new ``--vars``."""
    args = list(dbt_args)
    for index, arg in enumerate(args):
        if arg == "--vars" and index + 1 < len(args):
            given = _vars_of(args[index + 1])
            args[index + 1] = json.dumps({**given, "success": rule})
            return args
        if arg.startswith("--vars="):
            given = _vars_of(arg.split("=", 1)[1])
            args[index] = "--vars=" + json.dumps({**given, "success": rule})
            return args
    return [*args, "--vars", json.dumps({"success": rule})]


def _vars_of(text: str) -> dict[str, Any]:
    try:
        loaded = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError as error:
        raise SuccessError(f"--vars {text!r} is not YAML: {error}") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise SuccessError(f"--vars {text!r}: expected a mapping such as '{{pass_threshold: 0.7}}'")
    return loaded
