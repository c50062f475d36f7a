"""prime-rl traces with their token arrays, as the file monitor writes them.

Read from PrimeIntellect-ai/verifiers at a60a606ecc4d309247edf9ff92c3eabca362781f
and PrimeIntellect-ai/prime-rl at 559b44772e471d1538537b8805cc77f3824a5e64:

* a node (``verifiers/v1/graph.py``, ``MessageNode``) carries ``token_ids`` (its
  delta of the sequence: the template scaffold, then its own tokens), ``mask``
  and ``is_content`` (one flag per token of the node), ``logprobs`` (one value
  per *sampled* token: ``mask`` true; ``[]`` on an input message) and, once
  the orchestrator assigned them, ``advantages`` (same layout; ``[]`` on a node
  with no sampled token, ``prime_rl/orchestrator/algo/routing.py``),
  ``reference_logprobs`` (same layout) and ``loss_weights`` (named streams,
  one value per token of the node). A field still None is left out of the
  record (``Episode.to_record``: ``exclude_none=True``).
* ``orchestrator.py`` logs an episode to ``all`` as it completes (before the
  advantages are assigned) and the batch to ``effective`` after; the episode's
  ``run.work`` holds ``step`` and ``policy {start, end}`` (``episode.py``,
  ``PolicySpan``). ``calls[].policy`` is a ``PolicyEvent`` (``code``,
  ``paths``), not a version.

``expected_arrays`` widens a branch's arrays to the sequence the way
``Branch.spread`` does, written out here token by token.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.data.run_writers import episode, task, trace, write_traces

SYSTEM = "Use the calculator."
QUESTIONS = ("What is 17*3?", "What is 9+10?")


def _node(
    role: str,
    content: str,
    *,
    parent: int | None,
    first_id: int,
    scaffold: int,
    own: int,
    sampled: bool = False,
    logprob: float = 0.0,
    advantage: float | None = None,
    reference: float | None = None,
    weight: float | None = None,
    **message: Any,
) -> dict[str, Any]:
    """A MessageNode record: ``scaffold`` template tokens then ``own`` tokens (sampled
    when ``sampled``: the scaffold is the generation prompt, never trained)."""
    width = scaffold + own
    mask = [False] * scaffold + [sampled] * own
    body: dict[str, Any] = {"role": role, "content": content, **message}
    out: dict[str, Any] = {}
    if parent is not None:
        out["parent"] = parent
    out["message"] = body
    out["sampled"] = sampled
    out["timestamp"] = 1754000000.25
    out["token_ids"] = list(range(first_id, first_id + width))
    out["mask"] = mask
    out["is_content"] = [False] * scaffold + [True] * own
    count = sum(mask)
    out["logprobs"] = [round(logprob - 0.125 * i, 6) for i in range(count)]
    if advantage is not None:
        out["advantages"] = [advantage] * count
    if reference is not None:
        out["reference_logprobs"] = [round(reference - 0.0625 * i, 6) for i in range(count)]
    if weight is not None:
        out["loss_weights"] = {"rl": [weight if m else 0.0 for m in mask]}
    return out


def tool_trace(
    question: int, answer: str, *, advantage: float | None, reference: bool, trace_id: str
) -> dict[str, Any]:
    """A two-turn trace: system, user, assistant (a tool call), tool, assistant."""
    the_task = task({"question": QUESTIONS[question]}, str(question))
    assigned = advantage is not None
    nodes = [
        _node("system", SYSTEM, parent=None, first_id=1000, scaffold=2, own=4),
        _node("user", QUESTIONS[question], parent=0, first_id=2000, scaffold=2, own=5),
        _node(
            "assistant",
            "",
            parent=1,
            first_id=3000,
            scaffold=3,
            own=4,
            sampled=True,
            logprob=-0.25,
            advantage=advantage,
            reference=-0.5 if reference else None,
            weight=1.0 if assigned else None,
            tool_calls=[{"id": "call_0", "name": "calc", "arguments": '{"x": "17*3"}'}],
        ),
        _node("tool", "51", parent=2, first_id=4000, scaffold=2, own=1, tool_call_id="call_0"),
        _node(
            "assistant",
            answer,
            parent=3,
            first_id=5000,
            scaffold=3,
            own=2,
            sampled=True,
            logprob=-0.75,
            advantage=advantage,
            reference=-1.0 if reference else None,
            weight=1.0 if assigned else None,
        ),
    ]
    if assigned:
        for n in nodes:
            if not any(n["mask"]):
                n["advantages"] = []  # routing.py assigns every node its (empty) slice
    out = trace(nodes, {"correct": (1.0 if answer == "51" else 0.0, 1.0)}, the_task=the_task)
    out["id"] = trace_id
    out["calls"][0]["policy"] = {"code": "strip_reasoning", "paths": ["messages"]}
    return out


def write_tool_run(run_dir: Path) -> dict[int, list[dict[str, Any]]]:
    """Step 0: ``all`` (no advantages yet) and ``effective``; step 1: ``effective`` only,
    advantages and reference logprobs assigned. Returns the landed file's records per step."""
    landed: dict[int, list[dict[str, Any]]] = {}
    for step, subset in ((0, "all"), (1, "effective")):
        assigned = subset == "effective"
        records = []
        for i, (question, answer) in enumerate([(0, "51"), (0, "50"), (1, "19")]):
            the_trace = tool_trace(
                question,
                answer,
                advantage=(0.5 - 0.5 * i) if assigned else None,
                reference=assigned,
                trace_id=f"t{step}{i}",
            )
            record = episode(
                [the_trace],
                the_task=the_trace["task"],
                group=f"g-{step}-{question}",
                step=step,
                episode_id=f"e{step}{i}",
            )
            record["run"]["work"]["policy"] = {"start": max(step - i, 0), "end": step}
            records.append(record)
        write_traces(run_dir, step, records, subset=subset)
        if subset == "all":
            write_traces(run_dir, step, records[:2], subset="effective")  # never lands
        landed[step] = records
    return landed


def expected_arrays(nodes: list[dict[str, Any]]) -> dict[str, Any]:
    """A (linear) trace's arrays over its sequence: each sampled-token value on its
    sampled position, 0 on every other token; None for a field no node carries."""
    out: dict[str, Any] = {"token_ids": [], "loss_mask": []}
    columns = {
        "logprobs": "rollout_logprobs",
        "advantages": "advantages",
        "reference_logprobs": "reference_logprobs",
    }
    for column in columns.values():
        out[column] = []
    for n in nodes:
        out["token_ids"] += n["token_ids"]
        out["loss_mask"] += n["mask"]
        for field, column in columns.items():
            values = list(n.get(field) or [])
            for flag in n["mask"]:
                out[column].append(values.pop(0) if flag and values else 0.0)
    if not any(n["logprobs"] for n in nodes):
        out["rollout_logprobs"] = None  # an engine that returned none
    for field in ("advantages", "reference_logprobs"):
        if not any(field in n for n in nodes):
            out[columns[field]] = None  # not assigned yet: left out of the record
    return out
