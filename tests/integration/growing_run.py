"""A run that grows the ways a training run does, for the incremental and parity tests.

``land_first`` writes and lands: run a's iterations 0..2 and the first half
of iteration 3's dump, its eval metric, a reward monitor's samples (run m,
and run a's first steps), two seed-style tracker exports (w0, w1), and a
multi-turn agent's run g (rollouts, eval logs, console log as g-log), a
NeMo-RL run n with token arrays (steps 1, 2 and four lines of step 3), and a
prime-rl run p with token arrays and policy spans (step 0).
``land_more`` then lands the rest of iteration 3's dump (a grown file),
iteration 4, a second run b sharing a's prompts, g's last step, more monitor
steps for m, one more eval point for a, w1 grown and a new w2, and the rest of
n (step 3 grown, its samples numbered on; step 4), and p's step 1 (lags 0, 1, 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from obs.demo.agent import AgentSpec, write_agent_run
from obs.demo.histories import write_seed_export
from obs.demo.rollouts import DemoSpec, write_demo_run

from tests.conftest import run_cli
from tests.data.nemo_rl import write_nemo_run
from tests.data.prime_rl_tokens import write_tool_run

NEMO_LINES_FIRST = 4  # of step 3's six: its second prompt's group is split across ingests


@dataclass
class GrowingRun:
    tmp_path: Path
    base: list
    lines: list[bytes]
    nemo_lines: list[bytes]


def _track(monitor: Path, steps: range) -> None:
    from obs.monitor import RewardTracker

    tracker = RewardTracker(["f", "g"], monitor, track_distributions=True)
    for t in steps:
        tracker.track_step(t, {"f": [t, 1.0, 2.0 * t], "g": [0.5, -t, 1.0]})


def land_first(tmp_path: Path, base: list) -> GrowingRun:
    """Write and land the run's first part into the lake ``base`` names."""
    run_a, held = tmp_path / "run_a", tmp_path / "held"
    write_demo_run(run_a, DemoSpec(prompts=12, iterations=5, samples_per_prompt=4, seed=3))
    # Run b shares its prompts with run a (the same seed): fct_prompt_run_diff has rows.
    write_demo_run(held / "b", DemoSpec(prompts=9, iterations=3, samples_per_prompt=4, seed=3))
    (run_a / "4.jsonl").rename(held / "4.jsonl")
    lines = (run_a / "3.jsonl").read_bytes().splitlines(keepends=True)
    (run_a / "3.jsonl").write_bytes(b"".join(lines[: len(lines) // 2]))

    run_cli([*base, "ingest", "rollouts", run_a, "--run", "a", "-q"])
    # Run a's performance metric, for reward hacking: iterations 0-3 now, 4 later.
    accuracy = tmp_path / "a_eval.jsonl"
    accuracy.write_text(
        "".join(f'{{"step": {t}, "eval/accuracy": {0.5 + t / 20}}}\n' for t in range(4))
    )
    run_cli([*base, "ingest", "metrics", accuracy, "--run", "a", "-q"])
    # A reward monitor's samples for run a's first steps (the rollouts win
    # where both exist) and for a run of its own, m, which grows later.
    monitor = tmp_path / "monitoring_data"
    _track(monitor, range(5))
    run_cli([*base, "ingest", "monitoring", monitor, "--run", "m", "-q"])
    run_cli([*base, "ingest", "monitoring", monitor, "--run", "a", "-q"])
    # Tracker histories too: a seed-style run with a planted pattern, in two steps.
    exports = tmp_path / "exports"
    write_seed_export(exports / "w1.json", run_id="w1", steps=60, patterns=["kl_runaway"])
    # w0 lands once and stays as it is.
    write_seed_export(exports / "w0.json", run_id="w0", steps=50, seed=2)
    run_cli([*base, "ingest", "metrics", exports, "-q"])
    (exports / "w0.json").unlink()
    # A multi-turn agent's run g: its rollouts (the last step lands later),
    # eval logs and console log.
    agent = tmp_path / "agent"
    write_agent_run(agent, AgentSpec(steps=4, queries=3, rollouts=3, eval_every=2))
    (agent / "rollouts" / "4.jsonl").rename(held / "g4.jsonl")
    run_cli([*base, "ingest", "rollouts", agent / "rollouts", "--run", "g", "-q"])
    run_cli([*base, "ingest", "eval-logs", agent / "eval_logs", "--run", "g", "-q"])
    run_cli([*base, "ingest", "trainer-log", agent / "train.log", "--run", "g-log", "-q"])
    # A NeMo-RL run n, its token arrays and a planted mismatch at step 3.
    nemo = write_nemo_run(tmp_path / "nemo" / "exp_001", steps=4, mismatch_steps=(3,))
    nemo.files[4].rename(held / "train_data_step4.jsonl")
    nemo_lines = nemo.files[3].read_bytes().splitlines(keepends=True)
    nemo.files[3].write_bytes(b"".join(nemo_lines[:NEMO_LINES_FIRST]))
    run_cli([*base, "ingest", "rollouts", nemo.log_dir, "--run", "n", "-q"])
    # A prime-rl run p with token arrays and policy spans; its step 1 lands later.
    prime = tmp_path / "prime" / "p"
    write_tool_run(prime)
    (prime / "rollouts" / "step_1").rename(held / "step_1")
    run_cli([*base, "ingest", "rollouts", prime, "--run", "p", "-q"])
    return GrowingRun(tmp_path, base, lines, nemo_lines)


def land_more(grown_run: GrowingRun) -> None:
    """Land what the run wrote since ``land_first``."""
    tmp_path, base, lines = grown_run.tmp_path, grown_run.base, grown_run.lines
    run_a, held, agent = tmp_path / "run_a", tmp_path / "held", tmp_path / "agent"
    monitor, exports = tmp_path / "monitoring_data", tmp_path / "exports"
    accuracy = tmp_path / "a_eval.jsonl"
    # The dump grows, a new iteration lands, a second run appears.
    with (run_a / "3.jsonl").open("ab") as grown:
        grown.write(b"".join(lines[len(lines) // 2 :]))
    (held / "4.jsonl").rename(run_a / "4.jsonl")
    run_cli([*base, "ingest", "rollouts", run_a, "--run", "a", "-q"])
    run_cli([*base, "ingest", "rollouts", held / "b", "--run", "b", "-q"])
    (held / "g4.jsonl").rename(agent / "rollouts" / "4.jsonl")
    run_cli([*base, "ingest", "rollouts", agent / "rollouts", "--run", "g", "-q"])
    _track(monitor, range(5, 8))
    run_cli([*base, "ingest", "monitoring", monitor, "--run", "m", "-q"])
    with accuracy.open("a") as grown:
        grown.write('{"step": 4, "eval/accuracy": 0.7}\n')
    run_cli([*base, "ingest", "metrics", accuracy, "--run", "a", "-q"])
    write_seed_export(exports / "w1.json", run_id="w1", steps=90, patterns=["kl_runaway"])
    write_seed_export(exports / "w2.json", run_id="w2", steps=40, seed=1)
    run_cli([*base, "ingest", "metrics", exports, "-q"])
    # n: step 3's file grows, step 4 is written.
    nemo = tmp_path / "nemo" / "exp_001"
    with (nemo / "train_data_step3.jsonl").open("ab") as grown:
        grown.write(b"".join(grown_run.nemo_lines[NEMO_LINES_FIRST:]))
    (held / "train_data_step4.jsonl").rename(nemo / "train_data_step4.jsonl")
    run_cli([*base, "ingest", "rollouts", nemo, "--run", "n", "-q"])
    prime = tmp_path / "prime" / "p"
    (held / "step_1").rename(prime / "rollouts" / "step_1")
    run_cli([*base, "ingest", "rollouts", prime, "--run", "p", "-q"])
