{{ config(incremental_by(['run_id', 'iteration'])) }}
with

int_rollout_instructions_unnested as (
    {{ changed_rows(
        ref('int_rollout_instructions_unnested'), lookup=ref('stg_rollouts')
    ) }}
),

aggregated as (
    select
        ---------- ids
        run_id,
        iteration,
        instruction_id,

        ---------- numerics
        count(*) as n,
        count(*) filter (where is_followed) as n_followed,
        count(distinct prompt_hash) as n_prompts,
        avg(case when is_followed then 1 else 0 end) as success_rate,
        avg(case when has_instruction_flag then 1 else 0 end)
            as flag_coverage,

        ---------- timestamps
        max(max(ingested_at)) over (partition by run_id, iteration)
            as ingested_through

    from int_rollout_instructions_unnested
    group by 1, 2, 3
)

select * from aggregated
