"""Rollout formats as the training tools write them: TRL completions, NeMo-RL and verl dumps.

prime-rl's episode traces have their own module (test_ingest_traces.py).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from obs.ingest import rollouts as rollouts_module
from obs.ingest.errors import IngestError
from obs.ingest.rollouts import ingest_rollouts

from tests.conftest import lake_rows, prompt_hash
from tests.data.run_writers import toy_verl_run, verl_group, verl_uid, write_verl_dump

NAN = float("nan")
# GRPOTrainer logs the templated prompt with special tokens removed.
ADD = "system\nYou are helpful.\nuser\nWhat is 2+2?\nassistant\n"
PRIME = "system\nYou are helpful.\nuser\nName a prime.\nassistant\n"
NEMO_PROMPT = "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"


def _lines(path: Path, rows: list[dict]) -> Path:
    """JSON lines as verl and NeMo-RL write them: json.dumps per row, newline-terminated."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def write_trl(output_dir: Path, step: int, rows: list[tuple], name: str = "") -> Path:
    """A completions file as GRPOTrainer writes it: pandas.DataFrame(table).to_parquet(path).

    ``rows`` are (prompt, completion, accuracy_reward, format_reward, advantage).
    """
    folder = output_dir / "completions"
    folder.mkdir(parents=True, exist_ok=True)
    prompts, completions, accuracy, formats, advantages = (list(c) for c in zip(*rows, strict=True))
    table = {
        "step": [step] * len(rows),
        "prompt": prompts,
        "completion": completions,
        "accuracy_reward": accuracy,
        "format_reward": formats,  # NaN: the function returned None for the sample
        "advantage": advantages,
    }
    path = folder / (name or f"completions_{step:05d}.parquet")
    pd.DataFrame(table).to_parquet(path)
    return path


def trl_run(tmp_path: Path) -> Path:
    """A GRPOTrainer output_dir with the completions of steps 5 and 10."""
    out = tmp_path / "grpo-qwen"
    write_trl(out, 5, [(ADD, "four", 0.0, 0.25, 0.0)])
    write_trl(
        out,
        10,
        [
            (ADD, "4", 1.0, 0.5, 0.75),
            (ADD, "5", 0.0, NAN, -0.75),
            (PRIME, "7", 1.0, 1.0, 0.0),
        ],
    )
    return out


def nemo_line(idx: int, content: list, reward: float, **more: object) -> dict:
    """One NeMo-RL sample: every value wrapped in a one-element list, idx plain."""
    wrapped = {key: [value] for key, value in more.items()}
    return {"content": [content], "rewards": [reward], **wrapped, "idx": idx}


def nemo_run(tmp_path: Path) -> Path:
    logs = tmp_path / "nemo-grpo"
    _lines(
        logs / "train_data_step3.jsonl",
        [
            nemo_line(0, [NEMO_PROMPT, "4<|im_end|>"], 1.0, input_lengths=2, token_ids=[1, 2]),
            nemo_line(1, [NEMO_PROMPT, "The answer is ", "5"], 0.0, input_lengths=23),
        ],
    )
    user = {"role": "user", "content": "Add 2 and 3."}
    _lines(
        logs / "val_data_step3.jsonl",
        [
            nemo_line(0, [user, {"role": "assistant", "content": "5"}], 1.0),
            nemo_line(
                1,
                [
                    user,
                    {"role": "assistant", "content": "Calling calc. "},
                    {"role": "tool", "content": "5"},
                    {"role": "assistant", "content": " It is 5."},
                ],
                0.0,
            ),
        ],
    )
    return logs


def verl_run(tmp_path: Path) -> Path:
    """verl's rollout dumps: {N}.jsonl for training, val_{N}.jsonl for validation."""
    dumps = tmp_path / "verl-gsm8k"
    base = {"input": "Q: 6*7?", "gts": "42", "step": 3}
    _lines(
        dumps / "3.jsonl",
        [
            {**base, "output": "42", "score": 1.0, "acc": True, "pred": "42"},
            {**base, "output": "41", "score": 0.0, "acc": False, "pred": "41"},
        ],
    )
    _lines(
        dumps / "val_3.jsonl",
        [{**base, "output": "42", "score": 1.0, "reward": 1.0, "acc": True, "pred": "42"}],
    )
    return dumps


# --------------------------------------------------------------------------- TRL


