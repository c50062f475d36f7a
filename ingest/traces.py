"""prime-rl's episode traces: where they sit, and what one episode record lands as.

prime-rl's file monitor writes every episode its orchestrator receives as one
JSON line (the verifiers ``Episode`` record, its per-token tensors left out):

    <run_dir>/rollouts/step_{N}/{train|eval}/{all|effective}/traces.jsonl

    {"id", "env": {"id", "name"}, "task": {"type", "data", "key", "hash"},
     "group": {"id"}, "run": {"type", "id", "name", "work": {"type", "step",
     "policy": {"start", "end"}}}, "ok", "errors": [{"type", "message", ...}],
     "traces": [{"version", "id", "task", "agent": {"config", "name",
       "trainable", ...}, "tools", "nodes": [{"parent", "message": {"role",
       "content", "tool_calls", ...}, "sampled", "token_ids", "mask",
       "logprobs", ...}], "calls", "rewards": {name: {"score", "weight"}},
       "metrics": {name: value}, "info", "is_completed", "ok",
       "stop_condition", "errors", "timing", ...}]}

Null members are left out of the record (a root node has no ``parent``). The
metric history beside it, ``<run_dir>/metrics.jsonl`` (``{"step", "time",
...}`` a line, from the trainer and the orchestrator), is a flat JSON-lines
log: ``obs ingest metrics`` reads it (``trackers/jsonl_metrics.py``).

What lands, and why:

* **One rollout per trace of the policy.** A trace is what the trainer scores
  and trains on (one sample of the group). An episode's traces whose agent is
  not trainable (a judge, a simulated user) are no rollout of the policy: they
  ride whole in ``extra.untrained_traces`` of the episode's first rollout, so
  their prompts never pose as the policy's prompts in the marts.
* **Prompt and response** come from the trace's message graph: the path from
  the root to the last leaf (the final branch); the prompt is its messages
  before the first sampled one, the response the rest. Each message is written
  ``[role]`` then its text (text parts joined by newlines, an image as
  ``[image]``), a tool message ``[tool NAME]``, each tool call of an assistant
  message ``[tool_call NAME(ARGUMENTS)]``; messages are separated by a blank
  line. ``prompt_hash`` is the contract's, of that text, so a task keeps its
  identity across steps (and runs) as long as its prompt is the same. The
  whole graph stays in ``extra.nodes``.
* **task.key** (the task's stable identity, by default a content hash) stays
  in ``extra.task``; when it is a whole number (``"17"``), it is also the
  rollout's ``data_idx``.
* **Rewards**: ``rewards`` holds each function's score, ``extra.reward_weights``
  its weight, and ``score`` is the weighted total the trainer uses (verifiers'
  ``Trace.reward``: the sum of score x weight over the functions that ran, 0
  when none did).
* **group.id** is the rollout's ``group_id`` (the orchestrator's GRPO group).
* **all vs effective**: ``all`` holds every episode that arrived in the step's
  window (errored ones, those the curriculum rejected, those never batched);
  ``effective`` the clean subset that was trained on, written later, from the
  same episodes. Only one of the two lands per step and kind, so no rollout
  counts twice: ``all`` when it exists (it is written first, and the marts
  then see what the policy did, filtered groups included), else
  ``effective``. ``extra.subset`` says which.
* **train vs eval**: eval episodes land in the run ``<run>:val``, as verl's
  validation dumps do. The iteration is N of ``step_N`` (for eval, the step
  whose evaluation ran); the episode's dispatch step stays in
  ``extra.episode.run.work.step``.
* **Failures**: a trace that errored lands, with ``ok`` and ``errors`` in
  ``extra`` and the score the trainer gives it (0 when scoring did not run),
  as prime-rl's ``all`` reward statistics count it; an episode with no trace
  at all (it failed before any message) has no prompt to land and goes to
  ``_rejects`` with its last error as the reason.

* **Token arrays** (``token_arrays``): the training sample of a trace is a
  branch's nodes concatenated (verifiers' ``Branch``, which prime-rl's
  ``trace_to_samples`` turns into one ``TrainingSample`` per branch). Each
  node carries ``token_ids`` (its delta of the sequence: the template
  scaffold, then its own tokens) and ``mask`` (per token: sampled by the
  model, so trained on), both one value per token of the node; ``logprobs``
  (the rollout engine's), ``advantages`` and ``reference_logprobs`` hold one
  value per *sampled* token only (``advantages`` and ``reference_logprobs``
  are left out of the record until the orchestrator assigns them: the ``all``
  file is written before, ``effective`` after), and are widened to the
  sequence as ``Branch.spread`` does: each value on its sampled position, 0
  on every other token. The final branch's arrays (the branch whose text
  lands) go to ``rollout_tokens``; ``run.work.policy {start, end}`` (the
  policy versions live while the episode was generated) goes there too. The
  per-token fields leave the nodes kept in ``extra``: ``token_ids``,
  ``mask``, ``is_content``, ``logprobs``, ``advantages``,
  ``reference_logprobs`` and ``loss_weights`` (named streams, one value per
  token; no column yet). A node whose arrays disagree in length rejects the
  trace's tokens row only, with the reason; the rollout lands.

Read from PrimeIntellect-ai/verifiers at a60a606ecc4d309247edf9ff92c3eabca362781f
(``verifiers/v1/graph.py`` MessageNode, ``trace.py`` Branch and Trace,
``episode.py`` Episode and PolicySpan) and PrimeIntellect-ai/prime-rl at
559b44772e471d1538537b8805cc77f3824a5e64 (``monitors/file.py``,
``orchestrator/trajectories.py``). ``calls[].policy`` is no policy version:
it is verifiers' ``PolicyEvent`` (``code``, ``paths``), a request rewrite,
and stays in ``extra.calls``.

Nothing here computes analytics: this module only reads records; the
canonical row rules are ``RolloutBuilder``'s (rollouts.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from obs.ingest.readers import RowError
from obs.ingest.rollout_tokens import number_array
from obs.ingest.rollout_values import INT64_MAX, INT64_MIN, as_double, as_int, kind_of

TRACES_FILE = "traces.jsonl"
ROLLOUTS_FOLDER = "rollouts"
STEP_FOLDER = re.compile(r"^step_(\d+)$")
KINDS = ("train", "eval")
SUBSETS = ("all", "effective")  # the first that exists lands
WHOLE_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)")
# A node's per-token fields: they land in rollout_tokens (or nowhere), never in extra.
NODE_ARRAYS = (
    "token_ids",
    "mask",
    "is_content",
    "logprobs",
    "advantages",
    "reference_logprobs",
    "loss_weights",
)
# Node fields of one value per sampled token -> rollout_tokens column.
SAMPLED_ARRAYS = {
    "logprobs": "rollout_logprobs",
    "advantages": "advantages",
    "reference_logprobs": "reference_logprobs",
}


# --------------------------------------------------------------------------- where they sit


@dataclass(frozen=True)
class TraceFile:
    """A traces.jsonl, and what its place in the run folder says."""

    path: Path
    step: int | None = None  # N of step_N
    kind: str | None = None  # train or eval
    subset: str | None = None  # all or effective

    @property
    def run_suffix(self) -> str:
        return ":val" if self.kind == "eval" else ""


def layout(path: Path) -> TraceFile:
    """What ``.../step_N/{train|eval}/{all|effective}/traces.jsonl`` says of a file."""
    subset, kind, step = path.parent, path.parent.parent, path.parent.parent.parent
    found = STEP_FOLDER.match(step.name)
    if path.name == TRACES_FILE and subset.name in SUBSETS and kind.name in KINDS and found:
        return TraceFile(path, int(found.group(1)), kind.name, subset.name)
    return TraceFile(path)


def find(root: Path, wanted: set[int] | None = None) -> list[TraceFile]:
    """The traces files to land under a folder of ``step_N/`` folders, one per step and kind."""
    chosen = []
    for child in sorted(root.iterdir()):
        found = STEP_FOLDER.match(child.name)
        if found is None or not child.is_dir():
            continue
        step = int(found.group(1))
        if wanted is not None and step not in wanted:
            continue
        for kind in KINDS:
            for subset in SUBSETS:
                path = child / kind / subset / TRACES_FILE
                if path.is_file():
                    chosen.append(TraceFile(path, step, kind, subset))
                    break
    return chosen


def rollouts_root(path: Path) -> Path | None:
    """The folder of ``step_N/`` trace folders at PATH: PATH itself, or PATH/rollouts."""
    for folder in (path, path / ROLLOUTS_FOLDER):
        if folder.is_dir() and find(folder):
            return folder
    return None


def run_name(path: Path) -> str | None:
    """The run folder's name for a path into prime-rl's output (None: it is not one)."""
    path = path.resolve()
    if path.is_file():
        if path.name != TRACES_FILE:
            return None
        if layout(path).step is None:
            return path.parent.name
        steps = path.parents[3]
        return (steps.parent if steps.name == ROLLOUTS_FOLDER else steps).name
    root = rollouts_root(path)
    if root is None:
        return None
    return path.parent.name if root == path and path.name == ROLLOUTS_FOLDER else path.name


# --------------------------------------------------------------------------- one record


@dataclass
class TraceRollout:
    """One trace of the policy, ready for the rollout rules."""

    prompt: str
    response: str
    score: float
    rewards: list[tuple[str, float]]
    data_idx: int | None
    group_id: str | None
    step: Any  # the episode's run.work.step as written (the iteration when the path has none)
    extra: dict[str, Any]
    branch: list[tuple[int, dict[str, Any]]]  # the final branch's nodes, with their indices
    policy: Any  # the episode's run.work.policy as written


def rollouts_of(record: dict[str, Any], subset: str | None) -> list[TraceRollout]:
    """The policy's rollouts in one episode record; RowError when the record cannot land."""
    traces = record.get("traces")
    if not isinstance(traces, list):
        raise RowError(f"field 'traces' must be a list of traces, got {kind_of(traces)}")
    if not traces:
        raise RowError(_no_trace(record))
    for index, trace in enumerate(traces):
        if not isinstance(trace, dict):
            raise RowError(f"traces[{index}] must be an object, got {kind_of(trace)}")
    trained = [i for i, trace in enumerate(traces) if _trainable(trace, i)]
    if not trained:
        raise RowError(
            f"none of the episode's {len(traces)} traces is the policy's (every agent has "
            "trainable false)"
        )
    episode = {key: value for key, value in record.items() if key not in ("traces", "group")}
    group_id = _group(record.get("group"), episode)
    run = record.get("run")
    work = run.get("work") if isinstance(run, dict) else None
    step = work.get("step") if isinstance(work, dict) else None
    policy = work.get("policy") if isinstance(work, dict) else None
    rollouts = []
    for index in trained:
        trace = traces[index]
        own = episode
        if "task" in episode and episode["task"] == trace.get("task"):
            own = {key: value for key, value in episode.items() if key != "task"}
        rollouts.append(_rollout(trace, index, own, group_id, step, subset, policy))
    untrained = [trace for i, trace in enumerate(traces) if i not in trained]
    if untrained:
        rollouts[0].extra["untrained_traces"] = untrained
    return rollouts


