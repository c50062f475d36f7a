{{ config(incremental_by(['run_id', 'iteration'])) }}
with

int_rollouts_scored as (
    select
        run_id,
        iteration,
        reward_case,
        ingested_at
    from ({{ changed_rows(ref('int_rollouts_scored'), lookup=ref('stg_rollouts')) }})
    where reward_case is not null
),

counted as (
    select
        run_id,
        iteration,
        reward_case,
        count(*) as n,
        max(ingested_at) as ingested_through
    from int_rollouts_scored
    group by 1, 2, 3
),

final as (
    select
        ---------- ids
        run_id,
        iteration,
        reward_case,

        ---------- numerics
        n,
        cast(n as double) / sum(n) over (partition by run_id, iteration) as share,

        ---------- timestamps
        max(ingested_through) over (partition by run_id, iteration)
            as ingested_through

    from counted
)

select * from final
