"""The synthetic IFEval+GRPO generator: deterministic, consistent, and shaped as documented."""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from pathlib import Path

import pytest
from obs.demo.rollouts import CONFLICT, DemoSpec, write_demo_run

SPEC = DemoSpec(prompts=42, iterations=10, samples_per_prompt=6, seed=3)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory):
    made = write_demo_run(tmp_path_factory.mktemp("synthetic"), SPEC)
    rows = [json.loads(line) for path in made.files for line in path.read_text().splitlines()]
    return made, rows


def _groups(rows: list[dict]) -> dict[tuple[str, int], list[dict]]:
    groups: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for row in rows:
        groups[(row["input"], row["step"])].append(row)
    return groups


def test_synthetic_same_seed_same_bytes(tmp_path: Path, run) -> None:
    made, _ = run
    again = write_demo_run(tmp_path / "again", SPEC)
    assert [f.read_bytes() for f in again.files] == [f.read_bytes() for f in made.files]
    other = write_demo_run(tmp_path / "other", DemoSpec(prompts=42, iterations=10, seed=4))
    assert other.files[0].read_bytes() != made.files[0].read_bytes()


def test_synthetic_counts_and_names(run) -> None:
    made, rows = run
    assert [f.name for f in made.files] == [f"{i}.jsonl" for i in range(10)]
    assert len(rows) == made.rollouts == 42 * 10 * 6
    assert len({r["input"] for r in rows}) == 42
    assert {r["step"] for r in rows} == set(range(10))


def test_synthetic_fields_agree(run) -> None:
    _, rows = run
    for row in rows:
        flags = row["follow_instruction_list"]
        assert row["num_followed"] == sum(flags)
        assert row["num_instructions"] == len(flags) == len(row["gts"]["instruction_id_list"])
        assert row["prompt_strict_acc"] == (1.0 if all(flags) else 0.0)
        assert row["inst_strict_acc"] == pytest.approx(sum(flags) / len(flags))
        expected = round(0.8 * row["V_i"] + 0.2 * row["S_i"], 4) if row["format_score"] else 0.0
        assert row["score"] == expected


def test_synthetic_samples_of_a_group_are_consecutive(run) -> None:
    made, _ = run
    prompts = [json.loads(line)["input"] for line in made.files[0].read_text().splitlines()]
    blocks = [prompts[i : i + 6] for i in range(0, len(prompts), 6)]
    assert all(len(set(block)) == 1 for block in blocks)


@pytest.mark.parametrize(("archetype", "strict"), [("always_solved", 1.0), ("never_solved", 0.0)])
def test_synthetic_dead_prompts_have_zero_variance(run, archetype: str, strict: float) -> None:
    made, rows = run
    texts = {t for t, a in made.archetypes.items() if a == archetype}
    assert texts
    for (text, _), group in _groups(rows).items():
        if text in texts:
            assert len({r["score"] for r in group}) == 1
            assert {r["prompt_strict_acc"] for r in group} == {strict}


def test_synthetic_forgetters_forget(run) -> None:
    made, rows = run
    solved = {key: max(r["prompt_strict_acc"] for r in g) for key, g in _groups(rows).items()}
    for text, archetype in made.archetypes.items():
        if archetype == "forgetter":
            history = [solved[(text, i)] for i in range(10)]
            assert any(a == 1.0 and b == 0.0 for a, b in itertools.pairwise(history))


def test_synthetic_conflicting_pair_interferes(run) -> None:
    _, rows = run
    both = [r for r in rows if set(CONFLICT) <= set(r["gts"]["instruction_id_list"])]
    assert len(both) > 50
    flags = []
    for row in both:
        names = row["gts"]["instruction_id_list"]
        follow = row["follow_instruction_list"]
        flags.append((follow[names.index(CONFLICT[0])], follow[names.index(CONFLICT[1])]))
    rate_a = sum(a for a, _ in flags) / len(flags)
    rate_b = sum(b for _, b in flags) / len(flags)
    joint = sum(a and b for a, b in flags) / len(flags)
    assert joint < rate_a * rate_b


def test_synthetic_padding_hits_target_lengths(tmp_path: Path) -> None:
    spec = DemoSpec(
        prompts=8, iterations=2, samples_per_prompt=4, prompt_chars=600, response_chars=900
    )
    made = write_demo_run(tmp_path, spec)
    rows = [json.loads(line) for line in made.files[0].read_text().splitlines()]
    assert all(abs(len(r["input"]) - 600) <= 90 for r in rows)
    assert all(abs(len(r["output"]) - 900) <= 135 for r in rows)


def test_synthetic_logged_means_are_the_dumps_own(run) -> None:
    """What the demo's history logs per iteration: the mean score, its population std
    and the mean response length in tokens, as computed from the dump rows here."""
    made, rows = run
    assert sorted(made.logged) == list(range(SPEC.iterations))
    for iteration, logged in made.logged.items():
        scores = [row["score"] for row in rows if row["step"] == iteration]
        tokens = [row["response_tokens"] for row in rows if row["step"] == iteration]
        mean = sum(scores) / len(scores)
        std = (sum((s - mean) ** 2 for s in scores) / len(scores)) ** 0.5
        assert logged["reward_mean"] == pytest.approx(mean, abs=1e-12)
        assert logged["reward_std"] == pytest.approx(std, abs=1e-12)
        assert logged["response_length"] == pytest.approx(sum(tokens) / len(tokens), abs=1e-12)


def test_seed_export_logs_observed_values_and_continues_from_them(tmp_path: Path) -> None:
    from obs.demo.histories import write_seed_export

    plain, observed_path = tmp_path / "plain.json", tmp_path / "observed.json"
    write_seed_export(plain, run_id="r", steps=40, seed=5)
    observed = {0: {"reward_mean": 0.25, "reward_std": 0.4}, 2: {"reward_mean": 0.5}}
    write_seed_export(observed_path, run_id="r", steps=40, seed=5, observed=observed)
    before = json.loads(plain.read_text())["history"]
    after = json.loads(observed_path.read_text())["history"]
    # logged where observed
    assert after[0]["benchmark/reward_mean"] == 0.25
    assert after[2]["benchmark/reward_mean"] == 0.5
    assert after[0]["benchmark/reward_std"] == 0.4
    # every other step scaled by observed / generated at the last observed step (2)
    scale = 0.5 / before[2]["benchmark/reward_mean"]
    for step in (1, 3, 39):
        wanted = before[step]["benchmark/reward_mean"] * scale
        assert after[step]["benchmark/reward_mean"] == pytest.approx(wanted, rel=1e-5)
    # the std was observed at step 0 only: the rest continues from there
    std_scale = 0.4 / before[0]["benchmark/reward_std"]
    for step in (1, 39):
        wanted = before[step]["benchmark/reward_std"] * std_scale
        assert after[step]["benchmark/reward_std"] == pytest.approx(wanted, rel=1e-5)
    # what was not observed is untouched
    assert [r["benchmark/grad_norm"] for r in after] == [r["benchmark/grad_norm"] for r in before]
