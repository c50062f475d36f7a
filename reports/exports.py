"""Files for the next step of training, written from the marts.

* ``export_buckets``: the difficulty-bucket files of one run and iteration
  (rollouts with rewards, per-problem metrics, problem -> bucket, one rollout
  file per bucket, a summary).
* ``export_curriculum``: the next run's dataset, one row per prompt with a
  sampling weight or an order and the reason for it.

Every number comes from a mart, through the ``export_*`` queries of
``reports/queries/``. The rollout files need the rollouts themselves (their
texts, their data_idx), which only the ``stg_rollouts`` view holds (it reads
the lake in place, so nothing is copied into the warehouse).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from obs.reports.errors import ReportError
from obs.reports.resolve import WITH_ROLLOUTS, resolve_run
from obs.reports.sql import query_arrow, query_rows, query_value
from obs.reports.warehouse import connect, require_tables

STRATEGIES = ("percentile", "pass_rate", "mean_reward", "adaptive")
CURRICULUM_MODES = ("upsample", "order", "drop-solved")
METRIC_NAMES = {
    "mean_at_1": "mean@1",
    "mean_at_3": "mean@3",
    "mean_at_5": "mean@5",
    "mean_at_10": "mean@10",
    "mean_at_20": "mean@20",
    "pass_rate": "pass_rate",
    # the share of rollouts that succeed under var success: what pass_rate buckets by
    "success_rate": "success_rate",
    "mean_score": "mean_reward",
    "max_score": "max_reward",
    "min_score": "min_reward",
    "std_score": "std_reward",
    "n_samples": "num_samples",
}


@dataclass
class BucketExport:
    run_id: str
    iteration: int
    strategy: str
    problem_key: str  # "data_idx" or "prompt_hash"
    total_problems: int
    total_rollouts: int
    bucket_distribution: dict[str, int]
    overall_metrics: dict[str, float]
    files: list[Path] = field(default_factory=list)


@dataclass
class CurriculumExport:
    run_id: str
    mode: str
    path: Path
    prompts: int
    dropped: int


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def export_buckets(
    warehouse: Path,
    run: str,
    strategy: str,
    output_dir: Path,
    iteration: int | None = None,
) -> BucketExport:
    """Write the bucket files of ``run`` at ``iteration`` (default: its last)."""
    if strategy not in STRATEGIES:
        raise ReportError(f"strategy {strategy!r}: choose one of {', '.join(STRATEGIES)}")
    con = connect(warehouse)
    try:
        require_tables(con, warehouse, "fct_prompt_iteration", "fct_difficulty_buckets")
        resolve_run(con, warehouse, run, WITH_ROLLOUTS, shows="export its prompts")
        iterations = [r["iteration"] for r in query_rows(con, "export_iterations", run=run)]
        if iteration is None:
            iteration = iterations[-1]
        elif iteration not in iterations:
            raise ReportError(
                f"{warehouse}: run '{run}' has no iteration {iteration} "
                f"(it has {iterations[0]}..{iterations[-1]})"
            )
        return _write_buckets(con, run, iteration, strategy, output_dir)
    finally:
        con.close()


def _with_buckets(rollouts: pa.Table, buckets: dict[str, str]) -> pa.Table:
    """The rollouts of the problems that have a bucket, each with its problem's ``bucket``
    (the column before ``extra``)."""
    problems = rollouts.column("problem").to_pylist()
    kept = rollouts.filter(pa.array([problem in buckets for problem in problems]))
    column = pa.array([buckets[p] for p in kept.column("problem").to_pylist()], pa.string())
    return kept.add_column(kept.schema.get_field_index("extra"), "bucket", column)


def _write_buckets(
    con: duckdb.DuckDBPyConnection, run: str, iteration: int, strategy: str, output_dir: Path
) -> BucketExport:
    params = {"run": run, "iteration": iteration, "strategy": strategy}
    by_data_idx = bool(query_value(con, "export_problem_key", **params))
    key = "data_idx" if by_data_idx else "prompt_hash"
    problems = query_rows(con, "export_problems", by_data_idx=by_data_idx, **params)
    output_dir.mkdir(parents=True, exist_ok=True)
    files = []
    metrics_file = output_dir / "problem_metrics.json"
    metrics_file.write_text(
        json.dumps(
            {
                p["problem"]: {label: _finite(p[column]) for column, label in METRIC_NAMES.items()}
                for p in problems
            },
            indent=2,
        )
    )
    buckets_file = output_dir / "problem_buckets.json"
    buckets_file.write_text(json.dumps({p["problem"]: p["bucket"] for p in problems}, indent=2))
    files += [metrics_file, buckets_file]

    rollouts = _with_buckets(
        query_arrow(con, "export_rollouts", by_data_idx=by_data_idx, **params),
        {p["problem"]: p["bucket"] for p in problems},
    )
    all_file = output_dir / "rollouts_with_rewards.parquet"
    pq.write_table(rollouts, all_file)
    files.append(all_file)
    distribution: dict[str, int] = {}
    for p in problems:
        distribution[p["bucket"]] = distribution.get(p["bucket"], 0) + 1
    bucket_column = rollouts.column("bucket").to_pylist()
    for bucket in sorted(distribution):
        picked = [i for i, b in enumerate(bucket_column) if b == bucket]
        bucket_file = output_dir / f"rollouts_{bucket}.parquet"
        pq.write_table(rollouts.take(picked), bucket_file)
        files.append(bucket_file)

    overall = query_rows(con, "export_overall", **params)[0]
    result = BucketExport(
        run_id=run,
        iteration=iteration,
        strategy=strategy,
        problem_key=key,
        total_problems=len(problems),
        total_rollouts=rollouts.num_rows,
        bucket_distribution=distribution,
        overall_metrics={k: float(v) for k, v in overall.items() if v is not None},
        files=files,
    )
    summary_file = output_dir / "summary.json"
    summary_file.write_text(
        json.dumps(
            {
                "run_id": run,
                "iteration": iteration,
                "total_problems": result.total_problems,
                "total_rollouts": result.total_rollouts,
                "strategy": strategy,
                "problem_key": key,
                "bucket_distribution": distribution,
                "overall_metrics": result.overall_metrics,
            },
            indent=2,
        )
    )
    result.files.append(summary_file)
    return result


def export_curriculum(warehouse: Path, run: str, out: Path, mode: str) -> CurriculumExport:
    """Write the next run's dataset: one row per prompt with weight or order and reason.

    The rows are ``fct_curriculum``'s for ``run`` and ``mode`` (its yml states the
    rules), written in order without the dropped prompts:

    * ``upsample``: weight = 1 + max(upsampling_score_scaled, 0) (the seed's
      upsampling score on the score scaled to the run's range), halved for a
      prompt stuck solved (it gives GRPO no signal); every prompt kept.
    * ``order``: easy to hard by the last iteration's mean@5 (ties by
      prompt_hash), for a curriculum sampler that walks the file in order.
    * ``drop-solved``: every prompt but those stuck solved, weight 1.
    """
    if mode not in CURRICULUM_MODES:
        raise ReportError(f"mode {mode!r}: choose one of {', '.join(CURRICULUM_MODES)}")
    con = connect(warehouse)
    try:
        require_tables(con, warehouse, "fct_curriculum", "fct_prompt_learning")
        resolve_run(con, warehouse, run, WITH_ROLLOUTS, shows="export its prompts")
        rows = _rows_of_mode(con, run, mode)
    finally:
        con.close()
    kept = [
        {k: v for k, v in row.items() if k != "is_dropped"} for row in rows if not row["is_dropped"]
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    # From Python rows, so the column types are inferred as they always were (a
    # data_idx that is null throughout is a null column).
    pq.write_table(pa.Table.from_pylist(kept), out)
    return CurriculumExport(run, mode, out, len(kept), len(rows) - len(kept))


def _rows_of_mode(con: duckdb.DuckDBPyConnection, run: str, mode: str) -> list[dict[str, Any]]:
    return query_rows(con, "export_curriculum", run=run, mode=mode)
