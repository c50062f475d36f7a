"""The lake's tables: names, partitioning and column types.

Every parquet file under ``<lake>/<table>/run_id=<run>/`` follows one of these
schemas. ``run_id`` is not stored in the files: it is the Hive partition, so
every engine that reads the lake with Hive partitioning gets it back.
"""

from __future__ import annotations

import pyarrow as pa

ROLLOUTS = "rollouts"
REJECTS = "_rejects"
MANIFEST = "_manifest"

# Canonical rollout columns (DESIGN.md), in order, with their DuckDB types.
# The ingester builds them in SQL; this mapping is the single list of names.
ROLLOUT_COLUMNS: dict[str, str] = {
    "iteration": "BIGINT",
    "prompt_hash": "VARCHAR",
    "sample_idx": "BIGINT",
    "data_idx": "BIGINT",
    "prompt": "VARCHAR",
    "response": "VARCHAR",
    "score": "DOUBLE",
    "v_i": "DOUBLE",
    "s_i": "DOUBLE",
    "alpha_threshold": "DOUBLE",
    "reward_case": "VARCHAR",
    "prompt_strict_acc": "DOUBLE",
    "inst_strict_acc": "DOUBLE",
    "num_instructions": "BIGINT",
    "num_followed": "BIGINT",
    "format_score": "DOUBLE",
    "instruction_ids": "VARCHAR[]",
    "instruction_followed": "BOOLEAN[]",
    "instruction_kwargs": "JSON",
    "ground_truth": "JSON",
    "extra": "JSON",
    "source_file": "VARCHAR",
    "source_line": "BIGINT",
    "ingested_at": "TIMESTAMP",
    "response_chars": "BIGINT",
}

REJECT_SCHEMA = pa.schema(
    [
        ("source_file", pa.string()),
        ("source_line", pa.int64()),
        ("reason", pa.string()),
        ("raw", pa.string()),
        ("ingested_at", pa.timestamp("us")),
    ]
)

MANIFEST_SCHEMA = pa.schema(
    [
        ("source_file", pa.string()),
        ("table_name", pa.string()),
        ("size_bytes", pa.int64()),
        ("content_sha1", pa.string()),
        ("bytes_consumed", pa.int64()),
        ("lines_consumed", pa.int64()),
        ("rows_landed", pa.int64()),
        ("rows_rejected", pa.int64()),
        ("ingested_at", pa.timestamp("us")),
    ]
)
