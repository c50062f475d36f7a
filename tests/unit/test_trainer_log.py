"""The trainer-log reader: the trainer's console blocks as keyed records.

Every fixture is a real file in tmp_path, read with ``read(...)``; the expected
records are worked out by hand from the fixture text (line numbers included).
"""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path
from typing import Any

import duckdb
import obs.ingest.trackers.trainer_log as module
import pyarrow as pa
import pytest
from obs.ingest.keyed import Source, land_histories
from obs.ingest.schema import (
    EVAL_STEPS,
    RECORD_KEYS,
    RECORD_TABLES,
    STEP_GROUPS,
    TURN_ADVANTAGES,
)
from obs.ingest.trackers.base import RunHistory, safe_run_id

RULE = "─" * 80
EQUALS = "=" * 80

# --------------------------------------------------------------------------- the trainer's blocks

# concise step-end summary .
EXAMPLE_CONCISE = """\
📍 Step 10/200
📊 Collecting 3 rollouts for 8 queries...
  Groups: 6/8 kept (2 filtered), 18/48 finished early
"""

# the turn-by-turn advantage table, 80-character rules.
EXAMPLE_TABLE = f"""\
{RULE}
📊 Turn-by-Turn Advantage Table:
{RULE}
Rollout | Turn  1 | Turn  2 | Turn  3 | Turn  4 |
{RULE}
    1  | +0.350 | +0.420 | +0.800 | +1.200 |
    2  | -0.200 | -0.150 | +0.300 | +0.850 |
    3  | +0.150 | +0.250 | -0.300 | -0.450 |
{RULE}
"""

# the verbose step-end group summary.
EXAMPLE_SUMMARY = f"""\
{RULE}
STEP PHASE 4: BACKPROPAGATION & OPTIMIZATION
{RULE}
✓ Grad norm (clipped): 0.8234
✓ Tokens trained: 12,345
✓ Total loss: 0.3456

📊 Group Summary:
  - Total groups: 8
  - Groups kept for training: 6
  - Groups filtered (low variance): 2
  - Rollouts that finished early (didn't exhaust turns): 18/48
  - Total rollout time: 45.3s
  - Total training time: 2.1s
  - Total tokens: 45,678
  - Trainable tokens: 12,345 (27.0%)
{RULE}
"""

# the eval block.
EXAMPLE_RUBRIC = """\
📊 Detailed Rubric Statistics:
   Attempted answers: 95/100 (95.0%)
   Found correct email: 87/100 (87.0%)
   Read correct email: 82/100 (82.0%)
   Repeated searches: 15 (total: 245, unique: 230)
   Avg turns (correct): 3.45 turns
   Avg turns (I don't know): 4.20 turns (count: 5)
   Avg search attempts: 2.45

💾 Eval stats saved to: outputs/grpo_masked/eval_logs/eval_step_0010.json
"""

# Lines 1-3 concise, 4-12 table (header 7, rows 9-11), 13-29 summary (fields 16-18,
# bullets 21-28), 30-39 eval block.
EXAMPLE_LOG = EXAMPLE_CONCISE + EXAMPLE_TABLE + EXAMPLE_SUMMARY + EXAMPLE_RUBRIC

EXAMPLE_STATS_FILE = "outputs/grpo_masked/eval_logs/eval_step_0010.json"
EXAMPLE_GROUPS_ROW = {
    "step": 10,
    "max_steps": 200,
    "rollouts_per_query": 3,
    "queries": 8,
    "groups_total": 8,
    "groups_kept": 6,
    "groups_filtered": 2,
    "finished_early": 18,
    "rollouts": 48,
    "grad_norm": 0.8234,
    "total_loss": 0.3456,
    "rollout_time_s": 45.3,
    "training_time_s": 2.1,
    "total_tokens": 45678,
    "trainable_tokens": 12345,
}
EXAMPLE_TABLE_ROWS = [
    {"sample_idx": 0, "turn": 1, "advantage": 0.35, "source_line": 9},
    {"sample_idx": 0, "turn": 2, "advantage": 0.42, "source_line": 9},
    {"sample_idx": 0, "turn": 3, "advantage": 0.8, "source_line": 9},
    {"sample_idx": 0, "turn": 4, "advantage": 1.2, "source_line": 9},
    {"sample_idx": 1, "turn": 1, "advantage": -0.2, "source_line": 10},
    {"sample_idx": 1, "turn": 2, "advantage": -0.15, "source_line": 10},
    {"sample_idx": 1, "turn": 3, "advantage": 0.3, "source_line": 10},
    {"sample_idx": 1, "turn": 4, "advantage": 0.85, "source_line": 10},
    {"sample_idx": 2, "turn": 1, "advantage": 0.15, "source_line": 11},
    {"sample_idx": 2, "turn": 2, "advantage": 0.25, "source_line": 11},
    {"sample_idx": 2, "turn": 3, "advantage": -0.3, "source_line": 11},
    {"sample_idx": 2, "turn": 4, "advantage": -0.45, "source_line": 11},
]
EXAMPLE_RUBRIC_ROW = {
    "step": 10,
    "is_baseline": False,
    "attempted_answer": 95,
    "total_samples": 100,
    "found_correct_email": 87,
    "read_correct_email": 82,
    "total_repeated_searches": 15,
    "total_searches": 245,
    "total_unique_searches": 230,
    "avg_turns_correct": 3.45,
    "avg_turns_idk": 4.2,
    "num_idk": 5,
    "avg_search_attempts": 2.45,
    "extra": json.dumps({"stats_file": EXAMPLE_STATS_FILE}),
}
EXAMPLE_RECORDS = {
    (STEP_GROUPS, (10,)): (2, [EXAMPLE_GROUPS_ROW]),
    (TURN_ADVANTAGES, (10, "table1")): (
        7,
        [{"step": 10, "group_id": "table1", **row} for row in EXAMPLE_TABLE_ROWS],
    ),
    (EVAL_STEPS, (10, False)): (30, [EXAMPLE_RUBRIC_ROW]),
}
UNGROUPED_NOTE = (
    "turn-advantage tables with no 'GROUP g/G' line at their step: 1; they are named "
    "table1, table2, ... by their order within the step"
)

