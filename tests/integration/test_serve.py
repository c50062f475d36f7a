"""``obs serve`` as a user meets it: a real server process, real HTTP, Debian's Chromium.

The server runs as ``obs serve`` in its own process over a warehouse built by
the real ``obs ingest`` and ``obs build``; pages are opened in Chromium
(Playwright) with every request outside the server refused.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pytest
from obs.core.identity import prompt_hash

from tests.conftest import lake_query, run_cli

pytestmark = [pytest.mark.integration, pytest.mark.slow]

OBS = str(Path(sys.executable).parent / "obs")
HOSTILE = (
    "<script>alert(1)</script> and <img src=x onerror=alert(1)> "
    '</textarea><a href="javascript:alert(2)">link</a> \u202eevil\u202c \x07bell abc\u202edef'
)
# Where each character of "abc", then "def", sits (line, then left edge): in reading order
# unless something reorders them (a right-to-left override applied reverses what follows).
EDGES = """selector => {
  const block = document.querySelector(selector);
  const walker = document.createTreeWalker(block, NodeFilter.SHOW_TEXT);
  const edges = {};
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (const word of ["abc", "def"]) {
      const at = node.data.lastIndexOf(word);
      if (at < 0 || word in edges) { continue; }
      edges[word] = [0, 1, 2].map(i => {
        const range = document.createRange();
        range.setStart(node, at + i);
        range.setEnd(node, at + i + 1);
        const box = range.getBoundingClientRect();
        return [Math.round(box.top), box.left];
      });
    }
  }
  return edges;
}"""


def _rollout(prompt: str, response: str, score: float, step: int) -> str:
    return json.dumps({"input": prompt, "output": response, "score": score, "step": step})


def _write_iteration(folder: Path, iteration: int, prompts: list[str], samples: int = 3) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        _rollout(
            p,
            f"{HOSTILE} answer {s}" if "hostile" in p else f"answer {s}",
            (s + iteration) % 3 / 2,
            iteration,
        )
        for p in prompts
        for s in range(samples)
    ]
    (folder / f"{iteration}.jsonl").write_text("".join(line + "\n" for line in lines))
    return len(lines)


PROMPTS = ["plain prompt one", "plain prompt two", f"hostile prompt {HOSTILE}"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def _server(
    lake: Path, warehouse: Path, log: Path, *extra: str, port: int | None = None
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = port or _free_port()
    command = [
        OBS,
        *("--lake", str(lake), "--warehouse", str(warehouse)),
        *("serve", "--port", str(port), *extra),
    ]
    handle = log.open("w")
    process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(base + "/api/version", timeout=5).read()
                break
            except (urllib.error.URLError, ConnectionError):
                assert process.poll() is None, log.read_text()
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
        yield base, process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=120)
        handle.close()


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("serve")
    lake, warehouse, dumps = root / "lake", root / "obs.duckdb", root / "dumps"
    for iteration in range(3):
        _write_iteration(dumps, iteration, PROMPTS)
    settings = ["--lake", lake, "--warehouse", warehouse]
    run_cli([*settings, "ingest", "rollouts", dumps, "--run", "grpo-1", "-q"])
    run_cli([*settings, "build", "--quiet"])
    return {"root": root, "lake": lake, "warehouse": warehouse, "dumps": dumps}


@contextmanager
def _browser(browser: Any) -> Iterator[Any]:
    """The module's Chromium (tests/integration/conftest.py) for one test: the pages
    this test opens are closed when it ends, whatever its outcome."""
    before = set(browser.contexts)
    try:
        yield browser
    finally:
        for context in browser.contexts:
            if context not in before:
                context.close()


def _open(browser: Any, base: str) -> tuple[Any, list[str], list[str]]:
    """A page that may reach only the server; its console errors and dialogs."""
    page = browser.new_page()
    errors: list[str] = []
    dialogs: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.route(
        "**/*",
        lambda route: route.continue_() if route.request.url.startswith(base) else route.abort(),
    )
    return page, errors, dialogs


def _until(check: Any, timeout: float, what: str) -> float:
    """Seconds until ``check()`` holds (polled from here: the page's CSP refuses eval)."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < timeout, f"never: {what}"
        time.sleep(0.1)
    return time.monotonic() - started


def _status(page: Any) -> str:
    return str(page.locator("#live-status").text_content() or "")


def test_every_page_draws_and_model_text_shows_as_text(
    built: dict[str, Path], browser: Any
) -> None:
    hostile = prompt_hash(PROMPTS[2])
    plain = prompt_hash(PROMPTS[0])
    with (
        _server(built["lake"], built["warehouse"], built["root"] / "a.log") as (base, _),
        _browser(browser) as browser,
    ):
        page, errors, dialogs = _open(browser, base)
        page.goto(base + "/")
        assert page.locator("table.runs tbody tr").count() == 1
        assert page.locator("table.runs a", has_text="grpo-1").count() == 1
        page.goto(base + "/runs/grpo-1")
        assert page.locator("h1").inner_text() == "Run grpo-1"
        page.goto(base + "/findings")
        page.goto(f"{base}/runs/grpo-1/prompts/{plain}")
        page.wait_for_selector(".plot .main-svg")
        assert page.locator("table tbody tr").count() == 3  # one row per iteration
        # The hostile prompt and its responses: the text, never markup or script.
        page.goto(f"{base}/runs/grpo-1/prompts/{hostile}?iteration=1")
        page.wait_for_selector(".plot .main-svg")
        shown = page.locator("pre.prompt").inner_text()
        assert "<script>alert(1)</script>" in shown and "<img src=x onerror=alert(1)>" in shown
        assert "\u2407bell" in shown  # the bell as its visible picture
        assert page.locator("pre.response").count() == 3
        assert "</textarea><a href=" in page.locator("pre.response").first.inner_text()
        # Bidirectional controls show as a mark and reorder nothing: the text after an
        # override still reads left to right, in the prompt and in the responses.
        for block in ("pre.prompt", "pre.response"):
            text = page.locator(block).first.inner_text()
            assert "abc\u27e8U+202E\u27e9def" in text and "\u202e" not in text, text
            assert page.locator(f"{block} span.ctl", has_text="U+202E").count() >= 2
            edges = page.evaluate(EDGES, block)
            lefts = edges["abc"] + edges["def"]
            assert lefts == sorted(lefts), (block, edges)
        assert page.locator("main img, main a[href^='javascript']").count() == 0
        # The whole response: as text with the same marks, or as written, saved as a file.
        whole = f"{base}/runs/grpo-1/prompts/{hostile}/response?iteration=1&sample=0"
        marked = page.request.get(whole)
        assert marked.headers["content-type"].startswith("text/plain")
        assert "abc\u27e8U+202E\u27e9def" in marked.text() and "\u202e" not in marked.text()
        written = page.request.get(whole + "&raw=1")
        assert written.headers["content-disposition"].startswith("attachment")
        assert "abc\u202edef" in written.text()
        page.wait_for_timeout(1200)  # a poll or two of the live script
        assert dialogs == [] and errors == [], (dialogs, errors)


def test_unknown_run_and_prompt_get_a_404_page_with_a_way_home(built: dict[str, Path]) -> None:
    with _server(built["lake"], built["warehouse"], built["root"] / "b.log") as (base, _):
        for path, line in [
            ("/runs/nope", "no run 'nope' in this warehouse"),
            ("/runs/x'%20or%20'1'='1", "no run &#39;x&#39; or &#39;1&#39;=&#39;1&#39; in this"),
            ("/runs/grpo-1/prompts/0000000000000000", "has no prompt '0000000000000000'"),
            ("/runs/grpo-1/prompts/..%2F..%2Fetc", "no page at /runs/grpo-1/prompts/../../etc"),
            ("/nothing/here", "no page at /nothing/here"),
        ]:
            status, body = _get(base + path)
            assert status == 404, path
            assert line.replace("'", "&#39;") in body or line in body, (path, body)
            assert '<a href="/">All runs</a>' in body
        status, body = _get(base + "/static/..%2Fapp.py")
        assert status == 404 and "create_app" not in body
        status, _ = _get(base + "/api/version?run=%27%3B%20drop%20table%20dim_runs")
        assert status == 200
    with duckdb.connect(str(built["warehouse"]), read_only=True) as con:
        assert con.execute("select count(*) from dim_prompts").fetchone() == (3,)


def test_a_build_beside_the_server_succeeds_and_open_pages_show_it(
    built: dict[str, Path], tmp_path: Path, browser: Any
) -> None:
    lake, warehouse, dumps = built["lake"], built["warehouse"], built["dumps"]
    plain = prompt_hash(PROMPTS[0])
    settings = ["--lake", str(lake), "--warehouse", str(warehouse)]
    with _server(lake, warehouse, tmp_path / "c.log") as (base, _), _browser(browser) as browser:
        page, errors, _dialogs = _open(browser, base)
        page.goto(f"{base}/runs/grpo-1/prompts/{plain}")
        page.wait_for_selector(".plot .main-svg")
        page.evaluate("window.__not_reloaded = true")
        assert page.locator("table tbody tr").count() == 3
        # a run that has not landed yet: its page says so, then shows it once it has
        waiting, waiting_errors, _ = _open(browser, base)
        assert waiting.goto(f"{base}/runs/grpo-2").status == 404
        assert waiting.locator("h1").inner_text() == "Not found"
        _write_iteration(dumps, 3, PROMPTS)
        _write_iteration(tmp_path / "second", 0, PROMPTS)
        for folder, run in [(dumps, "grpo-1"), (tmp_path / "second", "grpo-2")]:
            ingest = subprocess.run(
                [OBS, *settings, "ingest", "rollouts", str(folder), "--run", run, "-q"],
                capture_output=True,
                text=True,
            )
            assert ingest.returncode == 0, ingest.stderr
        build = subprocess.run([OBS, *settings, "build", "--quiet"], capture_output=True, text=True)
        assert build.returncode == 0, build.stderr
        _until(lambda: page.locator("table tbody tr").count() == 4, 30, "a fourth iteration")
        assert page.evaluate("window.__not_reloaded") is True
        assert errors == []
        _until(lambda: waiting.locator("h1").inner_text() == "Run grpo-2", 30, "the new run's page")
        waiting.wait_for_selector(".plot .main-svg")
        assert waiting_errors == [m for m in waiting_errors if "404" in m], waiting_errors


def test_following_a_run_shows_a_new_iteration_without_a_reload(
    tmp_path: Path, browser: Any
) -> None:
    dumps, lake, warehouse = tmp_path / "dumps", tmp_path / "lake", tmp_path / "w" / "obs.duckdb"
    _write_iteration(dumps, 0, PROMPTS[:2])
    log = tmp_path / "serve.log"
    with (
        _server(lake, warehouse, log, str(dumps), "--run", "live", "--every", "0.3") as (
            base,
            process,
        ),
        _browser(browser) as browser,
    ):
        deadline = time.monotonic() + 60
        while "round 1:" not in log.read_text():
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        page, errors, _dialogs = _open(browser, base)
        asked: list[str] = []
        page.on("request", lambda r: asked.append(r.url.removeprefix(base)))
        page.goto(f"{base}/runs/live")
        page.evaluate("window.__not_reloaded = true")
        _until(lambda: "iteration 0 landed" in _status(page), 10, "iteration 0 in the header")
        shown = page.evaluate("document.documentElement.dataset.liveShown")
        rounds = log.read_text().count(" round ")
        _until(
            lambda: log.read_text().count(" round ") >= rounds + 3, 30, "rounds with nothing new"
        )
        _write_iteration(tmp_path / "aside", 1, PROMPTS[:2])  # then in at once, whole
        (tmp_path / "aside" / "1.jsonl").rename(dumps / "1.jsonl")
        seconds = _until(lambda: "iteration 1 landed" in _status(page), 30, "iteration 1")
        # ... and its blocks fetched again, once the round published a new version
        _until(
            lambda: page.evaluate("document.documentElement.dataset.liveShown") != shown,
            10,
            "the blocks of the new version",
        )
        assert page.evaluate("window.__not_reloaded") is True
        assert errors == []
        assert seconds < 15, seconds
        # the page heard of the round on its event stream, without polling
        assert "/api/events?run=live" in asked, asked
        assert not [url for url in asked if url.startswith("/api/version")], asked
        # the page fetched itself once for the round that landed iteration 1, never for
        # the rounds that found nothing new
        assert asked.count("/runs/live") == 2, asked
        # a stop with the page (and its event stream) open: the stream ends at once, so
        # uvicorn never has to cancel it when its grace period runs out
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=120) == 0
    output = log.read_text()
    assert re.search(r"round \d+: \+6 rows from 1 file\(s\); live: 2 iterations \(0-1\)", output)
    assert "timeout graceful shutdown exceeded" not in output, output
    assert lake_query(lake, "rollouts", "select count(*) from t") == [(12,)]


