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

import colorsys
import html
import io
import math
import re
import shutil
import struct
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import plotly.colors
import plotly.graph_objects as go
import pytest
from obs.reports import TrainingDashboard
from obs.reports.charts import COMPARISON, TRAINING, charts_of, run_charts
from obs.reports.figures.base import DIVERGING, NO_VALUE
from obs.reports.figures.comparison import OUTCOMES
from obs.reports.figures.curriculum import PLATEAUED
from obs.reports.figures.prompts import SOLVED_SCALE

from tests.conftest import DATA, picked_runs, run_cli
from tests.conftest import SMALL_A as A
from tests.conftest import SMALL_B as B
from tests.conftest import SMALL_C as C
from tests.conftest import prompt_hash as _hash

CHARTS = run_charts(TRAINING)  # the fourteen charts of one run
COMPARE_CHARTS = charts_of(TRAINING, COMPARISON)

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
    assert labels[0].startswith(_hash(A)) and labels[0].endswith("(1 drop)")
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
    # y: the share of the last visit's rollouts that succeed (strict [1, 0] at it2)
    assert by_prompt[_hash(C)] == (1.0, 0.5)  # seen at 1, solved at 2
    plateau = charts["plateau_detection"].data[0]
    # only A and B have a full window; B is flat (drawn at the floor) and plateaued
    drawn = dict(zip([x.split()[0] for x in plateau.x], plateau.y, strict=True))
    assert drawn[_hash(B)] == pytest.approx(1e-6)
    assert plateau.marker.color[0] == PLATEAUED


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


