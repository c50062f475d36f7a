"""Texts compared with their numbers read as numbers (tests/text_numbers.py)."""

from __future__ import annotations

import pytest

from tests.text_numbers import rounded_text, split_numbers, texts_agree


def test_split_numbers_reads_each_engines_spelling() -> None:
    pieces, numbers = split_numbers("kl reached 1.0E-5 at step 12, z -3.5 (was nan, -Infinity)")
    assert pieces == ["kl reached ", " at step ", ", z ", " (was ", ", ", ")"]
    assert numbers[:3] == [1e-5, 12.0, -3.5]
    assert numbers[3] != numbers[3] and numbers[4] == float("-inf")


@pytest.mark.parametrize(
    ("duckdb", "spark"),
    [
        ("kl reached 1e-05 at step 3", "kl reached 1.0E-5 at step 3"),
        ("a mean of 3.0", "a mean of 3"),
        ("fell 0.1234567891 a step", "fell 0.1234567890 a step"),
        ("was nan", "was NaN"),
        ("-inf to inf", "-Infinity to Infinity"),
        ('{"value":0.30000000000000004}', '{"value":0.3}'),
        ("no numbers here", "no numbers here"),
    ],
)
def test_texts_agree_however_the_numbers_are_written(duckdb: str, spark: str) -> None:
    assert texts_agree(duckdb, spark, 1e-9)


@pytest.mark.parametrize(
    ("duckdb", "spark"),
    [
        ("kl reached 0.125 at step 3", "kl reached 0.126 at step 3"),
        ("kl reached 0.125 at step 3", "kl reached 0.125 at step 4"),
        ("kl reached 0.125", "kl rose to 0.125"),
        ("grew 2 steps", "grew 2 3 steps"),
        ("was nan", "was 0.0"),
        ("high", "medium"),
    ],
)
def test_texts_differ_in_words_or_in_a_number(duckdb: str, spark: str) -> None:
    assert not texts_agree(duckdb, spark, 1e-9)


def test_rounded_text_writes_one_spelling_for_both_engines() -> None:
    assert rounded_text("kl 1e-05, z 3.0") == rounded_text("kl 1.0E-5, z 3") == "kl 1e-05, z 3"


def test_a_number_rounded_to_many_places_may_round_one_unit_apart() -> None:
    # a mean on a rounding boundary, rounded to 8 places on each engine
    assert texts_agree('{"avg_hit_rate":0.50361287}', '{"avg_hit_rate":0.50361286}', 1e-9)
    # two units, or a count, or few places: a difference
    assert not texts_agree('{"avg_hit_rate":0.50361287}', '{"avg_hit_rate":0.50361285}', 1e-9)
    assert not texts_agree("70 steps", "71 steps", 1e-9)
    assert not texts_agree("rate 0.125", "rate 0.126", 1e-9)