def test_sigterm_mid_round_leaves_lake_and_warehouse_whole(tmp_path: Path) -> None:
    dumps, lake, warehouse = tmp_path / "dumps", tmp_path / "lake", tmp_path / "w" / "obs.duckdb"
    written = sum(
        _write_iteration(dumps, i, [f"prompt {p}" for p in range(40)], samples=8) for i in range(6)
    )
    log = tmp_path / "serve.log"
    port = _free_port()
    command = [
        OBS,
        *("--lake", str(lake), "--warehouse", str(warehouse)),
        *("serve", str(dumps), "--run", "big", "--port", str(port)),
    ]
    with log.open("w") as handle:
        process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT)
        _until(lambda: "obs serve: http://" in log.read_text(), 60, "the server up")
        time.sleep(1.0)  # the first round under way (landing or building)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=120) == 0, log.read_text()
    assert "SIGTERM: stopping after this round" in log.read_text()
    assert list(lake.glob("_staging/*")) == []
    landed = lake_query(lake, "rollouts", "select count(*) from t")[0][0]
    assert landed in {0, written}  # the round's files land whole or not at all
    if warehouse.exists():
        with duckdb.connect(str(warehouse), read_only=True) as con:
            tables = {
                row[0]
                for row in con.execute(
                    "select table_name from information_schema.tables"
                ).fetchall()
            }
            if "fct_iteration_summary" in tables:
                in_marts = con.execute(
                    "select coalesce(sum(n_rollouts), 0) from fct_iteration_summary"
                ).fetchone()
                assert in_marts is not None and in_marts[0] in {0, landed}


