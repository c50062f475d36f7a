"""A seeded synthetic multi-turn agent run (an e-mail search agent trained with GRPO).

``write_agent_run(folder, AgentSpec())`` writes what such a trainer leaves behind:

* ``rollouts/{step}.jsonl``: one rollout a line, each query's group on
  consecutive lines, with the agent's fields (``num_turns``, ``max_turns``,
  ``exit_reason``, ``total_tokens``, ``trainable_tokens``, and
  ``turn_rewards``, or ``turn_advantages`` with ``given_advantages``); one
  rollout in five gives its turns only as a ``messages`` list;
* ``eval_logs/eval_step_XXXX.json`` every ``eval_every`` steps, with the
  trainer's keys and planted trends (accuracy, found and read rates rise;
  repeated searches and "I don't know" answers fall);
* ``train.log``: the trainer's console (step headers, two groups' advantage
  tables a step, the verbose group summary, the eval blocks), its logger
  lines carrying a logging prefix as a real log does.

The run's truth (zero-variance groups, early exits by reason per step) is
returned for tests. The same spec and seed always give the same files.

How a rollout is made: the agent's skill at step t rises from 0.25 to 0.8.
Each query has a difficulty; a rollout answers correctly (score 1), answers
wrongly (-0.5), says "I don't know" (0, less often as skill grows), hits an
error (-1) or runs out of turns (-0.5). ``zero_variance_groups`` queries a
step are easy ones every rollout answers correctly in the same number of
turns, so their scores do not vary. Turn rewards: 0.3 for a search that
finds the reference, 0.3 for reading it, the final turn's reward the score.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, field
from pathlib import Path

from obs.core.agent_log import (
    ADVANTAGE_TITLE,
    ALL_FILTERED,
    GROUP_SUMMARY_TITLE,
    MISSING_CELL,
    RUBRIC_TITLE,
    RULE_CHAR,
    rule,
)

RULE = rule()
EQUALS = "=" * 80
REASONS = ("answered", "idk", "error", "exhausted")


@dataclass(frozen=True)
class AgentSpec:
    steps: int = 20
    queries: int = 8  # groups a step
    rollouts: int = 6  # rollouts a query (the group size)
    max_turns: int = 6
    eval_every: int = 5
    eval_samples: int = 100
    zero_variance_groups: int = 1  # a step
    given_advantages: bool = False
    seed: int = 11


@dataclass
class AgentRun:
    path: Path
    rollouts: int
    steps: int
    zero_variance: dict[int, int] = field(default_factory=dict)  # step -> groups
    early: dict[int, dict[str, int]] = field(default_factory=dict)  # step -> reason -> n
    eval_accuracy: dict[int, float] = field(default_factory=dict)


def _skill(step: int, steps: int) -> float:
    return 0.25 + 0.55 * step / max(1, steps)


def _rollout(
    rng: random.Random, skill: float, difficulty: float, spec: AgentSpec, easy: bool
) -> dict[str, object]:
    """One rollout's outcome, turns, rewards and tokens."""
    if easy:
        reason, correct, turns = "answered", True, 3
    else:
        draw = rng.random()
        p_correct = skill * (1 - difficulty)
        p_idk = 0.3 * (1 - skill)
        if draw < 0.06:
            reason, correct = "error", False
        elif draw < 0.06 + p_idk:
            reason, correct = "idk", False
        elif draw < 0.06 + p_idk + p_correct:
            reason, correct = "answered", True
        elif rng.random() < 0.5:
            reason, correct = "answered", False
        else:
            reason, correct = "exhausted", False
        if reason == "exhausted":
            turns = spec.max_turns
        elif reason == "error":
            turns = rng.randint(1, 3)
        else:
            turns = rng.randint(2, spec.max_turns - 1)
    score = {"answered": 1.0 if correct else -0.5, "idk": 0.0, "error": -1.0}.get(reason, -0.5)
    rewards = []
    for turn in range(1, turns + 1):
        if turn == turns:
            rewards.append(score)
        elif easy:
            rewards.append(0.3)
        else:
            found = rng.random() < 0.3 + 0.5 * skill
            rewards.append(0.3 if found else round(rng.choice([0.0, -0.15, -0.2]), 2))
    total = 180 * turns + rng.randint(0, 120)
    return {
        "exit_reason": reason,
        "correct": correct,
        "num_turns": turns,
        "score": score,
        "turn_rewards": rewards,
        "total_tokens": total,
        "trainable_tokens": int(total * (0.25 + 0.1 * rng.random())),
    }


