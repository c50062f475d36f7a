{{
    config(
        materialized='incremental',
        incremental_strategy='delete+insert',
        unique_key=['run_id', 'iteration'],
    )
}}
{# The one model that reads rollouts from the lake for the marts: every
   later model reads this narrow table (no prompt or response text) instead
   of the lake. Incremental by (run, iteration): a build re-reads from the
   lake only the iterations that received parts since the last build. #}
with

stg_rollouts as (
    select
        run_id,
        iteration,
        prompt_hash,
        sample_idx,
        score,
        v_i,
        s_i,
        alpha_threshold,
        reward_case,
        prompt_strict_acc,
        inst_strict_acc,
        num_instructions,
        instruction_ids,
        instruction_followed,
        response_chars,
        ingested_at
    from ({{ changed_rows(ref('stg_rollouts'), own_time='ingested_at') }})
),

scored as (
    select
        ---------- ids
        run_id,
        iteration,
        prompt_hash,
        sample_idx,

        ---------- strings
        reward_case,
        instruction_ids,

        ---------- numerics
        score,
        v_i,
        s_i,
        alpha_threshold,
        prompt_strict_acc,
        inst_strict_acc,
        num_instructions,
        response_chars,
        row_number() over (
            partition by run_id, iteration, prompt_hash
            order by score desc, sample_idx
        ) as score_rank,

        ---------- booleans
        instruction_followed,
        coalesce(
            prompt_strict_acc >= 1.0,
            score >= {{ var('pass_threshold') }}
        ) as is_strict_success,
        score >= {{ var('pass_threshold') }} as is_pass,

        ---------- timestamps
        ingested_at

    from stg_rollouts
)

select * from scored
