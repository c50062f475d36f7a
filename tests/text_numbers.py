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
    return (
        pieces_a == pieces_b
        and len(numbers_a) == len(numbers_b)
        and all(numbers_agree(x, y, relative) for x, y in zip(numbers_a, numbers_b, strict=True))
    )
