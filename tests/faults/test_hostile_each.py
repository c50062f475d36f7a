"""Hostile input, one case a test: each way a link, a console line or a chart once went wrong.

The broader tests beside this one (test_hostile_ingest, test_serve_hostile)
check several cases in one test and stop at the first that fails; here each
case stands alone, so each shows on its own whether it holds: a link out of
the folder, a dangling link, a loop and a FIFO in a dump folder; every text
command and error line with control characters; chart text and the static
agent dashboard's embedded JSON with a bidirectional override or ``<!--``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.conftest import lake_query, lake_rows, run_cli
from tests.faults.conftest import OBS, line, write_dump
from tests.faults.test_hostile_ingest import BOMB_LINE, _gzip_bomb

RLO = "\u202e"
RLO_MARK = "\u27e8U+202E\u27e9"  # how a page shows the override instead of applying it
NASTY = f"nasty {RLO}evil\u202c prompt \x1b[31mred\x07 end"


def _raw_controls(text: str) -> list[str]:
    """The control characters and bidirectional controls ``text`` holds raw (newlines apart)."""
    return [c for c in text if (ord(c) < 0x20 and c != "\n") or c in "\x7f\u202a\u202e\u2066"]


# ------------------------------------------------------------- links and FIFOs in a folder


def _outside(dumps: Path) -> Path:
    target = write_dump(dumps.parent / "secret.jsonl", [line("secret"), "not json"])
    (dumps / "1.jsonl").symlink_to(target)
    return target


def _dangling(dumps: Path) -> Path:
    (dumps / "1.jsonl").symlink_to(dumps / "gone.jsonl")
    return dumps / "gone.jsonl"


def _loop(dumps: Path) -> Path:
    (dumps / "1.jsonl").symlink_to(dumps / "1.jsonl")
    return dumps / "1.jsonl"


def _fifo(dumps: Path) -> Path:
    os.mkfifo(dumps / "1.jsonl")
    return dumps / "1.jsonl"


LINKS = {
    "outside": (_outside, "a link to {target}, outside the folder; not followed"),
    "dangling": (_dangling, "a dangling link (its target does not exist); not read"),
    "loop": (_loop, "a link that loops; not read"),
    "fifo": (_fifo, "not a regular file (a FIFO, socket or device); not read"),
}


@pytest.mark.parametrize("kind", list(LINKS))
def test_odd_entry_in_a_dump_folder_gets_one_line_and_the_rest_lands(
    tmp_path: Path, kind: str
) -> None:
    dumps = tmp_path / "dumps"
    write_dump(dumps / "0.jsonl", [line("p0"), line("p1", 0.0)])
    make, note = LINKS[kind]
    target = make(dumps)
    lake, warehouse = tmp_path / "lake", tmp_path / "w.duckdb"
    result = run_cli(
        ["--lake", lake, "--warehouse", warehouse, "ingest", "rollouts", dumps, "--run", "r"]
    )
    assert result.stdout.startswith("run r: 2 rows landed, 0 rejected, from 2 files")
    warnings = [x for x in result.stderr.splitlines() if x.startswith("warning:")]
    assert warnings == [f"warning: {dumps / '1.jsonl'}: {note.format(target=target)}"]
    assert [r["prompt"] for r in lake_rows(lake)] == ["p0", "p1"]
    assert not (lake / "_rejects").exists()  # nothing read through the link


def test_link_within_the_folder_is_followed(tmp_path: Path) -> None:
    dumps = tmp_path / "dumps"
    write_dump(dumps / "inner" / "data.jsonl", [line("p0"), line("p1", 0.0)])
    (dumps / "0.jsonl").symlink_to(dumps / "inner" / "data.jsonl")
    lake = tmp_path / "lake"
    settings = ["--lake", lake, "--warehouse", tmp_path / "w.duckdb"]
    result = run_cli([*settings, "ingest", "rollouts", dumps, "--run", "r"])
    assert result.stdout.startswith("run r: 2 rows landed, 0 rejected")
    assert "warning:" not in result.stderr
    # the iteration from the link's name, the file named as what was read
    [(iteration, source)] = lake_query(
        lake, "rollouts", "select distinct iteration, source_file from t"
    )
    assert (iteration, source) == (0, str(dumps / "inner" / "data.jsonl"))


# ------------------------------------------------------------- the console, command by command


@pytest.fixture(scope="module")
def console_lake(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Rollouts whose prompt holds ESC, BEL and an override; a W&B export whose name,
    project, tags and config do; monitoring files whose reward function is so named."""
    root = tmp_path_factory.mktemp("console")
    dumps = root / "dumps"
    for iteration in range(2):
        rows = [line(p, s / 2, step=iteration) for p in ("plain", NASTY) for s in range(3)]
        write_dump(dumps / f"{iteration}.jsonl", rows)
    export = root / "abc123.json"
    record = {
        "id": "abc123",
        "project": "p\x1bproj",
        "name": "nm\x1b[31mred\x07",
        "tags": [f"t{RLO}x"],
        "config": {"note": f"c\x1b]0;title\x07{RLO}z", "lr": 0.1},
        "history": [{"_step": s, "loss": 1 / (s + 1)} for s in range(5)],
    }
    export.write_text(json.dumps(record))
    monitor = root / "monitor"
    monitor.mkdir()
    for step in range(1, 4):
        scores = {f"fmt{RLO}evil\x1b": [0.5, 1.0], "correct": [0.0, float(step % 2)]}
        step_record = {"step": step, "metrics": {"mean_reward": 0.5}, "reward_scores": scores}
        (monitor / f"step_{step:06d}.json").write_text(json.dumps(step_record))
    settings = ["--lake", root / "lake", "--warehouse", root / "obs.duckdb"]
    run_cli([*settings, "ingest", "rollouts", dumps, "--run", "r1", "-q"])
    run_cli([*settings, "ingest", "metrics", export, "-q"])
    run_cli([*settings, "ingest", "monitoring", monitor, "--run", "m1", "-q"])
    run_cli([*settings, "build", "--quiet"])
    return {"root": root, "settings": settings}


