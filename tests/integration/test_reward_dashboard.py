"""The reward monitoring dashboard: ``obs render-dashboard --kind rewards`` and the combined tabs.

The fixture is built with the real commands from a small seeded generator:
run ``hacky`` (30 iterations x 8 samples) has three reward functions, one of
which (``length_bonus``) keeps rising while eval/accuracy falls: reward
hacking. Its iteration 24 is a collapsed batch (every reward near 0): an
anomaly and a low signal-to-noise alert; its KL passes 0.5 at step 21 (an
error alert). Run ``steady`` has the same functions without the hack, and
run ``plain`` is tests/data/ifeval_small: rollouts with no reward functions.
"""

from __future__ import annotations

import html
import json
import random
import re
import shutil
from pathlib import Path

import duckdb
import plotly.graph_objects as go
import pytest
from obs.reports import TrainingDashboard
from obs.reports.charts import COMPARISON, REWARDS, TRAINING, charts_of, run_charts
from obs.reports.reward_dashboard import REWARD_MARTS

from tests.conftest import DATA, picked_runs, run_cli

CHARTS = run_charts(TRAINING)  # the fourteen charts of one run
COMPARE_CHARTS = charts_of(TRAINING, COMPARISON)
REWARD_CHARTS = charts_of(REWARDS)

pytestmark = pytest.mark.integration

ITERATIONS = 30
SAMPLES = 8
COLLAPSED = 24  # the iteration whose batch collapses to ~0 reward
FUNCTIONS = ["correct", "format", "length_bonus"]


def write_reward_run(root: Path, seed: int, hacked: bool) -> tuple[Path, Path]:
    """Rollout dumps with per-function rewards, and a metric log; returns both paths."""
    rng = random.Random(seed)
    dumps = root / "dumps"
    dumps.mkdir(parents=True)
    for iteration in range(ITERATIONS):
        lines = []
        for sample in range(SAMPLES):
            if iteration == COLLAPSED:
                rewards = {"length_bonus": rng.gauss(0.05, 0.3), "correct": 0.0, "format": 0.0}
            else:
                drift = 0.08 * iteration if hacked else 0.0
                rewards = {
                    "length_bonus": min(3.0, 0.4 + drift + rng.gauss(0, 0.25)),
                    "correct": 1.0 if rng.random() < 0.55 else 0.0,
                    "format": 1.0 if rng.random() < 0.9 else 0.5,
                }
            record = {
                "input": f"prompt {sample // 4}",
                "output": f"response {iteration}.{sample}",
                "score": sum(rewards.values()),
                "rewards": rewards,
            }
            lines.append(json.dumps(record))
        (dumps / f"{iteration}.jsonl").write_text("\n".join(lines) + "\n")
    metrics = root / "metrics.jsonl"
    with metrics.open("w") as out:
        for step in range(ITERATIONS):
            trend = -0.006 if hacked else 0.004
            point = {
                "step": step,
                "eval/accuracy": 0.8 + trend * step + rng.gauss(0, 0.003),
                "kl": 0.025 * step,
                "entropy": 1.2 - 0.02 * step,
            }
            out.write(json.dumps(point) + "\n")
    return dumps, metrics


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One warehouse: hacky and steady (reward data) and plain (none), built once."""
    root = tmp_path_factory.mktemp("reward_dashboard")
    base = ["--lake", root / "lake", "--warehouse", root / "obs.duckdb"]
    for run, seed, hacked in (("hacky", 3, True), ("steady", 5, False)):
        dumps, metrics = write_reward_run(root / run, seed, hacked)
        run_cli([*base, "ingest", "rollouts", dumps, "--run", run, "-q"])
        run_cli([*base, "ingest", "metrics", metrics, "--run", run, "-q"])
    plain = root / "ifeval_small"
    shutil.copytree(DATA / "ifeval_small", plain)
    run_cli([*base, "ingest", "rollouts", plain, "--run", "plain", "-q"])
    run_cli([*base, "build"])
    pages = root / "pages"
    run_cli([*base, "render-dashboard", "--kind", "rewards", "--out", pages / "all.html"])
    hacky = pages / "hacky.html"
    run_cli([*base, "render-dashboard", "--kind", "rewards", "--run", "hacky", "--out", hacky])
    run_cli([*base, "render-dashboard", "--out", pages / "combined.html"])
    return {"root": root, "base": base, "warehouse": root / "obs.duckdb", "pages": pages}


@pytest.fixture(scope="module")
def no_rewards(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A warehouse with rollouts and no reward functions (tests/data/ifeval_small)."""
    root = tmp_path_factory.mktemp("no_rewards")
    base = ["--lake", root / "lake", "--warehouse", root / "obs.duckdb"]
    dumps = root / "ifeval_small"
    shutil.copytree(DATA / "ifeval_small", dumps)
    run_cli([*base, "ingest", "rollouts", dumps, "--run", "small", "-q"])
    run_cli([*base, "build"])
    return {"root": root, "base": base, "warehouse": root / "obs.duckdb"}


