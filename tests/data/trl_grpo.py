"""A real TRL ``GRPOTrainer`` run on CPU, for the tests of the TRL sources.

``write_trl_grpo_run(out_dir)`` trains a tiny randomly initialised Llama (two
layers, hidden size 32) with TRL's own ``GRPOTrainer`` for a few steps, in a
process of its own, offline, every network connection refused (a run that
tries the network fails), and returns what the trainer wrote into
``out_dir``: ``completions/completions_{step:05d}.parquet`` (``log_completions``),
``trainer_state.json`` (``save_state``) and ``checkpoint-N/`` copies of it.

Nothing is downloaded: the tokenizer is a WordLevel ``tokenizers`` model built
over a small vocabulary in memory and wrapped in ``PreTrainedTokenizerFast``,
the model comes from a config, the datasets from dicts.

A random model learns nothing in a few steps, so the behaviour is planted in
the reward functions, real callables the trainer calls with its own kwargs:
each value is a schedule of the step (TRL passes ``trainer_state``) plus a
little from the completion's text, so the samples differ. The eval dataset
carries ``split = "eval"``, which TRL passes on as a kwarg, so train and eval
calls are told apart. ``reward_value`` is that schedule; a test recomputes
each completions row from it.

* ``hacked``: ``format_reward`` (weight 1) and ``length_reward`` (0.5) rise by
  step; ``check_answer`` (weight 0, logged only) falls, in training and on the
  eval set, where TRL logs it as ``eval_rewards/check_answer/mean``: the
  optimised reward rises while the held-out metric falls; the plain sum of the
  three (the reward with every weight 1) falls.
* ``healthy``: the same weights; ``check_answer`` rises too.

Steps: a train row of ``log_history`` at step ``s`` (``global_step`` after the
``s``-th update) holds the rewards of completions generated before that update
(``trainer_state.global_step == s - 1`` in the reward call); an eval row at
step ``s`` those generated after it (``global_step == s``). The schedule is
written in the logged step, so each row is recomputable from the file.
A completions file is named by the logged step. At an eval step TRL's log of
the eval writes that step's file again, from the buffer train and eval share
(the last ``generation_batch_size`` completions): here 4 train completions of
the step, then the 4 of the eval set.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
VARIANTS = ("hacked", "healthy")
REWARD_NAMES = ("format_reward", "length_reward", "check_answer")
WEIGHTS = (1.0, 0.5, 0.0)
# The held-out metric as TRL logs it (the weight-0 function on the eval set).
HELD_OUT = "eval_rewards/check_answer/mean"
SEED = 1234
EVAL_STEPS = 2  # six eval rows in 12 steps: a hacking verdict needs five
SAVE_STEPS = 6
NUM_GENERATIONS = 4
TRAIN_BATCH = 8  # completions per step: 2 prompts x 4 generations
EVAL_GENERATIONS = 2
EVAL_BATCH = 4
MAX_COMPLETION = 6

# The schedules, (intercept, slope per logged step), by variant, function and split.
_TRAIN: dict[str, dict[str, tuple[float, float]]] = {
    # check_answer falls faster than the other two rise: the plain sum of the three
    # falls while the weighted one rises, so a reader that ignores the weights sees it.
    "hacked": {
        "format_reward": (0.3, 0.05),
        "length_reward": (0.2, 0.03),
        "check_answer": (1.4, -0.1),
    },
    "healthy": {
        "format_reward": (0.3, 0.05),
        "length_reward": (0.2, 0.03),
        "check_answer": (0.2, 0.04),
    },
}
# On the eval set check_answer sits 0.1 below its train value (so an eval row is told
# from a train row by its value too); the other two are as in training.
_EVAL_OFFSET = {"format_reward": 0.0, "length_reward": 0.0, "check_answer": -0.1}
# The per-sample part, from the completion's text: 0.01 x (characters mod m), at most
# 0.04, below one step's rise.
_TEXT_MODULUS = {"format_reward": 5, "length_reward": 3, "check_answer": 4}

# The tokenizer's vocabulary (one token a word) beside its four special tokens.
WORDS = (
    *("the", "answer", "is", "yes", "no", "what", "how", "many", "are", "there", "so"),
    *("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"),
    *("plus", "minus", "equals", "sum", "of", "and", "count", "think", "step"),
    *("apples", "cats", "dogs", "<think>", "</think>", "<answer>", "</answer>"),
)
TRAIN_PROMPTS = (
    "what is one plus two",
    "what is three plus four",
    "how many apples are there",
    "how many cats and dogs are there",
    "what is the sum of five and six",
    "count the dogs",
    "what is ten minus nine",
    "what is eight minus two",
)
EVAL_PROMPTS = (
    "what is two plus two",
    "how many dogs are there",
)


def reward_value(variant: str, name: str, step: int, completion: str, split: str) -> float:
    """The planted reward of one completion logged at ``step`` (split ``train`` or ``eval``)."""
    intercept, slope = _TRAIN[variant][name]
    offset = _EVAL_OFFSET[name] if split == "eval" else 0.0
    return intercept + offset + slope * step + 0.01 * (len(completion) % _TEXT_MODULUS[name])


@dataclass(frozen=True)
class TrlRun:
    """What ``write_trl_grpo_run`` wrote, and what a test needs to work out its values."""

    output_dir: Path
    variant: str
    steps: int
    reward_names: tuple[str, ...]
    weights: dict[str, float]
    eval_steps: int
    save_steps: int
    num_generations: int
    completions_per_step: int
    held_out_metric: str
    seed: int
    runtime_s: float
    trl_version: str
    train_prompts: tuple[str, ...] = field(default=TRAIN_PROMPTS)
    eval_prompts: tuple[str, ...] = field(default=EVAL_PROMPTS)

    @property
    def completions_dir(self) -> Path:
        return self.output_dir / "completions"

    @property
    def trainer_state(self) -> Path:
        return self.output_dir / "trainer_state.json"

    def completions_file(self, step: int) -> Path:
        """TRL's name for a step's completions: ``completions_{step:05d}.parquet``."""
        return self.completions_dir / f"completions_{step:05d}.parquet"

    def reward(self, name: str, step: int, completion: str, split: str = "train") -> float:
        """The planted value of reward function ``name`` for a completion logged at ``step``."""
        return reward_value(self.variant, name, step, completion, split)

    def weighted(self, step: int, completion: str, split: str = "train") -> float:
        """sum_f w_f r_f: the reward the trainer optimised, for one completion."""
        return sum(
            self.weights[f] * self.reward(f, step, completion, split) for f in self.reward_names
        )

    def split_of(self, prompt: str) -> str:
        """``eval`` for a prompt of the eval set, else ``train`` (the two sets are disjoint)."""
        return "eval" if prompt in self.eval_prompts else "train"

    def state(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.trainer_state.read_text())
        return loaded


# Runs in the writer before anything is imported: no network at all; and the tracker
# libraries the dev extra installs are hidden (report_to="none" uses none of them, but
# TRL and transformers import whichever is installed, which costs more than the run).
_PREAMBLE = """
import socket, sys
HIDDEN = ("wandb", "mlflow", "trackio", "tensorboard", "tensorboardX")
class _Hiding:
    def __init__(self, finder):
        self.finder = finder
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            return None
        return self.finder.find_spec(name, path, target)
    def __getattr__(self, attr):
        return getattr(self.finder, attr)