@pytest.mark.parametrize(
    ("target", "iterations"),
    [
        ("", [5, 10, 10, 10]),
        ("completions", [5, 10, 10, 10]),
        ("completions/completions_00010.parquet", [10, 10, 10]),
    ],
)
def test_trl_completions_land_from_output_dir_folder_or_file(
    tmp_path: Path, lake: Path, target: str, iterations: list[int]
) -> None:
    out = trl_run(tmp_path)
    result = ingest_rollouts(out / target, lake=lake, workers=1)
    rows = lake_rows(lake)
    assert result.run_ids == ["grpo-qwen"]
    assert {r["run_id"] for r in rows} == {"grpo-qwen"}
    assert [r["iteration"] for r in rows] == iterations
    assert result.rows_landed == len(iterations) and result.rows_rejected == 0


def test_trl_completion_maps_rewards_score_and_advantage(tmp_path: Path, lake: Path) -> None:
    ingest_rollouts(trl_run(tmp_path), lake=lake, workers=1)
    rows = lake_rows(lake, where="iteration = 10")
    assert [(r["prompt"], r["response"], r["sample_idx"], r["source_line"]) for r in rows] == [
        (ADD, "4", 0, 1),
        (ADD, "5", 1, 2),
        (PRIME, "7", 0, 3),
    ]
    assert [r["prompt_hash"] for r in rows] == [prompt_hash(ADD)] * 2 + [prompt_hash(PRIME)]
    # score: the sum of the rewards that have a value (1.0 + 0.5; 0.0 + NaN; 1.0 + 1.0).
    assert [r["score"] for r in rows] == [1.5, 0.0, 2.0]
    assert [r["rewards"] for r in rows] == [
        {"accuracy_reward": 1.0, "format_reward": 0.5},
        {"accuracy_reward": 0.0},
        {"accuracy_reward": 1.0, "format_reward": 1.0},
    ]
    extras = [json.loads(r["extra"]) for r in rows]
    assert [e["advantage"] for e in extras] == [0.75, -0.75, 0.0]
    assert not any("step" in e or "accuracy_reward" in e for e in extras)


def test_trl_nan_reward_stays_out_of_extra(tmp_path: Path, lake: Path) -> None:
    ingest_rollouts(trl_run(tmp_path), lake=lake, workers=1)
    rows = lake_rows(lake, where="iteration = 10")
    assert [json.loads(r["extra"]) for r in rows] == [
        {"advantage": 0.75},
        {"advantage": -0.75},
        {"advantage": 0.0},
    ]


def write_trl_one_reward(output_dir: Path, column: str) -> Path:
    """completions_00010.parquet whose only reward function is ``column``, written with pyarrow."""
    folder = output_dir / "completions"
    folder.mkdir(parents=True, exist_ok=True)
    table = pa.table(
        {
            "step": pa.array([10, 10, 10], pa.int64()),
            "prompt": [ADD, ADD, PRIME],
            "completion": ["4", "5", "7"],
            column: pa.array([1.0, 0.0, 0.5], pa.float64()),
            "advantage": pa.array([0.5, -0.5, 0.0], pa.float64()),
        }
    )
    path = folder / "completions_00010.parquet"
    pq.write_table(table, path)
    return path


@pytest.mark.parametrize("column", ["reward", "score", "accuracy_reward"])
def test_trl_completion_lands_whatever_its_one_reward_function_is_named(
    tmp_path: Path, lake: Path, column: str
) -> None:
    """A reward function named ``reward`` (or ``score``) is a reward column, not the score slot."""
    path = write_trl_one_reward(tmp_path / "grpo-qwen", column)
    result = ingest_rollouts(path, lake=lake, workers=1)
    assert (result.rows_landed, result.rows_rejected) == (3, 0)
    rows = lake_rows(lake)
    assert [(r["iteration"], r["response"]) for r in rows] == [(10, "4"), (10, "5"), (10, "7")]
    assert [r["score"] for r in rows] == [1.0, 0.0, 0.5]
    assert [r["rewards"] for r in rows] == [{column: 1.0}, {column: 0.0}, {column: 0.5}]
    assert [json.loads(r["extra"]) for r in rows] == [
        {"advantage": 0.5},
        {"advantage": -0.5},
        {"advantage": 0.0},
    ]


