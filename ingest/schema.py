"""The lake's tables: one definition of every column, its type and its meaning.

Every parquet part under ``<lake>/<table>/run_id=<run>/ingested_at=<t>/`` follows
one of these schemas. ``run_id`` and ``ingested_at`` are not stored in the files:
they are Hive partitions (the run, and the moment the part was published), so
every engine that reads the lake with Hive partitioning gets them back.

``stg_rollouts`` and its yml list the same rollout columns; a unit test checks
that the three agree, so this module is the one place a column is added.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
from obs.core import lake_layout

ROLLOUTS = "rollouts"
REJECTS = "_rejects"
MANIFEST = "_manifest"

# Hive partition names (directories, not columns in the files).
RUN_PARTITION = lake_layout.RUN_PARTITION
TIME_PARTITION = lake_layout.TIME_PARTITION


@dataclass(frozen=True)
class Column:
    name: str
    type: pa.DataType
    description: str


@dataclass(frozen=True)
class TableSpec:
    """A lake table: its name and the columns every part of it carries."""

    name: str
    columns: tuple[Column, ...]

    @property
    def schema(self) -> pa.Schema:
        return pa.schema([(c.name, c.type) for c in self.columns])

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]


ROLLOUT_TABLE = TableSpec(
    ROLLOUTS,
    (
        Column(
            "iteration", pa.int64(), "training iteration (file name, step field or --iteration)"
        ),
        Column("prompt_hash", pa.string(), "first 16 hex chars of SHA-256 of the prompt"),
        Column("sample_idx", pa.int64(), "order within the run's (iteration, prompt) group"),
        Column("data_idx", pa.int64(), "a rollout table's problem index"),
        Column("prompt", pa.string(), "prompt text (input / prompt)"),
        Column("response", pa.string(), "response text (output / response / completion)"),
        Column("score", pa.float64(), "scalar reward (score / reward)"),
        Column("v_i", pa.float64(), "V_i reward component"),
        Column("s_i", pa.float64(), "S_i reward component"),
        Column("alpha_threshold", pa.float64(), "alpha threshold of the V_i/S_i reward"),
        Column("reward_case", pa.string(), "the reward's label for the case"),
        Column("prompt_strict_acc", pa.float64(), "1 when every instruction was followed"),
        Column("inst_strict_acc", pa.float64(), "share of instructions followed"),
        Column("num_instructions", pa.int64(), "instructions in the prompt"),
        Column("num_followed", pa.int64(), "instructions followed"),
        Column("format_score", pa.float64(), "format reward component"),
        Column("instruction_ids", pa.list_(pa.string()), "IFEval instruction ids"),
        Column("instruction_followed", pa.list_(pa.bool_()), "per-instruction flags"),
        Column("instruction_kwargs", pa.string(), "instruction arguments (JSON)"),
        Column("ground_truth", pa.string(), "ground truth (JSON)"),
        Column("rewards", pa.map_(pa.string(), pa.float64()), "per-function rewards"),
        Column("extra", pa.string(), "every other source field (JSON object)"),
        Column("source_file", pa.string(), "absolute path of the source file"),
        Column("source_line", pa.int64(), "1-based line or row in the source file"),
        Column("response_chars", pa.int64(), "characters in the response"),
        Column(
            "group_id",
            pa.string(),
            "the trainer's group of the rollout (verl's uid group, prime-rl's group.id, "
            "an agent's group_id)",
        ),
    ),
)

ROLLOUT_TOKENS = "rollout_tokens"

# What the trainer trained on, per token: one row per rollout whose source logs
# its token arrays (NeMo-RL's train_data_step{N}.jsonl, prime-rl's traces),
# keyed as its rollout is (iteration, prompt_hash, sample_idx), every array one
# element per token of the sequence (prompt and response, the padding after it
# dropped). Columns added later (reference_logprobs, policy_start, policy_end)
# read as null in the parts landed before them (lake_source).
ROLLOUT_TOKEN_TABLE = TableSpec(
    ROLLOUT_TOKENS,
    (
        Column("iteration", pa.int64(), "the rollout's iteration (its rollouts row's)"),
        Column("prompt_hash", pa.string(), "the rollout's prompt hash (its rollouts row's)"),
        Column("sample_idx", pa.int64(), "the rollout's sample_idx (its rollouts row's)"),
        Column("token_ids", pa.list_(pa.int64()), "token ids of the sequence, prompt included"),
        Column("loss_mask", pa.list_(pa.bool_()), "per token: trained on (a generated token)"),
        Column(
            "rollout_logprobs",
            pa.list_(pa.float64()),
            "per token: the rollout engine's logprob of the token (0 where it generated none)",
        ),
        Column(
            "trainer_logprobs",
            pa.list_(pa.float64()),
            "per token: the trainer's logprob of the token before the update (0 at position 1)",
        ),
        Column("advantages", pa.list_(pa.float64()), "per token: the advantage trained with"),
        Column("sample_loss_mask", pa.float64(), "the sample's loss weight (0: not trained on)"),
        Column("sequence_tokens", pa.int64(), "tokens of the sequence before padding"),
        Column(
            "reference_logprobs",
            pa.list_(pa.float64()),
            "per token: the reference model's logprob of the token (0 where it generated none)",
        ),
        Column("policy_start", pa.int64(), "the oldest policy version that generated the rollout"),
        Column("policy_end", pa.int64(), "the newest policy version that generated the rollout"),
        Column("source_file", pa.string(), "absolute path of the source file"),
        Column("source_line", pa.int64(), "1-based line in the source file"),
    ),
)

REJECT_TABLE = TableSpec(
    REJECTS,
    (
        Column("table_name", pa.string(), "the lake table the row was meant for"),
        Column("source_file", pa.string(), "absolute path of the source file"),
        Column("source_line", pa.int64(), "1-based line or row in the source file"),
        Column("reason", pa.string(), "why the row was rejected"),
        Column("raw", pa.string(), "the row as read (cut at 64 KiB)"),
    ),
)

MANIFEST_TABLE = TableSpec(
    MANIFEST,
    (
        Column("table_name", pa.string(), "lake table the file landed in"),
        Column("source_file", pa.string(), "absolute path of the source file"),
        Column("size_bytes", pa.int64(), "file size when read"),
        Column("mtime_ns", pa.int64(), "file modification time when read"),
        Column("content_hash", pa.string(), "SHA-1 of the content consumed so far"),
        Column("bytes_consumed", pa.int64(), "content bytes (decompressed) consumed so far"),
        Column("lines_consumed", pa.int64(), "lines (or rows) consumed so far"),
        Column("rows_landed", pa.int64(), "rows this entry landed"),
        Column("rows_rejected", pa.int64(), "rows this entry rejected"),
        Column("claimed_iteration", pa.int64(), "iteration the file's name claims"),
        Column("iteration_min", pa.int64(), "smallest iteration this entry landed"),
        Column("iteration_max", pa.int64(), "largest iteration this entry landed"),
        Column("parts", pa.list_(pa.string()), "parts this entry published (lake-relative)"),
        Column("status", pa.string(), "landed, truncated or damaged"),
        Column("recorded_at", pa.timestamp("us"), "when the entry was written (UTC)"),
    ),
)

# A multi-turn agent's rollout fields. They are no columns: they stay in a
# rollout's ``extra`` (the agentic marts read them there), checked at ingest.
# ``group_id`` is also copied into the rollout's ``group_id`` column.
TURN_LISTS = ("turn_advantages", "turn_rewards")  # one number per turn
AGENT_COUNTS = ("num_turns", "max_turns", "total_tokens", "trainable_tokens")
AGENT_ROLLOUT_FIELDS = frozenset({*TURN_LISTS, *AGENT_COUNTS, "exit_reason", "group_id"})

METRICS = "metrics"
RUNS = "runs"

METRIC_TABLE = TableSpec(
    METRICS,
    (
        Column("step", pa.int64(), "the tracker's step (W&B _step, TensorBoard step, ...)"),
        Column("key", pa.string(), "the metric's name as the tracker logged it"),
        Column("value", pa.float64(), "the value; NaN and Infinity are kept (a diverging loss)"),
        Column("wall_time", pa.float64(), "seconds since the epoch when logged, where known"),
        Column("source", pa.string(), "what wrote it: wandb, tensorboard, trl, mlflow, jsonl, ..."),
        Column("source_file", pa.string(), "absolute path of the file or run folder read"),
    ),
)

RUN_TABLE = TableSpec(
    RUNS,
    (
        Column("source", pa.string(), "what wrote it: wandb, tensorboard, trl, mlflow, jsonl, ..."),
        Column("project", pa.string(), "the tracker's project (MLflow: experiment name)"),
        Column("entity", pa.string(), "the W&B entity (team or user), where known"),
        Column("name", pa.string(), "the run's display name"),
        Column("state", pa.string(), "finished, running, crashed, failed, killed, ..."),
        Column("tags", pa.list_(pa.string()), "the run's tags"),
        Column("created_at", pa.timestamp("us"), "when the run started (UTC)"),
        Column("config", pa.string(), "the run's configuration (JSON object)"),
        Column("summary", pa.string(), "the run's summary values (JSON object)"),
        Column("artifacts", pa.string(), "artifacts the source lists (JSON array)"),
        Column("source_file", pa.string(), "absolute path of the file or run folder read"),
        Column("record_hash", pa.string(), "SHA-1 of the row's content (a changed run lands anew)"),
    ),
)

REWARD_SAMPLES = "reward_samples"

REWARD_SAMPLE_TABLE = TableSpec(
    REWARD_SAMPLES,
    (
        Column("step", pa.int64(), "the training step the monitor logged"),
        Column("reward_function", pa.string(), "the reward function's name"),
        Column("sample_idx", pa.int64(), "0-based position of the sample in the step's batch"),
        Column("reward", pa.float64(), "the function's reward for the sample"),
        Column("source", pa.string(), "what wrote it: reward-monitor"),
        Column("source_file", pa.string(), "absolute path of the file read"),
    ),
)

# ---------------------------------------------------------------- agentic runs
# Tables of keyed records (an eval step, a training step's group summary, one
# group's turn-by-turn advantage table). A record lands as a *block*: the rows
# sharing the table's key columns, with a hash of their content. A block the run
# already holds (same key, same hash) never lands again; one with the same key
# and other content lands anew, and the newest part wins in staging (per
# source: an eval file and the trainer's log of the same step both stay).

EVAL_STEPS = "eval_steps"
STEP_GROUPS = "step_groups"
TURN_ADVANTAGES = "turn_advantages"

# The eval statistics an agent's eval_step_*.json holds, with their types.
EVAL_COUNTS = (
    "correct_answers",
    "total_samples",
    "attempted_answer",
    "found_correct_email",
    "read_correct_email",
    "total_repeated_searches",
    "total_unique_searches",
    "total_searches",
    "num_idk",
)
EVAL_NUMBERS = (
    "accuracy",
    "avg_reward",
    "median_reward",
    "std_reward",
    "min_reward",
    "max_reward",
    "avg_turns_correct",
    "avg_turns_idk",
    "avg_search_attempts",
    "eval_time",
    "beat_rate",
)
EVAL_STATISTICS = (*EVAL_COUNTS, *EVAL_NUMBERS)

_RECORD_TAIL = (
    Column("source", pa.string(), "what wrote it: eval-logs, trainer-log"),
    Column("source_file", pa.string(), "absolute path of the file read"),
    Column("source_line", pa.int64(), "1-based line of the record in its file (1 for a JSON file)"),
    Column("record_hash", pa.string(), "SHA-1 of the block's content (a changed block lands anew)"),
)

EVAL_STEP_TABLE = TableSpec(
    EVAL_STEPS,
    (
        Column("step", pa.int64(), "the training step the eval ran at (-1: a baseline)"),
        Column("is_baseline", pa.bool_(), "a baseline eval (baseline_eval_*.json)"),
        *(
            Column(name, pa.int64() if name in EVAL_COUNTS else pa.float64(), "eval statistic")
            for name in EVAL_STATISTICS
        ),
        Column("has_baseline", pa.bool_(), "whether a baseline was compared (null: unknown)"),
        Column("extra", pa.string(), "every other key of the record (JSON object)"),
        *_RECORD_TAIL,
    ),
)

STEP_GROUP_TABLE = TableSpec(
    STEP_GROUPS,
    (
        Column("step", pa.int64(), "the training step"),
        Column("max_steps", pa.int64(), "the run's planned steps, where logged"),
        Column("groups_total", pa.int64(), "groups (queries) collected at the step"),
        Column("groups_kept", pa.int64(), "groups kept for training"),
        Column("groups_filtered", pa.int64(), "groups filtered for low variance"),
        Column("rollouts", pa.int64(), "rollouts collected at the step"),
        Column("finished_early", pa.int64(), "rollouts that finished before their last turn"),
        Column("rollout_time_s", pa.float64(), "seconds spent collecting rollouts"),
        Column("training_time_s", pa.float64(), "seconds spent training"),
        Column("total_tokens", pa.int64(), "tokens in the step's rollouts"),
        Column("trainable_tokens", pa.int64(), "tokens trained on (assistant tokens)"),
        Column("grad_norm", pa.float64(), "gradient norm (clipped), where logged"),
        Column("total_loss", pa.float64(), "the step's loss, where logged"),
        Column("rollouts_per_query", pa.int64(), "rollouts per query ('Collecting N rollouts')"),
        Column("queries", pa.int64(), "queries ('... for M queries')"),
        Column("all_filtered", pa.bool_(), "the trainer warned that every group was filtered"),
        *_RECORD_TAIL,
    ),
)

TURN_ADVANTAGE_TABLE = TableSpec(
    TURN_ADVANTAGES,
    (
        Column("step", pa.int64(), "the training step of the table"),
        Column("group_id", pa.string(), "the group ('GROUP g/G' gives g)"),
        Column("groups_in_step", pa.int64(), "G of 'GROUP g/G', where logged"),
        Column("sample_idx", pa.int64(), "0-based rollout in the group (the table prints it + 1)"),
        Column("turn", pa.int64(), "1-based turn"),
        Column("advantage", pa.float64(), "the rollout's advantage at the turn"),
        *_RECORD_TAIL,
    ),
)

# Each record table's key: the columns one block (one record) shares.
RECORD_KEYS: dict[str, tuple[str, ...]] = {
    EVAL_STEPS: ("step", "is_baseline"),
    STEP_GROUPS: ("step",),
    TURN_ADVANTAGES: ("step", "group_id"),
}
RECORD_TABLES: dict[str, TableSpec] = {
    EVAL_STEPS: EVAL_STEP_TABLE,
    STEP_GROUPS: STEP_GROUP_TABLE,
    TURN_ADVANTAGES: TURN_ADVANTAGE_TABLE,
}

# Every lake table a landing writes (the manifest aside), with its schema: the lake's
# layout is <table>/run_id=<run>/ingested_at=<t>/part.parquet for each of them.
LAKE_TABLES: dict[str, TableSpec] = {
    ROLLOUTS: ROLLOUT_TABLE,
    ROLLOUT_TOKENS: ROLLOUT_TOKEN_TABLE,
    REJECTS: REJECT_TABLE,
    METRICS: METRIC_TABLE,
    RUNS: RUN_TABLE,
    REWARD_SAMPLES: REWARD_SAMPLE_TABLE,
    **RECORD_TABLES,
}