# The (ref) trainer's full eval block as printed, then the copy it logs.
REF_EVAL_PRINTED = f"""\

{EQUALS}
📊 EVALUATION RESULTS
{EQUALS}
🧩 Checkpoint: 10
📈 Accuracy: 85.00% (85/100)
🤝 Beat control: 78.0% of queries

⏱️  Time taken: 234.5s (2.35s per query)
💰 Average reward: 0.723 (std: 0.312)
   Median reward: 0.850
   Range: [-1.200, 1.500]

{EXAMPLE_RUBRIC}{EQUALS}

"""
REF_EVAL_LOGGED = f"""\
INFO:grpo.trainer:
{RULE}
INFO:grpo.trainer:📊 EVALUATION RESULTS
INFO:grpo.trainer:{RULE}
INFO:grpo.trainer:Checkpoint: 10
INFO:grpo.trainer:Accuracy: 85.00% (85/100)
INFO:grpo.trainer:Time taken: 234.5s (2.35s per query)
INFO:grpo.trainer:Average reward: 0.723
INFO:grpo.trainer:Median reward: 0.850
INFO:grpo.trainer:Reward range: [-1.200, 1.500]
INFO:grpo.trainer:Beat control: 78.0% (Δavg=0.120)
INFO:grpo.trainer:Detailed Rubric Statistics:
INFO:grpo.trainer:  - Attempted answers: 95/100 (95.0%)
INFO:grpo.trainer:  - Found correct email: 87/100 (87.0%)
INFO:grpo.trainer:  - Read correct email: 82/100 (82.0%)
INFO:grpo.trainer:  - Repeated searches: 15 (total: 245, unique: 230)
INFO:grpo.trainer:  - Avg turns (correct): 3.45 turns
INFO:grpo.trainer:  - Avg turns (I don't know): 4.20 turns (count: 5)
INFO:grpo.trainer:  - Avg search attempts: 2.45
INFO:grpo.trainer:💾 Eval stats saved to: {EXAMPLE_STATS_FILE}
INFO:grpo.trainer:{RULE}
INFO:grpo.trainer:
"""
REF_EVAL_FIELDS = {
    "accuracy": 0.85,
    "correct_answers": 85,
    "beat_rate": 0.78,
    "has_baseline": True,
    "eval_time": 234.5,
    "avg_reward": 0.723,
    "median_reward": 0.85,
    "min_reward": -1.2,
    "max_reward": 1.5,
}

# --------------------------------------------------------------------------- helpers


def write(tmp_path: Path, content: str | bytes, name: str = "agent.log") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_bytes(content.encode("utf-8"))
    else:
        path.write_bytes(content)
    return path


def parse(path: Path) -> RunHistory:
    histories = module.read(module.FORMAT, path, path)
    assert len(histories) == 1
    return histories[0]


def records(history: RunHistory) -> dict[tuple[str, tuple[Any, ...]], tuple[int, list[dict]]]:
    """The history's records by (table, key): (line, rows); a key appears once."""
    out: dict[tuple[str, tuple[Any, ...]], tuple[int, list[dict]]] = {}
    for block in history.records:
        key = tuple(block.rows[0][k] for k in RECORD_KEYS[block.table])
        assert (block.table, key) not in out, f"two blocks of {block.table} {key}"
        assert block.file == history.origin
        out[(block.table, key)] = (block.line, block.rows)
    return out


def rejects(history: RunHistory) -> list[tuple[int, str, str]]:
    return [(r.line, r.table, r.reason) for r in history.rejects]


def table(rule: str, header: str, *rows: str) -> str:
    return "\n".join([header, rule, *rows, rule]) + "\n"


def advantages(step: int, group: str, groups: int | None, *cells: tuple) -> list[dict]:
    """Expected turn rows: cells are (sample_idx, turn, advantage, line)."""
    key: dict[str, Any] = {"step": step, "group_id": group}
    if groups is not None:
        key["groups_in_step"] = groups
    return [
        {**key, "sample_idx": s, "turn": t, "advantage": a, "source_line": n}
        for s, t, a, n in cells
    ]


def prefixed(text: str, prefix: str, every: int = 1, tail: str = "") -> str:
    lines = text.split("\n")[:-1]
    return "".join(
        (prefix + line + (tail if line else "") if i % every == 0 else line) + "\n"
        for i, line in enumerate(lines)
    )


EMOJI = re.compile("[\U0001f300-\U0001faff\u2300-\u23ff\u2600-\u27bf\ufe0f]")


# --------------------------------------------------------------------------- the trainer's blocks


def test_trainer_log_example_blocks_exact(tmp_path: Path) -> None:
    history = parse(write(tmp_path, EXAMPLE_LOG))
    assert records(history) == EXAMPLE_RECORDS
    assert history.rejects == []
    assert history.notes == [UNGROUPED_NOTE]
    assert history.truncated is False
    assert (history.source, history.run_id, history.name) == ("trainer-log", "agent", "agent")


def test_trainer_log_ref_eval_block(tmp_path: Path) -> None:
    # Line 1 sets step 10; the printed block's title is line 4.
    history = parse(write(tmp_path, "📍 Step 10/200\n" + REF_EVAL_PRINTED))
    expected = {**EXAMPLE_RUBRIC_ROW, **REF_EVAL_FIELDS, "std_reward": 0.312}
    assert records(history) == {(EVAL_STEPS, (10, False)): (4, [expected])}
    assert history.notes == []


def test_trainer_log_ref_eval_logged_copy(tmp_path: Path) -> None:
    history = parse(write(tmp_path, REF_EVAL_LOGGED))
    extra = {"beat_control_avg_delta": 0.12, "stats_file": EXAMPLE_STATS_FILE}
    expected = {**EXAMPLE_RUBRIC_ROW, **REF_EVAL_FIELDS, "extra": json.dumps(extra, sort_keys=True)}
    assert records(history) == {(EVAL_STEPS, (10, False)): (3, [expected])}


