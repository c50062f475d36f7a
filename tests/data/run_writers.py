"""Files as verl's V1 trainer and prime-rl write them, for the tests of those sources.

* verl (``verl/trainer/ppo/v1/trainer_base.py``, ``_write_generations``): one
  ``json.dumps(entry, ensure_ascii=False)`` line per rollout into
  ``{step}.jsonl``, keys ``input``, ``output``, ``gts``, ``score``, ``step``,
  then the extra columns (training: ``uid``; validation: ``reward``, the
  reward's extra infos, ``uid``), sorted by the uid's (uuid, session, output).
  A uid is the rollout's TransferQueue key ``{uuid4}_{session}_{output}``
  (``agent_loop_tq.py``): the uuid is the prompt's, fresh each step.
* prime-rl (``prime_rl/monitors/file.py``, ``log_episodes``): one
  ``orjson.dumps(episode.to_record())`` line (compact, UTF-8, newline) per
  episode into ``rollouts/step_{N}/{train|eval}/{all|effective}/traces.jsonl``;
  the record is verifiers' ``Episode.model_dump(mode="json",
  exclude_none=True)`` without the nodes' tensor fields
  (``verifiers/v1/episode.py``, ``trace.py``, ``graph.py``): fields in the
  models' order, null members left out. ``log_metrics`` appends
  ``json.dumps({"step", "time", **metrics})`` lines to ``metrics.jsonl``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

# --------------------------------------------------------------------------- verl V1


def verl_uid(prompt: int, session: int, output: int = 0, step: int = 0) -> str:
    """A uid of the shape verl writes: a uuid4 text (fixed here), the session, the output."""
    uuid = f"{prompt:08x}-{step:04x}-4abc-8def-{prompt * 7919 + step:012x}"
    return f"{uuid}_{session}_{output}"


def verl_group(prompt: int, step: int = 0) -> str:
    """The uuid part of ``verl_uid`` for a prompt and step: the rollouts' group."""
    return verl_uid(prompt, 0, 0, step).rsplit("_", 2)[0]


def write_verl_dump(
    folder: Path, step: int, rows: list[dict[str, Any]], extra_keys: tuple[str, ...] = ("uid",)
) -> Path:
    """``{step}.jsonl`` as ``_write_generations`` writes it; ``rows`` hold input, output,
    gts, score and the ``extra_keys`` columns (uid last, as the trainer adds it)."""
    folder.mkdir(parents=True, exist_ok=True)
    ordered = sorted(rows, key=lambda r: _uid_order(r["uid"]))
    lines = []
    for row in ordered:
        entry = {
            "input": row["input"],
            "output": row["output"],
            "gts": row.get("gts"),
            "score": row["score"],
            "step": step,
        }
        for key in extra_keys:
            entry[key] = row[key]
        lines.append(json.dumps(entry, ensure_ascii=False) + "\n")
    path = folder / f"{step}.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _uid_order(uid: str) -> tuple[str, int, int]:
    prompt, session, output = uid.rsplit("_", 2)
    return prompt, int(session), int(output)


# --------------------------------------------------------------------------- prime-rl


def node(
    role: str,
    content: Any = None,
    *,
    parent: int | None = None,
    sampled: bool = False,
    **message: Any,
) -> dict[str, Any]:
    """A MessageNode as it serializes: parent, message, sampled, timestamp, token
    spans (the token ids, the trainable mask, the content flags, the logprobs)."""
    body: dict[str, Any] = {"role": role}
    if role == "tool":
        body["tool_call_id"] = message.pop("tool_call_id", "call_0")
    if content is not None:
        body["content"] = content
    body.update(message)
    tokens = 3
    out: dict[str, Any] = {}
    if parent is not None:
        out["parent"] = parent
    out.update(
        {
            "message": body,
            "sampled": sampled,
            "timestamp": 1754000000.25,
            "token_ids": list(range(100, 100 + tokens)),
            "mask": [sampled] * tokens,
            "is_content": [True] * tokens,
            "logprobs": [-0.5] * tokens if sampled else [],
        }
    )
    return out


def chat(system: str | None, user: str, answer: str) -> list[dict[str, Any]]:
    """The nodes of a one-turn chat: [system], user, the sampled answer."""
    nodes = [node("system", system)] if system is not None else []
    nodes.append(node("user", user, parent=len(nodes) - 1 if nodes else None))
    nodes.append(node("assistant", answer, parent=len(nodes) - 1, sampled=True))
    return nodes


def task(data: dict[str, Any], key: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "Task", "data": data}
    if key is not None:
        out["key"] = key
    out["hash"] = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]
    return out


