"""The dashboards in a real browser: Debian's Chromium driven by Playwright, offline.

Every network request is refused; the pages must draw every Plotly chart with
no console or page error, and each tab must show its own charts when clicked.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pytest
from obs.reports.charts import COMPARISON, REWARDS, TRAINING, charts_of, run_charts
from obs.reports.figures.base import DIVERGING, NO_VALUE

from tests.conftest import run_cli

CHARTS = run_charts(TRAINING)  # the fourteen charts of one run
COMPARE_CHARTS = charts_of(TRAINING, COMPARISON)
REWARD_CHARTS = charts_of(REWARDS)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CHROMIUM = "/usr/bin/chromium"
# As root in a container Chromium needs --no-sandbox; the rest keep it from
# reaching for Google's services on a closed network.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@dataclass
class Opened:
    page: object
    errors: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A small demo run, built and rendered by ``obs demo`` itself."""
    root = tmp_path_factory.mktemp("browser")
    page = root / "out" / "dashboard.html"
    result = run_cli(
        [
            "--lake",
            root / "lake",
            "--warehouse",
            root / "obs.duckdb",
            "demo",
            "--out",
            root / "dumps",
            "--dashboard",
            page,
            "--prompts",
            "24",
            "--iterations",
            "6",
            "--samples",
            "4",
            "-q",
        ]
    )
    lines = result.stdout.splitlines()
    agent = page.with_name("agent_demo-agent.html")
    assert lines[-3:] == [
        f"dashboard: {page}",
        f"run report: {page.with_name('run_demo.html')}",
        f"agent dashboard: {agent} (obs show eval --run demo-agent)",
    ]
    charts = root / "charts"
    run_cli(
        [
            "--warehouse",
            root / "obs.duckdb",
            "render-dashboard",
            "--run",
            "demo",
            "--output-dir",
            charts,
            "--chart",
            "vi_si_correlation",
        ]
    )
    return {
        "dashboard": page,
        "chart": charts / "vi_si_correlation.html",
        "run_report": page.with_name("run_demo.html"),
        "agent": agent,
        "warehouse": root / "obs.duckdb",
    }


def _open(browser: object, path: Path, viewport_width: int = 1400) -> Iterator[Opened]:
    context = browser.new_context(viewport={"width": viewport_width, "height": 900})
    opened = Opened(context.new_page())

    def refuse(route: object) -> None:
        url = route.request.url
        if url.startswith("file://"):
            route.continue_()
        else:
            opened.refused.append(url)
            route.abort()

    context.route("**/*", refuse)
    opened.page.on("console", lambda m: opened.errors.append(m.text) if m.type == "error" else None)
    opened.page.on("pageerror", lambda e: opened.errors.append(str(e)))
    opened.page.goto(path.as_uri(), wait_until="load")
    try:
        yield opened
    finally:
        context.close()


DRAWN = """
() => Array.from(document.querySelectorAll('div.plot')).map(el => ({
    id: el.id,
    drawn: el.classList.contains('js-plotly-plot') && el._fullLayout !== undefined
        && el.querySelector('svg.main-svg') !== null,
    traces: (el._fullData || []).length,
    width: el.getBoundingClientRect().width,
    section: (el.closest('div.section') || {}).id || null,
}))
"""


@pytest.fixture
def dashboard_page(browser: object, demo: dict[str, Path]) -> Iterator[Opened]:
    yield from _open(browser, demo["dashboard"])


def test_the_demo_history_agrees_with_its_dumps(demo: dict[str, Path]) -> None:
    """The demo's tracker history logs its dumps' own means (as a trainer would), so the
    metric audit finds every overlapping step agreeing and no finding says otherwise."""
    with duckdb.connect(str(demo["warehouse"]), read_only=True) as con:
        audited = con.execute(
            "select metric, count(*) filter (where verdict = 'agrees'), "
            "count(*) filter (where verdict = 'disagrees') from fct_metric_audit "
            "where run_id = 'demo' and verdict <> 'not_comparable' group by metric order by metric"
        ).fetchall()
        patterns = {
            row[0] for row in con.execute("select pattern from fct_run_findings").fetchall()
        }
    assert [row[0] for row in audited] == [
        "benchmark/reward_mean",
        "benchmark/reward_std",
        "response_length/mean",
    ]
    assert all(agree == 6 and disagree == 0 for _, agree, disagree in audited), audited
    assert "logged_metric_disagrees" not in patterns
    assert "grad_spike_reward_collapse" in patterns  # the planted spike is still found


def test_first_tab_is_drawn_at_load_and_the_rest_on_demand(dashboard_page: Opened) -> None:
    plots = dashboard_page.page.evaluate(DRAWN)
    drawn = sorted(p["id"].split("__")[0] for p in plots if p["drawn"])
    assert drawn == sorted(n for n, info in CHARTS.items() if info.tab == TRAINING.tabs[0])