def test_trainer_log_eval_printed_and_logged_copies_are_one_record(tmp_path: Path) -> None:
    # The trainer prints the block and logs a copy: std (only printed) and the
    # delta (only logged) both stay; the record starts at the printed block.
    history = parse(write(tmp_path, "📍 Step 10/200\n" + REF_EVAL_PRINTED + REF_EVAL_LOGGED))
    extra = {"beat_control_avg_delta": 0.12, "stats_file": EXAMPLE_STATS_FILE}
    expected = {
        **EXAMPLE_RUBRIC_ROW,
        **REF_EVAL_FIELDS,
        "std_reward": 0.312,
        "extra": json.dumps(extra, sort_keys=True),
    }
    assert records(history) == {(EVAL_STEPS, (10, False)): (4, [expected])}


PREFIXES = {
    "logging": ("INFO:grpo.trainer:", 1, ""),
    "asctime": ("2024-11-20 10:00:01,234 - grpo.trainer - INFO - ", 1, ""),
    "loguru": ("2024-11-20 10:00:01.234 | INFO     | grpo.trainer:train:120 - ", 1, ""),
    "bracketed": ("[2024-11-20 10:00:01,234] INFO ", 1, ""),
    "rich": ("[11/20/24 10:00:01] INFO     ", 1, ""),
    "rich-with-path": ("[11/20/24 10:00:01] INFO     ", 1, "          trainer.py:120"),
    "rich-time-left-out": (" " * 20 + "INFO     ", 1, ""),
    "coloured": ("\x1b[32mINFO\x1b[0m:grpo.trainer:\x1b[1m", 1, "\x1b[0m"),
    "every-other-line": ("INFO:grpo.trainer:", 2, ""),
}


@pytest.mark.parametrize("style", PREFIXES)
def test_trainer_log_example_blocks_with_logging_prefix(tmp_path: Path, style: str) -> None:
    prefix, every, tail = PREFIXES[style]
    history = parse(write(tmp_path, prefixed(EXAMPLE_LOG, prefix, every, tail)))
    assert records(history) == EXAMPLE_RECORDS
    assert history.rejects == []


@pytest.mark.parametrize("replacement", ["", "?", "\ufffd"])
def test_trainer_log_example_blocks_without_emoji(tmp_path: Path, replacement: str) -> None:
    text = EMOJI.sub(replacement, EXAMPLE_LOG)
    assert "📍" not in text and "✓" not in text and "Step 10/200" in text
    history = parse(write(tmp_path, text))
    assert records(history) == EXAMPLE_RECORDS


def test_trainer_log_bom_crlf_and_invalid_bytes(tmp_path: Path) -> None:
    data = EXAMPLE_LOG.replace("\n", "\r\n").encode()
    data = data.replace("📍".encode(), b"\xf0\x9f\x93")  # the emoji cut short
    data = data.replace(b"STEP PHASE 4", b"STEP \xff\xfe PHASE 4")
    history = parse(write(tmp_path, b"\xef\xbb\xbf" + data))
    assert records(history) == EXAMPLE_RECORDS
    assert history.rejects == []


def test_trainer_log_bom_before_the_first_step_line(tmp_path: Path) -> None:
    history = parse(write(tmp_path, b"\xef\xbb\xbf" + EXAMPLE_CONCISE.encode()))
    assert records(history)[(STEP_GROUPS, (10,))][1][0]["step"] == 10


@pytest.mark.parametrize(
    ("total", "tokens", "trained", "expected"),
    [
        ("45,678", "12,345", "12,345", (45678, 12345)),
        ("45678", "12345", "12345", (45678, 12345)),
        ("1,045,678", "112,345", "112345", (1045678, 112345)),
    ],
)
def test_trainer_log_thousands_separators(
    tmp_path: Path, total: str, tokens: str, trained: str, expected: tuple[int, int]
) -> None:
    text = (
        EXAMPLE_SUMMARY.replace("Total tokens: 45,678", f"Total tokens: {total}")
        .replace("Trainable tokens: 12,345", f"Trainable tokens: {tokens}")
        .replace("Tokens trained: 12,345", f"Tokens trained: {trained}")
    )
    history = parse(write(tmp_path, "📍 Step 4/9\n" + text))
    [row] = records(history)[(STEP_GROUPS, (4,))][1]
    assert (row["total_tokens"], row["trainable_tokens"]) == expected


def test_trainer_log_tokens_trained_without_group_summary(tmp_path: Path) -> None:
    # (ref) prints "Tokens trained" without a separator; with no Group Summary it
    # is the step's trainable tokens. Line 2 is the record's first.
    text = (
        "📍 Step 4/9\n✓ Grad norm (clipped): 1.5000\n✓ Tokens trained: 12345\n✓ Total loss: nan\n"
    )
    history = parse(write(tmp_path, text))
    [(line, [row])] = records(history).values()
    assert line == 2
    assert math.isnan(row.pop("total_loss"))  # a diverging loss is information
    assert row == {"step": 4, "max_steps": 9, "grad_norm": 1.5, "trainable_tokens": 12345}


def test_trainer_log_concise_and_verbose_summaries_alone(tmp_path: Path) -> None:
    concise = parse(write(tmp_path, EXAMPLE_CONCISE, "concise.log"))
    assert records(concise) == {
        (STEP_GROUPS, (10,)): (
            2,
            [
                {
                    "step": 10,
                    "max_steps": 200,
                    "rollouts_per_query": 3,
                    "queries": 8,
                    "groups_kept": 6,
                    "groups_total": 8,
                    "groups_filtered": 2,
                    "finished_early": 18,
                    "rollouts": 48,
                }
            ],
        )
    }
    verbose = parse(write(tmp_path, "📍 Step 10/200\n" + EXAMPLE_SUMMARY, "verbose.log"))
    expected = {
        k: v for k, v in EXAMPLE_GROUPS_ROW.items() if k not in {"rollouts_per_query", "queries"}
    }
    assert records(verbose) == {(STEP_GROUPS, (10,)): (5, [expected])}


