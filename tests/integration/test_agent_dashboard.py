"""The agentic run page: ``obs render-dashboard --kind agent`` and the combined tabs.

One warehouse for the module, built with the real commands:

* ``agent-1``: the synthetic agent run's rollouts (turn rewards, exit
  reasons, tokens) and eval files, 24 iterations: more than the group
  selector holds (20), so the page says it is capped;
* ``agent-log``: another synthetic run known only from its console log
  (advantage tables, group summaries and eval blocks);
* ``agent-base``: eval files only, with a baseline (step -1) and the beat
  rates the baseline makes meaningful;
* ``plain``: a single-turn run (``{"input", "output", "score"}`` rows), which
  has no agent data and must get no agent section.

Every number a chart shows is compared with the mart it comes from.
"""

from __future__ import annotations

import base64
import html
import json
import math
import re
import shutil
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import plotly.graph_objects as go
import pytest
from obs.demo.agent import AgentSpec, write_agent_run
from obs.reports import TrainingDashboard
from obs.reports.agent_dashboard import AGENT_MARTS, HEATMAP_ITERATIONS
from obs.reports.charts import AGENT as AGENT_PAGE
from obs.reports.charts import COMPARISON, TRAINING, charts_of
from obs.reports.figures.agent import EARLY_REASONS, EVAL_RATES, EVAL_SEARCHES

from tests.conftest import picked_runs, run_cli

AGENT_CHARTS = charts_of(AGENT_PAGE)

pytestmark = pytest.mark.integration

