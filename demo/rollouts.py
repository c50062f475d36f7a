"""A seeded synthetic IFEval+GRPO run, written as verl-style iteration dumps.

``write_demo_run(folder, DemoSpec())`` writes ``0.jsonl .. {iterations-1}.jsonl``,
one rollout a line, each prompt's group of samples on consecutive lines. It
feeds ``obs demo``, the tests and the benchmark; the same spec and seed always
give byte-identical files.

How a rollout is made:

* Each prompt has 1 to 3 IFEval instructions and an archetype that sets its
  success probability ``p(t)`` at iteration ``t``:
  ``learner`` (a sigmoid rising around a prompt-specific iteration),
  ``fast_learner`` (solved from iteration 1 or 2), ``forgetter`` (learns, drops
  to 0 for a few iterations mid-run, relearns), ``plateau`` (flat near .35-.5),
  ``never_solved`` (exactly 0) and ``always_solved`` (exactly 1).
* Each instruction is followed with probability ``p(t) * ease`` (two types are
  hard); ``detectable_format:json_format`` and ``startend:end_checker``
  conflict: with both, following one makes the other rare.
* ``num_followed`` counts the followed ones; ``inst_strict_acc`` =
  num_followed / num_instructions; ``prompt_strict_acc`` = 1.0 when all are;
  ``V_i`` = inst_strict_acc; ``S_i`` a noisy quality score in [0, 1] that
  tracks ``p(t)`` (constant per prompt for never/always solved, so their
  groups have zero variance); ``reward_case``: ``full`` (V_i = 1, S_i >=
  alpha), ``verified_low_quality`` (V_i = 1, S_i < alpha), ``quality_only``
  (V_i < 1, S_i >= alpha), else ``fail``; ``format_score`` is 1.0 but for 3%
  of rollouts (never for never/always solved); ``score`` = 0.8 V_i + 0.2 S_i
  when the format holds, else 0.0, rounded to 4 decimals.
* ``response_tokens`` is a field obs does not know, so it lands in ``extra``.
"""

from __future__ import annotations

import json
import logging
import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

ALPHA = 0.5

# IFEval instruction ids with how easy each is to follow (a factor on p(t)).
INSTRUCTIONS: dict[str, float] = {
    "punctuation:no_comma": 0.95,
    "change_case:english_lowercase": 0.95,
    "keywords:existence": 1.0,
    "keywords:forbidden_words": 0.9,
    "detectable_format:number_bullet_lists": 0.9,
    "detectable_format:json_format": 0.9,
    "startend:end_checker": 0.9,
    "startend:quotation": 0.95,
    "detectable_content:postscript": 0.95,
    "language:response_language": 0.85,
    "length_constraints:number_words": 0.55,
    "combination:repeat_prompt": 0.5,
}
CONFLICT = ("detectable_format:json_format", "startend:end_checker")
PHRASES: dict[str, str] = {
    "punctuation:no_comma": "Do not use any commas in your response.",
    "change_case:english_lowercase": "Your entire response should be in lowercase letters.",
    "keywords:existence": "Include the keywords {a} and {b}.",
    "keywords:forbidden_words": "Do not include the word {a}.",
    "detectable_format:number_bullet_lists": "Use exactly {n} bullet points.",
    "detectable_format:json_format": "Wrap your entire output in JSON format.",
    "startend:end_checker": "End your response with the exact phrase 'Is there anything else?'",
    "startend:quotation": "Wrap your entire response in double quotation marks.",
    "detectable_content:postscript": "At the end, add a postscript starting with P.S.",
    "language:response_language": "Respond only in {language}.",
    "length_constraints:number_words": "Answer with at least {n} words.",
    "combination:repeat_prompt": "First repeat the request word for word, then answer it.",
}
TASKS = [
    "Write a short blog post about",
    "Write a product description for",
    "Write a letter to a friend about",
    "Write a poem about",
    "Explain to a child",
    "Write a news summary about",
    "Write a travel guide entry about",
    "Write a limerick about",
    "Draft an email to your manager about",
    "Write a short story about",
]
TOPICS = [
    "the history of tea",
    "a city at night",
    "learning to swim",
    "the moon landing",
    "a lost umbrella",
    "volcanoes",
    "the first day of school",
    "a broken clock",
    "migrating birds",
    "the smell of rain",
    "a chess tournament",
    "an old lighthouse",
    "baking sourdough",
    "the northern lights",
    "a quiet library",
    "desert foxes",
]
WORDS = tuple(
    [
        "the",
        "quick",
        "answer",
        "follows",
        "here",
        "with",
        "some",
        "detail",
        "about",
        "each",
        "point",
        "and",
        "a",
        "small",
        "example",
        "that",
        "shows",
        "why",
        "it",
        "matters",
        "while",
        "keeping",
        "the",
        "tone",
        "light",
        "and",
        "the",
        "sentences",
        "short",
    ]
)
KEYWORDS = ("lantern", "harbor", "velvet", "orbit", "meadow", "copper", "summit", "ember")
ARCHETYPES = [
    ("learner", 0.30),
    ("fast_learner", 0.15),
    ("forgetter", 0.15),
    ("plateau", 0.15),
    ("never_solved", 0.10),
    ("always_solved", 0.15),
]


