"""Files for the next step of training, written from the marts.

* ``export_buckets``: the difficulty-bucket files of one run and iteration
  (rollouts with rewards, per-problem metrics, problem -> bucket, one rollout
  file per bucket, a summary).
* ``export_curriculum``: the next run's dataset, one row per prompt with a
  sampling weight or an order and the reason for it.

Every number comes from a mart. The rollout files need the rollouts
themselves, which only the ``stg_rollouts`` view holds (it reads the lake in
place, so nothing is copied into the warehouse).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.parquet as pq
from obs.reports.errors import ReportError
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


def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    cursor = con.execute(sql, params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _check_run(con: duckdb.DuckDBPyConnection, warehouse: Path, run: str) -> None:
    runs = [r[0] for r in con.execute("select distinct run_id from fct_prompt_learning").fetchall()]
    if run not in runs:
        known = ", ".join(sorted(runs)) or "none"
        raise ReportError(f"{warehouse}: no run '{run}' (runs: {known})")


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
        _check_run(con, warehouse, run)
        iterations = [
            r[0]
            for r in con.execute(
                "select distinct iteration from fct_prompt_iteration where run_id = ? order by 1",
                [run],
            ).fetchall()
        ]
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


def _write_buckets(
    con: duckdb.DuckDBPyConnection, run: str, iteration: int, strategy: str, output_dir: Path
) -> BucketExport:
    params = [run, iteration]
    has_data_idx = con.execute(
        "select count(data_idx) > 0 from stg_rollouts where run_id = ? and iteration = ?",
        params,
    ).fetchone()
    key = "data_idx" if has_data_idx and has_data_idx[0] else "prompt_hash"
    problems = _rows(
        con,
        f"""
        with keys as (
            select prompt_hash, min(data_idx) as data_idx
            from stg_rollouts
            where run_id = ? and iteration = ?
            group by 1
        )
        select
            cast(keys.{key} as varchar) as problem,
            buckets.bucket,
            metrics.*
        from fct_prompt_iteration as metrics
        inner join keys on metrics.prompt_hash = keys.prompt_hash
        inner join fct_difficulty_buckets as buckets
            on buckets.run_id = metrics.run_id
            and buckets.iteration = metrics.iteration
            and buckets.prompt_hash = metrics.prompt_hash
            and buckets.strategy = ?
        where metrics.run_id = ? and metrics.iteration = ?
        order by keys.{key}
        """,
        [run, iteration, strategy, run, iteration],
    )
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

    rollouts = con.execute(
        f"""
        select
            stg_rollouts.data_idx,
            stg_rollouts.sample_idx,
            stg_rollouts.prompt_hash,
            cast(stg_rollouts.{key} as varchar) as problem,
            stg_rollouts.iteration,
            stg_rollouts.prompt,
            stg_rollouts.response,
            stg_rollouts.score as reward,
            buckets.bucket,
            stg_rollouts.extra
        from stg_rollouts
        inner join fct_difficulty_buckets as buckets
            on buckets.run_id = stg_rollouts.run_id
            and buckets.iteration = stg_rollouts.iteration
            and buckets.prompt_hash = stg_rollouts.prompt_hash
            and buckets.strategy = ?
        where stg_rollouts.run_id = ? and stg_rollouts.iteration = ?
        order by stg_rollouts.{key}, stg_rollouts.sample_idx
        """,
        [strategy, run, iteration],
    ).to_arrow_table()
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

    overall = _rows(
        con,
        """
        select
            sum(mean_score * n_samples) / sum(n_samples) as mean_reward,
            sum(pass_rate * n_samples) / sum(n_samples) as pass_rate,
            avg(mean_at_1) as "mean@1",
            avg(mean_at_3) as "mean@3",
            avg(mean_at_5) as "mean@5",
            avg(mean_at_10) as "mean@10",
            avg(mean_at_20) as "mean@20",
            avg(std_score) as mean_std_reward
        from fct_prompt_iteration
        where run_id = ? and iteration = ?
        """,
        params,
    )[0]
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

    * ``upsample``: weight = 1 + max(upsampling_score, 0), halved for a prompt
      stuck solved (it gives GRPO no signal); every prompt kept.
    * ``order``: easy to hard by the last iteration's mean@5 (ties by
      prompt_hash), for a curriculum sampler that walks the file in order.
    * ``drop-solved``: every prompt but those stuck solved, weight 1.
    """
    if mode not in CURRICULUM_MODES:
        raise ReportError(f"mode {mode!r}: choose one of {', '.join(CURRICULUM_MODES)}")
    con = connect(warehouse)
    try:
        require_tables(
            con,
            warehouse,
            "fct_upsampling_candidates",
            "fct_prompt_iteration",
            "dim_prompts",
            "fct_prompt_learning",
        )
        _check_run(con, warehouse, run)
        table = con.execute(
            """
            with last_iteration as (
                select prompt_hash, arg_max(mean_at_5, iteration) as last_mean_at_5
                from fct_prompt_iteration
                where run_id = ?
                group by 1
            ),
            buckets as (
                select prompt_hash, arg_max(bucket, iteration) as last_bucket
                from fct_difficulty_buckets
                where run_id = ? and strategy = 'percentile'
                group by 1
            )
            select
                candidates.prompt_hash,
                dim_prompts.data_idx,
                dim_prompts.prompt,
                candidates.priority,
                candidates.efficiency_quadrant,
                buckets.last_bucket as difficulty_bucket,
                candidates.upsampling_score,
                candidates.final_score_factor,
                candidates.learning_rate_factor,
                candidates.forgetting_factor,
                last_iteration.last_mean_at_5,
                candidates.is_stuck_solved,
                candidates.is_stuck_failed
            from fct_upsampling_candidates as candidates
            inner join dim_prompts on candidates.prompt_hash = dim_prompts.prompt_hash
            inner join last_iteration
                on candidates.prompt_hash = last_iteration.prompt_hash
            left join buckets on candidates.prompt_hash = buckets.prompt_hash
            where candidates.run_id = ?
            order by candidates.prompt_hash
            """,
            [run, run, run],
        ).to_arrow_table()
    finally:
        con.close()
    rows = table.to_pylist()
    kept = []
    for row in rows:
        stuck = (
            "stuck solved"
            if row["is_stuck_solved"]
            else "stuck failed"
            if row["is_stuck_failed"]
            else None
        )
        factors = (
            f"final {row['final_score_factor']:.2f} + slope {row['learning_rate_factor']:.2f} "
            f"+ forgetting {row['forgetting_factor']:.2f}"
        )
        if mode == "drop-solved" and row["is_stuck_solved"]:
            continue
        if mode == "upsample":
            weight = 1.0 + max(row["upsampling_score"], 0.0)
            if row["is_stuck_solved"]:
                weight /= 2
            reason = f"priority {row['priority']}: {factors}" + (f"; {stuck}" if stuck else "")
        elif mode == "order":
            weight = 1.0
            reason = f"{row['difficulty_bucket']} (mean@5 {row['last_mean_at_5']:.2f})"
        else:
            weight = 1.0
            reason = stuck or "kept: still gives signal"
        kept.append(
            {
                "prompt_hash": row["prompt_hash"],
                "data_idx": row["data_idx"],
                "prompt": row["prompt"],
                "weight": weight,
                "order": 0,
                "reason": reason,
                "priority": row["priority"],
                "difficulty_bucket": row["difficulty_bucket"],
                "upsampling_score": row["upsampling_score"],
                "_easiness": row["last_mean_at_5"],
            }
        )
    if mode == "order":
        kept.sort(key=lambda r: (-(r["_easiness"] or 0.0), r["prompt_hash"]))
    for position, row in enumerate(kept):
        row["order"] = position
        del row["_easiness"]
    import pyarrow as pa

    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(kept), out)
    return CurriculumExport(run, mode, out, len(kept), len(rows) - len(kept))