AGENT = AgentSpec(steps=24, queries=6, rollouts=4, eval_every=6)
LOGGED = AgentSpec(steps=6, queries=6, rollouts=5, eval_every=3, given_advantages=True, seed=5)
BEAT_RATES = {3: 0.4, 6: 0.55}
BASELINE = {
    "step": -1,
    "is_baseline": True,
    "accuracy": 0.3,
    "correct_answers": 30,
    "total_samples": 100,
    "attempted_answer": 80,
    "found_correct_email": 40,
    "read_correct_email": 35,
    "num_idk": 20,
}
RATE_LABELS = {column: label for column, label, *_ in EVAL_RATES}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The module's warehouse (four runs, one build) and its rendered pages."""
    root = tmp_path_factory.mktemp("agent_dashboard")
    base = ["--lake", root / "lake", "--warehouse", root / "obs.duckdb"]
    agent = write_agent_run(root / "agent-1", AGENT)
    run_cli([*base, "ingest", "rollouts", agent.path / "rollouts", "--run", "agent-1", "-q"])
    run_cli([*base, "ingest", "eval-logs", agent.path / "eval_logs", "--run", "agent-1", "-q"])
    logged = write_agent_run(root / "agent-2", LOGGED)
    run_cli([*base, "ingest", "trainer-log", logged.path / "train.log", "--run", "agent-log", "-q"])
    evals = root / "agent-base" / "eval_logs"
    evals.mkdir(parents=True)
    for path in sorted((logged.path / "eval_logs").glob("eval_step_*.json")):
        stats = json.loads(path.read_text())
        stats["beat_rate"] = BEAT_RATES[stats["step"]]
        (evals / path.name).write_text(json.dumps(stats))
    (evals / "baseline_eval.json").write_text(json.dumps(BASELINE))
    run_cli([*base, "ingest", "eval-logs", evals, "--run", "agent-base", "-q"])
    plain = root / "plain"
    plain.mkdir()
    rows = [
        {"input": f"prompt {i % 2}", "output": f"out {i}", "score": i % 3 / 2} for i in range(6)
    ]
    (plain / "0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    run_cli([*base, "ingest", "rollouts", plain, "--run", "plain", "-q"])
    run_cli([*base, "build", "-q"])
    pages = root / "pages"
    run_cli([*base, "render-dashboard", "--kind", "agent", "--out", pages / "agent.html"])
    one = pages / "agent-1.html"
    run_cli([*base, "render-dashboard", "--kind", "agent", "--run", "agent-1", "--out", one])
    run_cli([*base, "render-dashboard", "--out", pages / "combined.html"])
    shots = root / "screenshots"
    shots.mkdir()
    return {
        "root": root,
        "base": base,
        "warehouse": root / "obs.duckdb",
        "pages": pages,
        "shots": shots,
    }


# ---------------------------------------------------------------- helpers


def _array(value: Any) -> list:
    """A figure array as a list: Plotly writes numpy arrays as base64 typed arrays."""
    if isinstance(value, dict) and "bdata" in value:
        flat = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        shape = value.get("shape")
        if shape:
            dims = [int(d) for d in str(shape).split(",")]
            return flat.reshape(dims).tolist()
        return flat.tolist()
    return list(value)


def _figures(page: str) -> dict[str, dict]:
    """The page's figures (layout and traces as JSON) by their div id."""
    blocks = re.findall(r'<script type="application/json" id="([^"]+)-figure">(.*?)</script>', page)
    return {div: json.loads(text.replace("<\\/", "</")) for div, text in blocks}


def _groups(page: str, run: str) -> list[dict]:
    found = re.search(
        rf'id="agent_advantage_group__{re.escape(run)}-groups">(.*?)</script>', page
    ).group(1)
    return json.loads(found.replace("<\\/", "</"))


def _traces(figure: dict) -> dict[str, dict]:
    return {t["name"]: t for t in figure["data"] if t.get("name")}


def _tiles(page: str) -> dict[str, str]:
    found = re.findall(r'<div class="value">(.*?)</div><div class="label">(.*?)</div>', page)
    return {html.unescape(label): html.unescape(value) for value, label in found}


def _tabs(page: str) -> list[str]:
    return [html.unescape(t) for t in re.findall(r'<button role="tab"[^>]*>(.*?)</button>', page)]


def _rows(warehouse: Path, sql: str, params: list | None = None) -> list[tuple]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def _same(actual: list, expected: list) -> bool:
    """Equal lists of numbers, None and NaN both standing for a missing value."""

    def missing(v: Any) -> bool:
        return v is None or (isinstance(v, float) and math.isnan(v))

    return len(actual) == len(expected) and all(
        (missing(a) and missing(e)) or (not missing(a) and math.isclose(a, e, abs_tol=1e-9))
        for a, e in zip(actual, expected, strict=True)
    )


@pytest.fixture(scope="module")
def page_one(built: dict) -> str:
    return (built["pages"] / "agent-1.html").read_text()


@pytest.fixture(scope="module")
def page_all(built: dict) -> str:
    return (built["pages"] / "agent.html").read_text()


# ---------------------------------------------------------------- the page


def test_page_has_the_three_tabs_and_every_chart(page_one: str) -> None:
    assert _tabs(page_one) == list(AGENT_PAGE.tabs)
    sections = re.findall(r'<div class="section" id="(agentic-\d)"', page_one)
    assert sections == ["agentic-0", "agentic-1", "agentic-2"]
    figures = _figures(page_one)
    assert sorted(figures) == sorted(f"{name}__agent-1" for name in AGENT_CHARTS)
    text = html.unescape(page_one)
    for name, info in AGENT_CHARTS.items():
        assert figures[f"{name}__agent-1"]["layout"]["title"]["text"].startswith(info.title)
        assert f"Use for: {info.use_for}." in text, name
    assert 'data-block="agent_summary"' in page_one
    assert "obs agentic run: agent-1" in page_one
    assert "<h2" not in page_one  # one run: no per-run heading


def test_eval_lines_equal_fct_eval_steps(page_one: str, built: dict) -> None:
    figures = _figures(page_one)
    marts = _rows(
        built["warehouse"],
        "select step, accuracy, attempted_rate, found_rate, read_rate, idk_share, total_searches,"
        " total_unique_searches, total_repeated_searches, avg_turns_correct, avg_turns_idk,"
        " num_idk, beat_rate, has_baseline from fct_eval_steps"
        " where run_id = 'agent-1' and not is_baseline order by step",
    )
    steps = [float(r[0]) for r in marts]
    assert steps == [6.0, 12.0, 18.0, 24.0]
    rates = _traces(figures["agent_eval_rates__agent-1"])
    for index, column in enumerate(
        ("accuracy", "attempted_rate", "found_rate", "read_rate", "idk_share"), start=1
    ):
        trace = rates[RATE_LABELS[column]]
        assert _array(trace["x"]) == steps
        assert _same(_array(trace["y"]), [r[index] for r in marts]), column
    # beat_rate is 0.0 in the mart, with no baseline to back it: it is not drawn
    assert {r[12] for r in marts} == {0.0} and {r[13] for r in marts} == {None}
    assert not any("beat" in name for name in rates)
    assert (
        "no baseline was compared"
        in figures["agent_eval_rates__agent-1"]["layout"]["title"]["text"]
    )
    searches = _traces(figures["agent_eval_searches__agent-1"])
    for index, (_, label, *_) in enumerate(EVAL_SEARCHES, start=6):
        assert _same(_array(searches[label]["y"]), [float(r[index]) for r in marts]), label
    turns = _traces(figures["agent_eval_turns__agent-1"])
    assert _same(_array(turns["turns of a correct answer"]["y"]), [r[9] for r in marts])
    assert _same(_array(turns['turns of an "I don\'t know"']["y"]), [r[10] for r in marts])
    idk = turns['"I don\'t know" answers (right axis)']
    assert _same(_array(idk["y"]), [float(r[11]) for r in marts])


def test_baseline_is_a_reference_line_and_the_beat_rate_is_drawn(page_all: str) -> None:
    figure = _figures(page_all)["agent_eval_rates__agent-base"]
    # the baseline is no point at step -1 ...
    for trace in figure["data"]:
        assert -1.0 not in [v for v in _array(trace.get("x") or []) if v is not None]
    # ... but a dotted line across the chart for each rate it has
    lines = {round(s["y0"], 6) for s in figure["layout"]["shapes"] if s["y0"] == s["y1"]}
    assert lines == {0.3, 0.8, 0.4, 0.35, 0.2}
    assert any("baseline accuracy: 30.0%" in a["text"] for a in figure["layout"]["annotations"])
    beat = _traces(figure)["beat the baseline (share of queries)"]
    assert _array(beat["x"]) == [3.0, 6.0]
    assert _same(_array(beat["y"]), [BEAT_RATES[3], BEAT_RATES[6]])
    assert _tiles(page_all)["Baseline accuracy"] == "30.0%"


def test_group_charts_equal_fct_group_summary(page_one: str, built: dict) -> None:
    figures = _figures(page_one)
    marts = _rows(
        built["warehouse"],
        "select iteration, groups_kept, groups_filtered, early_answered, early_idk, early_error,"
        " early_other, early_exit_rate, filtered_share, trainable_token_share"
        " from fct_group_summary where run_id = 'agent-1' order by iteration",
    )
    iterations = [float(r[0]) for r in marts]
    assert iterations == [float(i) for i in range(1, AGENT.steps + 1)]
    bars = _traces(figures["agent_groups__agent-1"])
    assert figures["agent_groups__agent-1"]["layout"]["barmode"] == "stack"
    assert _array(bars["kept for training"]["x"]) == iterations
    assert _same(_array(bars["kept for training"]["y"]), [float(r[1]) for r in marts])
    assert _same(_array(bars["filtered (low variance)"]["y"]), [float(r[2]) for r in marts])
    assert sum(r[2] for r in marts) >= AGENT.steps  # one zero-variance group a step
    exits = _traces(figures["agent_early_exits__agent-1"])
    for index, (_, label, _) in enumerate(EARLY_REASONS[:3], start=3):
        assert _same(_array(exits[label]["y"]), [float(r[index]) for r in marts]), label
    assert {r[6] for r in marts} == {0}  # no other reason: no "other" bars
    assert EARLY_REASONS[3][1] not in exits
    shares = _traces(figures["agent_train_shares__agent-1"])
    assert _same(_array(shares["rollouts that finished early"]["y"]), [r[7] for r in marts])
    assert _same(_array(shares["groups filtered"]["y"]), [r[8] for r in marts])
    assert _same(_array(shares["tokens trained on"]["y"]), [r[9] for r in marts])


def test_a_console_log_run_shows_its_logged_totals(page_all: str, built: dict) -> None:
    figures = _figures(page_all)
    marts = _rows(
        built["warehouse"],
        "select iteration, finished_early, groups_kept, basis from fct_group_summary"
        " where run_id = 'agent-log' order by iteration",
    )
    assert {r[3] for r in marts} == {"trainer-log"}
    exits = _traces(figures["agent_early_exits__agent-log"])
    assert list(exits) == ["finished early (the logged total; no reasons)"]
    logged = exits["finished early (the logged total; no reasons)"]
    assert _same(_array(logged["y"]), [float(r[1]) for r in marts])
    kept = _traces(figures["agent_groups__agent-log"])["kept for training"]
    assert _same(_array(kept["y"]), [float(r[2]) for r in marts])
    assert (
        "as the trainer logged them"
        in figures["agent_groups__agent-log"]["layout"]["title"]["text"]
    )


def _mart_group(warehouse: Path, run: str, iteration: int, group: str) -> list[tuple]:
    return _rows(
        warehouse,
        "select sample_idx, turn, advantage, is_given from fct_turn_advantages"
        " where run_id = ? and iteration = ? and group_id = ?",
        [run, iteration, group],
    )


def _check_entry(entry: dict, rows: list[tuple]) -> None:
    """The entry's grid holds exactly the mart's cells (None where the rollout had stopped)."""
    cells = {(sample + 1, turn): (advantage, given) for sample, turn, advantage, given in rows}
    assert entry["rollouts"] == sorted({r for r, _ in cells})
    assert entry["turns"] == list(range(1, max(t for _, t in cells) + 1))
    for i, rollout in enumerate(entry["rollouts"]):
        for j, turn in enumerate(entry["turns"]):
            if (rollout, turn) in cells:
                advantage, given = cells[(rollout, turn)]
                assert entry["z"][i][j] == pytest.approx(advantage)
                assert entry["how"][i][j] == (2 if entry["origin"].endswith("log") else int(given))
            else:
                assert entry["z"][i][j] is None and entry["how"][i][j] is None


def test_group_heatmap_json_equals_fct_turn_advantages(page_one: str, built: dict) -> None:
    warehouse = built["warehouse"]
    groups = _groups(page_one, "agent-1")
    iterations = sorted({g["iteration"] for g in groups}, reverse=True)
    # the latest 20 of the 24 iterations, every group of each, the latest first
    assert iterations == list(range(AGENT.steps, AGENT.steps - HEATMAP_ITERATIONS, -1))
    assert len(groups) == HEATMAP_ITERATIONS * AGENT.queries
    assert "latest 20 of the 24 iterations" in page_one
    first = groups[0]
    (group_ids,) = _rows(
        warehouse,
        "select list(distinct group_id order by group_id) from fct_turn_advantages"
        " where run_id = 'agent-1' and iteration = ?",
        [AGENT.steps],
    )
    assert first["iteration"] == AGENT.steps and first["group_id"] == group_ids[0][0]
    for entry in (first, groups[len(groups) // 2], groups[-1]):
        rows = _mart_group(warehouse, "agent-1", entry["iteration"], entry["group_id"])
        assert entry["origin"] == "computed from turn rewards"
        _check_entry(entry, rows)
    # the chart drawn at load is the first entry's
    figure = _figures(page_one)["agent_advantage_group__agent-1"]
    trace = figure["data"][0]
    assert trace["type"] == "heatmap" and trace["z"] == first["z"]
    assert trace["zmin"] == -trace["zmax"]  # diverging, centred on 0
    (largest,) = _rows(
        warehouse,
        "select max(abs(advantage)) from fct_turn_advantages where run_id = 'agent-1'"
        " and iteration > ?",
        [AGENT.steps - HEATMAP_ITERATIONS],
    )
    assert trace["zmax"] == pytest.approx(largest[0])
    assert f"iteration {AGENT.steps}" in figure["layout"]["title"]["text"]
    # the selector: one option an entry, grouped by iteration
    options = re.findall(r'<option value="(\d+)"', page_one)
    assert options == [str(i) for i in range(len(groups))]
    assert page_one.count("<optgroup") == HEATMAP_ITERATIONS


def test_group_selector_keeps_fewer_iterations_past_its_cell_cap(
    built: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    from obs.reports import agent_dashboard

    (cells,) = _rows(
        built["warehouse"],
        "select count(*) from fct_turn_advantages where run_id = 'agent-1' and iteration = ?",
        [AGENT.steps],
    )
    # room for the latest iteration and part of the next: both are kept, no more
    monkeypatch.setattr(agent_dashboard, "HEATMAP_CELLS", cells[0] + 1)
    (run,) = agent_dashboard.load_agent_dashboard(built["warehouse"], ["agent-1"]).runs
    assert sorted({g["iteration"] for g in run.groups}) == [AGENT.steps - 1, AGENT.steps]
    assert "latest 2 of the 24 iterations" in run.groups_note
    monkeypatch.setattr(agent_dashboard, "HEATMAP_CELLS", 1)
    (run,) = agent_dashboard.load_agent_dashboard(built["warehouse"], ["agent-1"]).runs
    assert {g["iteration"] for g in run.groups} == {AGENT.steps}  # the latest, always


def test_console_log_groups_are_given_advantages(page_all: str, built: dict) -> None:
    groups = _groups(page_all, "agent-log")
    assert [g["group_id"] for g in groups[:2]] == ["1", "2"]  # numbered groups by number
    for entry in groups[:2]:
        assert entry["origin"] == "given by the trainer's log"
        _check_entry(
            entry,
            _mart_group(built["warehouse"], "agent-log", entry["iteration"], entry["group_id"]),
        )
    assert "all 6 iterations with turn advantages" in page_all


def test_turn_heatmaps_equal_fct_turn_summary(page_one: str, page_all: str, built: dict) -> None:
    figures = _figures(page_one)
    marts = _rows(
        built["warehouse"],
        "select iteration, turn, active_share, negative_share, mean_advantage"
        " from fct_turn_summary where run_id = 'agent-1'",
    )
    active = figures["agent_turn_active__agent-1"]["data"][0]
    means = figures["agent_turn_means__agent-1"]["data"][0]
    for trace, column in ((active, 2), (means, 3)):
        x, y, z = _array(trace["x"]), _array(trace["y"]), trace["z"]
        grid = {(i, t): z[y.index(t)][x.index(i)] for i in x for t in y}
        expected = {(r[0], r[1]): r[column] for r in marts}
        assert {k for k, v in grid.items() if v is not None} == set(expected)
        for key, value in expected.items():
            assert grid[key] == pytest.approx(value)
    # computed advantages average 0 at every turn: the chart opens on the share below 0,
    # and its menu switches to the mean
    assert max(abs(r[4]) for r in marts) < 1e-9
    menu = figures["agent_turn_means__agent-1"]["layout"]["updatemenus"][0]
    assert menu["type"] == "buttons"
    assert [b["label"] for b in menu["buttons"]][menu["active"]] == "share below 0"
    logged = _figures(page_all)["agent_turn_means__agent-log"]["layout"]
    assert logged["updatemenus"][0]["active"] == 0  # given advantages: the mean


def test_kpi_tiles_equal_the_marts(page_one: str, built: dict) -> None:
    tiles = _tiles(page_one)
    ((accuracy, change, previous),) = _rows(
        built["warehouse"],
        "select accuracy, accuracy_change, previous_step from fct_eval_steps"
        " where run_id = 'agent-1' order by step desc limit 1",
    )
    ((kept, filtered, total, rate, early, rollouts, share),) = _rows(
        built["warehouse"],
        "select groups_kept, groups_filtered, groups_total, early_exit_rate, finished_early,"
        " rollouts, trainable_token_share from fct_group_summary"
        " where run_id = 'agent-1' order by iteration desc limit 1",
    )
    last = AGENT.steps
    assert tiles[f"Eval accuracy (step {last})"] == f"{accuracy:.1%}"
    assert tiles[f"Accuracy change since step {previous}"] == f"{change * 100:+.1f} pts"
    assert tiles[f"Groups kept / filtered (iteration {last})"] == f"{kept} / {filtered} of {total}"
    assert tiles[f"Early-exit rate (iteration {last})"] == f"{rate:.1%} ({early}/{rollouts})"
    assert tiles[f"Tokens trained on (iteration {last})"] == f"{share:.1%}"
    assert tiles["Eval steps"] == "4"
    assert tiles["Iterations with group counts"] == str(AGENT.steps)
    assert tiles["Iterations with turn advantages"] == str(AGENT.steps)
    assert "Baseline accuracy" not in tiles and not any("Beat" in t for t in tiles)


def test_several_runs_and_no_plain_run(page_all: str) -> None:
    runs = ("agent-1", "agent-base", "agent-log")
    for run in runs:
        assert page_all.count(f'<div class="run-block" data-run="{run}">') == len(AGENT_PAGE.tabs)
    assert picked_runs(page_all) == list(runs)
    assert "run plain" not in page_all and "__plain" not in page_all
    assert sorted(_figures(page_all)) == sorted(_expected_plots())
    # a run with eval files only: its other tabs say what is missing, in one note each
    notes = re.findall(r'data-block="agent_note">\s*<h3>(.*?)</h3>', page_all)
    assert notes == ["No group summary", "No turn advantages"]
    assert "obs ingest trainer-log" in page_all
    assert 'id="agent_advantage_group__agent-base-select"' not in page_all


def _expected_plots() -> list[str]:
    """The page's charts: every chart of agent-1 and agent-log, agent-base's eval charts."""
    full = [f"{n}__{r}" for r in ("agent-1", "agent-log") for n in AGENT_CHARTS]
    evals = [f"{n}__agent-base" for n, i in AGENT_CHARTS.items() if i.tab == AGENT_PAGE.tabs[0]]
    return full + evals


def test_combined_dashboard_adds_the_agent_tabs(built: dict) -> None:
    page = (built["pages"] / "combined.html").read_text()
    tabs = _tabs(page)
    # two runs with rollouts (agent-1, plain): the run comparison comes first
    assert tabs[: len(TRAINING.tabs) + 1] == [COMPARISON, *TRAINING.tabs]
    assert tabs[-len(AGENT_PAGE.tabs) :] == list(AGENT_PAGE.tabs)
    assert 'class="tab-group">Agentic run<' in page
    figures = _figures(page)
    # the combined dashboard shows the runs with rollouts or agent data: the console-log
    # and eval-file runs get their agent charts there too, and a note in the rollout tabs
    assert picked_runs(page) == ["agent-1", "agent-base", "agent-log", "plain"]
    assert sorted(f for f in figures if f.split("__")[0] in AGENT_CHARTS) == sorted(
        _expected_plots()
    )
    assert not any(f.startswith("agent_") and f.endswith("__plain") for f in figures)
    rollout_charts = [f for f in figures if not f.startswith(("agent_", "compare_"))]
    assert not any(f.endswith(("__agent-log", "__agent-base")) for f in rollout_charts)
    for run in ("agent-log", "agent-base"):
        note = f"run {run} has no rollouts, so these tabs have nothing to show"
        assert page.count(note) == len(TRAINING.tabs)
    assert page.count("run plain has no agentic data") == len(AGENT_PAGE.tabs)
    # the comparison holds the two runs with rollouts only
    curves = figures["compare_learning_curves"]
    assert sorted({t["name"] for t in curves["data"]}) == ["agent-1", "plain"]
    assert _groups(page, "agent-1") == _groups(
        (built["pages"] / "agent-1.html").read_text(), "agent-1"
    )
    # the plain run alone: no agent tab at all
    out = built["root"] / "pages" / "plain_combined.html"
    run_cli([*built["base"], "render-dashboard", "--run", "plain", "--out", out])
    text = out.read_text()
    assert _tabs(text)[: len(TRAINING.tabs)] == list(TRAINING.tabs)
    assert "agentic-0" not in text and "Agentic run" not in text


def test_a_run_without_agent_data_gets_a_note(built: dict, tmp_path: Path) -> None:
    out = tmp_path / "plain.html"
    result = run_cli(
        [*built["base"], "render-dashboard", "--kind", "agent", "--run", "plain", "--out", out]
    )
    assert result.stdout.strip() == str(out)
    assert "No agentic data" in result.stderr
    page = out.read_text()
    assert "No agentic data for run plain" in page
    assert "runs with agentic data: agent-1, agent-base, agent-log" in page
    assert 'class="plot"' not in page and "<nav" not in page


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ("delete from {mart}", "no run in this warehouse has eval steps"),
        ("drop table {mart}", "built before the agent marts"),
    ],
)
def test_a_warehouse_without_agent_data_says_so(
    built: dict, tmp_path: Path, change: str, says: str
) -> None:
    copy = tmp_path / "copy.duckdb"
    shutil.copy(built["warehouse"], copy)
    con = duckdb.connect(str(copy))
    for mart in AGENT_MARTS:
        con.execute(change.format(mart=mart))
    con.close()
    base = ["--lake", built["root"] / "lake", "--warehouse", copy]
    out = tmp_path / "agent.html"
    result = run_cli([*base, "render-dashboard", "--kind", "agent", "--out", out])
    assert "No agentic data" in result.stderr
    page = out.read_text()
    assert "<h3>No agentic data</h3>" in page and says in page
    assert 'class="plot"' not in page
    assert len(page) < 20_000  # no plotly.js for a page without charts
    combined = tmp_path / "dashboard.html"
    run_cli([*base, "render-dashboard", "--out", combined])
    text = combined.read_text()
    assert "agentic-0" not in text and "Agentic run" not in text


def test_page_loads_nothing_from_the_network(page_one: str) -> None:
    scripts = re.findall(r"<script>(.*?)</script>", page_one, flags=re.S)
    bundle = max(scripts, key=len)
    assert len(bundle) > 3_000_000 and "plotly" in bundle[:2000].lower()  # plotly.js, inline
    rest = page_one.replace(bundle, "")
    assert not re.search(r"<(link|img|iframe|object|embed|source)\b|<script [^>]*src=", rest)
    assert not re.search(r"https?://|@import|url\(", rest)


def test_cli_errors(built: dict, tmp_path: Path) -> None:
    base = built["base"]
    missing = run_cli([*base, "render-dashboard", "--kind", "agent", "--run", "nope"], 1)
    assert missing.stderr.startswith(f"Error: {built['warehouse']}: no run 'nope' (runs: ")
    assert "agent-1" in missing.stderr and "plain" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
    for extra, option in (
        (["--output-dir", tmp_path], "--output-dir"),
        (["--iterations", "1"], "--iterations"),
        (["--chart", "x"], "--chart"),
        (["--format", "png"], "--format png"),
    ):
        usage = run_cli([*base, "render-dashboard", "--kind", "agent", *extra], 2)
        assert f"Error: {option} is for the combined dashboard, not --kind agent" in usage.stderr


def test_python_api(built: dict, tmp_path: Path) -> None:
    charts = TrainingDashboard(
        warehouse=built["warehouse"], run="agent-log"
    ).generate_agent_charts()
    assert list(charts) == list(AGENT_CHARTS)
    assert all(isinstance(f, go.Figure) for f in charts.values())
    assert (
        TrainingDashboard(warehouse=built["warehouse"], run="plain").generate_agent_charts() == {}
    )
    page = TrainingDashboard(warehouse=built["warehouse"], run="agent-log").save_agent_dashboard(
        tmp_path / "log.html"
    )
    assert "obs agentic run: agent-log" in page.read_text()


# ---------------------------------------------------------------- in Chromium


def test_every_agent_chart_draws_offline(browser: object, built: dict) -> None:
    from tests.integration.test_browser import DRAWN, _open

    for opened in _open(browser, built["pages"] / "agent.html"):
        page = opened.page
        tabs = page.query_selector_all("nav.tabs button")
        assert [t.inner_text() for t in tabs] == list(AGENT_PAGE.tabs)
        # one run at a time, as the run picker shows them
        for run in ("agent-1", "agent-base", "agent-log"):
            page.select_option("#run-pick", run)
            for number, tab in enumerate(tabs):
                tab.click()
                page.wait_for_timeout(200)
                shown = [p for p in page.evaluate(DRAWN) if p["width"] > 0]
                assert all(p["section"] == f"agentic-{number}" for p in shown)
                assert all(p["id"].endswith(f"__{run}") for p in shown), shown
                assert all(p["drawn"] for p in shown), shown
                if run == "agent-1":
                    assert shown
                    shot = built["shots"] / f"agent_tab_{number}.png"
                    page.screenshot(path=str(shot), full_page=True)
        plots = page.evaluate(DRAWN)
        assert sorted(p["id"] for p in plots) == sorted(_expected_plots())
        assert [p["id"] for p in plots if not p["drawn"]] == []
        assert [p["id"] for p in plots if p["traces"] == 0] == []  # no empty chart
        assert page.locator("svg.main-svg").count() >= len(plots)
        assert opened.errors == []
        assert opened.refused == []


def test_choosing_a_group_redraws_the_heatmap(browser: object, built: dict) -> None:
    from tests.integration.test_browser import _open

    page_file = built["pages"] / "agent-1.html"
    groups = _groups(page_file.read_text(), "agent-1")
    plot = "agent_advantage_group__agent-1"
    read = (
        f"() => {{ const d = document.getElementById('{plot}').data[0]; return [d.x, d.y, d.z]; }}"
    )
    for opened in _open(browser, page_file):
        page = opened.page
        page.click("nav.tabs button >> text=Turn advantages")
        page.wait_for_timeout(200)
        x, y, z = page.evaluate(read)
        assert (x, y, z) == (groups[0]["turns"], groups[0]["rollouts"], groups[0]["z"])
        pick = next(i for i, g in enumerate(groups) if g["iteration"] == AGENT.steps - 7)
        page.select_option(f"#{plot}-select", str(pick))
        page.wait_for_timeout(200)
        x, y, z = page.evaluate(read)
        entry = groups[pick]
        assert (x, y, z) == (entry["turns"], entry["rollouts"], entry["z"])
        _check_entry(
            {**entry, "z": z},
            _mart_group(built["warehouse"], "agent-1", entry["iteration"], entry["group_id"]),
        )
        title = page.evaluate(f"() => document.getElementById('{plot}').layout.title.text")
        assert f"iteration {entry['iteration']} · group {entry['group_id']}" in title
        page.screenshot(path=str(built["shots"] / "agent_group_picked.png"), full_page=True)
        assert opened.errors == [] and opened.refused == []


def test_combined_dashboard_agent_tab_draws(browser: object, built: dict) -> None:
    from tests.integration.test_browser import DRAWN, _open

    for opened in _open(browser, built["pages"] / "combined.html"):
        page = opened.page
        tabs = page.query_selector_all("nav.tabs button")
        for number in range(len(AGENT_PAGE.tabs)):
            tabs[len(tabs) - len(AGENT_PAGE.tabs) + number].click()
            page.wait_for_timeout(200)
            shot = built["shots"] / f"combined_agent_tab_{number}.png"
            page.screenshot(path=str(shot), full_page=True)
        # agent-1, the first run of the picker: every agent chart drawn, with data;
        # the other runs' charts wait until their run is picked
        agent = [p for p in page.evaluate(DRAWN) if p["id"].split("__")[0] in AGENT_CHARTS]
        assert sorted(p["id"] for p in agent) == sorted(_expected_plots())
        first = [p for p in agent if p["id"].endswith("__agent-1")]
        assert len(first) == len(AGENT_CHARTS)
        assert all(p["drawn"] and p["traces"] > 0 for p in first), first
        assert not any(p["drawn"] for p in agent if p not in first)
        # the console-log run: its agent charts draw when picked; its rollout tabs say
        # it has none
        page.select_option("#run-pick", "agent-log")
        page.wait_for_timeout(200)
        log = [p for p in page.evaluate(DRAWN) if p["id"].endswith("__agent-log")]
        shown = [p for p in log if p["width"] > 0]
        assert shown and all(p["drawn"] and p["traces"] > 0 for p in shown)
        tabs[1].click()  # Core dynamics (the run comparison comes first)
        page.wait_for_timeout(200)
        assert "run agent-log has no rollouts" in page.inner_text("#section-0")
        assert opened.errors == [] and opened.refused == []