def _no_trace(record: dict[str, Any]) -> str:
    """Why an episode has no rollout: its last error, as prime-rl records it."""
    why = _last_error(record) or "no error recorded"
    return f"episode has no trace to land (it failed before any message: {why})"


def _last_error(item: dict[str, Any]) -> str | None:
    """``type: message`` of the last of an episode's or a trace's ``errors``."""
    errors = item.get("errors")
    last = errors[-1] if isinstance(errors, list) and errors else None
    if not isinstance(last, dict):
        return None
    return f"{last.get('type', 'error')}: {str(last.get('message', ''))[:200]}".strip()


def _trainable(trace: dict[str, Any], index: int) -> bool:
    agent = trace.get("agent")
    if agent is None:
        return True
    if not isinstance(agent, dict):
        raise RowError(f"traces[{index}].agent must be an object, got {kind_of(agent)}")
    flag = agent.get("trainable", True)
    if not isinstance(flag, bool):
        raise RowError(f"traces[{index}].agent.trainable must be true or false, got {flag!r}")
    return flag


def _group(group: Any, episode: dict[str, Any]) -> str | None:
    """group.id as text (the rest of ``group``, if any, stays in the episode's extra)."""
    if group is None:
        return None
    if not isinstance(group, dict):
        raise RowError(f"field 'group' must be an object, got {kind_of(group)}")
    rest = {key: value for key, value in group.items() if key != "id"}
    if rest:
        episode["group"] = rest
    given = group.get("id")
    if given is None:
        return None
    if isinstance(given, bool) or not isinstance(given, str | int):
        raise RowError(f"field 'group.id' must be text, got {kind_of(given)}")
    return str(given)


