"""dbt's progress as one live line while it builds or compiles quietly (no dbt run here)."""

from __future__ import annotations

import io
from types import SimpleNamespace

import pytest
from obs.runner.dbt import LiveLine, live_line


def _event(name: str, node: str, index: int = 0, total: int = 0) -> SimpleNamespace:
    """An event as dbt sends it to a callback: its name, its node, dbt's count."""
    data = SimpleNamespace(node_info=SimpleNamespace(node_name=node), index=index, total=total)
    return SimpleNamespace(info=SimpleNamespace(name=name), data=data)


def test_progress_a_build_shows_each_node_dbt_starts_and_how_far_along() -> None:
    stream = io.StringIO()
    line = LiveLine("building", enabled=True, numbered=True, stream=stream)
    for event in (
        _event("NodeStart", "stg_rollouts"),  # dbt numbers the nodes of a build: not this
        _event("LogStartLine", "stg_rollouts", 1, 3),
        _event("SQLQuery", "stg_rollouts"),
        _event("SkippingDetails", "fct_prompt_learning", 2, 3),
        _event("LogStartLine", "fct_prompt_learning_rules", 3, 3),
    ):
        line(event)
    line.close()
    assert stream.getvalue() == (
        "\r\033[Kbuilding stg_rollouts (1/3)"
        "\r\033[Kbuilding fct_prompt_learning (2/3)"
        "\r\033[Kbuilding fct_prompt_learning_rules (3/3)"
        "\r\033[K"
    )


def test_progress_a_compile_counts_the_nodes_it_starts() -> None:
    stream = io.StringIO()
    line = LiveLine("compiling", enabled=True, numbered=False, stream=stream)
    for node in ("stg_runs", "dim_runs"):
        line(_event("NodeStart", node))
    line.close()
    assert stream.getvalue() == (
        "\r\033[Kcompiling stg_runs (1)\r\033[Kcompiling dim_runs (2)\r\033[K"
    )


def test_progress_nothing_when_disabled_and_nothing_to_clear() -> None:
    stream = io.StringIO()
    line = LiveLine("building", enabled=False, numbered=True, stream=stream)
    line(_event("LogStartLine", "stg_rollouts", 1, 3))
    line.close()
    assert stream.getvalue() == ""


@pytest.mark.parametrize(
    ("command", "args", "terminal", "shown"),
    [
        ("build", ["--quiet"], True, True),  # dbt says nothing: the line does
        ("build", [], True, False),  # dbt's own log (obs build -v) is the progress
        ("build", ["--quiet"], False, False),  # a pipe or a file gets no live line
    ],
)
def test_progress_shown_on_a_terminal_while_dbt_is_quiet(
    command: str, args: list[str], terminal: bool, shown: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stderr", SimpleNamespace(isatty=lambda: terminal))
    line = live_line(command, args)
    assert (line.verb, line.enabled) == ("building", shown)