def test_trainer_log_all_groups_filtered(tmp_path: Path) -> None:
    text = (
        "INFO:grpo.trainer:📍 Step 3/10\n"
        "INFO:grpo.trainer:📊 Collecting 4 rollouts for 2 queries...\n"
        "WARNING:grpo.trainer:⚠️  All groups filtered out! Skipping training step.\n"
    )
    history = parse(write(tmp_path, text))
    assert records(history) == {
        (STEP_GROUPS, (3,)): (
            2,
            [
                {
                    "step": 3,
                    "max_steps": 10,
                    "rollouts_per_query": 4,
                    "queries": 2,
                    "all_filtered": True,
                    "groups_kept": 0,
                }
            ],
        )
    }


# --------------------------------------------------------------------------- tables


def test_trainer_log_ragged_table_stores_only_present_turns(tmp_path: Path) -> None:
    header = "Rollout | Turn  1 | Turn  2 | Turn  3 |"
    text = "📍 Step 2/5\n" + table(
        "─" * len(header),  # (ref) rules the header by its own length
        header,
        "    1  | +0.350 |    ---  |    ---  |",
        "    2  | -0.200 | -0.150 | +1.000 |",
        "    3  |    ---  |    ---  |    ---  |",
        "    4  | +0.000 | -0.450 |",  # (a row cut short: its last turn absent)
    )
    history = parse(write(tmp_path, text))
    assert records(history) == {
        (TURN_ADVANTAGES, (2, "table1")): (
            2,
            advantages(
                2,
                "table1",
                None,
                (0, 1, 0.35, 4),
                (1, 1, -0.2, 5),
                (1, 2, -0.15, 5),
                (1, 3, 1.0, 5),
                (3, 1, 0.0, 7),
                (3, 2, -0.45, 7),
            ),
        )
    }


def group_table(group: str, value: str) -> str:
    return f"📊 GROUP {group} COMPLETED\n" + table(
        RULE, "Rollout | Turn  1 |", f"    1  | {value} |"
    )


def test_trainer_log_group_context(tmp_path: Path) -> None:
    text = (
        "📍 Step 7/20\n"  # 1
        f"{EQUALS}\n"  # 2
        + group_table("2/8", "+0.100")  # 3 group line, 4 header, 6 row
        + group_table("3/8", "-0.200")  # 8, 9, 11
        + "📍 Step 8/20\n"  # 13: a new step forgets the group
        + table(RULE, "Rollout | Turn  1 |", "    1  | +0.300 |")  # 14, 16
        + table(RULE, "Rollout | Turn  1 |", "    1  | +0.400 |")  # 18, 20
        + "📍 Step 9/20\n"  # 22: the count starts again
        + table(RULE, "Rollout | Turn  1 |", "    1  | +0.500 |")  # 23, 25
    )
    history = parse(write(tmp_path, text))
    assert records(history) == {
        (TURN_ADVANTAGES, (7, "2")): (4, advantages(7, "2", 8, (0, 1, 0.1, 6))),
        (TURN_ADVANTAGES, (7, "3")): (9, advantages(7, "3", 8, (0, 1, -0.2, 11))),
        (TURN_ADVANTAGES, (8, "table1")): (14, advantages(8, "table1", None, (0, 1, 0.3, 16))),
        (TURN_ADVANTAGES, (8, "table2")): (18, advantages(8, "table2", None, (0, 1, 0.4, 20))),
        (TURN_ADVANTAGES, (9, "table1")): (23, advantages(9, "table1", None, (0, 1, 0.5, 25))),
    }
    assert history.notes == [UNGROUPED_NOTE.replace(": 1;", ": 3;")]


def test_trainer_log_table_ends_at_a_non_row_line(tmp_path: Path) -> None:
    # No closing rule: the blank line ends the table, the next one starts at once.
    text = (
        "📍 Step 1/2\n"
        "Rollout | Turn  1 |\n"  # 2
        "    1  | +0.100 |\n"  # 3
        "\n"
        "Rollout | Turn  1 |\n"  # 5
        "    1  | +0.200 |\n"  # 6
        "📍 Step 1/2 (50.0%) | ETA: 0:00:10\n"  # 7: the step's end line ends it
    )
    history = parse(write(tmp_path, text))
    assert records(history) == {
        (TURN_ADVANTAGES, (1, "table1")): (2, advantages(1, "table1", None, (0, 1, 0.1, 3))),
        (TURN_ADVANTAGES, (1, "table2")): (5, advantages(1, "table2", None, (0, 1, 0.2, 6))),
    }
    assert history.truncated is False


def test_trainer_log_tables_of_eval_rollouts_are_left_out(tmp_path: Path) -> None:
    text = (
        "📍 Step 10/200\n"
        "🎲 ROLLOUT COLLECTION (TRAIN Step 10)\n"  # 2
        + group_table("1/1", "+0.100")  # 3, 4, 6
        + "✅ ROLLOUT COLLECTION COMPLETE\n"  # 8
        "🎲 ROLLOUT COLLECTION (EVAL Step 10)\n"
        + group_table("1/1", "+0.900")
        + "✅ ROLLOUT COLLECTION COMPLETE\n"
    )
    history = parse(write(tmp_path, text))
    assert records(history) == {
        (TURN_ADVANTAGES, (10, "1")): (4, advantages(10, "1", 1, (0, 1, 0.1, 6))),
    }
    assert history.notes == [
        "turn-advantage tables printed while collecting eval rollouts: 1; they belong to "
        "no training step and are left out"
    ]


