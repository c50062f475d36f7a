with

int_rollout_instructions_unnested as (
    select * from {{ ref('int_rollout_instructions_unnested') }}
),

aggregated as (
    select
        ---------- ids
        run_id,
        iteration,
        instruction_id,

        ---------- numerics
        count(*) as n,
        count(distinct prompt_hash) as n_prompts,
        avg(case when is_followed then 1.0 else 0.0 end) as success_rate,
        avg(case when has_instruction_flag then 1.0 else 0.0 end)
            as flag_coverage

    from int_rollout_instructions_unnested
    group by 1, 2, 3
)

select * from aggregated