def _figures(page: str) -> dict[str, dict]:
    """The page's figures (layout and traces as JSON) by their div id."""
    blocks = re.findall(r'<script type="application/json" id="([^"]+)-figure">(.*?)</script>', page)
    return {div: json.loads(text.replace("<\\/", "</")) for div, text in blocks}


def _tiles(page: str) -> dict[str, str]:
    found = re.findall(r'<div class="value">(.*?)</div><div class="label">(.*?)</div>', page)
    return {html.unescape(label): html.unescape(value) for value, label in found}


def _tabs(page: str) -> list[str]:
    return [html.unescape(t) for t in re.findall(r'<button role="tab"[^>]*>(.*?)</button>', page)]


def _title(figure: dict) -> str:
    return figure["layout"]["title"]["text"]


def _annotations(figure: dict) -> list[str]:
    return [a.get("text", "") for a in figure["layout"].get("annotations", [])]


def _one(warehouse: Path, sql: str, params: list | None = None) -> tuple:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.execute(sql, params or []).fetchone()
    finally:
        con.close()


def test_page_has_the_seven_sections_and_every_chart(built: dict) -> None:
    page = (built["pages"] / "hacky.html").read_text()
    assert _tabs(page) == list(REWARDS.tabs)
    sections = re.findall(r'<div class="section" id="(rewards-\d)"', page)
    assert sections == [f"rewards-{n}" for n in range(7)]
    figures = _figures(page)
    assert sorted(figures) == sorted(f"{name}__hacky" for name in REWARD_CHARTS)
    for name, info in REWARD_CHARTS.items():
        assert _title(figures[f"{name}__hacky"]).startswith(info.title), name
        assert f"Use for: {info.use_for}." in html.unescape(page), name
    # the 2x2 panels are titled as the reward monitor titles them
    overview = _annotations(figures["reward_signal_overview__hacky"])
    for panel in (
        "Mean Reward Over Time",
        "Reward Distribution",
        "Signal-to-Noise Ratio",
        "Reward Variance",
    ):
        assert panel in overview
    dynamics = _annotations(figures["training_dynamics__hacky"])
    assert {"KL Divergence", "Policy Entropy", "Advantage Mean", "Advantage Std"} <= set(dynamics)
    # the log has KL and entropy but no advantages: those panels say so
    assert "No data: advantage_mean was not logged" in dynamics
    assert "No data: advantage_std was not logged" in dynamics
    # the HTML blocks: the tiles, the advice lists, the raw table
    for block in ("summary", "advice", "raw_data"):
        assert f'data-block="{block}"' in page
    assert "Reward Quality Metrics" in _title(figures["reward_quality_metrics__hacky"])
    assert "<h2" not in page  # one run: no per-run heading


def test_kpi_tiles_equal_the_marts(built: dict) -> None:
    page = (built["pages"] / "hacky.html").read_text()
    tiles = _tiles(page)
    warehouse = built["warehouse"]
    steps, last = _one(
        warehouse, "select count(*), max(step) from fct_reward_steps where run_id = 'hacky'"
    )
    mean, snr = _one(
        warehouse,
        "select mean, signal_to_noise from fct_reward_steps where run_id = 'hacky' "
        "order by step desc limit 1",
    )
    (anomalies,) = _one(
        warehouse,
        "select count(*) from fct_reward_anomalies where run_id = 'hacky' and is_anomaly",
    )
    (score,) = _one(
        warehouse, "select quality_score from fct_reward_quality where run_id = 'hacky'"
    )
    (alerts,) = _one(warehouse, "select count(*) from fct_alerts where run_id = 'hacky'")
    assert steps == ITERATIONS and last == ITERATIONS - 1
    assert anomalies >= 1 and alerts >= 3  # the collapsed batch, KL, hacking
    assert tiles["Total Steps Tracked"] == str(steps)
    assert tiles["Current Mean Reward R"] == f"{mean:.3f}"
    assert tiles["Signal-to-Noise Ratio"] == f"{snr:.3f}"
    assert tiles["Anomalies Detected"] == str(anomalies)
    assert tiles["Quality Score"] == f"{score:.1f}"
    assert tiles["Alerts"] == str(alerts)
    assert tiles["Latest Step"] == str(last)
    assert tiles["Reward Functions"] == "3"
    assert tiles["Reward Hacking (whole run)"] == "high (length_bonus)"


