"""``obs serve`` and the console against a hostile user: a real server, real HTTP, forged headers.

Each case is one the server or the CLI once got wrong: a foreign Host answered,
digit-like parameters gave 500, unknown run ids grew a cache, steady pages
starved a build, SIGTERM left tracebacks and new rounds, controls reached a
chart or a terminal raw, ``<!--<script>`` broke an embedded JSON block, and
``obs sql`` could read and write any file.
"""

from __future__ import annotations

import http.client
import json
import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest
from obs.core.identity import prompt_hash

from tests.conftest import run_cli
from tests.faults.conftest import OBS
from tests.integration.test_serve import _free_port, _server, _until

pytestmark = [pytest.mark.integration, pytest.mark.slow]

RLO = "\u202e"
# A prompt with a bidirectional override, terminal controls, and an HTML comment opener.
NASTY = f"nasty {RLO}evil\u202c prompt \x1b[31mred\x07 <!--<script> end"


def _dump(folder: Path, iteration: int, prompts: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    rows = [
        {
            "input": p,
            "output": f"answer {s}",
            "score": (s + iteration) % 3 / 2,
            "step": iteration,
            "gts": {"instruction_id_list": [f"punctuation:no{RLO}comma"], "kwargs": [{}]},
        }
        for p in prompts
        for s in range(3)
    ]
    (folder / f"{iteration}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


PROMPTS = ["plain prompt", NASTY]


def _build(root: Path) -> dict[str, Path]:
    lake, warehouse, dumps = root / "lake", root / "w" / "obs.duckdb", root / "dumps"
    for iteration in range(3):
        _dump(dumps, iteration, PROMPTS)
    settings = ["--lake", lake, "--warehouse", warehouse]
    run_cli([*settings, "ingest", "rollouts", dumps, "--run", "r1", "-q"])
    run_cli([*settings, "build", "--quiet"])
    return {"root": root, "lake": lake, "warehouse": warehouse, "dumps": dumps}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return _build(tmp_path_factory.mktemp("hostile"))


@pytest.fixture(scope="module")
def served(built: dict[str, Path]) -> Any:
    log = built["root"] / "serve.log"
    with _server(built["lake"], built["warehouse"], log) as (base, _process):
        yield base, int(base.rsplit(":", 1)[1]), log


def _request(port: int, path: str, host: str | None, timeout: float = 30) -> tuple[int, str]:
    """GET ``path`` with exactly this Host header (None: none at all)."""
    con = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        con.putrequest("GET", path, skip_host=True, skip_accept_encoding=True)
        if host is not None:
            con.putheader("Host", host)
        con.endheaders()
        response = con.getresponse()
        if response.getheader("content-type", "").startswith("text/event-stream"):
            return response.status, ""
        return response.status, response.read().decode()
    finally:
        con.close()


FORGED = ["attacker.example", "attacker.example:8765", "127.0.0.1.attacker.example", "[::2]"]
PATHS = ["/", "/runs/r1", "/api/version?run=r1", "/api/events?run=r1", "/static/live.js", "/no"]


@pytest.mark.parametrize("host", FORGED)
@pytest.mark.parametrize("path", PATHS)
def test_serve_a_request_for_another_host_gets_400_in_one_line(
    served: Any, path: str, host: str
) -> None:
    _base, port, _log = served
    status, body = _request(port, path, host)
    assert status == 400
    assert body.count("\n") == 1 and body.endswith("\n"), body
    assert f"this one asked for Host '{host}'" in body
    assert "prompt" not in body and "<" not in body


def test_serve_a_request_without_host_gets_400(served: Any) -> None:
    _base, port, _log = served
    status, body = _request(port, "/", None)
    assert status == 400 and "no Host header" in body


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "127.0.0.1:{port}", "localhost:{port}", "[::1]:{port}", "LOCALHOST"]
)
def test_serve_answers_its_own_host(served: Any, host: str) -> None:
    _base, port, _log = served
    status, body = _request(port, "/runs/r1", host.format(port=port))
    assert status == 200 and "r1" in body