def test_every_chart_is_drawn_offline_without_errors(
    dashboard_page: Opened, demo: dict[str, Path]
) -> None:
    for tab in dashboard_page.page.query_selector_all("nav.tabs button"):
        tab.click()
    plots = dashboard_page.page.evaluate(DRAWN)
    # the demo run has reward data (V_i, S_i, format_score): the reward monitoring tabs too
    assert sorted(p["id"].split("__")[0] for p in plots) == sorted([*CHARTS, *REWARD_CHARTS])
    assert [p["id"] for p in plots if not p["drawn"]] == []
    # every chart of the demo has data (no chart fell back to an empty annotation),
    # but the alerts table when the demo raised no reward alert
    con = duckdb.connect(str(demo["warehouse"]), read_only=True)
    alerts = con.execute("select count(*) from fct_alerts").fetchone()[0]
    con.close()
    empty = [] if alerts else ["reward_alerts_table__demo"]
    assert [p["id"] for p in plots if p["traces"] == 0] == empty
    assert dashboard_page.errors == []
    assert dashboard_page.refused == []


def test_each_tab_shows_its_own_charts(dashboard_page: Opened) -> None:
    page = dashboard_page.page
    tabs = page.query_selector_all("nav.tabs button")
    assert [t.inner_text() for t in tabs] == [*TRAINING.tabs, *REWARDS.tabs]
    for number, tab in enumerate(tabs[: len(TRAINING.tabs)]):
        tab.click()
        page.wait_for_timeout(200)
        plots = page.evaluate(DRAWN)
        shown = sorted(p["id"].split("__")[0] for p in plots if p["width"] > 300 and p["drawn"])
        expected = sorted(n for n, info in CHARTS.items() if info.tab == TRAINING.tabs[number])
        assert shown == expected, TRAINING.tabs[number]
        assert all(p["section"] == f"section-{number}" for p in plots if p["width"] > 0)
        assert "active" in (tab.get_attribute("class") or "")
    assert dashboard_page.errors == []


def test_header_names_the_run_and_its_numbers(dashboard_page: Opened) -> None:
    header = dashboard_page.page.inner_text("header.page")
    assert "demo" in header
    assert "576\nrollouts" in header  # 24 prompts x 6 iterations x 4 rollouts
    assert "24\nprompts" in header
    assert "6 (0\u20135)\niterations" in header  # an en dash


def test_hover_names_the_prompt(dashboard_page: Opened) -> None:
    hover = dashboard_page.page.evaluate(
        """() => {
            const el = document.querySelector('div.plot[id^="prompt_dynamics_fi__"]');
            return {label: el.data[0].y[0], template: el.data[0].hovertemplate};
        }"""
    )
    assert len(hover["label"].split()[0]) == 16  # the prompt hash
    assert hover["label"].split()[1] == "Write"  # then the first words of its text
    assert hover["template"].startswith("%{y}")


def test_one_chart_file_draws_offline(browser: object, demo: dict[str, Path]) -> None:
    for opened in _open(browser, demo["chart"]):
        plots = opened.page.evaluate(DRAWN)
        assert len(plots) == 1
        assert plots[0]["drawn"] and plots[0]["traces"] == 1 and plots[0]["width"] > 300
        assert "Use for: checking whether the verifiable" in opened.page.inner_text("body")
        assert opened.errors == []
        assert opened.refused == []


def test_run_report_draws_every_section_offline(browser: object, demo: dict[str, Path]) -> None:
    """The demo's run report: every section's chart drawn, the planted spike marked on it."""
    for opened in _open(browser, demo["run_report"]):
        plots = opened.page.evaluate(DRAWN)
        # Sections 2-8 and 10 each have a chart, drawn at load.
        assert len(plots) == 8 and all(p["drawn"] and p["width"] > 300 for p in plots), plots
        text = opened.page.inner_text("body")
        assert "[CRITICAL] grad_spike_reward_collapse" in text
        # The finding is shaded on the training chart (a shape labelled with its pattern).
        labels = opened.page.evaluate(
            "() => Array.from(document.querySelectorAll('g.annotation-text-g text'))"
            ".map(t => t.textContent)"
        )
        assert "grad spike reward collapse" in labels
        assert opened.errors == [] and opened.refused == []