def _advantages(rollout: dict[str, object], group_mean: float, group_std: float) -> list[float]:
    """Given per-turn advantages in the spirit of the trainer's rule: the group advantage,
    moved up for turns that found the reference and down for the others."""
    base = (float(rollout["score"]) - group_mean) / (group_std + 1e-8)  # type: ignore[arg-type]
    out = []
    for reward in rollout["turn_rewards"]:  # type: ignore[attr-defined]
        if reward > 0:
            out.append(round(max(base + 0.8, 0.3), 3))
        elif reward < 0:
            out.append(round(base - 0.2, 3))
        else:
            out.append(round(base, 3))
    return out


def _messages(turns: int) -> list[dict[str, str]]:
    messages = [
        {"role": "system", "content": "You search e-mails."},
        {"role": "user", "content": "?"},
    ]
    for turn in range(turns):
        messages.append({"role": "assistant", "content": f"call {turn + 1}"})
        if turn < turns - 1:
            messages.append({"role": "tool", "content": "results"})
    return messages


def write_agent_run(out_dir: Path, spec: AgentSpec | None = None) -> AgentRun:
    """Write the run's rollouts, eval logs and console log under ``out_dir``."""
    spec = spec or AgentSpec()
    rng = random.Random(spec.seed)
    difficulties = [round(rng.uniform(0.0, 0.7), 2) for _ in range(spec.queries * spec.steps)]
    dumps = out_dir / "rollouts"
    evals = out_dir / "eval_logs"
    dumps.mkdir(parents=True, exist_ok=True)
    evals.mkdir(parents=True, exist_ok=True)
    run = AgentRun(path=out_dir, rollouts=0, steps=spec.steps)
    log: list[str] = []

    def info(text: str, second: int) -> None:
        stamp = f"2024-11-20 {10 + second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}"
        log.append(f"{stamp},123 - grpo.trainer - INFO - {text}")

    clock = 0
    for step in range(1, spec.steps + 1):
        skill = _skill(step, spec.steps)
        clock += 47
        info(
            f"\U0001f4cd Step {step}/{spec.steps} ({100 * step / spec.steps:.1f}%) | ETA: 0:12:00",
            clock,
        )
        info(f"\U0001f4ca Collecting {spec.rollouts} rollouts for {spec.queries} queries...", clock)
        lines: list[str] = []
        kept = filtered = early = total_tokens = trainable = 0
        reasons = {reason: 0 for reason in REASONS}
        zero = 0
        for query in range(spec.queries):
            easy = query < spec.zero_variance_groups
            difficulty = difficulties[(step - 1) * spec.queries + query]
            group = [_rollout(rng, skill, difficulty, spec, easy) for _ in range(spec.rollouts)]
            scores = [float(r["score"]) for r in group]  # type: ignore[arg-type]
            mean = sum(scores) / len(scores)
            std = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
            zero += std < 1e-6
            # the trainer's own filter (its min_group_std is 0.05)
            filtered += std < 0.05
            kept += std >= 0.05
            topic = ("budget", "offsite", "launch", "review")[query % 4]
            question = f"Step {step} query {query + 1}: when is the {topic} meeting?"
            for index, rollout in enumerate(group):
                reason = str(rollout["exit_reason"])
                turns = int(rollout["num_turns"])  # type: ignore[call-overload]
                if turns < spec.max_turns or reason != "exhausted":
                    early += 1
                    reasons[reason] += 1
                total_tokens += int(rollout["total_tokens"])  # type: ignore[call-overload]
                trainable += int(rollout["trainable_tokens"])  # type: ignore[call-overload]
                row: dict[str, object] = {
                    "input": question,
                    "output": "I don't know" if reason == "idk" else f"answer {index}",
                    "score": rollout["score"],
                    "max_turns": spec.max_turns,
                    "exit_reason": reason,
                    "total_tokens": rollout["total_tokens"],
                    "trainable_tokens": rollout["trainable_tokens"],
                    "correct": rollout["correct"],
                }
                if spec.given_advantages:
                    row["turn_advantages"] = _advantages(rollout, mean, std)
                else:
                    row["turn_rewards"] = rollout["turn_rewards"]
                if (index + step) % 5 == 0:
                    row["messages"] = _messages(turns)  # the turns, counted from messages
                else:
                    row["num_turns"] = turns
                lines.append(json.dumps(row))
            if query < 2:  # VERBOSE: the first groups' details
                _group_block(log, query + 1, spec.queries, group, mean, std, question)
        (dumps / f"{step}.jsonl").write_text("\n".join(lines) + "\n")
        run.rollouts += len(lines)
        run.zero_variance[step] = zero
        run.early[step] = reasons
        rollouts = spec.queries * spec.rollouts
        clock += 3
        for text in (
            RULE,
            "STEP PHASE 4: BACKPROPAGATION & OPTIMIZATION",
            RULE,
            f"\u2713 Grad norm (clipped): {0.5 + 0.4 * rng.random():.4f}",
            f"\u2713 Tokens trained: {trainable}",
            f"\u2713 Total loss: {0.6 - 0.02 * step + 0.05 * rng.random():.4f}",
            "",
            GROUP_SUMMARY_TITLE,
            f"  - Total groups: {spec.queries}",
            f"  - Groups kept for training: {kept}",
            f"  - Groups filtered (low variance): {filtered}",
            f"  - Rollouts that finished early (didn't exhaust turns): {early}/{rollouts}",
            f"  - Total rollout time: {40 + 10 * rng.random():.1f}s",
            f"  - Total training time: {2 + rng.random():.1f}s",
            f"  - Total tokens: {total_tokens:,}",
            f"  - Trainable tokens: {trainable:,} ({100 * trainable / total_tokens:.1f}%)",
            RULE,
        ):
            info(text, clock)
        if kept == 0:
            info(ALL_FILTERED, clock)
        if step % spec.eval_every == 0:
            stats = _eval_stats(rng, step, spec)
            run.eval_accuracy[step] = stats["accuracy"]  # type: ignore[assignment]
            name = evals / f"eval_step_{step:04d}.json"
            name.write_text(json.dumps(stats, indent=2))
            _eval_block(log, stats, name)
    (out_dir / "train.log").write_text("\n".join(log) + "\n")
    return run


