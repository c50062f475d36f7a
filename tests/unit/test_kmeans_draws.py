"""kmeans_draws (Jinja arithmetic) draws what numpy's default_rng draws.

int_difficulty_clusters repeats numpy's seeded k-means in SQL; its start
takes the generator's draws from the macro, computed at compile time. Here
the macro is rendered with plain Jinja (dbt's `return` played by an
exception) and compared with numpy for a spread of seeds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


class _Returned(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


def _return(value: Any) -> None:
    raise _Returned(value)


def _called(macro: Any, *args: Any) -> Any:
    try:
        macro(*args)
    except _Returned as returned:
        return returned.value
    raise AssertionError("the macro returned nothing")


@pytest.fixture(scope="module")
def kmeans_draws() -> Any:
    source = (ROOT / "macros" / "kmeans_draws.sql").read_text()
    # the helper under another name, so the global below calls it through _called
    source = source.replace("{% macro _kmeans_xor(", "{% macro kmeans_xor_body(")
    env = jinja2.Environment(extensions=["jinja2.ext.do"])
    module: Any = None

    def xor(a: int, b: int, bits: int) -> int:
        return _called(module.kmeans_xor_body, a, b, bits)

    template = env.from_string(source, globals={"return": _return, "_kmeans_xor": xor})
    module = template.module
    return lambda seed, count: _called(module.kmeans_draws, seed, count)


@pytest.mark.parametrize("seed", [0, 1, 7, 42, 12345, 2**32 - 1, 2**32 + 5, 2**70 + 3])
@pytest.mark.parametrize("count", [1, 4])
def test_kmeans_draws_are_numpys(kmeans_draws: Any, seed: int, count: int) -> None:
    draws = kmeans_draws(seed, count)
    outputs = [int(x) for x in np.random.default_rng(seed).bit_generator.random_raw(count)]
    assert draws["low"] == outputs[0] % 2**32
    assert draws["high"] == outputs[0] // 2**32
    generator = np.random.default_rng(seed)
    generator.bit_generator.random_raw(1)
    assert [d / 2**53 for d in draws["doubles"]] == [generator.random() for _ in range(count - 1)]


@pytest.mark.parametrize("n", [1, 2, 7, 100, 513, 3000])
def test_kmeans_draws_give_numpys_first_centre(kmeans_draws: Any, n: int) -> None:
    """The model's Lemire step on the macro's halves is numpy's integers(n)."""
    for seed in range(40):
        draws = kmeans_draws(seed, 1)
        low, high = draws["low"], draws["high"]
        chosen = (high if (low * n) % 2**32 < (2**32 - n) % n else low) * n // 2**32
        assert chosen == np.random.default_rng(seed).integers(n)
