{{ config(incremental_by(['run_id', 'iteration'])) }}
with

int_rollouts_scored as (
    select
        run_id,
        iteration,
        score,
        ingested_at
    from ({{ changed_rows(ref('int_rollouts_scored'), lookup=ref('stg_rollouts')) }})
),

aggregated as (
    select
        ---------- ids
        run_id,
        iteration,

        ---------- numerics
        count(*) as n,
        avg(score) as mean_score,
        coalesce(stddev_samp(score), 0) as std_score,
        min(score) as min_score,
        {{ quantile('score', 0.05) }} as p05,
        {{ quantile('score', 0.25) }} as p25,
        {{ quantile('score', 0.5) }} as p50,
        {{ quantile('score', 0.75) }} as p75,
        {{ quantile('score', 0.95) }} as p95,
        max(score) as max_score,

        ---------- timestamps
        max(ingested_at) as ingested_through

    from int_rollouts_scored
    group by 1, 2
)

select * from aggregated