def _rollout(
    trace: dict[str, Any],
    index: int,
    episode: dict[str, Any],
    group_id: str | None,
    step: Any,
    subset: str | None,
    policy: Any,
) -> TraceRollout:
    nodes = trace.get("nodes")
    if not isinstance(nodes, list):
        raise RowError(f"traces[{index}].nodes must be a list of messages, got {kind_of(nodes)}")
    path = _final_path(nodes, index)
    branch = [nodes[k] for k in path]
    split = next((k for k, node in enumerate(branch) if node.get("sampled") is True), len(branch))
    if split == 0:
        what = "no messages" if not branch else "no prompt message before its first sampled one"
        why = _last_error(trace)
        raise RowError(f"traces[{index}] has {what}" + (f" (it failed: {why})" if why else ""))
    prompt = _transcript(branch[:split], index)
    response = _transcript(branch[split:], index)
    rewards, weights, score = _rewards(trace.get("rewards"), index)
    extra = {key: value for key, value in trace.items() if key != "rewards"}
    extra["nodes"] = [
        {key: value for key, value in node.items() if key not in NODE_ARRAYS} for node in nodes
    ]
    if weights:
        extra["reward_weights"] = weights
    extra["trace_index"] = index
    extra["episode"] = episode
    if subset is not None:
        extra["subset"] = subset
    task = trace.get("task", episode.get("task"))
    return TraceRollout(
        prompt,
        response,
        score,
        rewards,
        _key_index(task.get("key") if isinstance(task, dict) else None),
        group_id,
        step,
        extra,
        [(k, nodes[k]) for k in path],
        policy,
    )


