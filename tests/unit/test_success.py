"""``obs build --success``: the expression is parsed into a var, never passed as SQL."""

from __future__ import annotations

import json

import pytest
from obs.core.success import SuccessError, parse_success, with_success_var


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("strict", {"kind": "strict"}),
        (" auto ", {"kind": "auto"}),
        ("score >= 5", {"kind": "score", "threshold": 5.0}),
        ("score>=-2.5", {"kind": "score", "threshold": -2.5}),
        ("check_answer >= 3", {"kind": "function", "function": "check_answer", "threshold": 3.0}),
        ("rewards/acc >= 1e-1", {"kind": "function", "function": "rewards/acc", "threshold": 0.1}),
    ],
)
def test_parse_success_gives_kind_function_and_threshold(text: str, rule: dict) -> None:
    assert parse_success(text) == rule


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("score > 5", "expected strict, auto"),
        ("check_answer >= 3 or 1=1", "expected strict, auto"),
        ("f' >= 3", "expected strict, auto"),
        ("check_answer >= inf", "finite"),
        ("check_answer >= three", "is not a number"),
        ("f" * 129 + " >= 1", "too long"),
    ],
)
def test_parse_success_refuses_what_is_not_a_rule(text: str, message: str) -> None:
    with pytest.raises(SuccessError, match=message):
        parse_success(text)


def test_with_success_var_adds_to_the_vars_given() -> None:
    rule = {"kind": "score", "threshold": 5.0}
    args = with_success_var(["--vars", "{pass_threshold: 0.7}", "-q"], rule)
    assert args[0] == "--vars" and args[2] == "-q"
    assert json.loads(args[1]) == {"pass_threshold": 0.7, "success": rule}
    assert with_success_var(["--vars={a: 1}"], rule) == [
        "--vars=" + json.dumps({"a": 1, "success": rule})
    ]
    assert with_success_var([], rule) == ["--vars", json.dumps({"success": rule})]
