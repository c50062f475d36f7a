"""NeMo-RL's token arrays under bad input, growing files and kill -9: rows landed = rows written.

Every line of a train_data_step file is one rollout (``rollouts``) and, when
its arrays align, one row of ``rollout_tokens`` keyed as the rollout is. A line
whose arrays cannot be aligned lands its rollout and rejects its arrays, with
the reason, in ``_rejects`` (table ``rollout_tokens``); nothing else is lost.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from obs.ingest.rollouts import ingest_rollouts

from tests.conftest import kill_when, lake_query, run_cli
from tests.data.nemo_rl import write_nemo_run
from tests.faults.conftest import assert_lake_sound


def _tokens_match_rollouts(lake: Path, expected: int) -> None:
    """``expected`` token rows, each the tokens of one landed rollout (same key, file, line)."""
    [(rows, keys)] = lake_query(
        lake,
        "rollout_tokens",
        "select count(*), count(distinct (run_id, iteration, prompt_hash, sample_idx)) from t",
    )
    assert (rows, keys) == (expected, expected)
    pattern = str(lake / "rollouts" / "*" / "*" / "*.parquet")
    unmatched = lake_query(
        lake,
        "rollout_tokens",
        "select t.source_line from t left join read_parquet("
        f"'{pattern}', hive_partitioning = true) as r using "
        "(run_id, iteration, prompt_hash, sample_idx) "
        "where r.source_line is distinct from t.source_line "
        "or r.source_file is distinct from t.source_file",
    )
    assert unmatched == []


def test_unequal_token_arrays_are_rejected_and_the_rollout_lands(tmp_path: Path) -> None:
    run = write_nemo_run(tmp_path / "logs" / "exp_007", steps=1)
    path = run.files[1]
    lines = run.lines(1)
    written = len(lines)
    lines[1]["prev_logprobs"][0] = lines[1]["prev_logprobs"][0][:-1]  # one value short
    lines[4]["token_ids"][0].append(7)  # one id too many
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    lake = tmp_path / "lake"
    result = run_cli(["--lake", str(lake), "ingest", "rollouts", str(path.parent)])
    assert "2 rejected" in result.output
    assert "rejected 2: token arrays of unequal lengths" in result.output
    # one line naming the file, the lines and the fix
    [warning] = [x for x in result.output.splitlines() if x.startswith("warning:")]
    assert warning.startswith(f"warning: {path}: 2 of its rows landed without a rollout_tokens row")
    assert "(line 2, 5; first reason: token arrays of unequal lengths" in warning
    assert "ingest the file under a new --run" in warning
    assert_lake_sound(lake, written)  # every rollout landed
    _tokens_match_rollouts(lake, written - 2)
    rejects = lake_query(
        lake, "_rejects", "select table_name, source_file, source_line, reason from t order by 3"
    )
    assert [(r[0], r[1], r[2]) for r in rejects] == [
        ("rollout_tokens", str(path.resolve()), 2),
        ("rollout_tokens", str(path.resolve()), 5),
    ]
    width = len(lines[0]["token_ids"][0])
    assert rejects[0][3].startswith("token arrays of unequal lengths: token_ids ")
    assert f"prev_logprobs {width - 1}" in rejects[0][3]
    assert f"token_ids {width + 1}" in rejects[1][3]
    assert "the rollout landed without them" in rejects[0][3]
    assert "--run" in rejects[0][3]  # the fix
    # Ingesting again adds nothing: the file is done.
    again = run_cli(["--lake", str(lake), "ingest", "rollouts", str(path.parent), "--json"])
    assert json.loads(again.output)["rows_landed"] == 0
    _tokens_match_rollouts(lake, written - 2)


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("prev_logprobs", "NaN", "holds a non-finite number"),
        ("generation_logprobs", "text", "must be a list of numbers"),
        ("token_loss_mask", 2, "must hold 0 or 1"),
    ],
)
def test_bad_token_values_reject_the_arrays_only(
    tmp_path: Path, field: str, value: object, reason: str
) -> None:
    run = write_nemo_run(tmp_path / "logs" / "exp_008", steps=1)
    lines = run.lines(1)
    lines[0][field][0][7] = float("nan") if value == "NaN" else value
    run.files[1].write_text("".join(json.dumps(x) + "\n" for x in lines))
    lake = tmp_path / "lake"
    result = ingest_rollouts(run.log_dir, lake=lake, workers=1)
    assert (result.rows_landed, result.companion_rows, result.rows_rejected) == (
        len(lines),
        len(lines) - 1,
        1,
    )
    [(table, line, text)] = lake_query(
        lake, "_rejects", "select table_name, source_line, reason from t"
    )
    assert (table, line) == ("rollout_tokens", 1) and reason in text


def test_a_padding_mask_past_input_lengths_is_rejected(tmp_path: Path) -> None:
    run = write_nemo_run(tmp_path / "logs" / "exp_009", steps=1)
    lines = run.lines(1)
    shortest = min(range(len(lines)), key=lambda i: lines[i]["input_lengths"][0])
    lines[shortest]["token_loss_mask"][0][-1] = 1
    run.files[1].write_text("".join(json.dumps(x) + "\n" for x in lines))
    lake = tmp_path / "lake"
    result = ingest_rollouts(run.log_dir, lake=lake, workers=1)
    assert result.companion_rows == len(lines) - 1
    [(text,)] = lake_query(lake, "_rejects", "select reason from t")
    assert "past 'input_lengths'" in text


def test_a_growing_file_numbers_its_tokens_with_its_rollouts(tmp_path: Path) -> None:
    """A file still being written lands its complete lines; the rest lands later,
    numbered on from the run (the tokens part shifted alike)."""
    run = write_nemo_run(tmp_path / "logs" / "exp_010", steps=1, prompts=2, generations=3)
    text = run.files[1].read_text()
    cut = [i for i, c in enumerate(text) if c == "\n"][3] + 40  # 4 lines and a partial one
    run.files[1].write_text(text[:cut])
    lake = tmp_path / "lake"
    first = ingest_rollouts(run.log_dir, lake=lake, workers=1)
    assert (first.rows_landed, first.companion_rows) == (4, 4)
    run.files[1].write_text(text)
    second = ingest_rollouts(run.log_dir, lake=lake, workers=1)
    assert (second.rows_landed, second.companion_rows) == (2, 2)
    assert_lake_sound(lake, 6)
    _tokens_match_rollouts(lake, 6)
    numbers = lake_query(lake, "rollout_tokens", "select sample_idx from t order by source_line")
    assert [n for (n,) in numbers] == [0, 1, 2, 0, 1, 2]


@pytest.mark.integration
def test_kill_9_mid_ingest_leaves_rollouts_and_tokens_whole(tmp_path: Path) -> None:
    """Killed while landing, then ingested again: rollouts and tokens one for one."""
    run = write_nemo_run(tmp_path / "logs" / "exp_011", steps=30, prompts=4, generations=4)
    written = 30 * 16
    lake = tmp_path / "lake"
    command = [
        sys.executable,
        "-c",
        "from pathlib import Path; from obs.ingest.rollouts import ingest_rollouts; "
        f"ingest_rollouts(Path({str(run.log_dir)!r}), lake=Path({str(lake)!r}), workers=1)",
    ]
    # killed once a few files are published (and between two of them, or mid-publish)
    killed = kill_when(
        command, lambda: len(list((lake / "rollout_tokens").rglob("*.parquet"))) >= 5
    )
    assert killed, "the ingest finished before it could be killed"
    assert len(list((lake / "rollouts").rglob("*.parquet"))) < 30
    ingest_rollouts(run.log_dir, lake=lake, workers=1)
    assert_lake_sound(lake, written)
    _tokens_match_rollouts(lake, written)
