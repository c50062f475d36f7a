"""The bulk path lands exactly what the row rules land, or leaves the file to them.

``rollouts_fast`` only speeds clean JSON-lines files up; the rules live in
``RolloutBuilder``. Each file here is landed twice, once with the bulk path and
once with it switched off, and every column of every row must agree (JSON
columns as JSON values). Files the bulk path must refuse are checked to be
refused, so that the comparison is never between the row rules and themselves.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from obs.ingest import rollouts as rollouts_module
from obs.ingest.rollouts import ingest_rollouts
from obs.ingest.rollouts_fast import fast_rollouts
from obs.ingest.synthetic import DemoSpec, write_demo_run

from tests.conftest import DATA, lake_rows

JSON_COLUMNS = ("extra", "ground_truth", "instruction_kwargs")


def _line(prompt: str, score: object = 1.0, **fields: object) -> str:
    return json.dumps({"input": prompt, "output": f"answer to {prompt}", "score": score, **fields})


CLEAN = {
    "ifeval": [
        _line(
            "p",
            0.5,
            V_i=1.0,
            S_i=0.25,
            alpha_threshold=0.5,
            reward_case="V_i > 0 and S_i > a (bonus)",
            prompt_strict_acc=1.0,
            inst_strict_acc=0.5,
            num_instructions=2,
            num_followed=1,
            format_score=1.0,
            gts={
                "instruction_id_list": ["a:b", "c:d"],
                "kwargs": [{"num_words": 300, "relation": None}, {}],
            },
            follow_instruction_list=[True, False],
            step=3,
        ),
        _line("q", 0.0, gts={"instruction_id_list": ["a:b"], "kwargs": [{"language": "es"}]}),
    ],
    "unknown-fields": [
        _line("p", 1, acc=True, pred="42", meta={"seed": 7, "tags": ["x", None], "m": {"n": None}}),
        _line("p", 0, acc=False, reward_extra=[1.5, 2.5], note=None, meta={"seed": 8}),
        _line("q", 1, deep=[{"a": [{"b": 1}]}, None, {}]),
    ],
    "table-vocabulary": [
        json.dumps({"prompt": "p", "response": "r", "reward": 1.5, "data_idx": 4, "sample_idx": 0}),
        json.dumps({"prompt": "p", "response": "r2", "reward": -2, "data_idx": 4}),
    ],
    "bare-ground-truth": [
        _line("p", 1, gts="42"),
        _line("p", 0, gts="4 2"),
        _line("q", 1),
    ],
    "unicode": [
        _line('caf\u00e9 \u2028 \U0001f600 "quoted" \\ back', 1, note="\u00fc\u00df"),
        _line("plain", 0, **{"cl\u00e9": 1}),
    ],
}


def _land(folder: Path, lake: Path, *, bulk: bool, monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    with monkeypatch.context() as patch:
        if not bulk:
            patch.setattr(rollouts_module, "fast_rollouts", lambda *a, **k: None)
        ingest_rollouts(folder, lake=lake, run_id="r", workers=1)
    rows = lake_rows(lake)
    for row in rows:
        row.pop("ingested_at")
        for name in JSON_COLUMNS:
            row[name] = json.loads(row[name]) if row[name] is not None else None
    return rows


def _write(folder: Path, lines: list[str]) -> Path:
    folder.mkdir(parents=True)
    path = folder / "3.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("name", sorted(CLEAN))
def test_fastpath_lands_what_the_rules_land(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path / "dumps", CLEAN[name])
    content = path.read_bytes()
    bulk = fast_rollouts(content, 0, len(content), 1, claimed=3, fixed=None, path=str(path))
    assert bulk is not None, "the bulk path refused a clean file: the comparison would be empty"
    fast = _land(tmp_path / "dumps", tmp_path / "fast", bulk=True, monkeypatch=monkeypatch)
    rules = _land(tmp_path / "dumps", tmp_path / "rules", bulk=False, monkeypatch=monkeypatch)
    assert fast == rules


def test_fastpath_agrees_on_a_synthetic_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = write_demo_run(tmp_path / "demo", DemoSpec(prompts=30, iterations=3, seed=5))
    content = run.files[0].read_bytes()
    assert fast_rollouts(content, 0, len(content), 1, claimed=0, fixed=None, path="x") is not None
    fast = _land(tmp_path / "demo", tmp_path / "fast", bulk=True, monkeypatch=monkeypatch)
    rules = _land(tmp_path / "demo", tmp_path / "rules", bulk=False, monkeypatch=monkeypatch)
    assert len(fast) == run.rollouts and fast == rules


def test_fastpath_agrees_on_the_fixture_dumps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = _land(DATA / "ifeval_small", tmp_path / "fast", bulk=True, monkeypatch=monkeypatch)
    rules = _land(DATA / "ifeval_small", tmp_path / "rules", bulk=False, monkeypatch=monkeypatch)
    assert fast == rules


@pytest.mark.parametrize(
    "lines",
    [
        pytest.param([_line("a"), "", _line("b")], id="blank-line"),
        pytest.param([_line("a"), "  " + _line("b")], id="indented-line"),
        pytest.param([_line("a") + _line("b"), "   "], id="two-objects-and-a-blank"),
        pytest.param([_line("a", float("nan"))], id="nan-score"),
        pytest.param([_line("a", 1, kl=float("inf"))], id="infinity-in-unknown"),
        pytest.param([_line("a", 1e200)], id="score-out-of-range"),
        pytest.param([_line("a", "0.5")], id="numeric-text"),
        pytest.param([_line("a", 1, follow_instruction_list=[1, 0])], id="flags-as-numbers"),
        pytest.param([_line("a", 1, num_followed=2.0)], id="whole-float"),
        pytest.param([_line("a", 1, step=5)], id="step-disagrees-with-name"),
        pytest.param([_line("a", 1, reward=0.5)], id="score-and-reward"),
        pytest.param([_line("a", 1, V_i=1.0, v_i=0.5)], id="two-spellings"),
        pytest.param([_line("a", 1, ground_truth="4")], id="ground-truth-field"),
        pytest.param([_line("a", 1, rewards={"f": 1.0})], id="rewards-map"),
        pytest.param([_line("a", 1, when="2024-01-01 00:00:00")], id="timestamp-like-text"),
        pytest.param([_line("a", 1, x=1), _line("b", 1, x="one")], id="mixed-types"),
        pytest.param([_line("a", 1, gts="4"), _line("b", 1, gts=["4"])], id="mixed-gts"),
        pytest.param(['{"input": "a", "input": "b", "output": "o", "score": 1}'], id="dup-key"),
        pytest.param(['{"input": "\\ud800", "output": "o", "score": 1}'], id="lone-surrogate"),
        pytest.param(['{"output": "o", "score": 1}'], id="no-prompt"),
        pytest.param(['["not", "an", "object"]'], id="array-line"),
    ],
)
def test_fastpath_leaves_what_needs_the_rules(tmp_path: Path, lines: list[str]) -> None:
    path = _write(tmp_path / "dumps", lines)
    content = path.read_bytes()
    assert fast_rollouts(content, 0, len(content), 1, claimed=3, fixed=None, path=str(path)) is None