def test_serve_answers_the_host_it_was_told(built: dict[str, Path], tmp_path: Path) -> None:
    port = _free_port()
    log = tmp_path / "s.log"
    extra = ("--host", "0.0.0.0", "--allow-host", "Box.Lan")
    with _server(built["lake"], built["warehouse"], log, *extra, port=port):
        assert _request(port, "/", f"0.0.0.0:{port}")[0] == 200
        assert _request(port, "/", f"box.lan:{port}")[0] == 200
        assert _request(port, "/", "127.0.0.1")[0] == 200
        assert _request(port, "/", "other.lan")[0] == 400


@pytest.mark.parametrize(
    "path",
    [
        "/runs/r1/rewards?page=%C2%B2",
        "/runs/r1/prompts/{hash}?iteration=%C2%B2",
        "/runs/r1/prompts/{hash}?page=%E2%91%A0",
        "/runs/r1/prompts/{hash}/response?iteration=1&sample=%E2%91%A0",
        "/runs/r1/prompts/{hash}/response?iteration=%D9%A3&sample=0",
        "/runs/r1/prompts/{hash}?iteration=1.5",
    ],
)
def test_serve_digit_like_parameters_get_400_in_one_line(served: Any, path: str) -> None:
    _base, port, log = served
    status, body = _request(port, path.format(hash=prompt_hash(PROMPTS[0])), "127.0.0.1")
    assert status == 400, body
    assert body.count("\n") == 1 and "give a whole number written with the digits 0-9" in body
    assert "Traceback" not in log.read_text()


def test_serve_run_status_cache_keeps_known_runs_only(
    built: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from obs.serve import app
    from obs.serve.access import Access

    server = app.Server(Access(built["warehouse"], built["lake"]))
    version = server.access.version()
    for number in range(300):
        state = server.state(version, f"unknown-{number}-" + "x" * 1000)
        assert set(state) == {"version", "now"}
    assert len(server._status[1]) == 0
    known = server.state(version, "r1")
    assert known["last"] == "iteration 2"
    assert list(server._status[1]) == ["r1"]
    # Bounded for known runs too: with no room left, r1 is answered and not kept.
    monkeypatch.setattr(app, "STATUS_RUNS", 0)
    fresh = app.Server(Access(built["warehouse"], built["lake"]))
    assert fresh.state(version, "r1")["last"] == "iteration 2"
    assert len(fresh._status[1]) == 0


def test_serve_steady_pages_do_not_starve_a_build(tmp_path: Path) -> None:
    found = _build(tmp_path)
    log = tmp_path / "serve.log"
    with _server(found["lake"], found["warehouse"], log) as (base, _process):
        port = int(base.rsplit(":", 1)[1])
        stop = threading.Event()
        answered: list[int] = []

        def hammer() -> None:
            while not stop.is_set():
                answered.append(_request(port, "/runs/r1", "127.0.0.1", timeout=120)[0])

        threads = [threading.Thread(target=hammer) for _ in range(20)]
        for thread in threads:
            thread.start()
        try:
            _until(lambda: len(answered) >= 20, 120, "pages answered")
            _dump(found["dumps"], 3, PROMPTS)
            settings = ["--lake", str(found["lake"]), "--warehouse", str(found["warehouse"])]
            subprocess.run(
                [OBS, *settings, "ingest", "rollouts", str(found["dumps"]), "--run", "r1", "-q"],
                check=True,
                timeout=120,
            )
            done = subprocess.run(
                [OBS, *settings, "build", "--quiet"], capture_output=True, text=True, timeout=300
            )
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=180)
        assert done.returncode == 0, done.stderr
        assert set(answered) == {200}, sorted(set(answered))
    with duckdb.connect(str(found["warehouse"]), read_only=True) as con:
        assert con.execute("select max(iteration) from fct_iteration_summary").fetchone() == (3,)