def test_trl_reward_column_named_reward_stays_a_reward_when_scored_at_ingest(
    tmp_path: Path, lake: Path
) -> None:
    """--reward gives the score; the file's ``reward`` column is still its function's rewards."""
    path = write_trl_one_reward(tmp_path / "grpo-qwen", "reward")
    result = ingest_rollouts(
        path, lake=lake, reward="tests.data.custom_rewards:completion_is_four", workers=1
    )
    assert (result.rows_landed, result.rows_rejected) == (3, 0)
    rows = lake_rows(lake)
    assert [r["score"] for r in rows] == [1.0, 0.0, 0.0]
    assert [r["rewards"] for r in rows] == [{"reward": 1.0}, {"reward": 0.0}, {"reward": 0.5}]
    assert [json.loads(r["extra"]) for r in rows] == [
        {"advantage": 0.5},
        {"advantage": -0.5},
        {"advantage": 0.0},
    ]


# --------------------------------------------------------------------------- NeMo-RL


def test_nemo_train_lines_unwrap_into_rollouts(tmp_path: Path, lake: Path) -> None:
    result = ingest_rollouts(nemo_run(tmp_path), lake=lake, workers=1)
    assert result.run_ids == ["nemo-grpo", "nemo-grpo:val"]
    rows = lake_rows(lake, where="run_id = 'nemo-grpo'")
    assert [(r["iteration"], r["prompt"], r["response"], r["score"]) for r in rows] == [
        (3, NEMO_PROMPT, "4<|im_end|>", 1.0),
        (3, NEMO_PROMPT, "The answer is 5", 0.0),
    ]
    assert [r["sample_idx"] for r in rows] == [0, 1]
    extras = [json.loads(r["extra"]) for r in rows]
    assert [(e["idx"], e["input_lengths"]) for e in extras] == [(0, 2), (1, 23)]
    # token arrays land in rollout_tokens (tests/sources/test_nemo_rl_tokens.py), not in extra
    assert "token_ids" not in extras[0]
    [tokens] = lake_rows(lake, table="rollout_tokens")
    assert (tokens["sample_idx"], tokens["token_ids"], tokens["trainer_logprobs"]) == (
        0,
        [1, 2],
        None,
    )
    assert not any("content" in e or "rewards" in e or "reward" in e for e in extras)


def test_nemo_val_messages_split_at_first_assistant(tmp_path: Path, lake: Path) -> None:
    ingest_rollouts(nemo_run(tmp_path), lake=lake, workers=1)
    rows = lake_rows(lake, where="run_id = 'nemo-grpo:val'")
    assert [(r["iteration"], r["prompt"], r["response"], r["score"]) for r in rows] == [
        (3, "Add 2 and 3.", "5", 1.0),
        (3, "Add 2 and 3.", "Calling calc. 5 It is 5.", 0.0),
    ]
    assert [json.loads(r["extra"])["idx"] for r in rows] == [0, 1]


# --------------------------------------------------------------------------- verl


def test_verl_dumps_land_train_and_val_runs(tmp_path: Path, lake: Path) -> None:
    result = ingest_rollouts(verl_run(tmp_path), lake=lake, workers=1)
    assert result.run_ids == ["verl-gsm8k", "verl-gsm8k:val"]
    train = lake_rows(lake, where="run_id = 'verl-gsm8k'")
    assert [(r["iteration"], r["response"], r["score"]) for r in train] == [
        (3, "42", 1.0),
        (3, "41", 0.0),
    ]
    assert [json.loads(r["extra"]) for r in train] == [
        {"acc": True, "pred": "42"},
        {"acc": False, "pred": "41"},
    ]
    [val] = lake_rows(lake, where="run_id = 'verl-gsm8k:val'")
    assert (val["iteration"], val["prompt"], val["response"], val["score"]) == (
        3,
        "Q: 6*7?",
        "42",
        1.0,
    )
    # reward (verl's copy of score in validation dumps) is kept, not dropped.
    assert json.loads(val["extra"]) == {"reward": 1.0, "acc": True, "pred": "42"}


def test_verl_bare_string_gts_lands_as_json_text(tmp_path: Path, lake: Path) -> None:
    ingest_rollouts(verl_run(tmp_path), lake=lake, workers=1)
    rows = lake_rows(lake)
    assert [r["ground_truth"] for r in rows] == ['"42"'] * 3
    assert {json.loads(r["ground_truth"]) for r in rows} == {"42"}