BAD_ROWS = [
    ("    2  | +0.3x0 |    ---  |", "cell '+0.3x0' (turn 1) is not a number or '---'"),
    ("    2  |        | -0.100 |", "cell '' (turn 1) is not a number or '---'"),
    ("    2  | +0.300 | -0.100 | +0.200 |", "3 cells, but the header has 2 turns"),
    ("    1  | +0.300 |    ---  |", "rollout 1 is printed again (first at line 5)"),
    ("    x  | +0.300 |    ---  |", "rollout 'x' is not a rollout number"),
]


@pytest.mark.parametrize(("bad", "what"), BAD_ROWS)
def test_trainer_log_bad_row_rejects_only_its_table(tmp_path: Path, bad: str, what: str) -> None:
    header = "Rollout | Turn  1 | Turn  2 |"
    text = (
        "📍 Step 5/100\n"  # 1
        "📊 GROUP 1/2 COMPLETED\n"  # 2
        + table(
            "─" * len(header),
            header,  # 3
            "    1  | +0.100 | -0.200 |",  # 5
            bad,  # 6
            "    3  | +0.500 | +0.600 |",  # 7
        )
        + group_table("2/2", "+0.700")  # 9 group, 10 header, 12 row
        + "  Groups: 1/2 kept (1 filtered), 0/6 finished early\n"  # 14
    )
    history = parse(write(tmp_path, text))
    assert rejects(history) == [
        (3, TURN_ADVANTAGES, f"turn-advantage table: row at line 6: {what}")
    ]
    assert history.rejects[0].raw == f"{header}\n{bad.strip()}"
    assert records(history) == {
        (TURN_ADVANTAGES, (5, "2")): (10, advantages(5, "2", 2, (0, 1, 0.7, 12))),
        (STEP_GROUPS, (5,)): (
            14,
            [
                {
                    "step": 5,
                    "max_steps": 100,
                    "groups_kept": 1,
                    "groups_total": 2,
                    "groups_filtered": 1,
                    "finished_early": 0,
                    "rollouts": 6,
                }
            ],
        ),
    }


def test_trainer_log_table_and_summary_before_any_step_are_rejected(tmp_path: Path) -> None:
    text = (
        "📊 Collecting 3 rollouts for 8 queries...\n"  # 1
        "  Groups: 6/8 kept (2 filtered), 18/48 finished early\n"  # 2
        + table(RULE, "Rollout | Turn  1 |", "    1  | +0.100 |")  # 3
        + "📍 Step 1/10\n"  # 7
        "  Groups: 1/2 kept (1 filtered), 0/6 finished early\n"  # 8
    )
    history = parse(write(tmp_path, text))
    assert sorted(rejects(history)) == [
        (1, STEP_GROUPS, "no 'Step N' line before it"),
        (3, TURN_ADVANTAGES, "turn-advantage table with no 'Step N' line before it"),
    ]
    assert list(records(history)) == [(STEP_GROUPS, (1,))]


def test_trainer_log_malformed_number_rejects_its_record(tmp_path: Path) -> None:
    long = "✓ Total loss: 0.34x" + "9" * 100
    text = (
        "📍 Step 1/10\n"
        "📊 Collecting 3 rollouts for 8 queries...\n"
        "INFO:grpo.trainer:  Groups: x/8 kept (2 filtered), 18/48 finished early\n"  # 3
        "📍 Step 2/10\n"
        "  Groups: 6/8 kept (2 filtered), 18/48 finished early\n"  # 5
        "📍 Step 3/10\n"
        f"{long}\n"  # 7
        "📍 Step 4/10\n"
        "📊 Detailed Rubric Statistics:\n"  # 9
        "   Attempted answers: 95/100 (95.0%)\n"
        "   Avg search attempts: two\n"  # 11
        "\n"
        "💾 Eval stats saved to: outputs/eval_logs/eval_step_0004.json\n"
        "📍 Step 5/10\n"
        "  Groups: 5/8 kept (3 filtered), 10/48 finished early\n"  # 15
    )
    history = parse(write(tmp_path, text))
    assert rejects(history) == [
        (
            3,
            STEP_GROUPS,
            "malformed number in 'Groups: x/8 kept (2 filtered), 18/48 finished early'",
        ),
        (7, STEP_GROUPS, "malformed number in '" + long[:80] + "...'"),
        (11, EVAL_STEPS, "malformed number in 'Avg search attempts: two'"),
    ]
    assert history.rejects[0].raw == (
        "INFO:grpo.trainer:  Groups: x/8 kept (2 filtered), 18/48 finished early"
    )
    assert sorted(records(history)) == [(STEP_GROUPS, (2,)), (STEP_GROUPS, (5,))]


# --------------------------------------------------------------------------- steps


def two_groups(first: str, second: str) -> str:
    return group_table("1/2", first) + group_table("2/2", second)


def test_trainer_log_restarted_step_keeps_its_last_run(tmp_path: Path) -> None:
    text = (
        "📍 Step 1/3\n"  # 1
        "  Groups: 2/2 kept (0 filtered), 2/6 finished early\n"  # 2
        + two_groups("+0.100", "+0.200")  # 3-12: headers 4 and 9, rows 6 and 11
        + "📍 Step 2/3\n"  # 13
        "  Groups: 2/2 kept (0 filtered), 3/6 finished early\n"  # 14
        + two_groups("+0.300", "+0.400")  # 15-24
        + "RuntimeError: CUDA out of memory\n"  # 25
        "🔄 Resuming training from step 1\n"  # 26
        "📍 Step 2/3\n"  # 27
        "  Groups: 1/2 kept (1 filtered), 4/6 finished early\n"  # 28
         + group_table("1/2", "-0.300")  # 29 group, 30 header, 32 row
    )
    history = parse(write(tmp_path, text))
    found = records(history)
    assert found == {
        (STEP_GROUPS, (1,)): (
            2,
            [
                {
                    "step": 1,
                    "max_steps": 3,
                    "groups_kept": 2,
                    "groups_total": 2,
                    "groups_filtered": 0,
                    "finished_early": 2,
                    "rollouts": 6,
                }
            ],
        ),
        (TURN_ADVANTAGES, (1, "1")): (4, advantages(1, "1", 2, (0, 1, 0.1, 6))),
        (TURN_ADVANTAGES, (1, "2")): (9, advantages(1, "2", 2, (0, 1, 0.2, 11))),
        (STEP_GROUPS, (2,)): (
            28,
            [
                {
                    "step": 2,
                    "max_steps": 3,
                    "groups_kept": 1,
                    "groups_total": 2,
                    "groups_filtered": 1,
                    "finished_early": 4,
                    "rollouts": 6,
                }
            ],
        ),
        (TURN_ADVANTAGES, (2, "1")): (30, advantages(2, "1", 2, (0, 1, -0.3, 32))),
    }
    assert history.notes == [
        "steps that start more than once (a restarted trainer?): 2; the records of each "
        "one's last start are kept"
    ]