def test_a_busy_port_is_refused_in_one_line(built: dict[str, Path], tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run(
            [OBS, "--warehouse", str(built["warehouse"]), "serve", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines == [
        f"Error: 127.0.0.1:{port}: Address already in use (another obs serve or program "
        "uses it?); stop it or pass --port N"
    ], done.stderr


def test_listening_beyond_this_machine_says_who_can_read(
    built: dict[str, Path], tmp_path: Path
) -> None:
    log = tmp_path / "d.log"
    port = _free_port()
    with _server(built["lake"], built["warehouse"], log, "--host", "0.0.0.0", port=port):
        pass
    text = log.read_text()
    assert text.count("anyone who can reach port") == 1, text
    assert os.path.exists(built["warehouse"])


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The demo's runs (rollouts with a tracker history and reward data, an agent run)."""
    root = tmp_path_factory.mktemp("serve-demo")
    lake, warehouse = root / "lake", root / "obs.duckdb"
    run_cli(
        [
            *("--lake", lake, "--warehouse", warehouse),
            *("demo", "--out", root / "dumps", "--dashboard", root / "out" / "dashboard.html"),
            *("--prompts", "24", "--iterations", "6", "--samples", "4", "-q"),
        ]
    )
    return {"root": root, "lake": lake, "warehouse": warehouse}


def test_every_dashboard_tab_draws_its_registry_charts(demo: dict[str, Path], browser: Any) -> None:
    """The static dashboards' charts, one tab at a time, from the same registry entries."""
    from obs.reports import charts as registry
    from obs.reports.boards import slug

    pages = [
        ("/runs/demo", registry.TRAINING),
        ("/runs/demo/rewards", registry.REWARDS),
        ("/runs/demo-agent/agent", registry.AGENT),
    ]
    bundles: dict[tuple[str, str], tuple[str, set[str]]] = {}
    with (
        _server(demo["lake"], demo["warehouse"], demo["root"] / "e.log") as (base, _),
        _browser(browser) as browser,
    ):
        page, errors, dialogs = _open(browser, base)
        for path, board in pages:
            for tab in board.tabs:
                page.goto(f"{base}{path}?tab={slug(tab)}", wait_until="load")
                expected = len(registry.charts_of(board, tab))
                assert page.locator("section.chart").count() == expected, (path, tab)
                if expected:
                    _until(
                        lambda n=expected: page.locator(".chart .plot .main-svg").count() >= n,
                        30,
                        f"{path} {tab} drawn",
                    )
                    traces = {
                        kind
                        for listed in page.locator(".plot").evaluate_all(
                            "plots => plots.map(p => p.dataset.traces)"
                        )
                        for kind in listed.split(",")
                        if kind
                    }
                    script = page.locator("script[src^='/static/plotly']").get_attribute("src")
                    bundles[path, tab] = (str(script), traces)
                assert page.locator("nav.tabs a.on").inner_text() == tab
        page.goto(f"{base}/runs/demo/report", wait_until="load")
        assert "Run info" in page.locator("pre.text").inner_text()
        assert page.locator("section.chart").count() >= 1
        page.goto(f"{base}/compare?runs=demo&runs=demo-agent", wait_until="load")
        comparison = registry.charts_of(registry.TRAINING, registry.COMPARISON)
        assert page.locator("section.chart").count() == len(comparison)
        assert "demo-agent" in page.locator("section[data-live='compare-text'] pre").inner_text()
        page.wait_for_timeout(800)
        assert errors == [] and dialogs == [], errors
    # Each page loads the smallest Plotly bundle that draws it: the partial (cartesian)
    # one where every chart is cartesian, the full one where a chart is a table or the
    # like (and everywhere when the shipped partial bundle is another plotly.js release).
    from obs.serve.plotly_bundle import CARTESIAN, CARTESIAN_TRACES, FULL, cartesian_usable

    for (path, tab), (script, traces) in bundles.items():
        wanted = CARTESIAN if cartesian_usable() and traces <= CARTESIAN_TRACES else FULL
        assert script == f"/static/{wanted}", (path, tab, traces)
    chosen = {script for script, _ in bundles.values()}
    assert chosen == (
        {f"/static/{CARTESIAN}", f"/static/{FULL}"} if cartesian_usable() else {f"/static/{FULL}"}
    )
    # the training dashboard's first tab, the one a run's link opens, is cartesian
    assert bundles["/runs/demo", registry.TRAINING.tabs[0]][1] <= CARTESIAN_TRACES


def test_an_event_stream_ends_with_its_page_and_with_the_server(built: dict[str, Path]) -> None:
    """A closed page leaves no task behind; a stopping server ends the open streams."""
    import threading

    import uvicorn
    from obs.serve.access import Access
    from obs.serve.app import create_app

    app = create_app(Access(built["warehouse"], built["lake"]))
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        _until(lambda: server.started, 30, "the server up")
        streams = []
        for _ in range(3):
            stream = socket.create_connection(("127.0.0.1", port), timeout=30)
            stream.sendall(b"GET /api/events?run=grpo-1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            streams.append(stream)
        for stream in streams:
            heard = b""
            while b"\ndata: " not in heard:
                heard += stream.recv(4096)
            assert b"content-type: text/event-stream" in heard.lower(), heard
            assert b'"version": ' in heard and b'"last": "iteration ' in heard, heard
        # uvicorn's own count of the requests under way: one task per open stream
        assert len(server.server_state.tasks) == 3
        for stream in streams[:2]:
            stream.close()
        _until(lambda: len(server.server_state.tasks) == 1, 10, "the closed pages' streams ended")
        app.state.server.close()  # what the first Ctrl-C or SIGTERM does
        _until(lambda: len(server.server_state.tasks) == 0, 10, "the open stream ended")
        streams[2].close()
    finally:
        server.should_exit = True
        thread.join(timeout=60)
    assert not thread.is_alive()


def _layout(page: Any, selector: str) -> dict[str, Any]:
    """The look Plotly drew a chart with: fonts, colours, gridlines."""
    return dict(
        page.evaluate(
            """selector => {
              const layout = document.querySelector(selector)._fullLayout;
              return {
                font: [layout.font.family, layout.font.color, layout.font.size],
                title: [layout.title.font.family, layout.title.font.color],
                backgrounds: [layout.paper_bgcolor, layout.plot_bgcolor],
                colorway: layout.colorway,
                x: [layout.xaxis.gridcolor, layout.xaxis.linecolor, layout.xaxis.tickfont.color],
                y: [layout.yaxis.gridcolor, layout.yaxis.zerolinecolor],
                hover: layout.hovermode,
              };
            }""",
            selector,
        )
    )


def test_served_figures_wear_the_static_dashboards_theme(
    demo: dict[str, Path], browser: Any
) -> None:
    import plotly.io as pio
    from obs.reports.figures.base import THEME

    theme = pio.templates[THEME].layout
    with (
        _server(demo["lake"], demo["warehouse"], demo["root"] / "f.log") as (base, _),
        _browser(browser) as browser,
    ):
        static = browser.new_page()
        static.goto((demo["root"] / "out" / "dashboard.html").as_uri(), wait_until="load")
        static.click("nav.tabs button[data-target='section-1']")  # drawn when shown
        static.wait_for_selector("#sample_efficiency__demo .main-svg")
        expected = _layout(static, "#sample_efficiency__demo")
        page, errors, _dialogs = _open(browser, base)
        page.goto(f"{base}/runs/demo?tab=curriculum-data-selection", wait_until="load")
        served = "[data-live='chart:sample_efficiency'] .plot"
        page.wait_for_selector(f"{served} .main-svg")
        assert _layout(page, served) == expected
        # ... and that look is the theme's, not Plotly's own defaults
        assert expected["font"][1] == theme.font.color
        assert expected["colorway"] == list(theme.colorway)
        assert expected["x"][0] == theme.xaxis.gridcolor
        assert errors == []


def test_reward_page_serves_the_static_pages_tables(demo: dict[str, Path], browser: Any) -> None:
    """The reward page's tiles, advice lists and raw data table: the static page's."""
    from obs.reports.reward_dashboard import RAW_PAGE

    def words(texts: list[str]) -> list[str]:
        return [" ".join(text.split()) for text in texts]

    with (
        _server(demo["lake"], demo["warehouse"], demo["root"] / "g.log") as (base, _),
        _browser(browser) as browser,
    ):
        static = browser.new_page()
        static.goto((demo["root"] / "out" / "dashboard.html").as_uri(), wait_until="load")
        run = static.locator("div.run-block[data-run='demo']")
        tiles = run.locator("section[data-block='summary'] .kpi")
        static_tiles = [
            (
                tiles.nth(i).locator(".label").text_content(),
                tiles.nth(i).locator(".value").text_content(),
            )
            for i in range(tiles.count())
        ]
        advice = words(run.locator("section[data-block='advice'] dd").all_text_contents())
        raw = json.loads(str(static.locator("#raw_data__demo-rows").text_content()))
        columns = run.locator("section[data-block='raw_data'] th").all_text_contents()
        assert static_tiles and advice and raw

        page, errors, _dialogs = _open(browser, base)
        page.goto(f"{base}/runs/demo/rewards", wait_until="load")
        served = page.locator("section.block dl.kpis > div")
        assert [
            (served.nth(i).locator("dt").text_content(), served.nth(i).locator("dd").text_content())
            for i in range(served.count())
        ] == static_tiles
        page.goto(f"{base}/runs/demo/rewards?tab=reward-quality", wait_until="load")
        assert words(page.locator("section[data-live='advice'] dd").all_text_contents()) == advice
        page.goto(f"{base}/runs/demo/rewards?tab=raw-data", wait_until="load")
        assert page.locator("table.raw th").all_text_contents() == columns
        rows = page.locator("table.raw tbody tr")
        assert [rows.nth(i).locator("td").all_text_contents() for i in range(rows.count())] == (
            raw[:RAW_PAGE]
        )
        assert f"page 1 of 1 ({len(raw)} rows)" in page.locator("nav.pager").inner_text()
        assert page.locator("p.note").count() == 0  # no "see the static page" note any more
        assert errors == []


def _box(page: Any, selector: str) -> dict[str, float]:
    box = page.locator(selector).first.bounding_box()
    assert box is not None, selector
    return dict(box)


def test_agent_page_has_the_static_pages_group_selector(
    demo: dict[str, Path], browser: Any
) -> None:
    """The group heatmap's selector: the static page's entries; a pick redraws the chart
    without a reload; neither it nor the turn chart's "show:" buttons cover a heatmap."""
    with (
        _server(demo["lake"], demo["warehouse"], demo["root"] / "h.log") as (base, _),
        _browser(browser) as browser,
    ):
        static = browser.new_page()
        static.goto((demo["root"] / "out" / "agent_demo-agent.html").as_uri(), wait_until="load")
        entries = static.locator("select.agent-groups option").all_text_contents()
        assert len(entries) > 4

        page, errors, _dialogs = _open(browser, base)
        page.goto(f"{base}/runs/demo-agent/agent?tab=turn-advantages", wait_until="load")
        group = "[data-live='chart:agent_advantage_group']"
        means = "[data-live='chart:agent_turn_means']"
        page.wait_for_selector(f"{group} .main-svg")
        page.wait_for_selector(f"{means} g.updatemenu-button")
        assert page.locator("select[data-pick] option").all_text_contents() == entries
        # nothing over a heatmap's cells: the selector sits above the group's chart, the
        # "show:" buttons above the turn chart's top row
        assert (
            _box(page, "select[data-pick]")["y"] + _box(page, "select[data-pick]")["height"]
            <= _box(page, f"{group} .nsewdrag")["y"]
        )
        buttons = page.locator(f"{means} g.updatemenu-button")
        assert buttons.count() == 3
        cells = _box(page, f"{means} .nsewdrag")
        for index in range(3):
            button = buttons.nth(index).bounding_box()
            assert button is not None and button["y"] + button["height"] <= cells["y"] + 0.5

        page.evaluate("window.__not_reloaded = true")
        picked = page.locator("select[data-pick] option").nth(3)
        value = str(picked.get_attribute("value"))
        page.select_option("select[data-pick]", value=value)
        group_id = value.split("/", 1)[1]
        _until(
            lambda: f"group {group_id}" in (page.locator(f"{group} .gtitle").text_content() or ""),
            30,
            "the picked group drawn",
        )
        assert "group=" in page.url
        assert page.locator("select[data-pick]").input_value() == value
        assert page.evaluate("window.__not_reloaded") is True
        assert errors == []


def test_prompt_chart_holds_strict_accuracy_to_0_1(demo: dict[str, Path], browser: Any) -> None:
    with duckdb.connect(str(demo["warehouse"]), read_only=True) as con:
        found = con.execute(
            "select prompt_hash from fct_prompt_iteration where run_id = 'demo' "
            "and strict_success_rate is not null order by 1 limit 1"
        ).fetchone()
    assert found is not None
    with (
        _server(demo["lake"], demo["warehouse"], demo["root"] / "i.log") as (base, _),
        _browser(browser) as browser,
    ):
        status, body = _get(f"{base}/runs/demo/prompts/{found[0]}")
        assert status == 200
        figure = json.loads(
            re.findall(r'<script type="application/json" class="figure">(.*?)</script>', body)[0]
        )
        axis = figure["layout"]["yaxis2"]
        assert (axis["range"], axis["autorange"], axis["fixedrange"]) == ([0, 1], False, True)
        assert axis["tickvals"] == [0, 0.25, 0.5, 0.75, 1]  # a share's ticks, not the score's
        # iterations are whole numbers: a tick at each, never at 1.5
        iterations = figure["layout"]["xaxis"]
        assert iterations["tickformat"] == "d"
        assert all(float(t).is_integer() for t in iterations["tickvals"]), iterations
        page, errors, _dialogs = _open(browser, base)
        page.goto(f"{base}/runs/demo/prompts/{found[0]}", wait_until="load")
        page.wait_for_selector(".plot .main-svg")
        # Plotly's autoscale button rescales every axis it may: not this one
        page.hover(".plot .nsewdrag")
        page.click(".modebar-btn[data-title='Autoscale']")
        ranges = page.evaluate(
            "(() => { const l = document.querySelector('.plot')._fullLayout;"
            " return [l.yaxis2.range, l.yaxis2.autorange]; })()"
        )
        assert ranges == [[0, 1], False]
        assert errors == []