CONSOLE = {
    # command: (arguments, text the output must show escaped)
    "summary": (["summary", "--run", "r1"], "nasty \\u202eevil\\u202c prompt \\x1b[31mred\\x07"),
    "runs": (["runs"], "nm\\x1b[31mred\\x07"),
    "runs-tags": (["runs"], "t\\u202ex"),
    "analyze": (["analyze", "abc123"], "c\\x1b]0;title\\x07\\u202ez"),
    "analyze-project": (["analyze", "abc123"], "p\\x1bproj"),
    "rewards": (["rewards", "m1"], "fmt\\u202eevil\\x1b"),
}


@pytest.mark.parametrize("case", list(CONSOLE))
def test_text_command_escapes_control_characters(console_lake: dict[str, Any], case: str) -> None:
    arguments, shown = CONSOLE[case]
    out = run_cli([*console_lake["settings"], *arguments]).stdout
    assert not _raw_controls(out), out
    assert shown in out, out


ERRORS = {
    "ingest rollouts": ["ingest", "rollouts", "{odd}", "--run", "r"],
    "ingest metrics": ["ingest", "metrics", "{odd}"],
    "summary": ["--warehouse", "{odd}", "summary"],
    "sql": ["--warehouse", "{odd}", "sql", "select 1"],
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_error_line_escapes_a_path_with_controls(tmp_path: Path, case: str) -> None:
    odd = tmp_path / "a\nb\x1b[2J\x07" / "x.duckdb"
    arguments = [odd if a == "{odd}" else a for a in ERRORS[case]]
    result = run_cli(["--lake", tmp_path / "lake", *arguments], exit_code=1)
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert "a\\nb\\x1b[2J\\x07" in lines[0]
    assert not _raw_controls(result.stderr)


# ------------------------------------------------------------- charts and embedded JSON


def _figure_blocks(html: str) -> list[str]:
    """The JSON text of every figure a page embeds, served or static."""
    return re.findall(
        r'<script type="application/json" (?:class="figure"|id="[^"]+-figure")>(.*?)</script>',
        html,
        re.S,
    )


def test_static_dashboard_charts_mark_bidirectional_controls(
    console_lake: dict[str, Any],
) -> None:
    """Chart titles, ticks and hover text hold the prompt and the instruction names: each
    override there is drawn as a mark, and no terminal control reaches the chart."""
    out = console_lake["root"] / "board.html"
    run_cli([*console_lake["settings"], "render-dashboard", "--run", "r1", "--out", out])
    blocks = _figure_blocks(out.read_text())
    assert blocks
    texts = [json.dumps(json.loads(b.replace("<\\/", "</")), ensure_ascii=False) for b in blocks]
    assert [t for t in texts if RLO in t or "\x1b" in t or "\x07" in t] == []
    assert any(RLO_MARK in t for t in texts)  # the nasty prompt is drawn, marked


def test_static_agent_dashboard_survives_a_comment_opener_in_a_question(tmp_path: Path) -> None:
    """A question holding ``<!--<script>`` in the group selector's JSON block: inside a
    <script> element that text makes the HTML parser skip the block's end, so no "<" of
    it may reach the page raw; the block still reads back to the question."""
    question = "which email? <!--<script>alert(1)</script> end"
    dumps = tmp_path / "dumps"
    for iteration in range(2):
        rows = [
            json.dumps(
                {
                    "input": question,
                    "output": f"answer {s}",
                    "score": s / 2,
                    "step": iteration,
                    "turn_rewards": [s / 4, s / 2],
                    "num_turns": 2,
                    "max_turns": 3,
                    "exit_reason": "answered",
                }
            )
            for s in range(3)
        ]
        write_dump(dumps / f"{iteration}.jsonl", rows)
    settings = ["--lake", tmp_path / "lake", "--warehouse", tmp_path / "obs.duckdb"]
    run_cli([*settings, "ingest", "rollouts", dumps, "--run", "a1", "-q"])
    run_cli([*settings, "build", "--quiet"])
    out = tmp_path / "agent.html"
    run_cli([*settings, "render-dashboard", "--kind", "agent", "--run", "a1", "--out", out])
    page = out.read_text()
    found = re.search(r'id="agent_advantage_group__a1-groups">(.*?)</script>', page, re.S)
    assert found is not None, page[:2000]
    block = found.group(1)
    assert "<" not in block
    labels = [group["label"] for group in json.loads(block)]
    assert labels and all(label.endswith(": " + question) for label in labels)
    # no script block anywhere on the page holds a comment opener
    for body in re.findall(r"<script[^>]*>(.*?)</script>", page, re.S):
        assert "<!--" not in body


# ------------------------------------------------------------- a gzip bomb in a followed folder


def _measured(
    command: list[str], env: dict[str, str], logs: Path, timeout: float
) -> tuple[int, str, int]:
    """Run ``command``; its exit code, its output (stdout, then stderr) and its peak
    resident bytes (from wait4). Killed with its process group, and failed, when it
    outlasts ``timeout``."""
    out, err = logs.with_suffix(".out"), logs.with_suffix(".err")
    with out.open("w") as stdout, err.open("w") as stderr:
        process = subprocess.Popen(
            command, stdout=stdout, stderr=stderr, env=env, start_new_session=True
        )
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                os.killpg(process.pid, signal.SIGKILL)
                os.wait4(process.pid, 0)
                pytest.fail(f"still running after {timeout:.0f} s: {command}")
            time.sleep(0.1)
    process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    return process.returncode, out.read_text() + err.read_text(), usage.ru_maxrss * 1024


@pytest.mark.slow  # a watch round over the cut (1.2 million rows) and its build: about 15 s
def test_watch_over_a_folder_with_a_gzip_bomb_lands_the_rest_in_bounded_memory(
    tmp_path: Path,
) -> None:
    """``obs watch`` follows a folder: a bomb dropped in it (1 GiB in about 3 MB) is cut
    at the limit OBS_GZIP_MAX_RATIO sets, the other dump lands and builds, and the
    round's memory stays bounded (before the limit: past 8 GB on the ingest alone)."""
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    _gzip_bomb(dumps / "0.jsonl.gz", 1 << 30)
    write_dump(dumps / "1.jsonl", [line("the other file"), line("the other file", 0.0)])
    lake, warehouse = tmp_path / "lake", tmp_path / "w.duckdb"
    command = [OBS, "--lake", str(lake), "--warehouse", str(warehouse), "watch", str(dumps)]
    env = {**os.environ, "OBS_GZIP_MAX_RATIO": "1"}  # the cut: the first 64 MiB
    status, out, peak = _measured(
        [*command, "--run", "r", "--rounds", "1"], env, tmp_path / "watch", timeout=150
    )
    assert status == 0, out
    landed = (64 << 20) // len(BOMB_LINE)
    assert f"round 1: +{landed + 2:,} rows from 2 file(s); r: 2 iterations (0-1)" in out
    # the cut file is named with what landed of it, the limit and the option that raises it
    assert f"a problem with 0.jsonl.gz: {landed:,} rows landed; gzip expands past its limit" in out
    assert "--gzip-max-ratio" in out
    assert peak < 2 << 30, f"peak RSS {peak / 2**20:.0f} MiB"
    with duckdb.connect(str(warehouse), read_only=True) as con:
        rows = con.execute(
            "select iteration, n_samples from fct_prompt_iteration order by iteration"
        ).fetchall()
    assert rows == [(0, landed), (1, 2)]


# ------------------------------------------------------------- SIGTERM while following a run


def _writer_between_rounds(warehouse: Path) -> duckdb.DuckDBPyConnection:
    """The warehouse opened for writing, once the follower's round lets go of it."""
    deadline = time.monotonic() + 30
    while True:
        try:
            return duckdb.connect(str(warehouse))
        except duckdb.IOException:
            assert time.monotonic() < deadline, "the follower never let go of the warehouse"
            time.sleep(0.02)


@pytest.mark.slow  # a server following a run for a few rounds: about 10 s
def test_sigterm_with_an_open_event_stream_starts_no_round_and_prints_no_traceback(
    tmp_path: Path,
) -> None:
    """``obs serve PATH`` follows a run every 0.1 s while a page holds its event stream
    open and another waits for the warehouse (another process holds it for writing):
    SIGTERM ends the stream, the wait and the round under way, starts no other round
    while it stops, and the server exits 0 without a traceback."""
    import http.client
    import threading

    from tests.integration.test_serve import _free_port, _until

    dumps = tmp_path / "dumps"
    write_dump(dumps / "0.jsonl", [line("p0"), line("p0", 0.0), line("p1", 0.5)])
    lake, warehouse = tmp_path / "lake", tmp_path / "w.duckdb"
    port = _free_port()
    command = [OBS, "--lake", str(lake), "--warehouse", str(warehouse), "serve", str(dumps)]
    command += ["--run", "r", "--every", "0.1", "--port", str(port)]
    log = tmp_path / "serve.log"
    streamed: list[int] = []

    def hold_the_stream() -> None:
        con = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            con.request("GET", "/api/events?run=r", headers={"Host": "127.0.0.1"})
            response = con.getresponse()
            streamed.append(response.status)
            while response.read1(1024):
                pass
        except (OSError, http.client.HTTPException):
            pass
        finally:
            con.close()

    def request_a_page() -> None:
        con = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            con.request("GET", "/runs/r", headers={"Host": "127.0.0.1"})
            con.getresponse().read()
        except (OSError, http.client.HTTPException):
            pass
        finally:
            con.close()

    with log.open("w") as handle:
        process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT)
        try:
            _until(lambda: "round 3:" in log.read_text(), 120, "three rounds")
            stream = threading.Thread(target=hold_the_stream, daemon=True)
            stream.start()
            _until(lambda: streamed == [200], 30, "the event stream open")
            holder = _writer_between_rounds(warehouse)  # a page now waits for it
            try:
                page = threading.Thread(target=request_a_page, daemon=True)
                page.start()
                time.sleep(1.0)
                signalled = time.localtime()
                process.send_signal(signal.SIGTERM)
                assert process.wait(timeout=60) == 0, log.read_text()
            finally:
                holder.close()
            stream.join(timeout=30)
            page.join(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
    text = log.read_text()
    assert not stream.is_alive() and not page.is_alive()  # both ended with the server
    assert "Traceback" not in text and "Exception in ASGI" not in text, text
    _, said, after = text.partition("SIGTERM: stopping")
    assert said, text
    # the round under way may finish (its line comes after the signal's, stamped with the
    # time it started); none starts after it
    started = re.findall(r"\[(\d\d):(\d\d):(\d\d)\] round \d+:", after)
    assert len(started) <= 1, text
    # (the handler runs when the main thread next gets the CPU: on a loaded machine a round
    # may start in the moment between the kill and the handler, within the next second)
    at = signalled.tm_hour * 3600 + signalled.tm_min * 60 + signalled.tm_sec + 1
    assert [(h, m, s) for h, m, s in started if int(h) * 3600 + int(m) * 60 + int(s) > at] == []
