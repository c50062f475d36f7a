"""Texts compared with their numbers read as numbers.

Two engines may write one double differently (DuckDB ``1e-05``, Spark's Java
``1.0E-5``; ``3.0`` and ``3``; ``nan`` and ``NaN``): two texts agree when they
are the same once every number in them is taken out, and their numbers, in
order, are equal within a relative tolerance.
"""

from __future__ import annotations

import math
import re

NUMBER = re.compile(
    r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
    r"|(?<![A-Za-z_])[-+]?(?:nan|inf(?:inity)?)(?![A-Za-z_])",
    re.IGNORECASE,
)


def split_numbers(text: str) -> tuple[list[str], list[float]]:
    """The text's pieces between its numbers, and the numbers, in order."""
    pieces = NUMBER.split(text)
    numbers = [float(found.group()) for found in NUMBER.finditer(text)]
    return pieces, numbers


def rounded_text(text: str, digits: int = 9) -> str:
    """The text with every number written to ``digits`` significant digits (one
    spelling for both engines: a sort key, so texts that agree meet)."""
    return NUMBER.sub(lambda found: f"{float(found.group()):.{digits}g}", text)


def numbers_agree(a: float, b: float, relative: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or abs(a - b) <= relative * max(abs(a), abs(b))


def texts_agree(a: str, b: str, relative: float) -> bool:
    """The same text apart from how its numbers are written, the numbers equal
    within ``relative``."""
    if a == b:
        return True
    pieces_a, numbers_a = split_numbers(a)
    pieces_b, numbers_b = split_numbers(b)
    written_a = [found.group() for found in NUMBER.finditer(a)]
    written_b = [found.group() for found in NUMBER.finditer(b)]
    return (
        pieces_a == pieces_b
        and len(numbers_a) == len(numbers_b)
        and all(
            numbers_agree(x, y, relative) or _one_unit_apart(p, q)
            for x, y, p, q in zip(numbers_a, numbers_b, written_a, written_b, strict=True)
        )
    )


ROUNDED_PLACES = 4


def _one_unit_apart(a: str, b: str) -> bool:
    """Two doubles rounded to the same d >= 4 decimals (fixed notation) that differ by
    one unit in the last place: values within the tolerance on either side of a
    rounding boundary round apart (0.503612865 as 0.50361287 or 0.50361286)."""
    fixed = re.compile(r"[-+]?\d+\.(\d+)")
    found_a, found_b = fixed.fullmatch(a), fixed.fullmatch(b)
    if not found_a or not found_b:
        return False
    places = len(found_a.group(1))
    if places < ROUNDED_PLACES or places != len(found_b.group(1)):
        return False
    return abs(int(a.replace(".", "")) - int(b.replace(".", ""))) <= 1