def test_serve_sigterm_answers_waiting_pages_and_starts_no_round(tmp_path: Path) -> None:
    found = _build(tmp_path)
    log = tmp_path / "serve.log"
    port = _free_port()
    command = [
        OBS,
        *("--lake", str(found["lake"]), "--warehouse", str(found["warehouse"])),
        *("serve", str(found["dumps"]), "--run", "r1", "--every", "0.1", "--port", str(port)),
    ]
    with log.open("w") as handle:
        process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT)
        try:
            _until(lambda: "round 3:" in log.read_text(), 120, "three rounds")
            answers: list[tuple[int, str]] = []
            # Another process holds the warehouse for writing: a page waits for it.
            holder = duckdb.connect(str(found["warehouse"]))
            try:
                waiting = threading.Thread(
                    target=lambda: answers.append(_request(port, "/runs/r1", "127.0.0.1", 120))
                )
                waiting.start()
                time.sleep(1.0)
                assert not answers
                process.send_signal(signal.SIGTERM)
                signalled = time.monotonic()
                waiting.join(timeout=60)
                assert process.wait(timeout=60) == 0, log.read_text()
                stopped = time.monotonic() - signalled
            finally:
                holder.close()
        finally:
            if process.poll() is None:
                process.kill()
    text = log.read_text()
    assert answers and answers[0][0] == 503, (answers, text)
    assert "obs serve is stopping" in answers[0][1]
    assert stopped < 4.0, (stopped, text)
    assert "Traceback" not in text and "Exception in ASGI" not in text, text
    after = text.split("SIGTERM: stopping", 1)[1]
    assert len(re.findall(r"round \d+", after)) <= 1, text


def _figures(html: str) -> list[str]:
    return re.findall(r'<script type="application/json" class="figure">(.*?)</script>', html, re.S)


def test_serve_bidirectional_controls_are_marked_in_instructions_and_charts(served: Any) -> None:
    _base, port, _log = served
    status, page = _request(port, f"/runs/r1/prompts/{prompt_hash(NASTY)}", "127.0.0.1")
    assert status == 200
    line = re.search(r"instructions: (.*?)</p>", page)
    assert line is not None and RLO not in line.group(1)
    assert "\u27e8U+202E\u27e9" in line.group(1)
    status, board = _request(port, "/runs/r1", "127.0.0.1")
    figures = _figures(board) + _figures(page)
    assert figures
    for figure in figures:
        assert "<" not in figure
        text = json.dumps(json.loads(figure), ensure_ascii=False)
        assert RLO not in text and "\x1b" not in text and "\x07" not in text
    assert any(
        "\u27e8U+202E\u27e9" in json.dumps(json.loads(f), ensure_ascii=False) for f in figures
    )


def test_embedded_json_escapes_every_less_than() -> None:
    import plotly.graph_objects as go
    from obs.reports.page import embed, json_data

    block = str(json_data({"question": "<!--<script>alert(1)</script>"}))
    assert "<" not in block and json.loads(block)["question"] == "<!--<script>alert(1)</script>"
    figure = str(embed(go.Figure(layout={"title": {"text": "<!--<script>"}})))
    assert "<" not in figure and json.loads(figure)["layout"]["title"]["text"] == "<!--<script>"


def test_cli_text_output_escapes_control_characters(built: dict[str, Path]) -> None:
    settings = ["--lake", built["lake"], "--warehouse", built["warehouse"]]
    out = run_cli([*settings, "summary", "--run", "r1"]).stdout
    assert "nasty" in out
    assert "\x1b" not in out and "\x07" not in out and RLO not in out
    assert "\\x1b[31mred\\x07" in out and "\\u202eevil" in out


def test_cli_error_line_escapes_a_path_with_a_newline(tmp_path: Path) -> None:
    odd = tmp_path / "a\nb\x1b" / "obs.duckdb"
    result = run_cli(["--warehouse", odd, "summary"], exit_code=1)
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "a\\nb\\x1b" in lines[0]


def _raw_controls(text: str) -> list[str]:
    """The control characters and bidirectional controls ``text`` holds raw (newlines apart)."""
    return [c for c in text if (ord(c) < 0x20 and c != "\n") or c in "\x7f\u202a\u202e\u2066"]


