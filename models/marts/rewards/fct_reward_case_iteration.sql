with

stg_rollouts as (
    select
        run_id,
        iteration,
        reward_case
    from {{ ref('stg_rollouts') }}
    where reward_case is not null
),

counted as (
    select
        run_id,
        iteration,
        reward_case,
        count(*) as n
    from stg_rollouts
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
        n * 1.0 / sum(n) over (partition by run_id, iteration) as share

    from counted
)

select * from final