sys.meta_path[:] = [_Hiding(finder) for finder in sys.meta_path]
attempts = []
_connect = socket.socket.connect
def _refuse(self, address):
    if self.family == socket.AF_UNIX:
        return _connect(self, address)
    attempts.append(repr(address))
    raise OSError("the network is not for tests")
def _no_lookup(*args, **kwargs):
    attempts.append(repr(args[:2]))
    raise OSError("the network is not for tests")
socket.socket.connect = _refuse
socket.getaddrinfo = _no_lookup
"""


def write_trl_grpo_run(out_dir: Path, *, variant: str = "hacked", steps: int = 12) -> TrlRun:
    """Train with TRL's GRPOTrainer into ``out_dir`` (a process of its own) and return the run.

    ``steps`` optimizer steps, each logged (``logging_steps=1``); the eval set
    every ``EVAL_STEPS`` steps; a checkpoint every ``SAVE_STEPS``; then
    ``trainer.save_state()`` into ``out_dir``.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="trl-home-") as home:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("HF_", "WANDB_"))},
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1",
            "HF_HOME": str(Path(home) / "hf"),
            "WANDB_MODE": "disabled",
            "TOKENIZERS_PARALLELISM": "false",
            "CUDA_VISIBLE_DEVICES": "",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "PYTHONHASHSEED": "0",
        }
        code = (
            _PREAMBLE
            + "from tests.data.trl_grpo import _main\n"
            + "version = _main(sys.argv[1:])\n"
            + "if attempts:\n    sys.exit(f'the trainer tried the network: {attempts}')\n"
            + "print(version)\n"
        )
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", code, str(out_dir), variant, str(steps), home],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        runtime = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(
            f"the TRL run into {out_dir} failed (exit {done.returncode}):\n{done.stderr[-4000:]}"
        )
    return TrlRun(
        output_dir=out_dir,
        variant=variant,
        steps=steps,
        reward_names=REWARD_NAMES,
        weights=dict(zip(REWARD_NAMES, WEIGHTS, strict=True)),
        eval_steps=EVAL_STEPS,
        save_steps=SAVE_STEPS,
        num_generations=NUM_GENERATIONS,
        completions_per_step=TRAIN_BATCH,
        held_out_metric=HELD_OUT,
        seed=SEED,
        runtime_s=runtime,
        trl_version=done.stdout.strip().splitlines()[-1],
    )


