"""The dashboard: figures checked against hand-computed values, the CLI, the Python API.

The hand-computed values come from tests/data/ifeval_small (see test_pipeline.py):

    A  it0 [0.0, 0.5]  strict [0, 0]     mean .25
       it1 [1.0, 0.5]  strict [1, 0]     mean .75   solved
       it2 [0.0, 0.0]  strict [0, 0]     mean 0     forgotten
    B  it0..2 [1.0, 1.0] strict [1, 1]   mean 1     solved from the start
    C  it1 [0.25, 0.5] strict [0, 0]     mean .375
       it2 [0.75, 0.75] strict [1, 0]    mean .75   solved at 2

Prompts sorted by first success: B (0), A (1), C (2).
"""

from __future__ import annotations

import io
import math
import shutil
import struct
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest
from obs.reports import TrainingDashboard
from obs.reports.figures import CHARTS

from tests.conftest import DATA, run_cli
from tests.conftest import SMALL_A as A
from tests.conftest import SMALL_B as B
from tests.conftest import SMALL_C as C
from tests.conftest import prompt_hash as _hash

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("dashboard_small")
    dumps = root / "ifeval_small"
    shutil.copytree(DATA / "ifeval_small", dumps)
    base = ["--lake", root / "lake", "--warehouse", root / "obs.duckdb"]
    run_cli([*base, "ingest", "rollouts", dumps, "--run", "small", "-q"])
    run_cli([*base, "build"])
    return {"root": root, "warehouse": root / "obs.duckdb", "base": base}


@pytest.fixture(scope="module")
def charts(small: dict) -> dict[str, go.Figure]:
    return TrainingDashboard(warehouse=small["warehouse"], run="small").generate_all_charts()


def _rows(figure: go.Figure) -> dict[str, list[float]]:
    """A heatmap's rows by prompt hash (the label starts with the hash)."""
    trace = figure.data[0]
    z = np.asarray(trace.z, dtype=float)
    return {str(label).split()[0]: z[i].tolist() for i, label in enumerate(trace.y)}


def _same(actual: list[float], expected: list[float]) -> bool:
    return all(
        (math.isnan(a) and math.isnan(e)) or math.isclose(a, e, abs_tol=1e-12)
        for a, e in zip(actual, expected, strict=True)
    )


def test_all_fourteen_charts_with_the_seed_names(charts: dict[str, go.Figure]) -> None:
    assert list(charts) == list(CHARTS)
    assert len(charts) == 14
    for name, figure in charts.items():
        assert CHARTS[name].title in figure.layout.title.text


def test_mean_score_heatmap_sorted_by_first_success(charts: dict[str, go.Figure]) -> None:
    figure = charts["prompt_dynamics_fi"]
    assert [str(y).split()[0] for y in figure.data[0].y] == [_hash(B), _hash(A), _hash(C)]
    assert list(figure.data[0].x) == [0.0, 1.0, 2.0]
    rows = _rows(figure)
    assert _same(rows[_hash(A)], [0.25, 0.75, 0.0])
    assert _same(rows[_hash(B)], [1.0, 1.0, 1.0])
    assert _same(rows[_hash(C)], [math.nan, 0.375, 0.75])
    # hover names the prompt by hash and its first words
    assert str(figure.data[0].y[1]).startswith(f"{_hash(A)}  Write a haiku")


def test_strict_accuracy_and_exploration_heatmaps(charts: dict[str, go.Figure]) -> None:
    solved = _rows(charts["prompt_accuracy"])
    assert _same(solved[_hash(A)], [0.0, 1.0, 0.0])
    assert _same(solved[_hash(C)], [math.nan, 0.0, 1.0])
    spread = _rows(charts["exploration"])
    assert _same(spread[_hash(A)], [math.sqrt(0.125), math.sqrt(0.125), 0.0])
    assert _same(spread[_hash(B)], [0.0, 0.0, 0.0])


def test_forgetting_heatmap_puts_the_forgetful_prompt_first(
    charts: dict[str, go.Figure],
) -> None:
    figure = charts["forgetting_analysis"]
    labels = [str(y) for y in figure.data[0].y]
    assert labels[0].startswith(_hash(A)) and labels[0].endswith("(1 drops)")
    assert list(figure.data[0].x) == [1.0, 2.0]
    rows = _rows(figure)
    assert _same(rows[_hash(A)], [1.0, -1.0])
    assert _same(rows[_hash(C)], [math.nan, 1.0])


def test_score_distribution_box_comes_from_the_quantile_mart(
    charts: dict[str, go.Figure],
) -> None:
    box = charts["score_distribution"].data[0]
    # iteration 0: scores 0, .5, 1, 1 -> median .75, mean .625
    assert list(box.x) == [0.0, 1.0, 2.0]
    assert box.median[0] == pytest.approx(0.75)
    assert box.mean[0] == pytest.approx(0.625)
    assert box.q1[0] == pytest.approx(0.375)