def test_alerts_anomalies_and_hacking_on_the_time_axis(built: dict) -> None:
    charts = TrainingDashboard(warehouse=built["warehouse"], run="hacky").generate_reward_charts()
    assert list(charts) == list(REWARD_CHARTS)
    timeline = charts["reward_alerts_timeline"]
    traces = {trace.name: trace for trace in timeline.data}
    con = duckdb.connect(str(built["warehouse"]), read_only=True)
    try:
        alerts = con.execute(
            "select level, list(distinct step order by step) from fct_alerts "
            "where run_id = 'hacky' group by level"
        ).fetchall()
        spans = con.execute(
            "select min(window_start_step), max(window_end_step) from fct_reward_hacking "
            "where run_id = 'hacky' and scope = 'window' and reward_function is null "
            "and verdict = 'high'"
        ).fetchone()
    finally:
        con.close()
    assert {level for level, _ in alerts} >= {"critical", "error", "warning"}
    for level, steps in alerts:
        assert list(traces[f"alert: {level}"].x) == [float(s) for s in steps]
    assert list(traces["anomaly"].x) == [float(COLLAPSED)]
    assert traces["eval/accuracy"].yaxis == "y2"  # the performance metric, second axis
    shaded = [s for s in timeline.layout.shapes if s.type == "rect"]
    assert shaded and shaded[0].fillcolor == "#D55E00"
    assert shaded[0].x0 == spans[0] - 0.5 and shaded[0].x1 == spans[1] + 0.5
    assert "high hacking risk (length_bonus)" in [a.text for a in timeline.layout.annotations]
    (count,) = _one(built["warehouse"], "select count(*) from fct_alerts where run_id = 'hacky'")
    table = charts["reward_alerts_table"].data[0]
    assert len(table.cells.values[0]) == count
    assert table.cells.values[1][0] == "critical"  # the most severe first within a step


def test_function_charts_follow_the_marts(built: dict) -> None:
    charts = TrainingDashboard(warehouse=built["warehouse"], run="hacky").generate_reward_charts()
    lines = charts["reward_functions_over_time"]
    assert sorted(t.name for t in lines.data) == FUNCTIONS
    bars = charts["reward_function_contributions"].data[0]
    con = duckdb.connect(str(built["warehouse"]), read_only=True)
    try:
        latest = dict(
            con.execute(
                "select reward_function, contribution_pct from fct_reward_function_steps "
                "where run_id = 'hacky' and step = ? order by 1",
                [ITERATIONS - 1],
            ).fetchall()
        )
        ranked = [
            r[0]
            for r in con.execute(
                "select reward_function from fct_reward_function_importance "
                "where run_id = 'hacky' order by rank"
            ).fetchall()
        ]
    finally:
        con.close()
    assert list(bars.x) == sorted(latest)
    assert list(bars.y) == pytest.approx([latest[f] for f in sorted(latest)])
    importance = charts["reward_function_importance"].data[0]
    assert list(importance.cells.values[1]) == ranked
    # one colour per function, the same in the lines and the bars
    colours = {t.name: t.line.color for t in lines.data}
    assert list(bars.marker.color) == [colours[f] for f in bars.x]
    quality = charts["reward_quality_score"]
    (score,) = _one(
        built["warehouse"], "select quality_score from fct_reward_quality where run_id = 'hacky'"
    )
    assert quality.data[0].value == pytest.approx(score)


def test_raw_data_table_holds_every_step(built: dict) -> None:
    page = (built["pages"] / "hacky.html").read_text()
    rows = json.loads(
        re.search(r'id="raw_data__hacky-rows">(.*?)</script>', page).group(1).replace("<\\/", "</")
    )
    assert len(rows) == ITERATIONS
    assert [r[0] for r in rows[:3]] == ["0", "1", "2"]
    assert rows[0][1] == "samples"
    assert "all 30 steps" in page