def test_trainer_log_step_end_line_continues_its_step(tmp_path: Path) -> None:
    # (ref) non-verbose: "Step N/M" starts the step and "Step N/M (p%) | ETA" ends
    # it; verbose: "STEP N" starts it. Neither end line is a restart.
    text = (
        "INFO:grpo.trainer:\n"  # 1
        "📍 Step 10/200\n"  # 2
        "INFO:grpo.trainer:📊 Collecting 3 rollouts for 8 queries...\n"  # 3
        "INFO:grpo.trainer:  Groups: 6/8 kept (2 filtered), 18/48 finished early\n"  # 4
        "INFO:grpo.trainer:\n"
        f"{RULE}\n"
        "INFO:grpo.trainer:📍 Step 10/200 (5.0%) | ETA: 0:09:30\n"  # 7
        f"INFO:grpo.trainer:{RULE}\n"
        "INFO:grpo.trainer:⏱️  Timing:\n"
        "INFO:grpo.trainer:   Step time: 45.3s (rollout: 43.1s, training: 2.1s)\n"
        "INFO:grpo.trainer:\n"
        f"{EQUALS}\n"  # 12
        "INFO:grpo.trainer:📍 STEP 11\n"  # 13
        f"INFO:grpo.trainer:{EQUALS}\n"
        + group_table("1/8", "+0.250")  # 15 group, 16 header, 18 row
        + "✓ Grad norm (clipped): 0.5000\n"  # 20
        "INFO:grpo.trainer:📍 Step 11/200 (5.5%) | ETA: 0:09:00\n"
    )
    history = parse(write(tmp_path, text))
    assert records(history) == {
        (STEP_GROUPS, (10,)): (
            3,
            [
                {
                    "step": 10,
                    "max_steps": 200,
                    "rollouts_per_query": 3,
                    "queries": 8,
                    "groups_kept": 6,
                    "groups_total": 8,
                    "groups_filtered": 2,
                    "finished_early": 18,
                    "rollouts": 48,
                }
            ],
        ),
        (TURN_ADVANTAGES, (11, "1")): (16, advantages(11, "1", 8, (0, 1, 0.25, 18))),
        (STEP_GROUPS, (11,)): (20, [{"step": 11, "max_steps": 200, "grad_norm": 0.5}]),
    }
    assert history.notes == []


def test_trainer_log_lines_that_only_look_like_its_blocks(tmp_path: Path) -> None:
    # Other (ref) printouts share words with the blocks: a setup script's "Step 1/3:",
    # the phase banners, the per-step timing, the filtering and token-mask summaries
    # (whose "Total tokens"/"Trainable tokens" are one trajectory's), the step-end
    # "Rewards" range and a group's statistics.
    text = (
        "Step 1/3: downloading the model\n"  # 1
        "📍 Step 3/10\n"  # 2
        "STEP PHASE 4: BACKPROPAGATION & OPTIMIZATION\n"
        "   Step time: 45.3s\n"
        "Query Group 1/8: ✅ KEPT\n"
        "📊 Mask Statistics:\n"
        "  Total tokens: 999\n"
        "  Trainable tokens: 111 (11.1%)\n"
        "📊 Filtering Summary:\n"
        "  Total groups: 99\n"
        "  Kept: 1 (1.0%)\n"
        "💰 Rewards:\n"
        "   Range: [-1.000, 1.000]\n"
        "📈 Group Statistics:\n"
        "   Correct answers: 2/4 (50.0%)\n"
        "  Groups: 1/2 kept (1 filtered), 0/6 finished early\n"  # 16
    )
    history = parse(write(tmp_path, text))
    assert records(history) == {
        (STEP_GROUPS, (3,)): (
            16,
            [
                {
                    "step": 3,
                    "max_steps": 10,
                    "groups_kept": 1,
                    "groups_total": 2,
                    "groups_filtered": 1,
                    "finished_early": 0,
                    "rollouts": 6,
                }
            ],
        )
    }
    assert history.rejects == []
    assert history.notes == []


# --------------------------------------------------------------------------- eval step


def eval_block(checkpoint: int | None, saved: str | None) -> str:
    lines = [EQUALS, "📊 EVALUATION RESULTS", EQUALS]
    if checkpoint is not None:
        lines.append(f"🧩 Checkpoint: {checkpoint}")
    lines += ["📈 Accuracy: 33.33% (1/3)", "⏱️  Time taken: 12 seconds", ""]
    lines += ["📊 Detailed Rubric Statistics:", "   Attempted answers: 2/3 (66.7%)"]
    if saved is not None:
        lines += ["", f"💾 Eval stats saved to: {saved}"]
    # Without the saved-to line the block ends at the first line that is not the eval's.
    return "\n".join([*lines, EQUALS, "✨ New best accuracy: 33.33% (+33.33%)"]) + "\n"