def trace(
    nodes: list[dict[str, Any]],
    rewards: dict[str, tuple[float, float]],
    *,
    the_task: dict[str, Any],
    trace_id: str = "t0",
    agent: str = "agent",
    trainable: bool = True,
    ok: bool = True,
    errors: list[dict[str, Any]] | None = None,
    metrics: dict[str, float] | None = None,
) -> dict[str, Any]:
    """A Trace record; ``rewards`` maps a function to (score, weight)."""
    return {
        "version": 1,
        "id": trace_id,
        "verifiers": {"version": "0.3.1", "commit": "a60a606"},
        "task": the_task,
        "agent": {
            "config": {"id": "single-turn", "model": "Qwen/Qwen3-0.6B"},
            "name": agent,
            "trainable": trainable,
        },
        "tools": [],
        "nodes": nodes,
        "calls": [
            {
                "node": len(nodes) - 1,
                "model": "Qwen/Qwen3-0.6B",
                "endpoint": "/chat/completions",
                "finish_reason": "stop",
                "usage": {"prompt_tokens": 20, "completion_tokens": 3},
                "time": {"start": 1754000000.0, "end": 1754000000.5},
            }
        ],
        "request_rewrites": [],
        "response_rewrites": [],
        "rewards": {name: {"score": s, "weight": w} for name, (s, w) in rewards.items()},
        "metrics": metrics if metrics is not None else {"num_turns": 1.0},
        "info": {},
        "extra_usage": [],
        "is_completed": True,
        "ok": ok,
        **({"stop_condition": "error"} if not ok else {"stop_condition": "no_tools_called"}),
        "errors": errors or [],
        "timing": {
            "start": 1754000000.0,
            "boot": {"start": 0.0, "end": 0.0},
            "setup": {"start": 1754000000.0, "end": 1754000000.0},
            "agent": {
                "start": 1754000000.0,
                "end": 1754000000.5,
                "model": {"duration": 0.5},
                "harness": {"duration": 0.0},
            },
            "finalize": {"start": 0.0, "end": 0.0},
            "scoring": {"start": 1754000000.5, "end": 1754000000.6},
        },
    }