def _final_path(nodes: list[Any], index: int) -> list[int]:
    """The indices of the nodes from the root to the last leaf (a node no other node
    names as parent)."""
    parents: list[int | None] = []
    for k, node in enumerate(nodes):
        if not isinstance(node, dict):
            raise RowError(f"traces[{index}].nodes[{k}] must be an object, got {kind_of(node)}")
        parent = node.get("parent")
        if parent is not None and (type(parent) is not int or not 0 <= parent < len(nodes)):
            raise RowError(
                f"traces[{index}].nodes[{k}].parent must be the index of a node, got {parent!r}"
            )
        parents.append(parent)
    if not nodes:
        return []
    with_child = {p for p in parents if p is not None}
    leaves = [k for k in range(len(nodes)) if k not in with_child]
    if not leaves:
        raise RowError(f"traces[{index}].nodes: parents form a cycle (no last node)")
    at: int | None = leaves[-1]
    path: list[int] = []
    seen: set[int] = set()
    while at is not None:
        if at in seen:
            raise RowError(f"traces[{index}].nodes: parents form a cycle at node {at}")
        seen.add(at)
        path.append(at)
        at = parents[at]
    return path[::-1]


def _transcript(branch: list[dict[str, Any]], index: int) -> str:
    blocks = []
    for node in branch:
        message = node.get("message")
        if not isinstance(message, dict):
            raise RowError(
                f"traces[{index}]: a node's message must be an object, got {kind_of(message)}"
            )
        role = message.get("role")
        if not isinstance(role, str):
            raise RowError(f"traces[{index}]: a message's role must be text, got {kind_of(role)}")
        name = message.get("name")
        lines = [f"[tool {name}]" if role == "tool" and isinstance(name, str) else f"[{role}]"]
        text = _content(message.get("content"), index)
        if text:
            lines.append(text)
        calls = message.get("tool_calls") or []
        if not isinstance(calls, list):
            raise RowError(f"traces[{index}]: tool_calls must be a list, got {kind_of(calls)}")
        for call in calls:
            if not isinstance(call, dict):
                raise RowError(
                    f"traces[{index}]: a tool call must be an object, got {kind_of(call)}"
                )
            lines.append(f"[tool_call {call.get('name', '')}({call.get('arguments', '')})]")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _content(content: Any, index: int) -> str:
    """A message's text: the text itself, or its text parts joined (an image as [image])."""
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise RowError(
            f"traces[{index}]: a message's content must be text or a list of parts, "
            f"got {kind_of(content)}"
        )
    texts = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "image_url":
            texts.append("[image]")
        else:
            raise RowError(
                f"traces[{index}]: a content part must be text or an image, got {part!r:.80}"
            )
    return "\n".join(texts)


