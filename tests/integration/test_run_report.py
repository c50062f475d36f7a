"""The run report (`obs analyze RUN --out FILE.html`) read back from its HTML.

Two seed-style runs with planted training instability and length truncation
(one whose instability includes an extraction drop, one whose does not) and
a TRL run that logs only the training metrics, built once; every chart's
figure JSON is read from the page and checked against the warehouse.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import pytest
from obs.demo.histories import write_seed_export

from tests.conftest import run_cli
from tests.integration.test_run_histories import trainer_state

pytestmark = pytest.mark.integration

PLANTED = {"training_instability": 50, "length_truncation": 80}
# Two runs of the planted instability; the second gets an extraction drop inside it.
WITHOUT_DROP, WITH_DROP = "seed0", "seed4"
# Which training panel (by its title) or chart each finding signal is about,
# written out here as a reader of the findings would expect.
SIGNAL_PANELS = {
    "loss_spike": {"loss"},
    "grad_norm_spike": {"grad norm"},
    "reward_swing": {"reward mean"},
    "extraction_drop": set(),  # on the Extraction chart, not a training panel
    "clip_ratio_rising": {"clip ratio", "response length"},
}
OTHER_VARS = "{extraction_rate_min: 0.9, cache_hit_good: 0.6, cache_hit_low: 0.25}"


def _cli(root: Path, *args: object) -> str:
    return run_cli(["--lake", root / "lake", "--warehouse", root / "obs.duckdb", *args]).stdout


def _render(root: Path, run: str, name: str) -> Path:
    out = root / "reports" / f"{name}.html"
    _cli(root, "analyze", run, "--out", out, "--format", "json")
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The three runs built with the default vars, their reports, and the
    seed run's report again after a build with other threshold vars."""
    root = tmp_path_factory.mktemp("run_report")
    sources = root / "sources"
    for run, seed in ((WITHOUT_DROP, 0), (WITH_DROP, 4)):
        write_seed_export(
            sources / f"{run}.json", run_id=run, steps=120, patterns=PLANTED, seed=seed
        )
    # Inside the planted instability (steps 50-58) one run's extraction drops
    # to 80% for a step: a sudden drop, part of the same episode.
    export = json.loads((sources / f"{WITH_DROP}.json").read_text())
    row = export["history"][52]
    row["extraction/rate"] = 0.8
    row["extraction/orders_extracted"] = round(0.8 * row["extraction/orders_expected"])
    (sources / f"{WITH_DROP}.json").write_text(json.dumps(export))
    trainer_state(sources / "trl-run" / "trainer_state.json", 60, max_steps=60)
    _cli(root, "ingest", "metrics", sources, "-q")
    _cli(root, "build")
    pages = {run: _render(root, run, run) for run in (WITHOUT_DROP, WITH_DROP, "trl-run")}
    findings = _findings(root / "obs.duckdb")
    _cli(root, "build", "--vars", OTHER_VARS)
    pages["other_vars"] = _render(root, WITH_DROP, "other_vars")
    return {**pages, "root": root, "findings": findings}


def _findings(warehouse: Path) -> list[dict]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        cursor = con.execute(
            "select run_id, pattern, severity, first_step, last_step, signals "
            "from fct_run_findings where severity <> 'info'"
        )
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    finally:
        con.close()


def charts(page: Path) -> dict[str, dict]:
    """Each chart section's figure JSON, by the section's title."""
    html = page.read_text()
    found = re.findall(
        r'<section class="chart" data-chart="([^"]+)">.*?'
        r'<script type="application/json" id="[^"]+">(.*?)</script>',
        html,
        flags=re.S,
    )
    return {name: json.loads(figure) for name, figure in found}


def hlines(figure: dict) -> list[float]:
    return sorted(
        s["y0"]
        for s in figure["layout"].get("shapes", [])
        if s["type"] == "line" and s["y0"] == s["y1"]
    )


def rects(figure: dict) -> list[dict]:
    return [s for s in figure["layout"].get("shapes", []) if s["type"] == "rect"]


def panel_of(figure: dict, shape: dict) -> str:
    """The title of the panel a shape is drawn on: its x axis's trace."""
    axis = shape["xref"]
    return next(t["name"] for t in figure["data"] if t.get("xaxis", "x") == axis)


def covering(figure: dict, finding: dict) -> list[dict]:
    """The bands of ``figure`` over the finding's steps."""
    return [
        s
        for s in rects(figure)
        if s["x0"] == finding["first_step"] - 0.5 and s["x1"] == finding["last_step"] + 0.5
    ]


def _finding(built: dict, run: str, pattern: str) -> dict:
    return next(f for f in built["findings"] if f["run_id"] == run and f["pattern"] == pattern)


# --------------------------------------------------------------------------- thresholds


