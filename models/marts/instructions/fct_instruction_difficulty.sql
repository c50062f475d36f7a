with

fct_instruction_iteration as (
    select * from {{ ref('fct_instruction_iteration') }}
),

ordered as (
    select
        *,
        row_number() over (
            partition by run_id, instruction_id order by iteration
        ) as from_first,
        row_number() over (
            partition by run_id, instruction_id order by iteration desc
        ) as from_last
    from fct_instruction_iteration
),

aggregated as (
    select
        run_id,
        instruction_id,
        sum(n) as n,
        count(*) as n_iterations,
        sum(success_rate * n) / sum(n) as avg_success_rate,
        min(iteration) as first_iteration,
        max(iteration) as last_iteration,
        max(success_rate) filter (where from_first = 1) as first_success_rate,
        max(success_rate) filter (where from_last = 1) as last_success_rate
    from ordered
    group by 1, 2
),

final as (
    select
        ---------- ids
        run_id,
        instruction_id,

        ---------- strings
        case
            when avg_success_rate < {{ var('instruction_tier_hard_below') }}
                then 'hard'
            when avg_success_rate < {{ var('instruction_tier_easy_from') }}
                then 'medium'
            else 'easy'
        end as tier,

        ---------- numerics
        cast(n as bigint) as n,
        n_iterations,
        avg_success_rate,
        first_iteration,
        last_iteration,
        first_success_rate,
        last_success_rate,
        last_success_rate - first_success_rate as success_rate_change,
        rank() over (
            partition by run_id order by avg_success_rate
        ) as difficulty_rank

    from aggregated
)

select * from final