def test_cli_runs_analyze_rewards_and_ingest_escape_control_characters(tmp_path: Path) -> None:
    """A tracker export whose name, project, tags and config hold ESC, BEL and an override,
    a reward function named with an override, and a lake whose path holds ESC: every text
    output writes them as escapes."""
    export = tmp_path / "abc123.json"
    record = {
        "id": "abc123",
        "project": "p\x1bproj",
        "name": "nm\x1b[31mred\x07",
        "tags": [f"t{RLO}x"],
        "config": {"note": f"c\x1b]0;title\x07{RLO}z", "lr": 0.1},
        "history": [{"_step": s, "loss": 1 / (s + 1)} for s in range(5)],
    }
    export.write_text(json.dumps(record))
    monitor = tmp_path / "monitor"
    monitor.mkdir()
    for step in range(1, 4):
        scores = {f"fmt{RLO}evil\x1b": [0.5, 1.0], "correct": [0.0, float(step % 2)]}
        record = {"step": step, "metrics": {"mean_reward": 0.5}, "reward_scores": scores}
        (monitor / f"step_{step:06d}.json").write_text(json.dumps(record))
    lake, warehouse = tmp_path / "lake\x1bx\x07", tmp_path / "obs.duckdb"
    settings = ["--lake", lake, "--warehouse", warehouse]
    landed = run_cli([*settings, "ingest", "metrics", export]).stdout
    assert "lake\\x1bx\\x07" in landed and not _raw_controls(landed), landed
    run_cli([*settings, "ingest", "monitoring", monitor, "--run", "m1", "-q"])
    run_cli([*settings, "build", "--quiet"])
    outputs = {
        "runs": run_cli([*settings, "runs"]).stdout,
        "analyze": run_cli([*settings, "analyze", "abc123"]).stdout,
        "rewards": run_cli([*settings, "rewards", "m1"]).stdout,
    }
    for command, out in outputs.items():
        assert not _raw_controls(out), (command, out)
    assert "nm\\x1b[31mred\\x07" in outputs["runs"] and "t\\u202ex" in outputs["runs"]
    # the table aligned as printed: the escaped name's column as wide as its escapes
    head, rule, *rows = outputs["runs"].splitlines()
    [row] = [r for r in rows if r.startswith("abc123")]
    assert row.index("unknown") == head.index("state") == rule.index("  -", 10) + 2
    assert "c\\x1b]0;title\\x07\\u202ez" in outputs["analyze"]
    assert "p\\x1bproj" in outputs["analyze"]
    assert "fmt\\u202eevil\\x1b" in outputs["rewards"]


@pytest.mark.parametrize(
    ("query", "refusal"),
    [
        ("select * from read_csv('/etc/passwd')", "file system operations are disabled"),
        ("copy (select 1) to '{root}/out.csv'", "COPY is refused"),
        # the lake and the warehouse's folder may be read, not written
        ("copy (select 1) to '{lake}/out.csv'", "COPY is refused"),
        ("copy (select 1) to '{warehouse_folder}/out.csv'", "COPY is refused"),
        ("select 1; copy (select 1) to '{lake}/out.csv'", "COPY is refused"),
        ("export database '{lake}/out.csv'", "EXPORT DATABASE is refused"),
        ("attach '{root}/other.duckdb' as other", "ATTACH is refused"),
        ("attach '{lake}/other.duckdb' as other", "ATTACH is refused"),
        ("install httpfs", "disabled by configuration"),
        ("load httpfs", "disabled through configuration"),
        ("set enable_external_access = true", "the configuration has been locked"),
        ("set autoload_known_extensions = true", "the configuration has been locked"),
    ],
)
def test_sql_reads_only_the_warehouse_and_lake(
    built: dict[str, Path], query: str, refusal: str
) -> None:
    settings = ["--lake", built["lake"], "--warehouse", built["warehouse"]]
    folders = {
        "root": built["root"],
        "lake": built["lake"],
        "warehouse_folder": built["warehouse"].parent,
    }
    for folder in folders.values():  # nothing left by another case
        shutil.rmtree(folder / "out.csv", ignore_errors=True)
        (folder / "out.csv").unlink(missing_ok=True)
    others = [built["root"] / "other.duckdb", built["lake"] / "other.duckdb"]
    for other in others:  # another database, outside and inside the folders read
        with duckdb.connect(str(other)) as con:
            con.execute("create or replace table t as select 42 as secret")
    try:
        result = run_cli([*settings, "sql", query.format(**folders)], exit_code=1)
    finally:
        for other in others:
            other.unlink()
    assert result.stderr.startswith("Error: ") and refusal in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "download" not in result.stderr  # refused, not tried over the network
    for folder in folders.values():
        assert not (folder / "out.csv").exists()