def _group_block(
    log: list[str],
    number: int,
    groups: int,
    group: list[dict[str, object]],
    mean: float,
    std: float,
    question: str,
) -> None:
    """What the trainer prints (VERBOSE) when a group completes: its rollouts and the table."""
    log += [EQUALS, f"\U0001f4ca GROUP {number}/{groups} COMPLETED", EQUALS]
    log.append(f"\u2753 Question: {question}")
    for index, rollout in enumerate(group, start=1):
        log.append(f"  \U0001f3b2 Rollout {index}:")
        log.append(
            f"    \U0001f4ca Metrics: reward={rollout['score']}, turns={rollout['num_turns']}"
        )
    log.append("\U0001f4c8 Group Statistics:")
    scores = [float(r["score"]) for r in group]  # type: ignore[arg-type]
    log.append(f"   Rewards: mean={mean:.3f}, std={std:.3f}, range=[{min(scores)}, {max(scores)}]")
    turns = max(int(r["num_turns"]) for r in group)  # type: ignore[call-overload]
    header = "Rollout |" + "".join(f" Turn {t:2d} |" for t in range(1, turns + 1))
    log += [RULE, ADVANTAGE_TITLE, RULE, header, RULE_CHAR * len(header)]
    for index, rollout in enumerate(group):
        advantages = _advantages(rollout, mean, std)
        cells = "".join(
            f" {advantages[t]:+6.3f} |" if t < len(advantages) else MISSING_CELL
            for t in range(turns)
        )
        log.append(f"   {index + 1:2d}  |" + cells)
    log.append(RULE)