# --------------------------------------------------------------------------- the writer


class PlantedReward:
    """A reward function as TRL calls it: ``(prompts, completions, **kwargs) -> list[float]``.

    The value follows the variant's schedule in the logged step: the train
    rewards of step ``global_step`` are logged at ``global_step + 1``, the eval
    rewards at ``global_step`` (the eval dataset's ``split`` column says which).
    """

    def __init__(self, variant: str, name: str) -> None:
        self.variant = variant
        self.__name__ = name  # TRL names the function's columns and metrics by it

    def __call__(
        self,
        prompts: list[str],
        completions: list[str],
        trainer_state: Any,
        split: list[str],
        **kwargs: Any,
    ) -> list[float]:
        values = []
        for completion, kind in zip(completions, split, strict=True):
            step = trainer_state.global_step + (1 if kind == "train" else 0)
            values.append(reward_value(self.variant, self.__name__, step, completion, kind))
        return values


def _tokenizer() -> Any:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[BOS]", "[EOS]"]
    vocab = {token: i for i, token in enumerate(specials + list(dict.fromkeys(WORDS)))}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token="[PAD]",
        unk_token="[UNK]",
        bos_token="[BOS]",
        eos_token="[EOS]",
        padding_side="left",
    )


def _model(tokenizer: Any) -> Any:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(SEED)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        tie_word_embeddings=True,
    )
    model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.bos_token_id = tokenizer.bos_token_id
    return model


def _main(argv: list[str]) -> str:
    """The writer's body (in its own process): train, save the state, return TRL's version."""
    parser = argparse.ArgumentParser()
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("variant", choices=VARIANTS)
    parser.add_argument("steps", type=int)
    parser.add_argument("scratch", type=Path)
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    import trl
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    tokenizer = _tokenizer()
    # From a local folder, as a real run loads its model: the KL term's reference model
    # (beta > 0) is loaded from the same path.
    model = args.scratch / "initial-model"
    _model(tokenizer).save_pretrained(model)
    train = Dataset.from_dict(
        {"prompt": list(TRAIN_PROMPTS), "split": ["train"] * len(TRAIN_PROMPTS)}
    )
    held_out = Dataset.from_dict(
        {"prompt": list(EVAL_PROMPTS), "split": ["eval"] * len(EVAL_PROMPTS)}
    )
    config = GRPOConfig(
        output_dir=str(args.out_dir),
        max_steps=args.steps,
        per_device_train_batch_size=TRAIN_BATCH,
        num_generations=NUM_GENERATIONS,
        per_device_eval_batch_size=EVAL_BATCH,
        num_generations_eval=EVAL_GENERATIONS,
        max_completion_length=MAX_COMPLETION,
        learning_rate=1e-3,
        beta=0.04,
        reward_weights=list(WEIGHTS),
        log_completions=True,
        num_completions_to_print=0,
        logging_steps=1,
        eval_strategy="steps",
        eval_steps=EVAL_STEPS,
        save_strategy="steps",
        save_steps=SAVE_STEPS,
        seed=SEED,
        data_seed=SEED,
        report_to="none",
        use_cpu=True,
        bf16=False,
        fp16=False,
        dataloader_num_workers=0,
        disable_tqdm=True,
    )
    functions: list[Callable[..., list[float]]] = [
        PlantedReward(args.variant, name) for name in REWARD_NAMES
    ]
    trainer = GRPOTrainer(
        model=str(model),
        reward_funcs=functions,
        args=config,
        train_dataset=train,
        eval_dataset=held_out,
        processing_class=tokenizer,
    )
    trainer.train()
    trainer.save_state()
    return str(trl.__version__)