def _rewards(value: Any, index: int) -> tuple[list[tuple[str, float]], dict[str, float], float]:
    """Each function's score, its weight, and the weighted total (as verifiers sums it)."""
    if value is None:
        return [], {}, 0.0
    if not isinstance(value, dict):
        raise RowError(f"traces[{index}].rewards must be an object, got {kind_of(value)}")
    scores: list[tuple[str, float]] = []
    weights: dict[str, float] = {}
    total: float = 0
    for name, reward in value.items():
        if reward is None:
            continue  # the function did not run
        if not isinstance(reward, dict):
            raise RowError(
                f"traces[{index}].rewards.{name} must be an object of score and weight, "
                f"got {kind_of(reward)}"
            )
        score = as_double(f"traces[{index}].rewards.{name}.score", reward.get("score"))
        if score is None:
            raise RowError(f"traces[{index}].rewards.{name} has no score")
        weight = as_double(f"traces[{index}].rewards.{name}.weight", reward.get("weight"))
        weight = 1.0 if weight is None else weight
        scores.append((name, score))
        weights[name] = weight
        total = total + score * weight
    checked = as_double(f"traces[{index}] weighted reward total", total)
    assert checked is not None
    return scores, weights, checked


def _key_index(key: Any) -> int | None:
    """task.key as a whole number (the rollout's data_idx), else None."""
    if isinstance(key, str) and WHOLE_NUMBER.fullmatch(key):
        number = int(key)
    elif type(key) is int:
        number = key
    else:
        return None
    return number if INT64_MIN <= number <= INT64_MAX else None


# --------------------------------------------------------------------------- token arrays

_UNEQUAL_FIX = (
    "the rollout landed without them (fix the line and ingest the file under a new --run "
    "to land them)"
)


def token_arrays(rollout: TraceRollout, index: int) -> dict[str, Any] | None:
    """The ``rollout_tokens`` columns of a trace (identities aside): its final branch's
    arrays widened to the sequence and its episode's policy span; None when it has
    neither; RowError when they cannot land (the rollout lands without them)."""
    start, end = _policy(rollout.policy)
    ids: list[np.ndarray] = []
    masks: list[np.ndarray] = []
    sampled: dict[str, list[np.ndarray]] = {name: [] for name in SAMPLED_ARRAYS}
    given = dict.fromkeys(SAMPLED_ARRAYS, False)
    for k, node in rollout.branch:
        where = f"traces[{index}].nodes[{k}]"
        tokens = number_array(f"{where}.token_ids", node.get("token_ids", []))
        if tokens.dtype.kind == "f" and not (tokens == np.floor(tokens)).all():
            raise RowError(f"field '{where}.token_ids' must hold whole numbers")
        mask = node.get("mask", [])
        if not isinstance(mask, list) or not all(isinstance(m, bool) for m in mask):
            raise RowError(f"field '{where}.mask' must be a list of true/false (one per token)")
        if len(mask) != len(tokens):
            raise RowError(
                f"token arrays of unequal lengths: {where} token_ids {len(tokens)}, mask "
                f"{len(mask)} (one value per token in each); {_UNEQUAL_FIX}"
            )
        on = np.array(mask, dtype=bool)
        count = int(on.sum())
        for name in SAMPLED_ARRAYS:
            value = node.get(name)
            values = number_array(f"{where}.{name}", [] if value is None else value)
            # verifiers writes logprobs [] on every input node; the others are left
            # out until assigned: a column is null when no node of the branch has any
            if len(values) if name == "logprobs" else value is not None:
                given[name] = True
            if len(values) and len(values) != count:
                raise RowError(
                    f"token arrays of unequal lengths: {where} {name} {len(values)}, sampled "
                    f"tokens (mask true) {count} (one value per sampled token); {_UNEQUAL_FIX}"
                )
            wide = np.zeros(len(tokens), dtype=np.float64)
            if len(values):
                wide[on] = values
            sampled[name].append(wide)
        ids.append(tokens.astype(np.int64))
        masks.append(on)
    width = sum(len(t) for t in ids)
    if width == 0 and start is None:
        return None
    out: dict[str, Any] = {
        "sequence_tokens": width,
        "policy_start": start,
        "policy_end": end,
    }
    if width:
        out["token_ids"] = np.concatenate(ids)
        out["loss_mask"] = np.concatenate(masks)
        for name, column in SAMPLED_ARRAYS.items():
            if given[name]:
                out[column] = np.concatenate(sampled[name])
    return out


def _policy(value: Any) -> tuple[int | None, int | None]:
    """run.work.policy's start and end (None for frozen-policy work)."""
    if value is None:
        return None, None
    if not isinstance(value, dict):
        raise RowError(f"field 'run.work.policy' must be an object, got {kind_of(value)}")
    start = as_int("run.work.policy.start", value.get("start"))
    end = as_int("run.work.policy.end", value.get("end"))
    if start is None or end is None:
        raise RowError("field 'run.work.policy' must hold a start and an end")
    if end < start:
        raise RowError(f"field 'run.work.policy': end ({end}) is before start ({start})")
    return start, end
