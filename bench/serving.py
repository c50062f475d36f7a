"""The serve stage of ``make bench``: ``obs serve`` following the bench run, timed as a user would.

``obs serve DUMPS --run bench --every 1`` follows a folder of the run's history
dumps (a fresh lake and warehouse); once its marts hold them:

- first-chart: Chromium (Playwright, every request outside the server refused)
  opens the home page, then the run's page; the seconds from navigation to the
  page's first chart drawn (a Plotly SVG), or to its load when it has none;
- prompt: the server's time for a prompt page (the HTML of a prompt at the last
  iteration), the median of 5;
- concurrent: 20 page loads at once (home, run, prompt pages: each a full HTTP
  GET of the page and its scripts), every one must succeed; their p95, and the
  server's peak RSS (its process and descendants, sampled every 20 ms);
- live: the late dump is copied into the folder while the run's page is open;
  the seconds until the page's header says the late iteration landed (the
  server pushes it on the page's event stream when the round publishes), and
  until the page's blocks show that version (``<html data-live-shown>``), with
  no reload; beside them the round's own seconds (its line in the server's
  log), so what the page adds after the round is their difference.
"""

from __future__ import annotations

import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import duckdb

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from proctree import TreeSampler  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
PORT = 8799
CONCURRENT = 20
# The page's blocks show the last version it heard of (live.js sets both).
SHOWS_HEARD = (
    "document.documentElement.dataset.liveShown === document.documentElement.dataset.liveVersion"
)


def _get(url: str) -> float:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as response:
        response.read()
        assert response.status == 200, url
    return time.perf_counter() - started


def _page_and_scripts(base: str, path: str) -> float:
    """A page as a browser loads it the first time: its HTML, then its two scripts."""
    started = time.perf_counter()
    _get(base + path)
    _get(base + "/static/live.js")
    _get(base + "/static/plotly.min.js")
    return time.perf_counter() - started


def iterations(warehouse: Path, run: str) -> int | None:
    """Iterations of ``run`` in fct_iteration_summary, None while a build holds the file."""
    try:
        with duckdb.connect(str(warehouse), read_only=True) as con:
            row = con.execute(
                "select count(*) from fct_iteration_summary where run_id = ?", [run]
            ).fetchone()
    except duckdb.Error:
        return None
    return int(row[0]) if row else None


def measure(obs: list[str], run: Any, place: Path, run_id: str) -> dict[str, Any]:
    """The serve figures (module docstring); ``obs``: the command and its global options
    without the lake and warehouse, ``run``: the bench's generated run."""
    from playwright.sync_api import sync_playwright

    folder, lake = place / "dumps", place / "lake"
    warehouse = place / "warehouse" / "obs.duckdb"
    shutil.rmtree(place, ignore_errors=True)
    folder.mkdir(parents=True)
    for dump in run.dumps.glob("*.jsonl"):
        if dump.name != run.late.name:
            os.link(dump, folder / dump.name)
    log = place / "serve.log"
    base = f"http://127.0.0.1:{PORT}"
    command = [
        *obs,
        *("--lake", str(lake), "--warehouse", str(warehouse)),
        *("serve", str(folder), "--run", run_id, "--every", "1", "--port", str(PORT)),
    ]
    print("  serve ...", file=sys.stderr, flush=True)
    result: dict[str, Any] = {}
    with log.open("w") as stream:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stream)
    try:
        history = run.iterations - 1
        deadline = time.monotonic() + 900
        while iterations(warehouse, run_id) != history:
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the served marts never held the history"
            time.sleep(0.5)
        with duckdb.connect(str(warehouse), read_only=True) as con:
            found = con.execute(
                "select prompt_hash from fct_prompt_iteration where run_id = ? "
                "order by iteration desc, prompt_hash limit 1",
                [run_id],
            ).fetchone()
        assert found is not None
        prompt = f"/runs/{run_id}/prompts/{found[0]}"
        _get(base + prompt)  # first use of each code path
        result["prompt_seconds"] = statistics.median(_get(base + prompt) for _ in range(5))
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page()
            page.route(
                "**/*",
                lambda route: (
                    route.continue_() if route.request.url.startswith(base) else route.abort()
                ),
            )
            for name, path in [("home", "/"), ("run", f"/runs/{run_id}")]:
                started = time.perf_counter()
                page.goto(base + path, wait_until="load")
                if page.locator("[data-live] script.figure").count():
                    page.wait_for_selector(".plot .main-svg", timeout=60_000)
                result[f"{name}_first_chart_seconds"] = time.perf_counter() - started
            paths = ["/", f"/runs/{run_id}", prompt] * (CONCURRENT // 3 + 1)
            sampler = TreeSampler(process.pid)
            sampler.start()
            with ThreadPoolExecutor(CONCURRENT) as pool:
                times = list(pool.map(lambda p: _page_and_scripts(base, p), paths[:CONCURRENT]))
            sampler.stop()
            result["concurrent_loads"] = len(times)
            result["concurrent_p95_seconds"] = sorted(times)[int(0.95 * len(times)) - 1]
            result["server_peak_rss_mb"] = sampler.peak_kb / 1024
            page.goto(f"{base}/runs/{run_id}", wait_until="load")
            page.evaluate("window.__not_reloaded = true")
            late = run.iterations - 1
            shutil.copy2(run.late, folder / run.late.name)
            appeared = time.perf_counter()
            status = page.locator("#live-status")
            while f"iteration {late} landed" not in (status.text_content() or ""):
                assert time.perf_counter() - appeared < 120, "the late iteration never showed"
                time.sleep(0.02)
            result["live_seconds"] = time.perf_counter() - appeared
            while not page.evaluate(SHOWS_HEARD):
                assert time.perf_counter() - appeared < 120, "the blocks never showed it"
                time.sleep(0.02)
            result["live_blocks_seconds"] = time.perf_counter() - appeared
            result["live_without_reload"] = page.evaluate("window.__not_reloaded") is True
            browser.close()
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=120)
    result["exit_code"] = process.returncode
    landed = [line for line in log.read_text().splitlines() if f"+{run.late_rows:,} rows" in line]
    if landed:
        result["live_round_seconds"] = float(landed[-1].rsplit("(", 1)[1].split(" s)")[0])
    shutil.rmtree(place, ignore_errors=True)
    return result
