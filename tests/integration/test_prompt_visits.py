"""Prompt heatmaps of a run that shows each prompt every second iteration.

Two runs of four prompts over iterations 0-5, two rollouts per prompt and
iteration, landed with `obs ingest rollouts` and built with `obs build`:

- strided: p0 and p1 at iterations 0, 2, 4; p2 and p3 at 1, 3, 5 (an epoch
  spread over two iterations). Prompt i scores i/4 and 1 - i/4 at its first
  visit; each later visit adds 0.25 to both (capped at 1):
      visit    1      2      3
      p0     .5     .625   .75     (iterations 0, 2, 4: [0, 1], [.25, 1], [.5, 1])
      p2     .5     .75    1.0     (iterations 1, 3, 5: [.5, .5], [.75, .75], [1, 1])
  The heatmaps fold into three visit columns with no empty cell; each cell's
  hover keeps its iteration.
- every: the same four prompts at every iteration: one column per iteration,
  as before.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest
from obs.reports import TrainingDashboard

from tests.conftest import prompt_hash, run_cli

pytestmark = pytest.mark.integration

PROMPTS = [f"Prompt {i}: answer with one word." for i in range(4)]
ITERATIONS = range(6)


def _scores(prompt: int, visit: int) -> list[float]:
    """The two rollouts' scores of ``prompt`` at its ``visit``-th visit (from 0)."""
    return [min(1.0, prompt / 4 + visit / 4), min(1.0, 1 - prompt / 4 + visit / 4)]


def _write(folder: Path, seen: dict[int, list[int]]) -> Path:
    """One dump per iteration holding the prompts ``seen`` there."""
    folder.mkdir(parents=True)
    visits = dict.fromkeys(range(len(PROMPTS)), 0)
    for iteration in ITERATIONS:
        lines = []
        for prompt in seen[iteration]:
            for n, score in enumerate(_scores(prompt, visits[prompt])):
                lines.append({"input": PROMPTS[prompt], "output": f"r{n}", "score": score})
            visits[prompt] += 1
        (folder / f"{iteration}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return folder


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("prompt_visits")
    base = ["--lake", root / "lake", "--warehouse", root / "obs.duckdb"]
    strided = {i: [0, 1] if i % 2 == 0 else [2, 3] for i in ITERATIONS}
    every = {i: [0, 1, 2, 3] for i in ITERATIONS}
    for run, seen in (("strided", strided), ("every", every)):
        run_cli([*base, "ingest", "rollouts", _write(root / run, seen), "--run", run, "-q"])
    run_cli([*base, "build"])
    charts = {
        run: TrainingDashboard(warehouse=root / "obs.duckdb", run=run).generate_all_charts()
        for run in ("strided", "every")
    }
    return {"root": root, "base": base, "charts": charts}


def _trace(built: dict[str, object], run: str, chart: str) -> go.Heatmap:
    return built["charts"][run][chart].data[0]  # type: ignore[index]


def _by_prompt(trace: go.Heatmap, values: object) -> dict[int, list[float]]:
    grid = np.asarray(values, dtype=float)
    labels = [str(y).split()[0] for y in trace.y]
    return {p: grid[labels.index(prompt_hash(text))].tolist() for p, text in enumerate(PROMPTS)}


@pytest.mark.parametrize("chart", ["prompt_dynamics_fi", "prompt_accuracy", "exploration"])
def test_prompt_visits_fold_a_strided_run_into_full_columns(
    built: dict[str, object], chart: str
) -> None:
    trace = _trace(built, "strided", chart)
    assert list(trace.x) == [1.0, 2.0, 3.0]
    assert not np.isnan(np.asarray(trace.z, dtype=float)).any()
    # every cell's hover keeps the iteration it was observed at
    iterations = _by_prompt(trace, trace.customdata)
    assert iterations[0] == iterations[1] == [0.0, 2.0, 4.0]
    assert iterations[2] == iterations[3] == [1.0, 3.0, 5.0]
    assert "visit %{x} (iteration %{customdata})" in trace.hovertemplate


def test_prompt_visits_mean_scores_are_the_hand_worked_ones(built: dict[str, object]) -> None:
    trace = _trace(built, "strided", "prompt_dynamics_fi")
    means = _by_prompt(trace, trace.z)
    for prompt in range(4):
        expected = [sum(_scores(prompt, visit)) / 2 for visit in range(3)]
        assert means[prompt] == pytest.approx(expected, abs=1e-12)
    assert means[0] == pytest.approx([0.5, 0.625, 0.75])
    assert means[2] == pytest.approx([0.5, 0.75, 1.0])
    figure = built["charts"]["strided"]["prompt_dynamics_fi"]  # type: ignore[index]
    assert figure.layout.xaxis.title.text == "visit (each prompt's n-th: one every 2 iterations)"
    assert "each prompt is seen once every 2 iterations" in figure.layout.title.text


def test_prompt_visits_forgetting_columns_start_at_the_second_visit(
    built: dict[str, object],
) -> None:
    trace = _trace(built, "strided", "forgetting_analysis")
    assert list(trace.x) == [2.0, 3.0]
    iterations = _by_prompt(trace, trace.customdata)
    assert iterations[0] == [2.0, 4.0] and iterations[3] == [3.0, 5.0]


@pytest.mark.parametrize(
    "chart", ["prompt_dynamics_fi", "prompt_accuracy", "exploration", "forgetting_analysis"]
)
def test_prompt_visits_a_run_seen_every_iteration_keeps_its_iterations(
    built: dict[str, object], chart: str
) -> None:
    trace = _trace(built, "every", chart)
    first = 1.0 if chart == "forgetting_analysis" else 0.0
    assert list(trace.x) == [float(i) for i in ITERATIONS if i >= first]
    assert trace.customdata is None
    assert "<br>iteration %{x}<br>" in trace.hovertemplate
    figure = built["charts"]["every"][chart]  # type: ignore[index]
    assert figure.layout.xaxis.title.text == "iteration"
    if chart == "prompt_dynamics_fi":
        means = _by_prompt(trace, trace.z)
        expected = [sum(_scores(1, i)) / 2 for i in ITERATIONS]
        assert all(math.isclose(a, e) for a, e in zip(means[1], expected, strict=True))


def test_prompt_visits_the_page_embeds_the_folded_heatmap(
    built: dict[str, object], tmp_path: Path
) -> None:
    out = tmp_path / "strided.html"
    run_cli([*built["base"], "render-dashboard", "--run", "strided", "--out", out])  # type: ignore[list-item]
    page = out.read_text()
    assert "visit %{x} (iteration %{customdata})" in page
    assert "one every 2 iterations" in page
