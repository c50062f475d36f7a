"""Run facts that are true: a run's state, sources and created time come from what its
sources say, never from the last source landed.

The runs go through the real `obs ingest` and one `obs build`:
- done: a finished TRL run (trainer_state.json at max_steps, written by transformers),
  its reward monitor's step files (the RewardTracker never closed: no
  final_metrics.json, so the reader can only guess "running") and its eval logs,
  landed in that order under one run id; no file holds a clock time;
- live: a reward monitor only (no final_metrics.json yet): nothing states a state;
- timed: a JSON-lines log whose first line is at 2026-03-01 12:00:00 UTC;
- guessed: a W&B export that says finished, and a JSON-lines log of its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import duckdb
import pytest
from click.testing import Result

from tests.conftest import run_cli

pytestmark = pytest.mark.integration

START = 1772366400.0  # 2026-03-01 12:00:00 UTC


@dataclass
class Built:
    root: Path
    lake: Path
    warehouse: Path

    def invoke(self, args: list[object], exit_code: int = 0) -> Result:
        return run_cli(["--lake", self.lake, "--warehouse", self.warehouse, *args], exit_code)

    def row(self, sql: str) -> tuple:
        con = duckdb.connect(str(self.warehouse), read_only=True)
        try:
            found = con.execute(sql).fetchone()
        finally:
            con.close()
        assert found is not None, sql
        return found


def _monitor(folder: Path, steps: int) -> Path:
    """The reward monitor's step files, written by obs's RewardTracker and never closed."""
    from obs.monitor.format import RewardTracker

    tracker = RewardTracker(["correct", "fmt"], folder)
    for step in range(1, steps + 1):
        tracker.track_step(step, {"correct": [0.0, 1.0, 1.0], "fmt": [1.0, 1.0, 0.0]})
    return folder


def _jsonl(path: Path, lines: list[dict[str, object]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    from transformers.trainer_callback import TrainerState

    root = tmp_path_factory.mktemp("run_facts")
    state = Built(root, root / "lake", root / "warehouse" / "obs.duckdb")
    trl = root / "done" / "trainer_output"
    trl.mkdir(parents=True)
    log = [{"loss": 1.0 / step, "reward": step / 10, "step": step} for step in range(1, 5)]
    TrainerState(global_step=4, max_steps=4, log_history=log).save_to_json(
        str(trl / "trainer_state.json")
    )
    evals = root / "done" / "eval_logs"
    evals.mkdir()
    for step in (0, 2, 4):
        (evals / f"eval_step_{step:04d}.json").write_text(
            json.dumps({"step": step, "accuracy": 0.5 + step / 10})
        )
    state.invoke(["ingest", "metrics", trl / "trainer_state.json", "--run", "done", "-q"])
    state.invoke(["ingest", "monitoring", _monitor(root / "done" / "monitor", 4), "--run", "done"])
    state.invoke(["ingest", "eval-logs", evals, "--run", "done", "-q"])

    state.invoke(["ingest", "monitoring", _monitor(root / "live" / "monitor", 3), "--run", "live"])

    timed = [{"step": s, "timestamp": START + 60 * s, "loss": 1.0 - s / 10} for s in range(3)]
    state.invoke(["ingest", "metrics", _jsonl(root / "timed.jsonl", timed), "--run", "timed"])

    export = {
        "id": "guessed",
        "name": "guessed",
        "state": "finished",
        "config": {"lr": 1e-5},
        "summary": {},
        "history": [{"_step": 0, "loss": 1.0}],
    }
    (root / "guessed").mkdir()
    (root / "guessed" / "export.json").write_text(json.dumps(export))
    state.invoke(["ingest", "metrics", root / "guessed" / "export.json"])
    state.invoke(["build"])
    yield state


def test_run_facts_a_finished_run_stays_finished_whatever_landed_last(built: Built) -> None:
    state, state_source, sources, source = built.row(
        "select state, state_source, sources, source from dim_runs where run_id = 'done'"
    )
    # eval-logs landed last and the monitor guessed running: TRL stated finished
    assert (state, state_source) == ("finished", "trl")
    assert sources == ["eval-logs", "reward-monitor", "trl"]
    assert source == "eval-logs"


def test_run_facts_a_run_no_source_states_is_unknown(built: Built) -> None:
    state, state_source, landed, updated = built.row(
        "select state, state_source, last_landed_at, updated_at from dim_runs where run_id = 'live'"
    )
    assert (state, state_source) == ("unknown", None)
    assert landed is not None and landed >= updated


def test_run_facts_created_is_the_earliest_clock_time_or_explained(built: Built) -> None:
    created, created_from = built.row(
        "select created_at, created_from from dim_runs where run_id = 'timed'"
    )
    assert (created, created_from) == (datetime(2026, 3, 1, 12, 0, 0), "first logged point")
    assert built.row("select created_at, created_from from dim_runs where run_id = 'done'") == (
        None,
        None,
    )


def test_run_facts_obs_runs_lists_every_source_and_says_why(built: Built) -> None:
    out = built.invoke(["runs"]).stdout
    lines = {line.split()[0]: line for line in out.splitlines() if line.split()}
    assert "finished" in lines["done"]
    assert "eval-logs, reward-monitor, trl" in lines["done"]
    assert "running" not in out
    assert "unknown (last data landed 20" in lines["live"]
    assert "2026-03-01 12:00:00" in lines["timed"]
    assert "unknown: no source of the run states it" in out
    assert "created -: no source of the run carries a clock time" in out


def test_run_facts_analyze_names_the_state_source_and_the_missing_clock(built: Built) -> None:
    info = json.loads(built.invoke(["analyze", "done", "--format", "json"]).stdout)
    data = next(s["data"] for s in info["sections"] if s["title"] == "Run info")
    assert data["state"] == "finished" and data["state_from"] == "trl"
    assert data["sources"] == ["eval-logs", "reward-monitor", "trl"]
    assert data["created_at"] is None
    assert data["created_from"] == "no source of this run carries a clock time"
    live = json.loads(built.invoke(["analyze", "live", "--format", "json"]).stdout)
    data = next(s["data"] for s in live["sections"] if s["title"] == "Run info")
    assert data["state"] == "unknown" and data["last_data_landed"]


def test_run_facts_compare_names_a_run_without_config(built: Built) -> None:
    out = built.invoke(["compare", "guessed", "timed"]).stdout
    config = out.split("Config keys that differ:\n")[1]
    assert config.splitlines()[0] == "  no config landed for timed"
    assert "(none" not in config
    state = next(line for line in out.splitlines() if line.startswith("guessed "))
    assert "finished" in state


def test_run_facts_quiet_ingest_prints_nothing_unless_something_went_wrong(
    built: Built, tmp_path: Path
) -> None:
    lines = [{"step": 0, "loss": 1.0}, {"step": 1, "loss": 0.5}]
    clean = built.invoke(["ingest", "metrics", _jsonl(tmp_path / "q.jsonl", lines), "-q"])
    assert (clean.stdout, clean.stderr) == ("", "")
    loud = built.invoke(["ingest", "metrics", _jsonl(tmp_path / "r.jsonl", lines)])
    assert "2 points landed" in loud.stdout
    bad = _jsonl(tmp_path / "bad.jsonl", lines)
    bad.write_text(bad.read_text() + "not json\n" + json.dumps({"step": 2, "loss": 0.2}) + "\n")
    noisy = built.invoke(["ingest", "metrics", bad, "-q"])
    assert noisy.stdout == ""
    assert "1 rejected" in noisy.stderr


def test_run_facts_the_run_report_lists_sources_and_an_unknown_state(
    built: Built, tmp_path: Path
) -> None:
    done, live = tmp_path / "done.html", tmp_path / "live.html"
    built.invoke(["analyze", "done", "--out", done])
    built.invoke(["analyze", "live", "--out", live])
    page = done.read_text()
    assert "sources eval-logs, reward-monitor, trl" in page
    assert "last data landed" not in page
    assert "state (last data landed 20" in live.read_text()