@pytest.mark.parametrize(
    ("context", "checkpoint", "saved", "step"),
    [
        ("📍 Step 20/200\n", 30, "out/eval_logs/eval_step_0010.json", 30),
        ("📍 Step 20/200\n", None, "out/eval_logs/eval_step_0010.json", 10),
        ("📍 Step 20/200\n", None, "out/eval_logs/eval_step_12345.json", 12345),
        ("📍 Step 20/200\n", None, None, 20),
        ("", 30, None, 30),
        ("", None, "out/eval_logs/eval_step_0010.json", 10),
    ],
)
def test_trainer_log_eval_step_precedence(
    tmp_path: Path, context: str, checkpoint: int | None, saved: str | None, step: int
) -> None:
    history = parse(write(tmp_path, context + eval_block(checkpoint, saved)))
    line = 3 if context else 2  # the EVALUATION RESULTS line
    row = {
        "step": step,
        "is_baseline": False,
        "accuracy": 1 / 3,
        "correct_answers": 1,
        "total_samples": 3,
        "eval_time": 12.0,
        "attempted_answer": 2,
        "extra": json.dumps({"stats_file": saved}) if saved else None,
    }
    assert records(history) == {(EVAL_STEPS, (step, False)): (line, [row])}
    assert history.rejects == []


def test_trainer_log_eval_with_no_step_is_rejected(tmp_path: Path) -> None:
    history = parse(write(tmp_path, "\n" + eval_block(None, None)))
    assert rejects(history) == [(3, EVAL_STEPS, "eval statistics with no step")]
    assert history.records == []


# --------------------------------------------------------------------------- truncation


def test_trainer_log_ending_inside_a_table_waits_for_it(tmp_path: Path) -> None:
    text = (
        "📍 Step 1/10\n"
        "  Groups: 1/2 kept (1 filtered), 0/6 finished early\n"
        "📊 GROUP 1/2 COMPLETED\n"
        "Rollout | Turn  1 | Turn  2 |\n"  # 4
        f"{RULE}\n"
        "    1  | +0.100 | +0.200 |\n"  # 6
    )
    path = write(tmp_path, text)
    history = parse(path)
    assert list(records(history)) == [(STEP_GROUPS, (1,))]
    assert history.truncated is True
    assert history.notes == [
        "the log ends inside a block still being written; it lands once complete"
    ]
    with path.open("a") as handle:
        handle.write("    2  | -0.100 |    ---  |\n" + RULE + "\n")
    history = parse(path)
    assert records(history)[(TURN_ADVANTAGES, (1, "1"))] == (
        4,
        advantages(1, "1", 2, (0, 1, 0.1, 6), (0, 2, 0.2, 6), (1, 1, -0.1, 7)),
    )
    assert history.truncated is False
    assert history.notes == []


def test_trainer_log_ending_inside_an_eval_block_waits_for_it(tmp_path: Path) -> None:
    text = "📍 Step 10/200\n" + EXAMPLE_RUBRIC.split("\n\n")[0] + "\n"
    history = parse(write(tmp_path, text))
    assert history.records == []
    assert history.truncated is True
    assert history.notes == [
        "the log ends inside a block still being written; it lands once complete"
    ]


def test_trainer_log_last_line_without_newline_is_left(tmp_path: Path) -> None:
    text = "📍 Step 1/10\n  Groups: 6/8 kept (2 filtered), 18/48 finished early"
    history = parse(write(tmp_path, text))
    assert history.records == []
    assert history.truncated is True
    assert history.notes == ["its last line is not complete yet; it lands once it is written"]
    # The same line cut inside a table: the table waits, one note.
    text = "📍 Step 1/10\nRollout | Turn  1 |\n" + RULE + "\n    1  | +0.1"
    history = parse(write(tmp_path, text))
    assert history.records == []
    assert history.notes == [
        "the log ends inside a block still being written; it lands once complete"
    ]


# --------------------------------------------------------------------------- the rows' shape


def test_trainer_log_rows_hold_only_their_tables_columns(tmp_path: Path) -> None:
    text = (
        EXAMPLE_LOG
        + REF_EVAL_PRINTED
        + REF_EVAL_LOGGED
        + "📍 Step 11/200\n"
        + group_table("1/8", "+0.5")
    )
    history = parse(write(tmp_path, text))
    assert {b.table for b in history.records} == {STEP_GROUPS, TURN_ADVANTAGES, EVAL_STEPS}
    python_type = {pa.int64(): int, pa.float64(): float, pa.bool_(): bool, pa.string(): str}
    for block in history.records:
        spec = RECORD_TABLES[block.table]
        types = {name: spec.schema.field(name).type for name in spec.names}
        keys = RECORD_KEYS[block.table]
        for row in block.rows:
            assert set(row) <= set(types) - {"source", "source_file", "record_hash"}
            assert tuple(row[k] for k in keys) == tuple(block.rows[0][k] for k in keys)
            for name, value in row.items():
                if value is not None:
                    assert type(value) is python_type[types[name]], (block.table, name, value)


@pytest.mark.parametrize("chunk", [1, 7, 64, 4096])
def test_trainer_log_lines_across_read_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    text = (
        prefixed(EXAMPLE_LOG, "INFO:grpo.trainer:", 2) + group_table("1/2", "x") + EXAMPLE_CONCISE
    )
    path = write(tmp_path, text.replace("\n", "\r\n"))
    whole = parse(path)
    monkeypatch.setattr(module, "CHUNK", chunk)
    pieces = parse(path)
    assert records(pieces) == records(whole)
    assert rejects(pieces) == rejects(whole) != []


def test_trainer_log_reads_large_logs_in_linear_time(tmp_path: Path) -> None:
    plain = (
        "    🔧 Turn 2: search_emails(keywords=['invoice', 'march']) → 5 results ❌ no reference\n"
        "    📊 Metrics: reward=0.850, turns=3, found_email=True, read_email=True\n"
        "2024-11-20 10:00:01,234 - httpx - INFO - HTTP Request: POST http://localhost:8000/v1\n"
    )
    path = tmp_path / "big.log"
    with path.open("w", encoding="utf-8") as handle:
        for step in range(1, 41):
            handle.write(f"📍 Step {step}/40\n" + group_table("1/1", "+0.100"))
            handle.write(plain * 3000)
        # Lines a backtracking pattern would choke on.
        handle.write("  Groups: " + "1" * 500_000 + "/" + "2" * 500_000 + " kept\n")
        handle.write("📍 Step " + "9" * 500_000 + "\n")
        handle.write("INFO:grpo.trainer:" + " " * 1_000_000 + "Step  trainer.py:1\n")
        handle.write("Rollout |" + " Turn  1 |" * 50_000 + "\n" + "    1  |" * 50_000 + "\n")
    started = time.perf_counter()
    history = parse(path)
    elapsed = time.perf_counter() - started
    assert len(history.records) == 40
    assert elapsed < 5, f"{path.stat().st_size / 2**20:.0f} MiB took {elapsed:.1f}s"


