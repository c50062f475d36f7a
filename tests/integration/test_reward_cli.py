"""`obs rewards`, `obs alerts` and the alerts of `obs watch`, on runs written for them.

Four runs go through the real `obs ingest` and `obs build`:
- hacked: rollout dumps whose `format_exact` reward climbs while eval/accuracy
  (logged beside kl in a metrics.jsonl) falls; kl crosses 0.5 at step 17 and
  step 0 gives every sample the same rewards (a signal-to-noise of 0);
- clean: every reward and eval/accuracy rise together;
- logged: a tracker log only, with TRL's per-function reward means and stds;
- plain: a tracker log with a loss and no reward at all.
What the commands print is checked against the marts, read with duckdb.
"""

from __future__ import annotations

import http.server
import json
import random
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import duckdb
import pytest
from click.testing import Result

from tests.conftest import run_cli

# What obs alerts reads: fct_alerts and the run findings that are reward alerts too
# (the held-out metric against the reward, GRPO's lost signal).
ALERTS = (
    "(select run_id, step, rule_name, kind, metric, level, level_rank, message, value, "
    "threshold from fct_alerts union all select run_id, first_step, pattern, 'finding', null, "
    "severity, case severity when 'critical' then 4 when 'warning' then 2 else 1 end, summary, "
    "null, null from fct_run_findings where pattern in ('held_out_collapse', "
    "'reward_held_out_divergence', 'grpo_signal_loss')) as alerts"
)

pytestmark = pytest.mark.integration

ITERATIONS, PROMPTS, SAMPLES = 30, 4, 2
# The reward monitor's alert icons, written out here rather than imported.
ICONS = {"info": "ℹ️", "warning": "⚠️", "error": "❌", "critical": "🚨"}  # noqa: RUF001


# --------------------------------------------------------------------------- the runs


def _rewards(kind: str, iteration: int, rng: random.Random) -> dict[str, float]:
    if kind == "hacked":
        if iteration == 0:
            return {"format_exact": 0.5, "correctness": 0.0, "length": 0.1}
        return {
            "format_exact": 0.5 + 0.08 * iteration + rng.gauss(0, 0.1),
            "correctness": 1.0 if rng.random() < 0.5 else 0.0,
            "length": rng.uniform(0.0, 0.2),
        }
    solved = min(0.9, 0.3 + 0.02 * iteration)
    return {
        "format_exact": 0.5 + 0.03 * iteration + rng.gauss(0, 0.1),
        "correctness": 1.0 if rng.random() < solved else 0.0,
        "length": rng.uniform(0.0, 0.2),
    }


def write_rollout_run(root: Path, kind: str, seed: int) -> tuple[Path, Path]:
    """A dump folder of ``{iteration}.jsonl`` files and a metrics.jsonl for one run."""
    rng = random.Random(seed)
    dumps = root / kind / "dumps"
    dumps.mkdir(parents=True)
    for iteration in range(ITERATIONS):
        lines = []
        for prompt in range(PROMPTS):
            for sample in range(SAMPLES):
                rewards = _rewards(kind, iteration, rng)
                row = {
                    "input": f"prompt {prompt}",
                    "output": f"response {sample} at {iteration}",
                    "score": sum(rewards.values()),
                    "rewards": rewards,
                }
                lines.append(json.dumps(row) + "\n")
        (dumps / f"{iteration}.jsonl").write_text("".join(lines))
    metrics = root / kind / "metrics.jsonl"
    with metrics.open("w") as handle:
        for step in range(ITERATIONS):
            if kind == "hacked":
                accuracy, kl = 0.8 - 0.006 * step, 0.03 * step
            else:
                accuracy, kl = 0.5 + 0.012 * step, 0.004 * step
            point = {"step": step, "eval/accuracy": accuracy + rng.gauss(0, 0.002), "kl": kl}
            handle.write(json.dumps(point) + "\n")
    return dumps, metrics


def write_logged_run(root: Path, seed: int) -> Path:
    """A tracker log with per-function reward means and stds (TRL's keys), no samples."""
    rng = random.Random(seed)
    path = root / "logged" / "metrics.jsonl"
    path.parent.mkdir(parents=True)
    with path.open("w") as handle:
        for step in range(ITERATIONS):
            fmt, length = 0.5 + 0.02 * step + rng.gauss(0, 0.05), 0.1 + rng.gauss(0, 0.02)
            point = {
                "step": step,
                "rewards/format_exact/mean": fmt,
                "rewards/format_exact/std": 0.2,
                "rewards/length/mean": length,
                "rewards/length/std": 0.05,
                "reward": fmt + length,
                "reward_std": 0.25,
                "eval/accuracy": 0.5 + 0.005 * step + rng.gauss(0, 0.002),
            }
            handle.write(json.dumps(point) + "\n")
    return path