def test_upsampling_table_follows_the_mart_ranking(small: dict, charts: dict) -> None:
    table = charts["upsampling_candidates"].data[0]
    ranked = TrainingDashboard(warehouse=small["warehouse"], run="small").upsampling_data
    prompts = [cell.split()[0] for cell in table.cells.values[1]]
    assert prompts == ranked["prompt_hash"].tolist()
    # A: final 0, slope -.125 (.25, .75, 0 over 0..2), one forgetting: 2 + .125 + .5
    first = ranked.iloc[0]
    assert first["prompt_hash"] == _hash(A)
    assert first["upsampling_score"] == pytest.approx(2.625)
    assert table.cells.values[2][0] == "high"


def test_sample_efficiency_and_plateau(charts: dict[str, go.Figure]) -> None:
    scatter = charts["sample_efficiency"].data[0]
    by_prompt = {
        text.split()[0]: (x, y)
        for text, x, y in zip(scatter.text, scatter.x, scatter.y, strict=True)
    }
    assert by_prompt[_hash(B)] == (0.0, 1.0)
    assert by_prompt[_hash(A)] == (1.0, 0.0)
    assert by_prompt[_hash(C)] == (1.0, 0.75)  # seen at 1, solved at 2
    plateau = charts["plateau_detection"].data[0]
    # only A and B have a full window; B is flat (drawn at the floor) and plateaued
    drawn = dict(zip([x.split()[0] for x in plateau.x], plateau.y, strict=True))
    assert drawn[_hash(B)] == pytest.approx(1e-6)
    assert plateau.marker.color[0] == "#d73027"


def test_charts_without_their_columns_say_so(charts: dict[str, go.Figure]) -> None:
    # the fixture has no V_i, S_i or reward_case: an annotated empty chart, not an error
    for name in ("vi_si_correlation", "reward_case_evolution"):
        assert charts[name].data == ()
        assert charts[name].layout.annotations[0].text.startswith("no rollout carries")


def test_python_api_summary_and_frames(small: dict, tmp_path: Path) -> None:
    dashboard = TrainingDashboard(warehouse=small["warehouse"], run="small")
    out = io.StringIO()
    dashboard.print_summary_statistics(out)
    assert "== run small ==" in out.getvalue()
    assert "prompts 3  rollouts 16" in out.getvalue()
    assert len(dashboard.prompt_metrics) == 8  # A 3 + B 3 + C 2 iterations
    learning = dashboard.learning_dynamics.set_index("prompt_hash")
    assert learning.loc[_hash(C), "first_success_iter"] == 2
    page = dashboard.save_combined_dashboard(tmp_path / "api.html")
    html = page.read_text()
    assert html.count('class="chart"') == 14
    assert "<script src=" not in html  # plotly.js is inline


def test_render_dashboard_cli_writes_one_file_per_chart(small: dict, tmp_path: Path) -> None:
    result = run_cli([*small["base"], "render-dashboard", "--output-dir", tmp_path / "charts"])
    written = [Path(line) for line in result.stdout.split()]
    assert sorted(p.stem for p in written) == sorted(CHARTS)
    html = (tmp_path / "charts" / "prompt_dynamics_fi.html").read_text()
    assert "Use for: when each prompt is learned" in html
    assert html.count("Plotly.newPlot") == 1


def test_render_dashboard_cli_iterations_subset(small: dict, tmp_path: Path) -> None:
    out = tmp_path / "early.html"
    run_cli([*small["base"], "render-dashboard", "--iterations", "0", "1", "--out", out])
    html = out.read_text()
    assert "iterations 0, 1" in html


def test_render_dashboard_cli_errors(small: dict, tmp_path: Path) -> None:
    base = small["base"]
    missing = run_cli([*base, "render-dashboard", "--run", "nope"], exit_code=1)
    assert missing.stderr.strip().endswith("no run 'nope' (runs: small)")
    assert len(missing.stderr.strip().splitlines()) == 1
    png = run_cli([*base, "render-dashboard", "--format", "png"], exit_code=2)
    assert "--format png needs --output-dir" in png.stderr
    chart = run_cli(
        [*base, "render-dashboard", "--output-dir", tmp_path, "--chart", "pie"], exit_code=1
    )
    assert "no chart 'pie'" in chart.stderr
    empty = run_cli(
        ["--warehouse", tmp_path / "none.duckdb", "--lake", tmp_path, "render-dashboard"],
        exit_code=1,
    )
    assert len(empty.stderr.strip().splitlines()) == 1


def _png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", header[16:24])


@pytest.mark.slow
def test_png_export_through_system_chromium(small: dict, tmp_path: Path) -> None:
    if shutil.which("chromium") is None:
        pytest.fail("Debian's chromium is missing: run `make browser`")
    run_cli(
        [
            *small["base"],
            "render-dashboard",
            "--output-dir",
            tmp_path,
            "--format",
            "png",
            "--chart",
            "prompt_dynamics_fi",
        ]
    )
    path = tmp_path / "prompt_dynamics_fi.png"
    assert _png_size(path) == (1200, 420)
    assert path.stat().st_size > 10_000  # a drawn heatmap, not a blank canvas
    assert list(tmp_path.iterdir()) == [path]