# --------------------------------------------------------------------------- finding and naming


@pytest.mark.parametrize(
    "marker",
    [
        "📊 Turn-by-Turn Advantage Table:",
        "INFO:grpo.trainer:\n📊 Group Summary:",
        "📊 Detailed Rubric Statistics:",
        "\x1b[32mINFO\x1b[0m:grpo.trainer:  \x1b[1mGroups:\x1b[0m 6/8 kept (2 filtered)",
        "2024-11-20 10:00:01,234 - grpo - INFO -   Groups: 6/8 kept (2 filtered), 1/2 ...",
    ],
)
def test_find_a_trainer_log(tmp_path: Path, marker: str) -> None:
    path = write(tmp_path, "Loading model...\n" * 1000 + marker + "\n", "run.txt")
    assert module.find(path) == [(module.FORMAT, path)]


def test_find_ignores_other_files_and_folders(tmp_path: Path) -> None:
    log = write(tmp_path, EXAMPLE_LOG, "logs/train.log")
    assert module.find(log.parent) == []
    assert module.find(tmp_path) == []
    assert module.find(write(tmp_path, "Step 10/200\nGroups: many\n", "notes.txt")) == []
    assert module.find(write(tmp_path, b"PAR1\x00\x00Group Summary:\x00", "x.parquet")) == []
    late = write(tmp_path, "x" * (4 << 20) + "\nGroup Summary:\n", "late.log")
    assert module.find(late) == []  # the marker is past the first 4 MiB
    assert module.find(tmp_path / "missing.log") == []
    assert module.stat_files(module.FORMAT, log) == [log]


@pytest.mark.parametrize(
    ("file", "root", "name"),
    [
        ("agent-1.log", "agent-1.log", "agent-1"),
        ("runs/agent-2/train.log", "runs", "agent-2"),
        ("runs/agent-3/stdout", "runs/agent-3/stdout", "agent-3"),
        ("runs/agent-4/nohup.out", "runs", "agent-4"),
        ("runs/exp/agent-5.log", "runs", "exp.agent-5"),
        ("runs/exp/b/Console.txt", "runs", "exp.b"),
    ],
)
def test_run_name(tmp_path: Path, file: str, root: str, name: str) -> None:
    path = write(tmp_path, EXAMPLE_CONCISE, file)
    assert module.run_name(path, tmp_path / root) == name
    [history] = module.read(module.FORMAT, path, tmp_path / root)
    assert (history.name, history.run_id) == (name, safe_run_id(name))
    assert (history.source, history.origin) == ("trainer-log", path)


# --------------------------------------------------------------------------- landing


def lake_counts(lake: Path) -> dict[str, int]:
    con = duckdb.connect()
    try:
        return {
            table: con.execute(
                "select count(*) from read_parquet(?, hive_partitioning = true)",
                [str(lake / table / "*" / "*" / "*.parquet")],
            ).fetchone()[0]
            for table in (STEP_GROUPS, TURN_ADVANTAGES, EVAL_STEPS)
        }
    finally:
        con.close()


def written(history: RunHistory) -> dict[str, int]:
    counts = dict.fromkeys((STEP_GROUPS, TURN_ADVANTAGES, EVAL_STEPS), 0)
    for block in history.records:
        counts[block.table] += len(block.rows)
    return counts


def test_trainer_log_lands_in_lake(tmp_path: Path) -> None:
    path = write(tmp_path, EXAMPLE_LOG + "📍 Step 11/200\n" + group_table("1/8", "-0.500"))
    lake = tmp_path / "lake"
    source = Source(module, module.FORMAT, path)

    first = land_histories([source], lake, root=path.parent, run_id="agent-1")
    expected = written(parse(path))
    assert expected == {STEP_GROUPS: 1, TURN_ADVANTAGES: 13, EVAL_STEPS: 1}
    assert [f.status for f in first.files] == ["landed"]
    assert first.rows_landed == 15
    assert lake_counts(lake) == expected

    con = duckdb.connect()
    landed = con.execute(
        "select step, group_id, sample_idx, turn, advantage, source, source_file, source_line "
        "from read_parquet(?, hive_partitioning = true) where step = 11",
        [str(lake / TURN_ADVANTAGES / "*" / "*" / "*.parquet")],
    ).fetchall()
    con.close()
    assert landed == [(11, "1", 0, 1, -0.5, "trainer-log", str(path.resolve()), 44)]

    again = land_histories([source], lake, root=path.parent, run_id="agent-1")
    assert [f.status for f in again.files] == ["unchanged"]
    assert again.rows_landed == 0
    assert lake_counts(lake) == expected

    with path.open("a", encoding="utf-8") as handle:
        handle.write(
            "📍 Step 12/200\n"
            + group_table("1/8", "+0.250")
            + "  Groups: 1/8 kept (7 filtered), 2/24 finished early\n"
        )
    grown = land_histories([source], lake, root=path.parent, run_id="agent-1")
    assert grown.rows_landed == 2  # step 12's table row and its group summary
    assert grown.records_landed == {STEP_GROUPS: 1, TURN_ADVANTAGES: 1}
    assert lake_counts(lake) == {STEP_GROUPS: 2, TURN_ADVANTAGES: 14, EVAL_STEPS: 1}
    assert lake_counts(lake) == written(parse(path))