@pytest.mark.parametrize("name", ["2.jsonl", "val_2.jsonl"])
def test_dump_rewards_object_lands_in_rewards_map(tmp_path: Path, lake: Path, name: str) -> None:
    line = {"input": "p", "output": "o", "score": 1.0, "step": 2}
    _lines(tmp_path / "d" / name, [{**line, "rewards": {"format": 1.0, "accuracy": 0.0}}])
    ingest_rollouts(tmp_path / "d", lake=lake, run_id="r", workers=1)
    [row] = lake_rows(lake)
    assert row["rewards"] == {"format": 1.0, "accuracy": 0.0}
    assert (row["iteration"], row["score"], row["extra"]) == (2, 1.0, None)


# --------------------------------------------------------------------------- verl's V1 trainer


def test_verl_v1_dumps_group_rollouts_by_the_uid_of_their_prompt(
    tmp_path: Path, lake: Path
) -> None:
    result = ingest_rollouts(toy_verl_run(tmp_path / "verl-v1"), lake=lake, workers=1)
    assert (result.run_ids, result.rows_landed, result.rows_rejected) == (["verl-v1"], 8, 0)
    rows = lake_rows(lake)
    assert [(r["iteration"], r["prompt"], r["score"], r["sample_idx"]) for r in rows] == [
        (1, "Q: 6*7?", 1.0, 0),
        (1, "Q: 6*7?", 0.0, 1),
        (1, "Q: 2+3?", 1.0, 0),
        (1, "Q: 2+3?", 1.0, 1),
        (2, "Q: 6*7?", 1.0, 0),
        (2, "Q: 6*7?", 1.0, 1),
        (2, "Q: 2+3?", 0.0, 0),
        (2, "Q: 2+3?", 0.0, 1),
    ]
    # the group: the uid's uuid, shared by the prompt's sessions, new at every step
    assert [r["group_id"] for r in rows] == [
        verl_group(p, step) for step in (1, 2) for p in (0, 1) for _ in range(2)
    ]
    assert len({r["group_id"] for r in rows}) == 4
    # the uid itself stays queryable
    assert [json.loads(r["extra"]) for r in rows[:2]] == [
        {"uid": verl_uid(0, 0, 0, 1)},
        {"uid": verl_uid(0, 1, 0, 1)},
    ]
    assert rows[0]["ground_truth"] == '"42"'


def test_verl_v1_outputs_of_one_session_share_its_prompts_group(tmp_path: Path, lake: Path) -> None:
    """An agent loop returning several outputs writes {uuid}_{session}_{0..k}."""
    rows = [
        {"input": "p", "output": f"turn {o} of session {s}", "score": 1.0, "uid": verl_uid(3, s, o)}
        for s, o in [(0, 0), (0, 1), (1, 0)]
    ]
    write_verl_dump(tmp_path / "d", 5, rows)
    ingest_rollouts(tmp_path / "d", lake=lake, run_id="r", workers=1)
    landed = lake_rows(lake)
    assert [r["group_id"] for r in landed] == [verl_group(3)] * 3
    assert [json.loads(r["extra"])["uid"] for r in landed] == [
        verl_uid(3, 0, 0),
        verl_uid(3, 0, 1),
        verl_uid(3, 1, 0),
    ]


def test_verl_v1_validation_dump_keeps_reward_extras_and_uid(tmp_path: Path, lake: Path) -> None:
    rows = [
        {
            "input": "Q: 6*7?",
            "output": out,
            "gts": "42",
            "score": score,
            "reward": score,
            "acc": score == 1.0,
            "pred": out,
            "uid": verl_uid(1, s, 0, 4),
        }
        for s, (out, score) in enumerate([("42", 1.0), ("41", 0.0)])
    ]
    write_verl_dump(tmp_path / "validation_data", 4, rows, ("reward", "acc", "pred", "uid"))
    ingest_rollouts(tmp_path / "validation_data", lake=lake, run_id="verl-v1:val", workers=1)
    landed = lake_rows(lake)
    assert [(r["run_id"], r["iteration"], r["score"], r["group_id"]) for r in landed] == [
        ("verl-v1:val", 4, 1.0, verl_group(1, 4)),
        ("verl-v1:val", 4, 0.0, verl_group(1, 4)),
    ]
    assert json.loads(landed[1]["extra"]) == {
        "reward": 0.0,
        "acc": False,
        "pred": "41",
        "uid": verl_uid(1, 1, 0, 4),
    }


