"""The one-line "no such run" error every report command shares."""

from __future__ import annotations

from pathlib import Path

import pytest
from obs.reports.warehouse import RUNS_LISTED, run_list, unknown_run

WAREHOUSE = Path("wh.duckdb")


@pytest.mark.parametrize(
    ("known", "shown"),
    [
        ([], "none"),
        (["b", "a", "b"], "a, b"),
        ([f"r{i:02}" for i in range(RUNS_LISTED)], ", ".join(f"r{i:02}" for i in range(10))),
        (
            [f"r{i:02}" for i in range(12)],
            ", ".join(f"r{i:02}" for i in range(10)) + ", ... (12 in all)",
        ),
    ],
)
def test_run_list_sorted_and_capped(known: list[str], shown: str) -> None:
    assert run_list(known) == shown


def test_unknown_run_message() -> None:
    assert (
        str(unknown_run(WAREHOUSE, "nope", ["b", "a"])) == "wh.duckdb: no run 'nope' (runs: a, b)"
    )
    assert str(unknown_run(WAREHOUSE, "x", [], what="runs with reward data", hint="build")) == (
        "wh.duckdb: no run 'x' (runs with reward data: none); build"
    )
