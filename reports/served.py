"""What the served pages beside the dashboards show (the runs list, a prompt's page,
the findings and alerts, a rollout's response), read from the warehouse: plain data
for ``obs serve``'s templates, and the prompt's figure (``figures.prompts``).

Every value from a URL reaches SQL as a bound parameter (``$run``,
``$prompt_hash``), never as text of the query; a run or prompt the
warehouse does not hold is ``None`` here and a 404 page in ``app.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go
from obs.reports.figures.prompts import prompt_trajectory
from obs.reports.sql import query_row, query_rows

# A prompt's rollouts are shown this many at a time, each response up to SHOWN characters
# (the whole text is one click away, as plain text).
PAGE_SIZE = 20
SHOWN = 20_000
PROMPT_HASH = re.compile(r"[0-9a-f]{16}")


def runs(con: Any) -> list[dict[str, Any]]:
    """Every run, as the home page lists it."""
    return query_rows(con, "home_runs")


def run(con: Any, run_id: str) -> dict[str, Any] | None:
    """One run's home-page row, or None when the warehouse has no such run."""
    return next((r for r in runs(con) if r["run_id"] == run_id), None)


@dataclass
class PromptPage:
    prompt: dict[str, Any]
    iterations: list[dict[str, Any]]
    iteration: int
    rollouts: list[dict[str, Any]]
    page: int
    pages: int
    figure: go.Figure


def prompt_page(
    con: Any, run_id: str, prompt_hash: str, iteration: int | None, page: int
) -> PromptPage | None:
    """A prompt of a run: its text, its scores by iteration, a page of its rollouts."""
    if not PROMPT_HASH.fullmatch(prompt_hash):
        return None
    found = query_rows(con, "prompt", run=run_id, prompt_hash=prompt_hash)
    if not found:
        return None
    iterations = query_rows(con, "prompt_iterations", run=run_id, prompt_hash=prompt_hash)
    known = [r["iteration"] for r in iterations]
    chosen: int = iteration if iteration is not None and iteration in known else known[-1]
    samples = next(r["n_samples"] for r in iterations if r["iteration"] == chosen)
    pages = max(1, -(-samples // PAGE_SIZE))
    page = min(max(page, 1), pages)
    rollouts = query_rows(
        con,
        "prompt_rollouts",
        run=run_id,
        prompt_hash=prompt_hash,
        iteration=chosen,
        shown=SHOWN,
        page_size=PAGE_SIZE,
        offset=(page - 1) * PAGE_SIZE,
    )
    return PromptPage(
        found[0], iterations, chosen, rollouts, page, pages, prompt_trajectory(iterations)
    )


def findings(con: Any, run_id: str | None = None) -> list[dict[str, Any]]:
    """Every finding of the run (of every run when None), the most severe first."""
    found = query_rows(con, "findings", run=run_id, severity_rank=2)
    return sorted(found, key=lambda f: f["severity_rank"])


def alerts(con: Any, run_id: str | None = None) -> list[dict[str, Any]]:
    """The reward alerts of the run (of every run when None): the most severe first,
    then run by run, the latest first."""
    found = query_rows(con, "alerts", run=run_id, level_rank=1, since_step=None)
    by_run = sorted(found, key=lambda a: (a["run_id"], -(a["step"] or 0)))
    return sorted(by_run, key=lambda a: -a["level_rank"])


def full_response(
    con: Any, run_id: str, prompt_hash: str, iteration: int, sample: int
) -> str | None:
    """One rollout's whole response, or None."""
    if not PROMPT_HASH.fullmatch(prompt_hash):
        return None
    found = query_row(
        con,
        "prompt_response",
        run=run_id,
        prompt_hash=prompt_hash,
        iteration=iteration,
        sample=sample,
    )
    return None if found is None else str(found["response"] or "")