def test_sql_installs_and_autoloads_no_extension(built: dict[str, Path]) -> None:
    settings = ["--lake", built["lake"], "--warehouse", built["warehouse"]]
    names = [
        "autoinstall_known_extensions",
        "autoload_known_extensions",
        "allow_community_extensions",
        "enable_external_access",
        "lock_configuration",
    ]
    query = "select " + ", ".join(f"current_setting('{n}') as {n}" for n in names)
    out = run_cli([*settings, "sql", query, "--format", "json"]).stdout
    assert json.loads(out) == [dict(zip(names, [False, False, False, False, True], strict=True))]
    # A file of a remote scheme would autoload httpfs: refused, nothing installed.
    result = run_cli(
        [*settings, "sql", "select * from read_parquet('https://example.invalid/x.parquet')"],
        exit_code=1,
    )
    assert result.stderr.startswith("Error: ")


def test_sql_still_reads_marts_and_the_lake_views(built: dict[str, Path]) -> None:
    settings = ["--lake", built["lake"], "--warehouse", built["warehouse"]]
    out = run_cli([*settings, "sql", "select count(*) as n from stg_rollouts", "--format", "csv"])
    assert out.stdout == "n\n18\n"
    out = run_cli(
        [
            *settings,
            "sql",
            "select max(iteration) as i from fct_iteration_summary",
            "--format",
            "csv",
        ]
    )
    assert out.stdout == "i\n2\n"


def test_serve_reward_function_names_are_marked_in_the_rewards_note(tmp_path: Path) -> None:
    monitor = tmp_path / "monitor"
    monitor.mkdir()
    for step in range(1, 4):
        record = {
            "step": step,
            "timestamp": 1_700_000_000 + step,
            "metrics": {"mean_reward": 0.5},
            "reward_scores": {f"fmt{RLO}evil": [0.5, 1.0], "correct": [0.0, float(step % 2)]},
        }
        (monitor / f"step_{step:06d}.json").write_text(json.dumps(record))
    lake, warehouse = tmp_path / "lake", tmp_path / "obs.duckdb"
    settings = ["--lake", lake, "--warehouse", warehouse]
    run_cli([*settings, "ingest", "monitoring", monitor, "--run", "m1", "-q"])
    run_cli([*settings, "build", "--quiet"])
    with _server(lake, warehouse, tmp_path / "serve.log") as (base, _process):
        port = int(base.rsplit(":", 1)[1])
        status, page = _request(port, "/runs/m1/rewards", "127.0.0.1")
    assert status == 200
    notes = re.findall(r'<p class="line">(The reward on these tabs is R.*?)</p>', page, re.S)
    assert notes, page[:2000]
    assert RLO not in notes[0]
    assert (
        'fmt<span class="ctl" title="right-to-left override">\u27e8U+202E\u27e9</span>evil'
        in notes[0]
    )
    for figure in _figures(page):
        assert RLO not in json.dumps(json.loads(figure), ensure_ascii=False)


def test_sql_table_output_escapes_control_characters(built: dict[str, Path]) -> None:
    settings = ["--lake", built["lake"], "--warehouse", built["warehouse"]]
    query = "select distinct prompt from stg_rollouts where prompt like 'nasty%'"
    out = run_cli([*settings, "sql", query]).stdout
    assert "nasty" in out and "\x1b" not in out and "\x07" not in out and RLO not in out
    assert "\\u202eevil" in out