def _eval_stats(rng: random.Random, step: int, spec: AgentSpec) -> dict[str, object]:
    """An eval's statistics with planted trends (better and tidier searches as steps go)."""
    n = spec.eval_samples
    progress = step / spec.steps
    correct = round(n * (0.35 + 0.45 * progress))
    idk = round(n * (0.2 - 0.15 * progress))
    attempted = n - idk
    found = min(n, correct + round(n * 0.08))
    read = min(found, correct + round(n * 0.03))
    total_searches = round(n * (3.2 - 0.8 * progress))
    repeated = round(total_searches * (0.25 - 0.2 * progress))
    rewards_mean = -0.3 + 1.1 * progress
    return {
        "step": step,
        "accuracy": correct / n,
        "correct_answers": correct,
        "total_samples": n,
        "attempted_answer": attempted,
        "avg_reward": round(rewards_mean, 3),
        "median_reward": round(rewards_mean + 0.1, 3),
        "std_reward": round(0.5 + 0.1 * rng.random(), 3),
        "min_reward": -1.0,
        "max_reward": 1.0,
        "found_correct_email": found,
        "read_correct_email": read,
        "total_repeated_searches": repeated,
        "total_unique_searches": total_searches - repeated,
        "total_searches": total_searches,
        "avg_turns_correct": round(3.8 - 0.8 * progress, 2),
        "avg_turns_idk": round(4.6 - 0.3 * progress, 2),
        "avg_search_attempts": round(total_searches / n, 2),
        "num_idk": idk,
        "eval_time": round(200 + 30 * rng.random(), 1),
        "beat_rate": 0.0,
    }


def _eval_block(log: list[str], stats: dict[str, object], path: Path) -> None:
    """The trainer's eval block (printed, no logging prefix), as the console shows it."""
    n = int(stats["total_samples"])  # type: ignore[call-overload]

    def share(key: str) -> str:
        value = int(stats[key])  # type: ignore[call-overload]
        return f"{value}/{n} ({100 * value / n:.1f}%)"

    log += [
        EQUALS,
        "\U0001f4ca EVALUATION RESULTS",
        EQUALS,
        f"\U0001f9e9 Checkpoint: {stats['step']}",
        f"\U0001f4c8 Accuracy: {100 * float(stats['accuracy']):.2f}% "  # type: ignore[arg-type]
        f"({stats['correct_answers']}/{n})",
        f"\u23f1\ufe0f  Time taken: {stats['eval_time']}s",
        f"\U0001f4b0 Average reward: {stats['avg_reward']} (std: {stats['std_reward']})",
        f"   Median reward: {stats['median_reward']}",
        f"   Range: [{stats['min_reward']}, {stats['max_reward']}]",
        "",
        RUBRIC_TITLE,
        f"   Attempted answers: {share('attempted_answer')}",
        f"   Found correct email: {share('found_correct_email')}",
        f"   Read correct email: {share('read_correct_email')}",
        f"   Repeated searches: {stats['total_repeated_searches']} "
        f"(total: {stats['total_searches']}, unique: {stats['total_unique_searches']})",
        f"   Avg turns (correct): {float(stats['avg_turns_correct']):.2f} turns",  # type: ignore[arg-type]
        f"   Avg turns (I don't know): {float(stats['avg_turns_idk']):.2f} turns "  # type: ignore[arg-type]
        f"(count: {stats['num_idk']})",
        f"   Avg search attempts: {float(stats['avg_search_attempts']):.2f}",  # type: ignore[arg-type]
        "",
        f"\U0001f4be Eval stats saved to: {path}",
    ]
