"""Reward functions for the tests of ``obs ingest --reward package.module:function``."""

from __future__ import annotations

from typing import Any


def length_reward(row: dict[str, Any]) -> float:
    """1.0 for a response of at most 10 characters; raises on an empty one."""
    response = row["response"]
    if not response:
        raise ValueError("empty response")
    return 1.0 if len(response) <= 10 else 0.0


def completion_is_four(row: dict[str, Any]) -> float:
    """1.0 for a TRL completion that says 4 (a completions file scored again at ingest)."""
    return 1.0 if row["completion"].strip() == "4" else 0.0