def episode(
    traces: list[dict[str, Any]],
    *,
    the_task: dict[str, Any],
    group: str | None,
    step: int,
    kind: str = "train",
    episode_id: str = "e0",
    ok: bool = True,
    errors: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """An Episode record as prime-rl's orchestrator stamps it (env, group, run)."""
    out: dict[str, Any] = {
        "id": episode_id,
        "env": {"id": "gsm8k", "name": "gsm8k"},
        "task": the_task,
    }
    if group is not None:
        out["group"] = {"id": group}
    out["run"] = {
        "type": "train",
        "id": "run-7f3a",
        "name": "toy",
        "work": {"type": kind, "step": step, "policy": {"start": max(step - 1, 0), "end": step}},
    }
    out["ok"] = ok
    out["errors"] = errors or []
    out["traces"] = traces
    return out


def record_line(record: dict[str, Any]) -> bytes:
    """One line of traces.jsonl (orjson: compact, UTF-8, newline-terminated)."""
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def traces_path(run_dir: Path, step: int, kind: str = "train", subset: str = "all") -> Path:
    return run_dir / "rollouts" / f"step_{step}" / kind / subset / "traces.jsonl"


def write_traces(
    run_dir: Path,
    step: int,
    records: list[dict[str, Any]],
    kind: str = "train",
    subset: str = "all",
) -> Path:
    """Append the episodes to their traces file, as the file monitor does."""
    path = traces_path(run_dir, step, kind, subset)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab") as handle:
        for record in records:
            handle.write(record_line(record))
    return path


def write_metrics(run_dir: Path, rows: list[tuple[int, float, dict[str, float]]]) -> Path:
    """``metrics.jsonl`` lines ``{"step", "time", **metrics}`` (json.dumps, newline)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / "metrics.jsonl"
    with path.open("a") as handle:
        for step, moment, metrics in rows:
            handle.write(json.dumps({"step": step, "time": moment, **metrics}) + "\n")
    return path


# --------------------------------------------------------------------------- the toy runs

SYSTEM = "Answer with a number."
ADD = "What is 2+2?"
SUM = "What is 3+5?"
# The prompt texts obs lands for the toy run's two tasks (see obs.ingest.traces).
ADD_PROMPT = f"[system]\n{SYSTEM}\n\n[user]\n{ADD}"
SUM_PROMPT = f"[system]\n{SYSTEM}\n\n[user]\n{SUM}"
ADD_TASK = task({"question": ADD, "answer": "4"}, "0")
SUM_TASK = task({"question": SUM, "answer": "8"}, "1")


def _scored(
    the_task: dict[str, Any],
    question: str,
    answer: str,
    correct: float,
    formatted: float,
    **kw: Any,
) -> dict[str, Any]:
    """A one-turn trace scored by two functions: correct (weight 1), format (weight 0.5)."""
    return trace(
        chat(SYSTEM, question, answer),
        {"correct": (correct, 1.0), "format": (formatted, 0.5)},
        the_task=the_task,
        **kw,
    )


def toy_prime_run(run_dir: Path) -> Path:
    """A two-step prime-rl run (the values are worked out in the tests that read it).

    step 0, train: group g-0a (2+2): scores 1.5, 0.5, 1.0; group g-0b (3+5): 0, 0, 0;
      the effective file repeats g-0a (it must not land: all does).
    step 1, train: group g-1a (2+2): 1.5, 1.5; group g-1b (3+5): 1.5 and a trace that
      timed out unscored (0); an episode that failed before any trace (rejected).
    step 1, eval: 2+2 scored 1.0, into <run>:val.
    """
    step0 = [
        episode(
            [_scored(ADD_TASK, ADD, answer, c, f, trace_id=f"t{i}")],
            the_task=ADD_TASK,
            group="g-0a",
            step=0,
            episode_id=f"e{i}",
        )
        for i, (answer, c, f) in enumerate([("4", 1.0, 1.0), ("5", 0.0, 1.0), ("4.", 1.0, 0.0)])
    ] + [
        episode(
            [_scored(SUM_TASK, SUM, answer, 0.0, 0.0, trace_id=f"t{i}")],
            the_task=SUM_TASK,
            group="g-0b",
            step=0,
            episode_id=f"e{i}",
        )
        for i, answer in zip(range(3, 6), ["7", "9", "6"], strict=True)
    ]
    write_traces(run_dir, 0, step0)
    write_traces(run_dir, 0, step0[:3], subset="effective")
    timed_out = trace(
        [node("system", SYSTEM), node("user", SUM, parent=0)],
        {},
        the_task=SUM_TASK,
        trace_id="t9",
        ok=False,
        errors=[{"type": "SandboxTimeout", "message": "timed out after 30 s"}],
    )
    step1 = [
        episode(
            [_scored(ADD_TASK, ADD, "4", 1.0, 1.0, trace_id="t6")],
            the_task=ADD_TASK,
            group="g-1a",
            step=1,
            episode_id="e6",
        ),
        episode(
            [_scored(ADD_TASK, ADD, "4", 1.0, 1.0, trace_id="t7")],
            the_task=ADD_TASK,
            group="g-1a",
            step=0,
            episode_id="e7",
        ),
        episode(
            [_scored(SUM_TASK, SUM, "8", 1.0, 1.0, trace_id="t8")],
            the_task=SUM_TASK,
            group="g-1b",
            step=1,
            episode_id="e8",
        ),
        episode(
            [timed_out],
            the_task=SUM_TASK,
            group="g-1b",
            step=1,
            episode_id="e9",
            ok=False,
            errors=[],
        ),
        episode(
            [],
            the_task=SUM_TASK,
            group="g-1b",
            step=1,
            episode_id="e10",
            ok=False,
            errors=[{"type": "EnvServerError", "message": "connection reset"}],
        ),
    ]
    write_traces(run_dir, 1, step1)
    evaluated = episode(
        [_scored(ADD_TASK, ADD, "4", 1.0, 0.0, trace_id="t11")],
        the_task=ADD_TASK,
        group="g-e1",
        step=1,
        kind="eval",
        episode_id="e11",
    )
    write_traces(run_dir, 1, [evaluated], kind="eval")
    write_metrics(
        run_dir,
        [
            (0, 1754000010.0, {"optim/grad_norm": 0.5, "time/step": 12.0}),
            (0, 1754000011.0, {"train/agg/all/agent/reward/mean": 0.5, "time/step": 11.0}),
            (1, 1754000020.0, {"optim/grad_norm": 0.25, "time/step": 10.0}),
            (1, 1754000021.0, {"train/agg/all/agent/reward/mean": 0.75, "time/step": 9.5}),
        ],
    )
    return run_dir


def toy_verl_run(folder: Path) -> Path:
    """verl V1 dumps of steps 1 and 2: two prompts, two sessions each (uids by prompt/step).

    step 1: Q 6*7 scores 1, 0; Q 2+3 scores 1, 1.  step 2: 6*7 1, 1; 2+3 0, 0.
    """
    scores = {1: {0: (1.0, 0.0), 1: (1.0, 1.0)}, 2: {0: (1.0, 1.0), 1: (0.0, 0.0)}}
    questions = {0: ("Q: 6*7?", "42"), 1: ("Q: 2+3?", "5")}
    for step, by_prompt in scores.items():
        rows = [
            {
                "input": questions[p][0],
                "output": f"answer {s}",
                "gts": questions[p][1],
                "score": value,
                "uid": verl_uid(p, s, 0, step),
            }
            for p, values in by_prompt.items()
            for s, value in enumerate(values)
        ]
        write_verl_dump(folder, step, rows)
    return folder