@dataclass
class Built:
    root: Path
    lake: Path
    warehouse: Path
    dumps: Path
    metrics: Path

    def invoke(self, args: list[object], exit_code: int = 0) -> Result:
        return run_cli(["--lake", self.lake, "--warehouse", self.warehouse, *args], exit_code)

    def rows(self, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
        with duckdb.connect(str(self.warehouse), read_only=True) as con:
            cursor = con.execute(sql, params or [])
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    root = tmp_path_factory.mktemp("reward_cli")
    state = Built(root, root / "lake", root / "warehouse" / "obs.duckdb", root, root)
    for kind, seed in (("hacked", 11), ("clean", 12)):
        dumps, metrics = write_rollout_run(root, kind, seed)
        state.invoke(["ingest", "rollouts", dumps, "--run", kind, "-q"])
        state.invoke(["ingest", "metrics", metrics, "--run", kind, "-q"])
        if kind == "hacked":
            state.dumps, state.metrics = dumps, metrics
    state.invoke(["ingest", "metrics", write_logged_run(root, 13), "--run", "logged", "-q"])
    plain = root / "plain" / "metrics.jsonl"
    plain.parent.mkdir()
    plain.write_text("".join(json.dumps({"step": s, "loss": 1 / (s + 1)}) + "\n" for s in range(5)))
    state.invoke(["ingest", "metrics", plain, "--run", "plain", "-q"])
    state.invoke(["build"])
    yield state


def _one_line_error(result: Result) -> str:
    assert result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    return result.stderr


# --------------------------------------------------------------------------- obs rewards


def test_rewards_text_words_the_marts(built: Built) -> None:
    out = built.invoke(["rewards", "hacked"]).stdout
    lines = out.splitlines()
    quality = built.rows("select * from fct_reward_quality where run_id = 'hacked'")[0]
    assert lines[0] == (
        f"Reward analysis: hacked (basis samples, {ITERATIONS} steps, 3 reward functions)"
    )
    assert lines[1] == f"Quality Score: {quality['quality_score']:.1f}/100"
    for name in ("consistency", "discriminability", "stability", "coverage"):
        assert f"{name} {quality[name]:.2f}" in lines[2]
    for issue in quality["issues"]:
        assert f"❌ {issue}" in lines
    for warning in quality["warnings"]:
        assert f"⚠️ {warning}" in lines
    for recommendation in quality["recommendations"]:
        assert f"💡 {recommendation}" in lines
    # Each function's line, in rank order, with the mart's contribution.
    functions = built.rows(
        "select * from fct_reward_function_importance where run_id = 'hacked' order by rank"
    )
    shown = [line.strip() for line in lines if "% contribution" in line]
    assert [s.split(" (")[0] for s in shown] == [
        f"{f['reward_function']}: {f['contribution']:.1f}% contribution" for f in functions
    ]
    for function, line in zip(functions, shown, strict=True):
        assert f"(impact {function['impact_score']:.1f}, " in line
    # Reward hacking: high over the run, the climbing function named, windows summarised.
    hacking = [line for line in lines if line.startswith("Reward hacking")]
    assert hacking == [
        "Reward hacking (performance metric eval/accuracy): verdict high over the run; "
        "suspected: format_exact"
    ]
    windows = built.rows(
        "select window_end_step from fct_reward_hacking where run_id = 'hacked' "
        "and reward_function is null and scope = 'window' and verdict = 'high' "
        "order by window_end_step"
    )
    assert windows, "no high window"
    assert f"windows: high in the windows ending at steps {windows[0]['window_end_step']}-" in out
    # The critical alert, in the reward monitor's line format.
    (alert,) = built.rows(
        "select * from fct_alerts where run_id = 'hacked' and rule_name = 'reward_hacking'"
    )
    assert f"  🚨 [CRITICAL] Step {alert['step']}: {alert['message']}" in lines
    assert "(suspected: format_exact)" in alert["message"]


def test_rewards_json_holds_every_section(built: Built) -> None:
    payload = json.loads(built.invoke(["rewards", "hacked", "--format", "json"]).stdout)
    assert {"quality", "functions", "hacking", "alerts"} <= set(payload)
    assert set(payload["hacking"]) >= {"performance_metric", "run", "windows", "spans"}
    quality = built.rows("select quality_score from fct_reward_quality where run_id = 'hacked'")
    assert payload["quality"]["quality_score"] == pytest.approx(quality[0]["quality_score"])
    assert [f["reward_function"] for f in payload["functions"]] == [
        r["reward_function"]
        for r in built.rows(
            "select reward_function from fct_reward_function_importance "
            "where run_id = 'hacked' order by rank"
        )
    ]
    total = [h for h in payload["hacking"]["run"] if h["reward_function"] is None]
    assert total[0]["verdict"] == "high" and total[0]["suspected_functions"] == ["format_exact"]
    windows = payload["hacking"]["windows"]
    assert windows and {w["verdict"] for w in windows} <= {"high", "medium"}
    assert payload["hacking"]["spans"][0]["verdict"] == "high"
    assert len(payload["alerts"]) == len(
        built.rows(f"select 1 from {ALERTS} where run_id = 'hacked'")
    )


def test_rewards_clean_run_is_not_called_hacked(built: Built) -> None:
    payload = json.loads(built.invoke(["rewards", "clean", "--format", "json"]).stdout)
    for row in payload["hacking"]["run"]:
        assert row["verdict"] == row["seed_verdict"] == "aligned", row
    assert not built.rows(
        "select 1 from fct_reward_hacking where run_id = 'clean' "
        "and (verdict in ('high', 'medium') or seed_verdict in ('high', 'medium'))"
    )
    assert payload["hacking"]["windows"] == [] and payload["hacking"]["spans"] == []
    out = built.invoke(["rewards", "clean"]).stdout
    assert "verdict aligned over the run" in out
    assert "windows: none high or medium" in out


def test_rewards_of_a_logged_run_say_why_there_is_no_score(built: Built) -> None:
    out = built.invoke(["rewards", "logged"]).stdout
    assert "(basis logged," in out.splitlines()[0]
    assert "Quality Score: n/a (needs per-sample rewards; the run logged aggregates only)" in out
    payload = json.loads(built.invoke(["rewards", "logged", "--format", "json"]).stdout)
    assert payload["quality"]["quality_score"] is None


def test_rewards_unknown_run_and_run_without_rewards_are_one_line(built: Built) -> None:
    error = _one_line_error(built.invoke(["rewards", "nope"], exit_code=1))
    assert error.startswith("Error: ") and "no run 'nope'" in error
    error = _one_line_error(built.invoke(["rewards", "plain"], exit_code=1))
    assert error == (
        "Error: plain: tracker history only; land per-function rewards (rollouts with reward"
        " columns, or obs ingest monitoring DIR --run plain) or a tracker history that logs"
        " the reward to see reward monitoring\n"
    )


# --------------------------------------------------------------------------- obs alerts


def _selected(built: Built, run: str | None, level: str, since: int | None) -> list[tuple]:
    rank = ("info", "warning", "error", "critical").index(level) + 1
    found = built.rows(
        f"select run_id, rule_name, step, level from {ALERTS} where level_rank >= ? "
        "and (? is null or run_id = ?) and (? is null or step >= ?)",
        [rank, run, run, since, since],
    )
    return sorted((r["run_id"], r["rule_name"], r["step"], r["level"]) for r in found)


@pytest.mark.parametrize(
    ("run", "level", "since"),
    [
        (None, "info", None),
        ("hacked", "warning", None),
        ("hacked", "error", None),
        ("hacked", "critical", None),
        ("hacked", "info", 1),
        ("hacked", "info", 18),
        ("hacked", "info", 1000),
        ("clean", "info", None),
    ],
)
def test_alerts_select_what_the_warehouse_holds(
    built: Built, run: str | None, level: str, since: int | None
) -> None:
    expected = _selected(built, run, level, since)
    critical = any(e[3] == "critical" for e in expected)
    args: list[object] = ["alerts", "--level", level, "--format", "json"]
    args += ["--run", run] if run else []
    args += ["--since-step", since] if since is not None else []
    result = built.invoke(args, exit_code=1 if critical else 0)
    payload = json.loads(result.stdout)
    assert sorted((a["run_id"], a["rule_name"], a["step"], a["level"]) for a in payload) == expected
    steps = [(a["run_id"], a["step"]) for a in payload]
    assert steps == sorted(steps), "each run's alerts newest last"


def test_alerts_planted_in_the_hacked_run(built: Built) -> None:
    found = {(r[1], r[3]) for r in _selected(built, "hacked", "info", None)}
    assert {("reward_hacking", "critical"), ("high_kl_divergence", "error")} <= found
    assert ("low_signal_to_noise", "warning") in found
    assert [r[2] for r in _selected(built, "hacked", "error", None) if r[1] == "high_kl_divergence"]
    assert _selected(built, "clean", "critical", None) == []


def test_alerts_exit_1_on_a_critical_alert_and_0_for_the_clean_run(built: Built) -> None:
    result = built.invoke(["alerts", "--run", "hacked", "--level", "critical"], exit_code=1)
    (alert,) = built.rows(
        f"select step, message from {ALERTS} where run_id = 'hacked' and level = 'critical'"
    )
    assert result.stdout.splitlines()[:2] == [
        "run hacked",
        f"  🚨 [CRITICAL] Step {alert['step']}: {alert['message']}",
    ]
    assert result.stderr == "1 critical alert\n"
    clean = built.invoke(["alerts", "--run", "clean", "--level", "critical"])
    assert clean.stdout == "no alerts at or above critical for run clean\n"


def test_alerts_table_lines_and_counts(built: Built) -> None:
    result = built.invoke(["alerts", "--run", "hacked"], exit_code=1)
    rows = built.rows(
        f"select step, level, message from {ALERTS} where run_id = 'hacked' "
        "order by step, level_rank desc, rule_name"
    )
    lines = result.stdout.splitlines()
    assert lines[1 : 1 + len(rows)] == [
        f"  {ICONS[r['level']]} [{r['level'].upper()}] Step {r['step']}: {r['message']}"
        for r in rows
    ]
    counts = lines[-1].split()
    by_level = {lv: sum(1 for r in rows if r["level"] == lv) for lv in ICONS}
    assert counts == ["hacked", *(str(by_level[lv]) for lv in ICONS), str(len(rows))]


def test_alerts_unknown_run_is_one_line_and_exit_2(built: Built) -> None:
    error = _one_line_error(built.invoke(["alerts", "--run", "nope"], exit_code=2))
    assert "no run 'nope'" in error
    plain = built.invoke(["alerts", "--run", "plain"])
    assert plain.stdout == (
        "no alerts at or above info for run plain (the run has no reward data)\n"
    )


def test_alerts_without_warehouse_is_exit_2(tmp_path: Path) -> None:
    missing = tmp_path / "none.duckdb"
    result = run_cli(["--warehouse", missing, "alerts"], exit_code=2)
    assert _one_line_error(result) == (
        f"Error: {missing}: no warehouse yet (the default, warehouse/obs.duckdb, is relative to"
        " the current folder; --warehouse FILE or OBS_WAREHOUSE points elsewhere); run `obs"
        " ingest rollouts ...` then `obs build`\n"
    )


# --------------------------------------------------------------------------- obs watch


def test_unseen_alerts_are_each_alert_once() -> None:
    from obs.reports.rewards import unseen_alerts

    con = duckdb.connect()
    seen: set[tuple[str, str, int]] = set()
    assert unseen_alerts(con, None, seen) == []  # no fct_alerts table: nothing, no error
    con.execute(
        "create table fct_alerts as select * from (values "
        "('a', 3, 'low_signal_to_noise', 'threshold', 'signal_to_noise', 'warning', 2, 'm1', "
        "0.1, 0.5), ('b', 5, 'reward_hacking', 'hacking', 'reward_hacking', 'critical', 4, "
        "'m2', 0.2, null)) as t(run_id, step, rule_name, kind, metric, level, level_rank, "
        "message, value, threshold)"
    )
    assert [a["message"] for a in unseen_alerts(con, {"a"}, seen)] == ["m1"]
    assert unseen_alerts(con, {"a"}, seen) == []
    con.execute(
        "insert into fct_alerts values ('a', 9, 'high_kl_divergence', 'threshold', "
        "'kl_divergence', 'error', 3, 'm3', 0.6, 0.5)"
    )
    # Run by run, each run's oldest first.
    assert [a["message"] for a in unseen_alerts(con, None, seen)] == ["m3", "m2"]
    assert seen == {("a", "low_signal_to_noise", 3), ("b", "reward_hacking", 5),
                    ("a", "high_kl_divergence", 9)}  # fmt: skip


def test_watch_prints_the_alerts_of_its_run_once(built: Built) -> None:
    # Nothing new lands: the first round prints the alerts already raised, the second none.
    result = built.invoke(["watch", built.dumps, "--run", "hacked", "--metrics", built.metrics,
                           "--rounds", "2", "--every", "0.1"])  # fmt: skip
    assert result.stdout.strip() == str(built.warehouse)
    rows = built.rows(
        f"select step, level, message from {ALERTS} where run_id = 'hacked' "
        "order by step, level_rank desc, rule_name"
    )
    assert any(r["level"] == "critical" for r in rows)
    lines = result.stderr.splitlines()
    rounds = [i for i, line in enumerate(lines) if " round " in line]
    assert len(rounds) == 2 and all("nothing new" in lines[i] for i in rounds), lines
    assert lines[rounds[0] + 1 : rounds[1]] == [
        f"  hacked: {ICONS[r['level']]} [{r['level'].upper()}] Step {r['step']}: {r['message']}"
        for r in rows
    ]
    assert rounds[1] == len(lines) - 1


class _Hook(http.server.BaseHTTPRequestHandler):
    """A webhook that fails the first POST (the notifier tries again) and keeps the rest."""

    posts: ClassVar[list[bytes]] = []
    tries = 0

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).tries += 1
        if type(self).tries == 1:
            self.send_response(503)
        else:
            type(self).posts.append(body)
            self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_on_alert_and_webhook_fire_each_event_once_across_restarts(
    built: Built, tmp_path: Path
) -> None:
    from obs.runner.dbt import state_dir

    (state_dir(built.warehouse) / "notified.json").unlink(missing_ok=True)
    heard = tmp_path / "heard.jsonl"
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    args = ["watch", built.dumps, "--run", "hacked", "--metrics", built.metrics,
            "--rounds", "2", "--every", "0.1", "--on-alert", f"cat >> '{heard}'",
            "--webhook", url]  # fmt: skip
    try:
        built.invoke(args)
        # what the warehouse holds of the run at warning or above, by hand
        alerts = built.rows(
            "select 'alert' as kind, rule_name as rule, level, step, message from fct_alerts "
            "where run_id = 'hacked' and level_rank >= 2"
        )
        findings = built.rows(
            "select 'finding' as kind, pattern as rule, severity as level, first_step as step, "
            "summary as message from fct_run_findings "
            "where run_id = 'hacked' and severity in ('warning', 'critical')"
        )
        expected = sorted(
            (e["kind"], e["rule"], e["level"], e["step"], e["message"]) for e in alerts + findings
        )
        assert any(e[0] == "alert" and e[2] == "critical" for e in expected)
        assert any(e[0] == "finding" for e in expected)

        def events(lines: list[bytes] | list[str]) -> list[tuple]:
            out = []
            for line in lines:
                event = json.loads(line)
                assert event["run"] == "hacked"
                out.append(
                    (event["kind"], event["rule"], event["level"], event["step"], event["message"])
                )
            return sorted(out)

        # the command: once per event, each on its stdin as one JSON line
        assert events(heard.read_text().splitlines()) == expected
        # the webhook: the same, its first failure tried again
        assert events(_Hook.posts) == expected
        assert _Hook.tries == len(expected) + 1
        # a watch started again on the same warehouse fires nothing again
        built.invoke(args)
        assert events(heard.read_text().splitlines()) == expected
        assert _Hook.tries == len(expected) + 1
    finally:
        server.shutdown()


def test_a_webhook_that_is_no_url_is_one_line(built: Built) -> None:
    result = built.invoke(
        ["watch", built.dumps, "--run", "hacked", "--rounds", "1", "--webhook", "file:///x"],
        exit_code=2,
    )
    assert "file:///x: not an http(s) URL" in result.stderr


def test_serve_on_alert_without_a_run_to_follow_is_one_line(built: Built) -> None:
    result = built.invoke(["serve", "--on-alert", "true"], exit_code=2)
    assert "--on-alert and --webhook need PATH" in result.stderr
