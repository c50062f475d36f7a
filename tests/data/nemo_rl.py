"""NeMo-RL GRPO log folders, written the way NeMo-RL writes them, with a planted mismatch.

Read from NVIDIA-NeMo/RL at commit 7ea279abfbeb698b092856d0dab61e7cf39bc909
(nemo_rl/algorithms/grpo.py, the "Log training data" block of grpo_train;
nemo_rl/utils/logger.py, ``Logger.log_batched_dict_as_jsonl``;
nemo_rl/data/llm_message_utils.py, ``batched_message_log_to_flat_message``;
the policy workers' ``get_logprobs``):

* the file is ``<log_dir>/train_data_step{N}.jsonl`` with N = the 1-based
  training step (``total_steps + 1``), one line per sample of the step's batch:
  ``json.dumps({**sample, "idx": i}, default=str)``, where ``sample`` is the
  batch sliced to that sample, so every value is a one-element list around the
  sample's value;
* the keys, in order: ``content`` (the flattened conversation: one text per
  message), ``rewards``, ``input_lengths`` (tokens of the sequence, prompt
  included, before padding), ``token_ids`` (right-padded with the tokenizer's
  pad id to the batch's longest sequence, rounded up to
  ``make_sequence_length_divisible_by``), ``token_loss_mask`` (1 on the tokens
  of generated assistant messages, 0 on the prompt and the padding),
  ``sample_loss_mask`` (the sample's loss multiplier: 0 when overlong
  filtering dropped it), ``advantages`` (per token; GRPO's is the sample's,
  repeated over the sequence), ``generation_logprobs`` (the rollout engine's
  logprob of each generated token, 0 elsewhere) and ``prev_logprobs`` (the
  trainer's, before the update: position i is token i's logprob given the
  tokens before it, 0 at position 0 and on the padding);
* the tensors are float32 (token ids and masks integers), written with
  ``tolist()``: the JSON numbers are float32 values printed as doubles.

The policy and the engine are made up: per token an engine logprob, and the
trainer's differs from it by small noise, except at the ``mismatch_steps``
where a share of the generated tokens differ by ``mismatch`` (the planted
train-inference mismatch).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

PAD_ID = 151643  # Qwen2.5's <|endoftext|>, NeMo-RL's pad id for Qwen models
DIVISIBLE_BY = 8  # policy.make_sequence_length_divisible_by


@dataclass
class NemoRun:
    """A written NeMo-RL log folder and what was planted in it."""

    log_dir: Path
    steps: list[int]
    samples_per_step: int
    mismatch_steps: tuple[int, ...]
    files: dict[int, Path] = field(default_factory=dict)

    def lines(self, step: int) -> list[dict]:
        return [json.loads(text) for text in self.files[step].read_text().splitlines()]


def _f32(values: np.ndarray) -> list[float]:
    return [float(v) for v in values.astype(np.float32)]


def write_nemo_run(
    log_dir: Path,
    *,
    steps: int = 4,
    prompts: int = 2,
    generations: int = 3,
    mismatch_steps: tuple[int, ...] = (3,),
    mismatch: float = 1.5,
    seed: int = 11,
) -> NemoRun:
    """``steps`` files train_data_step1..N.jsonl of ``prompts`` x ``generations`` samples.

    The last sample of step 2 is overlong-filtered (sample_loss_mask 0).
    """
    rng = np.random.default_rng(seed)
    log_dir.mkdir(parents=True, exist_ok=True)
    run = NemoRun(log_dir, list(range(1, steps + 1)), prompts * generations, mismatch_steps)
    for step in run.steps:
        samples = []
        for p in range(prompts):
            prompt = f"<|im_start|>user\nStep {step}: what is {p} + {p}?<|im_end|>\n"
            prompt_tokens = 6 + p
            rewards = rng.integers(0, 2, generations).astype(np.float32)
            baseline = rewards.mean()
            std = rewards.std(ddof=1)
            for g in range(generations):
                response_tokens = int(rng.integers(3, 9))
                response = f"<|im_start|>assistant\n{2 * p + g}<|im_end|>"
                total = prompt_tokens + response_tokens
                ids = rng.integers(0, 150000, total)
                engine = -rng.exponential(0.8, total)
                trainer = engine + rng.normal(0.0, 0.01, total)
                if step in mismatch_steps:
                    flip = rng.random(total) < 0.5
                    trainer = np.where(
                        flip, engine + mismatch * np.sign(rng.normal(size=total)), trainer
                    )
                generated = np.zeros(total, dtype=np.int64)
                generated[prompt_tokens:] = 1
                engine = np.where(generated == 1, engine, 0.0)
                trainer[0] = 0.0
                advantage = (rewards[g] - baseline) / (std + 1e-6) if std > 0 else 0.0
                samples.append(
                    {
                        "content": [prompt, response],
                        "reward": float(rewards[g]),
                        "length": total,
                        "ids": ids,
                        "mask": generated,
                        "sample_mask": 0.0
                        if (step == 2 and p == prompts - 1 and g == generations - 1)
                        else 1.0,
                        "advantage": np.full(total, advantage),
                        "engine": engine,
                        "trainer": trainer,
                    }
                )
        width = max(s["length"] for s in samples)
        width = math.ceil(width / DIVISIBLE_BY) * DIVISIBLE_BY
        lines = []
        for idx, s in enumerate(samples):
            pad = width - s["length"]
            sample = {
                "content": [s["content"]],
                "rewards": [s["reward"]],
                "input_lengths": [s["length"]],
                "token_ids": [[int(t) for t in s["ids"]] + [PAD_ID] * pad],
                "token_loss_mask": [[int(m) for m in s["mask"]] + [0] * pad],
                "sample_loss_mask": [s["sample_mask"]],
                "advantages": [_f32(np.concatenate([s["advantage"], np.zeros(pad)]))],
                "generation_logprobs": [_f32(np.concatenate([s["engine"], np.zeros(pad)]))],
                "prev_logprobs": [_f32(np.concatenate([s["trainer"], np.zeros(pad)]))],
            }
            lines.append(json.dumps({**sample, "idx": idx}, default=str) + "\n")
        path = log_dir / f"train_data_step{step}.jsonl"
        path.write_text("".join(lines))
        run.files[step] = path
    return run


def expected_mismatch(run: NemoRun, limit: float = 2.0) -> dict[int, dict[str, float]]:
    """Per step, the mismatch numbers worked out from the files with numpy.

    Over the tokens trained on: token_loss_mask 1 within input_lengths, in a
    sample whose sample_loss_mask is not 0; d = prev_logprobs -
    generation_logprobs (trainer - rollout engine).
    """
    out: dict[int, dict[str, float]] = {}
    for step in run.steps:
        differences = []
        for line in run.lines(step):
            length = line["input_lengths"][0]
            if line["sample_loss_mask"][0] == 0:
                continue
            mask = np.array(line["token_loss_mask"][0][:length], dtype=bool)
            trainer = np.array(line["prev_logprobs"][0][:length])
            engine = np.array(line["generation_logprobs"][0][:length])
            differences.append((trainer - engine)[mask])
        d = np.concatenate(differences)
        out[step] = {
            "rollouts": len(run.lines(step)),
            "tokens": int(d.size),
            "mean_diff": float(np.mean(d)),
            "mean_abs_diff": float(np.mean(np.abs(d))),
            "max_abs_diff": float(np.max(np.abs(d))),
            "k3_kl": float(np.mean(np.exp(d) - 1 - d)),
            "tokens_outside": int(np.sum(np.abs(d) > np.log(limit))),
            "share_ratio_outside": float(np.mean(np.abs(d) > np.log(limit))),
            "mean_tis_weight": float(np.mean(np.minimum(np.exp(d), limit))),
        }
    return out