def test_threshold_lines_follow_the_build_vars(built: dict) -> None:
    """Lines drawn where the build's vars put them, default and overridden."""
    default = charts(built[WITH_DROP])
    assert hlines(default["Extraction"]) == [0.95]
    assert hlines(default["Prefix cache"]) == [0.3, 0.5]
    other = charts(built["other_vars"])
    assert hlines(other["Extraction"]) == [0.9]
    assert hlines(other["Prefix cache"]) == [0.25, 0.6]
    page = built["other_vars"].read_text()
    assert "extraction_rate_min 90%" in page and "good above 60%" in page
    # The line is the marts' own cut: the steps under it are the steps the mart flags.
    con = duckdb.connect(str(built["root"] / "obs.duckdb"), read_only=True)
    try:
        assert con.execute("select * from rpt_run_settings").fetchall() == [(0.9, 0.6, 0.25, 5)]
        under, flagged = con.execute(
            "select count(*) filter (where extraction_rate < 0.9), "
            "count(*) filter (where is_below_target) from fct_extraction_quality where run_id = ?",
            [WITH_DROP],
        ).fetchone()
    finally:
        con.close()
    assert under == flagged


# --------------------------------------------------------------------------- shading


def test_instability_is_shaded_on_extraction_only_with_an_extraction_drop(built: dict) -> None:
    without = _finding(built, WITHOUT_DROP, "training_instability")
    with_drop = _finding(built, WITH_DROP, "training_instability")
    assert "extraction_drop" not in without["signals"], without
    assert "extraction_drop" in with_drop["signals"], with_drop
    assert covering(charts(built[WITHOUT_DROP])["Extraction"], without) == []
    assert len(covering(charts(built[WITH_DROP])["Extraction"], with_drop)) == 1


@pytest.mark.parametrize("run", [WITHOUT_DROP, WITH_DROP])
def test_training_panels_shade_only_the_findings_about_their_metric(built: dict, run: str) -> None:
    figure = charts(built[run])["Training metrics"]
    for pattern in PLANTED:
        finding = _finding(built, run, pattern)
        expected = set().union(*(SIGNAL_PANELS[s] for s in finding["signals"]))
        shaded = [panel_of(figure, s) for s in covering(figure, finding)]
        assert sorted(shaded) == sorted(expected), (pattern, finding["signals"])
    truncation = _finding(built, run, "length_truncation")
    assert covering(charts(built[run])["Extraction"], truncation) == []
    # Every band on the page belongs to a warning or critical finding of the run.
    serious = [f for f in built["findings"] if f["run_id"] == run]
    for name, chart in charts(built[run]).items():
        for band in rects(chart):
            assert any(band in covering(chart, f) for f in serious), (name, band)


# --------------------------------------------------------------------------- no data


def test_a_trl_run_gets_one_card_for_the_sections_without_data(built: dict) -> None:
    page = built["trl-run"].read_text()
    drawn = charts(built["trl-run"])
    assert list(drawn) == ["Training metrics"]
    panels = [t["name"] for t in drawn["Training metrics"]["data"]]
    # the held-out reward TRL logs first, then the training metrics
    assert panels == [
        "eval reward",
        "loss",
        "kl",
        "reward mean",
        "reward std",
        "grad norm",
        "response length",
    ]
    assert "no data" not in page
    card = page[page.index('data-chart="Sections without data"') :]
    assert page.index('data-chart="Training metrics"') < page.index(card)  # after the charts
    lines = re.findall(r'<li data-section="([^"]+)"><strong>([^<]+)</strong>: ([^<]+)</li>', card)
    assert [title for title, _, _ in lines] == [
        "Performance",
        "Extraction",
        "Rollout reliability",
        "Prefix cache",
        "Power law",
        "League",
        "Evaluation results",
        "Compare with similar runs",
    ]
    assert [label for _, label, _ in lines][:2] == ["3. Performance", "4. Extraction"]
    why = {title: text for title, _, text in lines}
    assert "extraction/rate" in why["Extraction"]
    assert "rollout/failed_count" in why["Rollout reliability"]
    assert "cache/hit_rate" in why["Prefix cache"]
    assert "elo/challenger" in why["League"]
    assert "eval/vs_{opponent}/win_rate" in why["Evaluation results"]


def test_power_law_without_compute_says_no_compute_axis_was_logged(built: dict) -> None:
    page = built["trl-run"].read_text()
    assert "needs at least 3 steps" not in page  # the fit is not what is missing
    line = re.search(r'<li data-section="Power law">(.*?)</li>', page, flags=re.S)
    assert line is not None
    assert "no compute axis logged, so no fit" in line.group(1)
    assert "power_law/cumulative_simulated_years" in line.group(1)
    assert "cumulative_compute" in line.group(1)
    # A run that logs compute draws its fit.
    assert "Power law" in charts(built[WITH_DROP])