@pytest.mark.slow
def test_png_export_draws_every_chart_in_one_browser(
    small: dict, charts: dict[str, go.Figure], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fourteen PNGs come from one kaleido session (one Chromium started, not one a
    chart), each as tall as its chart."""
    import kaleido

    sessions: list[int] = []
    write = kaleido.write_fig_from_object_sync

    def counted(specs: list[dict], **options: object) -> object:
        sessions.append(len(specs))
        return write(specs, **options)

    monkeypatch.setattr(kaleido, "write_fig_from_object_sync", counted)
    result = run_cli(
        [*small["base"], "render-dashboard", "--output-dir", tmp_path, "--format", "png"]
    )
    written = [Path(line) for line in result.stdout.split()]
    assert [p.stem for p in written] == list(CHARTS)
    assert sessions == [14]
    for path in written:
        assert _png_size(path) == (1200, int(charts[path.stem].layout.height or 600)), path


# ---------------------------------------------------------------- colour scales and notes

TRL_PROMPTS = [f"Question {i}: what is {i} + {i}?" for i in range(6)]


def write_trl_completions(output_dir: Path) -> Path:
    """A TRL GRPOTrainer output: completions/completions_1.parquet and _2.parquet, one
    reward column, every reward negative (-0.475 .. -0.275), no V_i or S_i."""
    folder = output_dir / "completions"
    folder.mkdir(parents=True)
    for step in (1, 2):
        rows = [
            {
                "step": step,
                "prompt": prompt,
                "completion": f"answer {k}",
                "accuracy_reward": -0.475 + 0.05 * ((p + k + step) % 5),
            }
            for p, prompt in enumerate(TRL_PROMPTS)
            for k in range(4)
        ]
        pd.DataFrame(rows).to_parquet(folder / f"completions_{step}.parquet")
    return output_dir


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The small run and a TRL run, built with stuck_cell_min_samples set to 2."""
    root = tmp_path_factory.mktemp("dashboard_trl")
    dumps = root / "ifeval_small"
    shutil.copytree(DATA / "ifeval_small", dumps)
    base = ["--lake", root / "lake", "--warehouse", root / "obs.duckdb"]
    run_cli([*base, "ingest", "rollouts", dumps, "--run", "small", "-q"])
    trl = write_trl_completions(root / "trl-out")
    run_cli([*base, "ingest", "rollouts", trl, "--run", "trl", "-q"])
    run_cli([*base, "build", "-q", "--vars", "{stuck_cell_min_samples: 2}"])
    return {"warehouse": root / "obs.duckdb", "base": base}


@pytest.fixture(scope="module")
def trl_charts(mixed: dict) -> dict[str, go.Figure]:
    return TrainingDashboard(warehouse=mixed["warehouse"], run="trl").generate_all_charts()


def _z(trace: object) -> np.ndarray:
    z = np.asarray(trace.z, dtype=float)
    return z[np.isfinite(z)]


def _scale(trace: object) -> list[str]:
    return [str(colour).lower() for _, colour in trace.colorscale]


VIRIDIS = [c.lower() for c in plotly.colors.sequential.Viridis]


def test_score_heatmap_diverges_around_zero_for_negative_rewards(
    trl_charts: dict[str, go.Figure],
) -> None:
    trace = trl_charts["prompt_dynamics_fi"].data[0]
    z = _z(trace)
    assert z.max() < 0 and z.min() >= -0.475  # the TRL run's mean scores
    # symmetric around 0, as wide as the data: not a fixed 0..1 that paints one colour
    assert trace.zmax == pytest.approx(abs(z).max())
    assert trace.zmin == pytest.approx(-trace.zmax)
    assert _scale(trace) == [c.lower() for _, c in DIVERGING]


def test_score_heatmaps_are_sequential_over_the_data_range(
    charts: dict[str, go.Figure],
) -> None:
    for name in ("prompt_dynamics_fi", "instruction_types"):
        trace = charts[name].data[0]
        z = _z(trace)
        assert (trace.zmin, trace.zmax) == (pytest.approx(z.min()), pytest.approx(z.max())), name
        assert _scale(trace) == VIRIDIS, name
    # the spread from 0 (no gradient) to the largest spread
    spread = charts["exploration"].data[0]
    assert spread.zmin == 0 and spread.zmax == pytest.approx(math.sqrt(0.125))
    # solved or not: two colours over 0..1, named on the colour bar
    solved = charts["prompt_accuracy"]
    assert (solved.data[0].zmin, solved.data[0].zmax) == (0, 1)
    assert [c for _, c in solved.data[0].colorscale] == [c for _, c in SOLVED_SCALE]
    assert list(solved.data[0].colorbar.ticktext) == ["not solved", "solved"]
    assert "a score of at least 0.5" in solved.layout.title.text


@pytest.mark.parametrize(
    ("name", "component"), [("prompt_dynamics_vi", "(V_i)"), ("prompt_dynamics_si", "(S_i)")]
)
@pytest.mark.parametrize("run", ["trl", "small"])
def test_component_heatmaps_without_the_field_say_so(
    charts: dict[str, go.Figure],
    trl_charts: dict[str, go.Figure],
    run: str,
    name: str,
    component: str,
) -> None:
    figure = (trl_charts if run == "trl" else charts)[name]
    assert figure.data == ()
    note = figure.layout.annotations[0].text
    assert note.startswith("No data: this run's rollouts carry no")
    assert component in note
    assert not figure.layout.xaxis.visible and not figure.layout.yaxis.visible


def _hues(figure: go.Figure) -> set[str]:
    """'red' and 'green' for the saturated colours of a figure's scales, markers and fills."""
    found: set[str] = set()
    colours: list[str] = []
    for trace in figure.data:
        if "colorscale" in trace and trace.colorscale:
            colours += [c for _, c in trace.colorscale]
        marker = getattr(trace, "marker", None)
        if marker is not None and marker.color is not None and "colorscale" in marker:
            if marker.colorscale:
                colours += [c for _, c in marker.colorscale]
            if isinstance(marker.color, str):
                colours.append(marker.color)
            elif isinstance(marker.color[0], str):
                colours += list(marker.color)
        if isinstance(trace, go.Table):
            colours += [c for column in trace.cells.fill.color for c in column]
    for colour in colours:
        text = str(colour)
        rgb = plotly.colors.hex_to_rgb(text) if text.startswith("#") else None
        if rgb is None:
            rgb = plotly.colors.unlabel_rgb(text)
        hue, lightness, saturation = colorsys.rgb_to_hls(*(v / 255 for v in rgb))
        if saturation < 0.4 or not 0.15 < lightness < 0.85:
            continue
        degrees = hue * 360
        if degrees < 15 or degrees > 345:
            found.add("red")
        elif 85 < degrees < 150:
            found.add("green")
    return found


@pytest.mark.parametrize("run", ["small", "trl"])
def test_no_chart_sets_red_against_green(
    charts: dict[str, go.Figure], trl_charts: dict[str, go.Figure], run: str
) -> None:
    for name, figure in (charts if run == "small" else trl_charts).items():
        assert _hues(figure) != {"red", "green"}, name


def test_plateau_axis_labels_only_powers_of_ten(charts: dict[str, go.Figure]) -> None:
    axis = charts["plateau_detection"].layout.yaxis
    assert axis.type == "log"
    assert axis.dtick == 1  # a tick a decade, none at 2 and 5 between
    assert axis.exponentformat == "power"
    # the axis starts a decade below the floor: the flat prompt's bar shows
    assert axis.range[0] == pytest.approx(-7)


def _pair_cell(figure: go.Figure, a: str, b: str) -> tuple[int, int]:
    names = list(figure.data[0].x)
    return names.index(b), names.index(a)


PAIR = ("detectable_format:json_format", "startend:end_checker")


def test_interference_greys_pairs_with_too_few_rollouts(charts: dict[str, go.Figure]) -> None:
    figure = charts["instruction_interference"]
    lift, grey = figure.data
    row, col = _pair_cell(figure, *PAIR)
    # C's pair has 4 rollouts, below the default stuck_cell_min_samples (20): grey
    assert math.isnan(np.asarray(lift.z, dtype=float)[row][col])
    assert grey.z[row][col] == 1
    assert [c for _, c in grey.colorscale] == [NO_VALUE, NO_VALUE]
    assert "grey: fewer than 20 rollouts" in figure.layout.title.text
    hover = lift.customdata[row][col]
    assert "n 4 rollouts" in hover and "joint success" in hover and "expected" in hover


def test_interference_colours_lift_with_the_builds_threshold(mixed: dict) -> None:
    """Built with stuck_cell_min_samples 2: C's pair (4 rollouts) is coloured by its lift."""
    figure = TrainingDashboard(warehouse=mixed["warehouse"], run="small").generate_all_charts()[
        "instruction_interference"
    ]
    con = duckdb.connect(str(mixed["warehouse"]), read_only=True)
    lift, expected, joint = con.execute(
        "select lift, expected_joint_rate, joint_success_rate from fct_instruction_pairs"
        " where run_id = 'small' and instruction_a = ? and instruction_b = ?",
        list(PAIR),
    ).fetchone()
    con.close()
    trace = figure.data[0]
    row, col = _pair_cell(figure, *PAIR)
    assert trace.z[row][col] == pytest.approx(math.log2(max(lift, 1 / 16)))
    assert trace.z[col][row] == trace.z[row][col]  # symmetric
    assert math.isnan(np.asarray(figure.data[1].z, dtype=float)[row][col])
    # diverging around a lift of 1 (log2 = 0), as wide as the data
    assert trace.zmin == pytest.approx(-trace.zmax)
    assert _scale(trace) == [c.lower() for _, c in DIVERGING]
    hover = trace.customdata[row][col]
    assert f"lift {lift:.2f}" in hover
    assert f"joint success {joint:.1%} (expected {expected:.1%})" in hover
    assert "grey: fewer than 2 rollouts" in figure.layout.title.text


# ---------------------------------------------------------------- several runs
# The same dumps as two runs: "small" (iterations 0-2) and "early" (0 and 1 only).
# By hand, from the table at the top: per iteration the mean score over every
# rollout, the share of prompts any rollout solved, the share of zero-variance groups.
CURVES_BY_HAND = {
    "small": {
        "mean_score": [2.5 / 4, 4.25 / 6, 3.5 / 6],
        "solved_share": [1 / 2, 2 / 3, 2 / 3],
        "zero_variance_share": [1 / 2, 1 / 3, 3 / 3],  # it2: A [0, 0], B, C [.75, .75]
    },
    "early": {
        "mean_score": [2.5 / 4, 4.25 / 6],
        "solved_share": [1 / 2, 2 / 3],
        "zero_variance_share": [1 / 2, 1 / 3],
    },
}
# Prompts learned (solved at some iteration), never solved, forgotten at least once
# and at the end: small learns A (1), B (0) and C (2) and forgets A at 2; early
# never solves C and forgets nothing.
OUTCOMES_BY_HAND = {
    "small": {"learned": 3, "never_solved": 0, "forgotten": 1, "forgotten_at_end": 1},
    "early": {"learned": 2, "never_solved": 1, "forgotten": 0, "forgotten_at_end": 0},
}


@pytest.fixture(scope="module")
def several(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("dashboard_several")
    dumps = root / "ifeval_small"
    shutil.copytree(DATA / "ifeval_small", dumps)
    base = ["--lake", root / "lake", "--warehouse", root / "obs.duckdb"]
    run_cli([*base, "ingest", "rollouts", dumps, "--run", "small", "-q"])
    run_cli([*base, "ingest", "rollouts", dumps, "--run", "early", "--iterations", "0", "1", "-q"])
    run_cli([*base, "build", "-q"])
    return {"root": root, "warehouse": root / "obs.duckdb", "base": base}


def test_comparison_learning_curves_equal_the_hand_worked_values(several: dict) -> None:
    compared = TrainingDashboard(warehouse=several["warehouse"]).generate_comparison_charts()
    assert list(compared) == list(COMPARE_CHARTS)
    figure = compared["compare_learning_curves"]
    panels = {"y": "mean_score", "y2": "solved_share", "y3": "zero_variance_share"}
    seen = {}
    for trace in figure.data:
        seen[(trace.name, panels[trace.yaxis])] = (list(trace.x), list(trace.y))
    for run, curves in CURVES_BY_HAND.items():
        for column, values in curves.items():
            x, y = seen[(run, column)]
            assert x == list(range(len(values)))
            assert y == pytest.approx(values), (run, column)
    # one colour per run, the same in every panel and every comparison chart
    colours = {t.name: t.line.color for t in figure.data}
    assert len(set(colours.values())) == 2
    for name in ("compare_prompt_outcomes", "compare_instruction_difficulty"):
        assert {t.name: t.marker.color for t in compared[name].data} == colours


def test_comparison_prompt_outcomes_equal_the_hand_worked_counts(several: dict) -> None:
    figure = TrainingDashboard(warehouse=several["warehouse"]).generate_comparison_charts()[
        "compare_prompt_outcomes"
    ]
    labels = dict(OUTCOMES)
    con = duckdb.connect(str(several["warehouse"]), read_only=True)
    for trace in figure.data:
        bars = dict(zip(trace.y, trace.x, strict=True))
        counts = dict(zip(trace.y, (c[0] for c in trace.customdata), strict=True))
        assert {c[1] for c in trace.customdata} == {3.0}  # A, B and C in both runs
        for column, count in OUTCOMES_BY_HAND[trace.name].items():
            assert counts[labels[column]] == count
            assert bars[labels[column]] == pytest.approx(count / 3)
        # the flags that depend on the build's thresholds, against the mart itself
        plateaued, stuck = con.execute(
            "select count(*) filter (where is_plateau),"
            " count(*) filter (where is_stuck_solved) from fct_prompt_learning"
            " where run_id = ?",
            [trace.name],
        ).fetchone()
        assert counts[labels["plateaued"]] == plateaued
        assert counts[labels["stuck_solved"]] == stuck
    con.close()


def test_comparison_instruction_difficulty_side_by_side(several: dict) -> None:
    figure = TrainingDashboard(warehouse=several["warehouse"]).generate_comparison_charts()[
        "compare_instruction_difficulty"
    ]
    bars = {t.name: dict(zip(t.y, t.x, strict=True)) for t in figure.data}
    # no_comma (A): small 1 of 6 followed, early 1 of 4; lowercase (B) always
    assert bars["small"]["punctuation:no_comma"] == pytest.approx(1 / 6)
    assert bars["early"]["punctuation:no_comma"] == pytest.approx(1 / 4)
    assert bars["small"]["change_case:english_lowercase"] == 1.0
    assert bars["early"]["change_case:english_lowercase"] == 1.0
    # C's two instructions at iteration 1: each followed by one rollout of two
    assert bars["early"]["detectable_format:json_format"] == pytest.approx(0.5)
    assert bars["early"]["startend:end_checker"] == pytest.approx(0.5)
    # hardest first by the mean over the runs: no_comma on top, lowercase last
    order = list(figure.layout.yaxis.tickvals)
    assert order[0] == "punctuation:no_comma" and order[-1] == "change_case:english_lowercase"


def test_several_runs_get_a_comparison_tab_a_picker_and_a_runs_table(
    several: dict, tmp_path: Path
) -> None:
    out = tmp_path / "several.html"
    run_cli([*several["base"], "render-dashboard", "--out", out])
    page = out.read_text()
    tabs = re.findall(r'<button role="tab"[^>]*>(.*?)</button>', page)
    assert [html.unescape(t) for t in tabs] == [COMPARISON, *TRAINING.tabs]
    assert picked_runs(page) == ["early", "small"]
    # each run's charts sit in its own block of each tab; no run repeats a heading
    for run in ("early", "small"):
        assert page.count(f'<div class="run-block" data-run="{run}">') == len(TRAINING.tabs)
        assert page.count(f'id="prompt_dynamics_fi__{run}"') == 1
    assert '<h2 class="run">' not in page
    rows = re.findall(
        r'<tr data-run="([^"]+)">\s*<td>[^<]*</td>\s*<td>([^<]*)</td>\s*<td>([^<]*)</td>', page
    )
    # the held-out metric first (none logged), then rollouts: 4 + 6, and 4 + 6 + 6
    assert rows == [("early", "-", "10"), ("small", "-", "16")]
    assert 'class="kpis"' not in page  # one table row a run, not a row of tiles each


def test_several_runs_chart_files_add_the_comparison(several: dict, tmp_path: Path) -> None:
    result = run_cli([*several["base"], "render-dashboard", "--output-dir", tmp_path / "c"])
    written = sorted(
        Path(line).relative_to(tmp_path / "c").as_posix() for line in result.stdout.split()
    )
    expected = [f"{name}.html" for name in COMPARE_CHARTS]
    expected += [f"{run}/{name}.html" for run in ("early", "small") for name in CHARTS]
    assert written == sorted(expected)
    one = run_cli(
        [*several["base"], "render-dashboard", "--run", "small", "--output-dir", tmp_path / "d"]
    )
    assert sorted(Path(line).stem for line in one.stdout.split()) == sorted(CHARTS)


def test_one_run_has_no_comparison(several: dict) -> None:
    one = TrainingDashboard(warehouse=several["warehouse"], run="early")
    assert one.generate_comparison_charts() == {}
    assert list(one.generate_all_charts()) == list(CHARTS)