def test_page_loads_nothing_from_the_network(built: dict) -> None:
    page = (built["pages"] / "hacky.html").read_text()
    scripts = re.findall(r"<script>(.*?)</script>", page, flags=re.S)
    bundle = max(scripts, key=len)
    assert len(bundle) > 3_000_000 and "plotly" in bundle[:2000].lower()  # plotly.js, inline
    # the page around the bundle names no resource to fetch
    rest = page.replace(bundle, "")
    assert not re.search(r"<(link|img|iframe|object|embed|source)\b|<script [^>]*src=", rest)
    assert not re.search(r"https?://|@import|url\(", rest)


def test_several_runs_get_a_section_each(built: dict) -> None:
    page = (built["pages"] / "all.html").read_text()
    # plain has no reward data: only the two reward runs, a block in every tab, and a
    # picker to choose between them
    assert page.count('<div class="run-block" data-run="hacky">') == 7
    assert page.count('<div class="run-block" data-run="steady">') == 7
    assert picked_runs(page) == ["hacky", "steady"]
    assert "run plain" not in page and 'data-run="plain"' not in page
    assert len(_figures(page)) == 2 * len(REWARD_CHARTS)
    assert "obs reward monitoring: hacky, steady" in page


def test_combined_dashboard_adds_the_reward_tabs(built: dict) -> None:
    page = (built["pages"] / "combined.html").read_text()
    # three runs with rollouts: the run comparison first
    assert _tabs(page) == [COMPARISON, *TRAINING.tabs, *REWARDS.tabs]
    figures = _figures(page)
    runs = ("hacky", "plain", "steady")
    expected = [f"{n}__{r}" for r in runs for n in CHARTS]
    expected += [f"{n}__{r}" for r in ("hacky", "steady") for n in REWARD_CHARTS]
    expected += list(COMPARE_CHARTS)
    assert sorted(figures) == sorted(expected)
    assert 'class="tab-group">Reward monitoring<' in page
    # plain's reward tabs say it has no reward data, one note a tab
    assert page.count("run plain has no reward data") == len(REWARDS.tabs)


def test_a_run_without_reward_data_gets_a_note(built: dict, tmp_path: Path) -> None:
    out = tmp_path / "plain.html"
    result = run_cli(
        [*built["base"], "render-dashboard", "--kind", "rewards", "--run", "plain", "--out", out]
    )
    assert result.stdout.strip() == str(out)
    page = out.read_text()
    assert "No reward data for run plain" in page
    assert "runs with reward data: hacky, steady" in page
    assert 'class="plot"' not in page


def test_a_warehouse_without_reward_data_says_so(no_rewards: dict, tmp_path: Path) -> None:
    out = tmp_path / "rewards.html"
    result = run_cli([*no_rewards["base"], "render-dashboard", "--kind", "rewards", "--out", out])
    assert result.stdout.strip() == str(out)
    assert "No reward data" in result.stderr
    page = out.read_text()
    assert "<h3>No reward data</h3>" in page
    assert "fct_reward_steps is empty" in page
    assert 'class="plot"' not in page and "<nav" not in page
    assert len(page) < 20_000  # no plotly.js for a page without charts
    combined = tmp_path / "dashboard.html"
    run_cli([*no_rewards["base"], "render-dashboard", "--out", combined])
    text = combined.read_text()
    assert _tabs(text) == list(TRAINING.tabs)
    assert "rewards-0" not in text and "tab-group" not in text


def test_a_warehouse_built_before_the_reward_marts(no_rewards: dict, tmp_path: Path) -> None:
    old = tmp_path / "old.duckdb"
    shutil.copy(no_rewards["warehouse"], old)
    con = duckdb.connect(str(old))
    for mart in REWARD_MARTS:  # a table, or a view of the table holding its rows
        found = con.execute(
            "select table_type from information_schema.tables where table_name = ?", [mart]
        ).fetchone()
        if found:
            con.execute(f"drop {'view' if found[0] == 'VIEW' else 'table'} {mart}")
    con.close()
    base = ["--lake", no_rewards["root"] / "lake", "--warehouse", old]
    out = tmp_path / "rewards.html"
    run_cli([*base, "render-dashboard", "--kind", "rewards", "--out", out])
    assert "built before reward monitoring" in out.read_text()
    combined = tmp_path / "dashboard.html"
    run_cli([*base, "render-dashboard", "--out", combined])
    assert _tabs(combined.read_text()) == list(TRAINING.tabs)