@pytest.fixture(scope="module")
def trl_report(demo: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run report of a TRL run (training metrics only), landed beside the demo."""
    from tests.integration.test_run_histories import trainer_state

    root = demo["dashboard"].parents[1]
    state = tmp_path_factory.mktemp("trl") / "trl-out" / "trainer_state.json"
    trainer_state(state, 40, max_steps=40)
    base = ["--lake", root / "lake", "--warehouse", root / "obs.duckdb"]
    run_cli([*base, "ingest", "metrics", state.parent, "--run", "trl-out", "-q"])
    run_cli([*base, "build"])
    out = root / "out" / "run_trl.html"
    run_cli([*base, "analyze", "trl-out", "--out", out])
    return out


def test_run_report_of_a_trl_run_lists_the_sections_without_data(
    browser: object, trl_report: Path
) -> None:
    """One chart (the training metrics), then one card naming each empty section."""
    for opened in _open(browser, trl_report):
        plots = opened.page.evaluate(DRAWN)
        assert len(plots) == 1 and plots[0]["drawn"] and plots[0]["traces"] == 7, (
            plots
        )  # eval reward too
        cards = opened.page.evaluate(
            "() => Array.from(document.querySelectorAll('main > section'))"
            ".map(s => s.querySelector('h2') ? s.querySelector('h2').textContent : 'chart')"
        )
        assert cards == ["Findings and hypotheses", "chart", "Sections without data"]
        items = opened.page.inner_text("section.missing").splitlines()[1:]
        assert [i.split(":")[0] for i in items if i.strip()] == [
            "3. Performance",
            "4. Extraction",
            "5. Rollout reliability",
            "6. Prefix cache",
            "7. Power law",
            "8. League",
            "9. Evaluation results",
            "10. Compare with similar runs",
        ]
        assert "no data" not in opened.page.inner_text("body")
        assert opened.errors == [] and opened.refused == []


def test_demo_agent_dashboard_draws_every_tab_offline(
    browser: object, demo: dict[str, Path]
) -> None:
    for opened in _open(browser, demo["agent"]):
        page = opened.page
        tabs = page.query_selector_all("nav.tabs button")
        assert [t.inner_text() for t in tabs] == [
            "Eval over steps",
            "Groups & early exits",
            "Turn advantages",
        ]
        for tab in tabs:
            tab.click()
            page.wait_for_timeout(200)
            shown = [p for p in page.evaluate(DRAWN) if p["width"] > 0]
            assert shown and all(p["drawn"] and p["traces"] > 0 for p in shown), shown
        assert not opened.errors and not opened.refused


def test_browser_is_debians_chromium() -> None:
    assert shutil.which("chromium") == CHROMIUM


# ---------------------------------------------------------------- colour scales and notes

# One heatmap trace as drawn: its z (NaN as null), colour range and colour scale.
HEATMAP = """
([id, trace]) => {
    const el = document.getElementById(id);
    const data = el._fullData[trace];
    const z = Array.from(data.z, row => Array.from(row, v => Number.isFinite(v) ? v : null));
    return {
        x: Array.from(data.x || []), z: z, zmin: data.zmin, zmax: data.zmax,
        colorscale: data.colorscale.map(c => c[1].toLowerCase()),
    };
}
"""


def _heatmap(opened: Opened, chart: str, run: str, trace: int = 0) -> dict:
    return opened.page.evaluate(HEATMAP, [f"{chart}__{run}", trace])


def _values(z: list[list[float | None]]) -> list[float]:
    return [v for row in z for v in row if v is not None]


def _show_tab(opened: Opened, title: str) -> None:
    opened.page.click(f"nav.tabs button:text-is('{title}')")
    opened.page.wait_for_timeout(200)


def test_demo_heatmap_colours_follow_the_data(dashboard_page: Opened) -> None:
    """The demo's scores lie in 0..1: sequential (viridis) over the data's own range."""
    for chart in ("prompt_dynamics_fi", "prompt_dynamics_vi", "prompt_dynamics_si"):
        drawn = _heatmap(dashboard_page, chart, "demo")
        values = _values(drawn["z"])
        assert min(values) >= 0
        assert drawn["zmin"] == pytest.approx(min(values)), chart
        assert drawn["zmax"] == pytest.approx(max(values)), chart
        assert drawn["colorscale"][0] == "#440154" and drawn["colorscale"][-1] == "#fde725"
    _show_tab(dashboard_page, TRAINING.tabs[2])
    spread = _heatmap(dashboard_page, "exploration", "demo")
    assert spread["zmin"] == 0 and spread["zmax"] == pytest.approx(max(_values(spread["z"])))
    assert dashboard_page.errors == []


def test_demo_interference_is_coloured_by_lift(
    dashboard_page: Opened, demo: dict[str, Path]
) -> None:
    _show_tab(dashboard_page, TRAINING.tabs[4])
    drawn = _heatmap(dashboard_page, "instruction_interference", "demo")
    con = duckdb.connect(str(demo["warehouse"]), read_only=True)
    pairs = con.execute(
        "select instruction_a, instruction_b, drawn_log2_lift, has_too_few_rollouts"
        " from rpt_instruction_interference where run_id = 'demo'"
    ).fetchall()
    minimum = con.execute("select stuck_cell_min_samples from rpt_dashboard_settings").fetchone()
    con.close()
    names = drawn["x"]
    coloured = [p for p in pairs if not p[3] and p[2] is not None]
    assert coloured
    for a, b, log2_lift, _ in coloured:
        assert drawn["z"][names.index(a)][names.index(b)] == pytest.approx(log2_lift)
    for a, b, _, few in pairs:
        if few:
            assert drawn["z"][names.index(a)][names.index(b)] is None
    # diverging around a lift of 1 (log2 0): red below, blue above
    assert drawn["zmin"] == pytest.approx(-drawn["zmax"])
    assert drawn["colorscale"][0] == "#ca0020" and drawn["colorscale"][-1] == "#0571b0"
    title = dashboard_page.page.text_content("#instruction_interference__demo .gtitle") or ""
    assert f"grey: fewer than {minimum[0]} rollouts" in title
    assert dashboard_page.errors == []


def test_demo_plateau_axis_labels_powers_of_ten(dashboard_page: Opened) -> None:
    _show_tab(dashboard_page, TRAINING.tabs[1])
    labels = dashboard_page.page.evaluate(
        "() => Array.from(document.querySelectorAll('#plateau_detection__demo .ytick text'))"
        ".map(t => t.textContent.replace(/\\u200b/g, ''))"
    )
    assert len(labels) >= 4, labels
    # 1, or 10 to a negative power (plotly writes 10 and a superscript minus sign and
    # exponent): no 2 and 5 between the decades, no SI suffix such as 100µ
    assert all(re.fullmatch("1|10\u2212[0-9]", label) for label in labels), labels
    assert dashboard_page.errors == []


@pytest.fixture(scope="module")
def trl_dashboard(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The dashboard of a TRL run: completions_1/_2.parquet, one negative reward column."""
    from tests.integration.test_dashboard import write_trl_completions

    root = tmp_path_factory.mktemp("browser_trl")
    out = write_trl_completions(root / "trl-out")
    base = ["--lake", root / "lake", "--warehouse", root / "obs.duckdb"]
    run_cli([*base, "ingest", "rollouts", out, "--run", "trl", "-q"])
    run_cli([*base, "build", "-q"])
    page = root / "trl.html"
    run_cli([*base, "render-dashboard", "--out", page])
    return page


def test_trl_dashboard_diverges_around_zero_and_notes_missing_components(
    browser: object, trl_dashboard: Path
) -> None:
    for opened in _open(browser, trl_dashboard):
        drawn = _heatmap(opened, "prompt_dynamics_fi", "trl")
        values = _values(drawn["z"])
        assert max(values) < 0  # every reward negative
        # symmetric around 0, as wide as the largest |mean score|: not one flat colour
        assert drawn["zmax"] == pytest.approx(max(abs(v) for v in values))
        assert drawn["zmin"] == pytest.approx(-drawn["zmax"])
        assert drawn["colorscale"][0] == "#ca0020"
        plots = {p["id"]: p for p in opened.page.evaluate(DRAWN)}
        for chart, part in (("prompt_dynamics_vi", "(V_i)"), ("prompt_dynamics_si", "(S_i)")):
            assert plots[f"{chart}__trl"]["drawn"] and plots[f"{chart}__trl"]["traces"] == 0
            note = opened.page.text_content(f"#{chart}__trl g.annotation-text-g") or ""
            assert note.startswith("No data: this run's rollouts carry no") and part in note
            # no empty axes beside the note
            ticks = opened.page.query_selector_all(f"#{chart}__trl .xtick, #{chart}__trl .ytick")
            assert ticks == []
        assert opened.errors == [] and opened.refused == []


# ---------------------------------------------------------------- several runs


@pytest.fixture(scope="module")
def several_page(demo: dict[str, Path]) -> Path:
    """The demo warehouse's two runs (the IFEval run and the agent's) in one dashboard."""
    out = demo["dashboard"].with_name("several.html")
    run_cli(["--warehouse", demo["warehouse"], "render-dashboard", "--out", out])
    return out


PICK = """run => {
    const picker = document.getElementById('run-pick');
    picker.value = run;
    picker.dispatchEvent(new Event('change'));
}"""


def test_several_runs_compare_first_and_show_one_run_at_a_time(
    browser: object, several_page: Path
) -> None:
    for opened in _open(browser, several_page):
        page = opened.page
        tabs = [t.inner_text() for t in page.query_selector_all("nav.tabs button")]
        assert tabs[: len(TRAINING.tabs) + 1] == [COMPARISON, *TRAINING.tabs]
        # at load only the comparison is drawn, every run in each chart
        plots = page.evaluate(DRAWN)
        drawn = sorted(p["id"] for p in plots if p["drawn"])
        assert drawn == sorted(COMPARE_CHARTS)
        curves = page.evaluate(
            "() => document.getElementById('compare_learning_curves')._fullData"
            ".filter(t => t.showlegend).map(t => t.name)"
        )
        assert sorted(curves) == ["demo", "demo-agent"]
        # the first run's charts in a per-run tab; the other run's stay hidden, undrawn
        page.click("nav.tabs button:nth-of-type(2)")
        page.wait_for_timeout(200)
        shown = [p["id"] for p in page.evaluate(DRAWN) if p["drawn"] and p["width"] > 300]
        core = sorted(n for n, info in CHARTS.items() if info.tab == TRAINING.tabs[0])
        assert sorted(shown) == sorted(f"{n}__demo" for n in core)
        assert not any(p["drawn"] for p in page.evaluate(DRAWN) if "__demo-agent" in p["id"])
        # picking the other run swaps the block, draws its charts, marks its table row
        page.evaluate(PICK, "demo-agent")
        page.wait_for_timeout(200)
        shown = [p["id"] for p in page.evaluate(DRAWN) if p["drawn"] and p["width"] > 300]
        assert sorted(shown) == sorted(f"{n}__demo-agent" for n in core)
        picked = page.evaluate(
            "() => Array.from(document.querySelectorAll('table.runs tr.picked'))"
            ".map(r => r.dataset.run)"
        )
        assert picked == ["demo-agent"]
        # the agent has no reward data: its reward tabs say so instead of drawing
        page.click(f"nav.tabs button:has-text('{REWARDS.tabs[1]}')")
        page.wait_for_timeout(200)
        text = page.inner_text("#rewards-1")
        assert "run demo-agent has no reward data" in text
        # a row of the runs table picks its run too
        page.click("table.runs tr[data-run='demo']")
        page.wait_for_timeout(200)
        assert page.evaluate("() => document.getElementById('run-pick').value") == "demo"
        assert "has no reward data" not in page.inner_text("#rewards-1")
        assert opened.errors == [] and opened.refused == []


def test_several_runs_first_tab_is_short(browser: object, several_page: Path) -> None:
    """Runs are compared in one chart each, not repeated: the first tab stays short."""
    for opened in _open(browser, several_page):
        height = opened.page.evaluate("() => document.body.scrollHeight")
        opened.page.screenshot(path=str(several_page.with_suffix(".png")), full_page=True)
        assert height < 4000, height


# ---------------------------------------------------------------- what the charts leave out
# A TensorBoard-only run (a tracker history: the mean reward and KL, no std, no rollouts),
# a TRL run (completions through `ingest rollouts`, trainer_state.json through `ingest
# metrics`) and the demo's rollouts again, in a warehouse of their own built with
# stuck_cell_min_samples 30: the demo's pairs of 24 rollouts are thin, the others not.


@pytest.fixture(scope="module")
def trackers(tmp_path_factory: pytest.TempPathFactory, demo: dict[str, Path]) -> dict[str, Path]:
    from tensorboardX import SummaryWriter

    from tests.integration.test_dashboard import write_trl_completions
    from tests.integration.test_run_histories import trainer_state

    root = tmp_path_factory.mktemp("browser_trackers")
    base = ["--lake", root / "lake", "--warehouse", root / "obs.duckdb"]
    writer = SummaryWriter(str(root / "tb" / "tbx"))
    for step in range(1, 31):
        writer.add_scalar("train/reward", 0.1 + step / 40, step)
        writer.add_scalar("train/kl", 0.001 * step, step)
    writer.close()
    run_cli([*base, "ingest", "metrics", root / "tb" / "tbx", "--run", "tbx", "-q"])
    trl = write_trl_completions(root / "trl-out")
    trainer_state(trl / "trainer_state.json", 2, max_steps=2)
    run_cli([*base, "ingest", "rollouts", trl, "--run", "trl", "-q"])
    run_cli([*base, "ingest", "metrics", trl / "trainer_state.json", "--run", "trl", "-q"])
    dumps = demo["dashboard"].parents[1] / "dumps"
    run_cli([*base, "ingest", "rollouts", dumps, "--run", "demo", "-q"])
    run_cli([*base, "build", "-q", "--vars", "{stuck_cell_min_samples: 30}"])
    rewards = root / "rewards.html"
    run_cli(
        [
            *base,
            "render-dashboard",
            "--kind",
            "rewards",
            "--run",
            "tbx",
            "--run",
            "trl",
            "--out",
            rewards,
        ]
    )
    dashboard = root / "dashboard.html"
    run_cli([*base, "render-dashboard", "--run", "demo", "--out", dashboard])
    report = root / "run_trl.html"
    run_cli([*base, "analyze", "trl", "--out", report])
    return {
        "rewards": rewards,
        "dashboard": dashboard,
        "run_report": report,
        "warehouse": root / "obs.duckdb",
    }


def _visit_every_tab(opened: Opened) -> None:
    """Show every tab of every run in the page, so that each chart is drawn."""
    page = opened.page
    runs = page.evaluate(
        "() => Array.from(document.querySelectorAll('#run-pick option')).map(o => o.value)"
    )
    for run in runs or [None]:
        if run is not None:
            page.evaluate(PICK, run)
        for tab in page.query_selector_all("nav.tabs button"):
            tab.click()
            page.wait_for_timeout(100)


def _page_path(request: pytest.FixtureRequest, page: str) -> Path:
    """A page by ``fixture:key`` (``demo:agent``) or by a fixture that is the page."""
    fixture, _, key = page.partition(":")
    value = request.getfixturevalue(fixture)
    return value[key] if key else value


def _pick(opened: Opened, run: str) -> None:
    """Pick ``run`` in a page of several runs (a page of one has no picker)."""
    if opened.page.query_selector("#run-pick") is not None:
        opened.page.evaluate(PICK, run)


# The x axes of each drawn chart with a step or iteration axis: linear ones with their
# tick values and labels (a heatmap over categories, a box's category axis left out).
STEP_AXES = """() => Array.from(document.querySelectorAll('div.plot'))
    .filter(el => el._fullLayout !== undefined)
    .flatMap(el => {
        const layout = el._fullLayout;
        const axes = Object.keys(layout).filter(k => /^xaxis[0-9]*$/.test(k)).map(k => layout[k]);
        const steps = axes.some(a => /step|iteration/i.test((a.title && a.title.text) || ''));
        return !steps ? [] : axes.filter(a => a.visible && a.type === 'linear').map(a => ({
            chart: el.id, axis: a._name, title: (a.title && a.title.text) || '',
            values: (a._vals || []).map(v => v.x), labels: (a._vals || []).map(v => v.text),
        }));
    })"""


@pytest.mark.parametrize(
    "page",
    ["demo:dashboard", "demo:agent", "trl_dashboard", "trackers:rewards", "trackers:run_report"],
)
def test_step_and_iteration_axes_tick_whole_numbers(
    browser: object, request: pytest.FixtureRequest, page: str
) -> None:
    """No tick at 1.5 on a step or iteration axis: the TRL runs have steps 1 and 2 only,
    the TensorBoard run 30 steps, the demo 6 iterations and the agent 20."""
    path = _page_path(request, page)
    for opened in _open(browser, path):
        _visit_every_tab(opened)
        axes = opened.page.evaluate(STEP_AXES)
        assert axes
        for axis in axes:
            where = f"{axis['chart']} {axis['axis']} {axis['title']}"
            assert axis["values"], where
            assert all(float(v).is_integer() for v in axis["values"]), (where, axis["values"])
            assert len(set(axis["labels"])) == len(axis["labels"]), (where, axis["labels"])
        assert opened.errors == [] and opened.refused == []


OVERVIEW = """id => {
    const el = document.getElementById(id);
    const layout = el._fullLayout;
    // (the figure's own layout: plotly leaves a hidden axis out of _fullLayout)
    const panel = n => ({
        x: el.layout['xaxis' + n].domain, y: el.layout['yaxis' + n].domain,
        ticks: el.querySelectorAll(`.x${n}tick, .y${n}tick`).length,
        traces: el._fullData.filter(t => t.xaxis === 'x' + n).map(
            t => Array.from(t.y).filter(Number.isFinite).length),
    });
    return {
        legend: Array.from(el.querySelectorAll('g.legend text.legendtext'))
            .map(t => t.textContent),
        fills: el._fullData.filter(t => t.fill && t.fill !== 'none')
            .map(t => Array.from(t.y).filter(Number.isFinite).length),
        notes: (layout.annotations || []).filter(a => a.text.startsWith('No data'))
            .map(a => ({text: a.text, x: a.x, y: a.y})),
        snr: panel(3), variance: panel(4),
        title: el.querySelector('.gtitle').textContent,
    };
}"""


def _inside(note: dict, panel: dict) -> bool:
    return (
        panel["x"][0] <= note["x"] <= panel["x"][1] and panel["y"][0] <= note["y"] <= panel["y"][1]
    )


DRAWN_ONE = """id => {
    const el = document.getElementById(id);
    return {
        traces: el._fullData.length,
        notes: (el._fullLayout.annotations || []).map(a => a.text),
    };
}"""


@pytest.mark.parametrize(
    ("page", "run", "logged_std"),
    [
        ("trackers:rewards", "tbx", False),
        ("trackers:rewards", "trl", True),
        ("demo:dashboard", "demo", True),
    ],
    ids=["tensorboard-only", "trl", "demo"],
)
def test_reward_overview_draws_the_std_band_or_says_it_is_missing(
    browser: object, request: pytest.FixtureRequest, page: str, run: str, logged_std: bool
) -> None:
    """The "±1 std" legend entry only with a band drawn; the signal-to-noise and variance
    panels of a run without a reward std (TensorBoard, the mean alone) say "not logged"
    in place of bare axes, as the training dynamics panels do."""
    path = _page_path(request, page)
    for opened in _open(browser, path):
        _visit_every_tab(opened)
        _pick(opened, run)
        opened.page.click(f"nav.tabs button:text-is('{REWARDS.tabs[1]}')")
        opened.page.wait_for_timeout(200)
        chart = opened.page.query_selector(f"#reward_signal_overview__{run}")
        chart.screenshot(path=str(path.with_name(f"reward_signal_overview__{run}.png")))
        drawn = opened.page.evaluate(OVERVIEW, f"reward_signal_overview__{run}")
        quality = opened.page.evaluate(DRAWN_ONE, f"reward_quality_metrics__{run}")
        if logged_std:
            assert drawn["legend"] == ["mean reward", "\u00b11 std"]
            assert len(drawn["fills"]) == 1 and drawn["fills"][0] > 0
            assert drawn["notes"] == []
            for panel in (drawn["snr"], drawn["variance"]):
                assert len(panel["traces"]) == 1 and panel["traces"][0] > 0 and panel["ticks"]
            assert "the band is the mean \u00b1 1 std" in drawn["title"]
            assert quality["traces"] == 3
        else:
            assert drawn["legend"] == ["mean reward"]
            assert drawn["fills"] == []
            snr, variance = drawn["notes"]
            assert snr["text"].startswith("No data: the signal-to-noise ratio was not logged")
            assert variance["text"].startswith("No data: the reward variance was not logged")
            assert _inside(snr, drawn["snr"]) and _inside(variance, drawn["variance"])
            # no bare axes: the panels have neither traces nor ticks
            assert drawn["snr"]["traces"] == drawn["variance"]["traces"] == []
            assert drawn["snr"]["ticks"] == drawn["variance"]["ticks"] == 0
            assert "no band: the run logged no reward std" in drawn["title"]
            assert quality["traces"] == 0
            assert quality["notes"][0].startswith("No data: the run logged no reward std")
        assert opened.errors == [] and opened.refused == []


# Code points that need an emoji font: emoji (U+1F000 and up), dingbats and miscellaneous
# symbols (❌ ⚠ ✓), miscellaneous technical (⏱), the information sign (U+2139), and the
# variation selectors that ask for a glyph's emoji form.
EMOJI = re.compile(
    "[\u2139\u2300-\u23ff\u2600-\u27bf\u2b00-\u2bff\ufe0e\ufe0f\U0001f000-\U0001faff]"
)
PAGE_TEXT = """() => [
    document.title, document.body.innerText,
    ...Array.from(document.querySelectorAll('svg text, option')).map(t => t.textContent),
].join('\\n')"""


@pytest.mark.parametrize(
    "page",
    ["demo:dashboard", "demo:agent", "demo:run_report", "trackers:rewards", "trackers:run_report"],
)
def test_pages_need_no_emoji_font(
    browser: object, request: pytest.FixtureRequest, page: str
) -> None:
    """Every text of the page, the charts' too, is plain text: no emoji, which shows as an
    empty box where no emoji font is installed (as in this container). The reward pages'
    advice (issues, warnings, recommendations) is marked in words and CSS shapes."""
    path = _page_path(request, page)
    for opened in _open(browser, path):
        _visit_every_tab(opened)
        text = opened.page.evaluate(PAGE_TEXT)
        assert EMOJI.findall(text) == []
        if page == "trackers:rewards":
            # the TRL run's quality report has advice: its kinds are named in words
            assert "issue: Poor reward discriminability" in text
            marks = opened.page.evaluate(
                "() => Array.from(document.querySelectorAll('dl.advice dt')).map(dt => "
                "[dt.textContent, getComputedStyle(dt, '::before').backgroundColor])"
            )
            assert ["Issues", "rgb(213, 94, 0)"] in marks
        assert opened.errors == [] and opened.refused == []


def _png_pixel(png: bytes) -> tuple[int, int, int]:
    """The colour of a 1x1 PNG (Chromium's screenshot of one pixel): its one scanline
    after the filter byte, unchanged by any filter with no neighbours."""
    import struct
    import zlib

    at, data = 8, b""
    while at < len(png):
        (size,) = struct.unpack(">I", png[at : at + 4])
        kind = png[at + 4 : at + 8]
        if kind == b"IDAT":
            data += png[at + 8 : at + 8 + size]
        at += 12 + size
    red, green, blue = zlib.decompress(data)[1:4]
    return red, green, blue


def _hex(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def _distance(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    return sum((x - y) ** 2 for x, y in zip(a, b, strict=True)) ** 0.5


CELL = """([id, column, row]) => {
    const el = document.getElementById(id);
    el.scrollIntoView({block: 'center'});
    const box = el.getBoundingClientRect();
    const xa = el._fullLayout.xaxis, ya = el._fullLayout.yaxis;
    return [box.left + xa._offset + xa.l2p(column), box.top + ya._offset + ya.l2p(row)];
}"""


def _cell_colour(
    opened: Opened, chart: str, names: list[str], cell: tuple[str, str]
) -> tuple[int, int, int]:
    """The colour drawn at the centre of a pair's heatmap cell (row a, column b)."""
    x, y = opened.page.evaluate(CELL, [chart, names.index(cell[1]), names.index(cell[0])])
    return _png_pixel(opened.page.screenshot(clip={"x": x, "y": y, "width": 1, "height": 1}))


def test_demo_interference_greys_thin_and_missing_pairs(
    browser: object, trackers: dict[str, Path]
) -> None:
    """A pair with too few rollouts and a pair never seen together are the same grey,
    far from the near-white of a lift of 1 (the colour scale's midpoint)."""
    con = duckdb.connect(str(trackers["warehouse"]), read_only=True)
    pairs = con.execute(
        "select instruction_a, instruction_b, drawn_log2_lift, has_too_few_rollouts"
        " from rpt_instruction_interference where run_id = 'demo'"
    ).fetchall()
    con.close()
    chart = "instruction_interference__demo"
    for opened in _open(browser, trackers["dashboard"]):
        _show_tab(opened, TRAINING.tabs[4])
        names = _heatmap(opened, "instruction_interference", "demo")["x"]
        seen = {(a, b) for a, b, _, _ in pairs} | {(b, a) for a, b, _, _ in pairs}
        never = next((a, b) for a in names for b in names if (a, b) not in seen)
        thin = next((a, b) for a, b, _, few in pairs if few)
        coloured = [p for p in pairs if not p[3] and p[2] is not None]
        nearest_one = min(coloured, key=lambda p: abs(p[2]))[:2]

        grey = _hex(NO_VALUE)
        assert _distance(_cell_colour(opened, chart, names, never), grey) < 4
        assert _distance(_cell_colour(opened, chart, names, thin), grey) < 4
        assert _distance(_hex(DIVERGING[2][1]), grey) > 60  # the scale's midpoint, a lift of 1
        assert _distance(_cell_colour(opened, chart, names, nearest_one), grey) > 40
        opened.page.query_selector(f"#{chart}").screenshot(
            path=str(trackers["dashboard"].with_name(f"{chart}.png"))
        )
        title = opened.page.text_content(f"#{chart} .gtitle") or ""
        assert "grey: fewer than 30 rollouts, or never together" in title
        assert opened.errors == [] and opened.refused == []


MENU = """id => {
    const el = document.getElementById(id);
    const box = e => {
        const b = e.getBoundingClientRect();
        return [b.left, b.top, b.right, b.bottom];
    };
    return {
        buttons: Array.from(el.querySelectorAll('g.updatemenu-button')).map(box),
        dropdowns: el.querySelectorAll('g.updatemenu-dropdown-button').length,
        plot: box(el.querySelector('rect.nsewdrag')),
        title: box(el.querySelector('.gtitle')),
        colorbar: box(el.querySelector('g.colorbar')),
        notes: Array.from(el.querySelectorAll('g.annotation')).map(box),
        shown: el._fullData[0].colorbar.title.text,
    };
}"""


def _overlaps(a: list[float], b: list[float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@pytest.mark.parametrize("width", [900, 1400])
def test_agent_view_buttons_stay_clear_of_the_heatmap(
    browser: object, demo: dict[str, Path], width: int
) -> None:
    """The advantage-by-turn views are buttons in the top margin (a dropdown's list fell
    over the heatmap's top rows): nothing overlaps the plot, the title or the colour bar."""
    chart = "agent_turn_means__demo-agent"
    for opened in _open(browser, demo["agent"], viewport_width=width):
        _show_tab(opened, "Turn advantages")
        opened.page.query_selector(f"#{chart}").screenshot(
            path=str(demo["agent"].with_name(f"agent_turn_means_{width}.png"))
        )
        drawn = opened.page.evaluate(MENU, chart)
        assert len(drawn["buttons"]) == 3 and drawn["dropdowns"] == 0
        (show,) = drawn["notes"]
        marks = [*drawn["buttons"], show]
        for number, mark in enumerate(marks):
            for other in (drawn["plot"], drawn["title"], drawn["colorbar"], *marks[number + 1 :]):
                assert not _overlaps(mark, other), (mark, other)
        assert drawn["shown"] == "share below 0"
        opened.page.query_selector_all(f"#{chart} g.updatemenu-button")[0].click()
        opened.page.wait_for_timeout(200)
        assert opened.page.evaluate(MENU, chart)["shown"] == "mean advantage"
        assert opened.errors == [] and opened.refused == []