@pytest.mark.parametrize(
    ("uid", "group"),
    [
        ("9a1f_prompt", "9a1f_prompt"),  # not {uuid}_{session}_{output}: a group of its own
        ("a_b_1_2_3", "a_b_1"),
        ("_1_2", "_1_2"),
        (12, None),  # not text: no group (the uid stays in extra)
        (None, None),
    ],
)
@pytest.mark.parametrize("bulk", [True, False], ids=["bulk", "rules"])
def test_verl_uid_of_another_shape(
    tmp_path: Path,
    lake: Path,
    uid: object,
    group: object,
    bulk: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _lines(tmp_path / "d" / "1.jsonl", [{"input": "p", "output": "o", "score": 1.0, "uid": uid}])
    if not bulk:
        monkeypatch.setattr(rollouts_module, "fast_rollouts", lambda *a, **k: None)
    ingest_rollouts(tmp_path / "d", lake=lake, run_id="r", workers=1)
    [row] = lake_rows(lake)
    assert row["group_id"] == group


def test_uid_names_no_group_outside_a_dump(tmp_path: Path, lake: Path) -> None:
    table = _lines(
        tmp_path / "table.jsonl",
        [{"prompt": "p", "response": "r", "reward": 1.0, "step": 1, "uid": verl_uid(0, 0)}],
    )
    ingest_rollouts(table, lake=lake, run_id="r", workers=1)
    [row] = lake_rows(lake)
    assert row["group_id"] is None and json.loads(row["extra"]) == {"uid": verl_uid(0, 0)}


def test_agent_group_id_lands_in_the_column_and_stays_in_extra(tmp_path: Path, lake: Path) -> None:
    rows = [
        {"input": "p", "output": "o", "score": 1.0, "group_id": 7, "uid": verl_uid(0, 0)},
        {"input": "p", "output": "o", "score": 0.0, "group_id": "q1", "num_turns": 2},
    ]
    _lines(tmp_path / "d" / "1.jsonl", rows)
    ingest_rollouts(tmp_path / "d", lake=lake, run_id="r", workers=1)
    landed = lake_rows(lake)
    assert [r["group_id"] for r in landed] == ["7", "q1"]  # an explicit group_id wins over uid
    assert [json.loads(r["extra"])["group_id"] for r in landed] == ["7", "q1"]


# --------------------------------------------------------------------------- all formats


def trl_duplicate(tmp_path: Path) -> Path:
    """completions_10.parquet claims step 10, as completions_00010.parquet does."""
    out = trl_run(tmp_path)
    write_trl(out, 10, [(ADD, "x", 1.0, 1.0, 0.0)], name="completions_10.parquet")
    return out


def nemo_duplicate(tmp_path: Path) -> Path:
    logs = nemo_run(tmp_path)
    plain = logs / "train_data_step3.jsonl"
    (logs / "train_data_step3.jsonl.gz").write_bytes(gzip.compress(plain.read_bytes()))
    return logs


def verl_duplicate(tmp_path: Path) -> Path:
    dumps = verl_run(tmp_path)
    _lines(dumps / "003.jsonl", [{"input": "p", "output": "o", "score": 0.0}])
    return dumps


@pytest.mark.parametrize(
    "make", [trl_duplicate, nemo_duplicate, verl_duplicate], ids=["trl", "nemo", "verl"]
)
def test_ingest_two_files_claiming_one_iteration_are_refused(
    tmp_path: Path, lake: Path, make: Callable[[Path], Path]
) -> None:
    path = make(tmp_path)
    with pytest.raises(IngestError, match="claims iteration"):
        ingest_rollouts(path, lake=lake, workers=1)
    assert not (lake / "rollouts").exists()


@pytest.mark.parametrize(
    ("make", "rows"), [(trl_run, 4), (nemo_run, 4), (verl_run, 3)], ids=["trl", "nemo", "verl"]
)
def test_ingest_format_twice_adds_nothing(
    tmp_path: Path, lake: Path, make: Callable[[Path], Path], rows: int
) -> None:
    path = make(tmp_path)
    first = ingest_rollouts(path, lake=lake, workers=1)
    second = ingest_rollouts(path, lake=lake, workers=1)
    assert first.rows_landed == rows == len(lake_rows(lake))
    assert second.rows_landed == 0 and second.rows_rejected == 0
    assert second.files_skipped == len(first.files) == 2
    assert {f.status for f in second.files} == {"unchanged"}