def test_cli_errors(built: dict, tmp_path: Path) -> None:
    base = built["base"]
    missing = run_cli([*base, "render-dashboard", "--kind", "rewards", "--run", "nope"], 1)
    assert "no run 'nope'" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
    for extra in (["--output-dir", tmp_path], ["--iterations", "1"], ["--chart", "x"]):
        usage = run_cli([*base, "render-dashboard", "--kind", "rewards", *extra], 2)
        assert "not --kind rewards" in usage.stderr


def test_python_api_saves_the_reward_page(built: dict, tmp_path: Path) -> None:
    dashboard = TrainingDashboard(warehouse=built["warehouse"], run="steady")
    assert len(dashboard.reward_steps) == ITERATIONS
    page = dashboard.save_reward_dashboard(tmp_path / "steady.html").read_text()
    assert "obs reward monitoring: steady" in page
    plain = TrainingDashboard(warehouse=built["warehouse"], run="plain")
    assert plain.generate_reward_charts() == {}
    assert isinstance(dashboard.generate_reward_charts()["training_dynamics"], go.Figure)


# ---------------------------------------------------------------- in Chromium


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


@pytest.mark.slow
def test_every_reward_chart_draws_offline(browser: object, built: dict) -> None:
    from tests.integration.test_browser import DRAWN, _open

    for opened in _open(browser, built["pages"] / "hacky.html"):
        page = opened.page
        tabs = page.query_selector_all("nav.tabs button")
        assert [t.inner_text() for t in tabs] == list(REWARDS.tabs)
        for number, tab in enumerate(tabs):
            tab.click()
            page.wait_for_timeout(300)
            shown = [p for p in page.evaluate(DRAWN) if p["width"] > 300]
            assert all(p["section"] == f"rewards-{number}" for p in shown)
            assert all(p["drawn"] and p["traces"] > 0 for p in shown), shown
            page.screenshot(
                path=f"/tmp/reward_dash_{number}_{_slug(REWARDS.tabs[number])}.png",
                full_page=True,
            )
        plots = page.evaluate(DRAWN)
        assert sorted(p["id"] for p in plots) == sorted(f"{n}__hacky" for n in REWARD_CHARTS)
        assert [p["id"] for p in plots if not p["drawn"] or p["traces"] == 0] == []
        # the raw table pages through the steps
        assert page.locator("table.raw tbody tr").count() == 25
        page.click('.pager button[data-move="1"]')
        assert page.locator("table.raw tbody tr").count() == ITERATIONS - 25
        assert page.locator("table.raw tbody tr td").first.inner_text() == "25"
        assert "page 2 of 2 (30 rows)" in page.inner_text(".pager")
        assert opened.errors == []
        assert opened.refused == []


@pytest.mark.slow
def test_combined_dashboard_reward_tabs_draw(browser: object, built: dict) -> None:
    from tests.integration.test_browser import DRAWN, _open

    for opened in _open(browser, built["pages"] / "combined.html"):
        page = opened.page
        tabs = page.query_selector_all("nav.tabs button")
        # every tab of every run, one run at a time as the picker shows them
        for run in ("hacky", "plain", "steady"):
            page.select_option("#run-pick", run)
            for tab in tabs:
                tab.click()
        plots = page.evaluate(DRAWN)
        assert [p["id"] for p in plots if not p["drawn"]] == []
        reward_plots = [p for p in plots if p["id"].split("__")[0] in REWARD_CHARTS]
        assert len(reward_plots) == 2 * len(REWARD_CHARTS)
        assert all(p["traces"] > 0 for p in reward_plots)
        page.select_option("#run-pick", "hacky")
        tabs[1 + len(TRAINING.tabs) + 5].click()  # Alerts & hacking (after the comparison)
        page.wait_for_timeout(300)
        page.screenshot(path="/tmp/reward_dash_combined_alerts.png", full_page=True)
        assert opened.errors == []
        assert opened.refused == []


@pytest.mark.slow
def test_no_reward_data_page_in_the_browser(
    browser: object, no_rewards: dict, tmp_path: Path
) -> None:
    from tests.integration.test_browser import _open

    out = tmp_path / "rewards.html"
    run_cli([*no_rewards["base"], "render-dashboard", "--kind", "rewards", "--out", out])
    for opened in _open(browser, out):
        opened.page.screenshot(path="/tmp/reward_dash_no_data.png", full_page=True)
        assert "No reward data" in opened.page.inner_text("main")
        assert opened.errors == [] and opened.refused == []