@dataclass(frozen=True)
class DemoSpec:
    prompts: int = 60
    iterations: int = 12
    samples_per_prompt: int = 8
    seed: int = 7
    prompt_chars: int | None = None  # pad prompt text to about this many characters
    response_chars: int | None = None  # pad response text to about this many characters


@dataclass(frozen=True)
class DemoRun:
    path: Path
    files: list[Path]
    rollouts: int
    prompts: int
    iterations: int
    archetypes: dict[str, str] = field(default_factory=dict)  # prompt text -> archetype
    # per iteration, what a trainer would log of its rollouts: the mean score, its
    # population std and the mean response length in tokens
    logged: dict[int, dict[str, float]] = field(default_factory=dict)


@dataclass(frozen=True)
class _Prompt:
    text: str
    archetype: str
    instructions: tuple[str, ...]
    kwargs: tuple[dict[str, object], ...]
    centre: float  # learner: the sigmoid's middle; forgetter: start of the drop
    level: float  # plateau height, or fixed S_i of never/always solved


def _archetypes(count: int, rng: random.Random) -> list[str]:
    names = []
    for name, share in ARCHETYPES:
        names += [name] * max(1, round(share * count)) if count >= len(ARCHETYPES) else []
    while len(names) < count:
        names.append("learner")
    names = names[:count]
    if count < len(ARCHETYPES):
        names = [ARCHETYPES[i % len(ARCHETYPES)][0] for i in range(count)]
    rng.shuffle(names)
    return names


def _make_prompt(index: int, archetype: str, spec: DemoSpec, rng: random.Random) -> _Prompt:
    count = rng.choice((1, 2, 2, 3))
    names = rng.sample(sorted(INSTRUCTIONS), count)
    # A steady share of prompts carry the conflicting pair (never one that is
    # always solved: two instructions that conflict cannot both always hold).
    if index % 7 == 3 and archetype != "always_solved":
        names = [*CONFLICT, *[n for n in names if n not in CONFLICT]][: max(2, count)]
    kwargs: list[dict[str, Any]] = []
    phrases = []
    for name in names:
        args: dict[str, Any] = {}
        if name == "length_constraints:number_words":
            args = {"num_words": rng.choice((80, 120, 200)), "relation": "at least"}
        elif name == "detectable_format:number_bullet_lists":
            args = {"num_bullets": rng.randint(2, 5)}
        elif name == "keywords:existence":
            args = {"keywords": rng.sample(KEYWORDS, 2)}
        elif name == "keywords:forbidden_words":
            args = {"forbidden_words": [rng.choice(KEYWORDS)]}
        elif name == "language:response_language":
            args = {"language": rng.choice(("French", "German", "Spanish"))}
        kwargs.append(args)
        phrases.append(
            PHRASES[name].format(
                a=(args.get("keywords") or args.get("forbidden_words") or ["x"])[0],
                b=(args.get("keywords") or ["x", "y"])[-1],
                n=args.get("num_words") or args.get("num_bullets") or 3,
                language=args.get("language", "English"),
            )
        )
    task = TASKS[index % len(TASKS)]
    topic = TOPICS[(index // len(TASKS)) % len(TOPICS)]
    text = f"{task} {topic} (request {index + 1}). " + " ".join(phrases)
    if spec.prompt_chars and len(text) < spec.prompt_chars:
        filler = " Keep in mind the reader is busy and wants the point quickly."
        text += (filler * (spec.prompt_chars // len(filler) + 1))[: spec.prompt_chars - len(text)]
    last = max(spec.iterations - 1, 1)
    return _Prompt(
        text=text,
        archetype=archetype,
        instructions=tuple(names),
        kwargs=tuple(kwargs),
        centre=rng.uniform(0.2, 0.7) * last,
        level=rng.uniform(0.35, 0.5) if archetype == "plateau" else rng.uniform(0.6, 0.9),
    )


def _probability(prompt: _Prompt, iteration: int, iterations: int) -> float:
    last = max(iterations - 1, 1)
    kind = prompt.archetype
    if kind == "always_solved":
        return 1.0
    if kind == "never_solved":
        return 0.0
    if kind == "plateau":
        return prompt.level
    if kind == "fast_learner":
        return 0.3 if iteration == 0 else 0.97
    if kind == "forgetter":
        start = max(1, round(last * 0.45))
        if start <= iteration < start + 2:
            return 0.0  # the forgotten stretch: certain forgetting events
        return 0.15 if iteration < 1 else 0.95
    # learner: a sigmoid centred at a prompt-specific iteration
    return 0.05 + 0.93 / (1.0 + math.exp(-(iteration - prompt.centre) * 1.2))


def _corpus(rng: random.Random) -> str:
    """One long random text; responses are slices of it (fast, and still varied)."""
    return " ".join(rng.choice(WORDS) for _ in range(40_000))


def _response(rng: random.Random, corpus: str, followed: int, spec: DemoSpec) -> str:
    if spec.response_chars:
        length = int(spec.response_chars * rng.uniform(0.9, 1.1))
    else:
        length = 6 * (rng.randint(25, 70) + 10 * followed)
    start = rng.randrange(0, len(corpus) - length - 1)
    return corpus[start : start + length].strip()


def _rollout(
    prompt: _Prompt, iteration: int, spec: DemoSpec, rng: random.Random, p: float, corpus: str
) -> dict[str, object]:
    followed = []
    for name in prompt.instructions:
        chance = p if p in (0.0, 1.0) else p * INSTRUCTIONS[name]
        followed.append(rng.random() < chance)
    names = prompt.instructions
    if CONFLICT[0] in names and CONFLICT[1] in names and 0.0 < p < 1.0:
        first, second = names.index(CONFLICT[0]), names.index(CONFLICT[1])
        if followed[first] and followed[second] and rng.random() < 0.9:
            followed[rng.choice((first, second))] = False
    num_followed = sum(followed)
    inst_acc = num_followed / len(names)
    fixed = prompt.archetype in ("always_solved", "never_solved")
    s_i = prompt.level if fixed else min(1.0, max(0.0, rng.gauss(0.25 + 0.6 * p, 0.15)))
    s_i = round(s_i, 4)
    format_score = 1.0 if fixed or rng.random() > 0.03 else 0.0
    if inst_acc == 1.0:
        case = "full" if s_i >= ALPHA else "verified_low_quality"
    else:
        case = "quality_only" if s_i >= ALPHA else "fail"
    score = round(0.8 * inst_acc + 0.2 * s_i, 4) if format_score else 0.0
    response = _response(rng, corpus, num_followed, spec)
    return {
        "input": prompt.text,
        "output": response,
        "score": score,
        "V_i": inst_acc,
        "S_i": s_i,
        "alpha_threshold": ALPHA,
        "reward_case": case,
        "prompt_strict_acc": 1.0 if num_followed == len(names) else 0.0,
        "inst_strict_acc": inst_acc,
        "num_instructions": len(names),
        "num_followed": num_followed,
        "format_score": format_score,
        "gts": {"instruction_id_list": list(names), "kwargs": list(prompt.kwargs)},
        "follow_instruction_list": followed,
        "step": iteration,
        "response_tokens": len(response.split()),
    }


def write_demo_run(out_dir: Path, spec: DemoSpec | None = None) -> DemoRun:
    """Write the run's iteration dumps into ``out_dir`` (created; old dumps replaced)."""
    spec = spec or DemoSpec()
    rng = random.Random(spec.seed)
    archetypes = _archetypes(spec.prompts, rng)
    prompts = [_make_prompt(i, archetypes[i], spec, rng) for i in range(spec.prompts)]
    corpus = _corpus(rng)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = []
    encode = json.JSONEncoder(separators=(", ", ": ")).encode
    logged: dict[int, dict[str, float]] = {}
    for iteration in range(spec.iterations):
        path = out_dir / f"{iteration}.jsonl"
        scores, tokens = [], []
        with path.open("w") as handle:
            for prompt in prompts:
                p = _probability(prompt, iteration, spec.iterations)
                rollouts = [
                    _rollout(prompt, iteration, spec, rng, p, corpus)
                    for _ in range(spec.samples_per_prompt)
                ]
                scores += [float(str(r["score"])) for r in rollouts]
                tokens += [float(str(r["response_tokens"])) for r in rollouts]
                handle.write("\n".join(encode(r) for r in rollouts) + "\n")
        files.append(path)
        mean = sum(scores) / len(scores)
        logged[iteration] = {
            "reward_mean": mean,
            "reward_std": math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores)),
            "response_length": sum(tokens) / len(tokens),
        }
    logger.debug("wrote %d dumps to %s", len(files), out_dir)
    return DemoRun(
        path=out_dir,
        files=files,
        rollouts=spec.prompts * spec.iterations * spec.samples_per_prompt,
        prompts=spec.prompts,
        iterations=spec.iterations,
        archetypes={p.text: p.archetype for p in prompts},
        logged=logged,
    )
