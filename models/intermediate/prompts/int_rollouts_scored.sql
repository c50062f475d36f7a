{{ config(materialized='view') }}
{# A view: it keeps only numeric columns and must never copy the lake. #}
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
        prompt_strict_acc,
        inst_strict_acc,
        num_instructions,
        response_chars,
        ingested_at
    from {{ ref('stg_rollouts') }}
),

scored as (
    select
        ---------- ids
        run_id,
        iteration,
        prompt_hash,
        sample_idx,

        ---------- numerics
        score,
        v_i,
        s_i,
        inst_strict_acc,
        num_instructions,
        response_chars,
        row_number() over (
            partition by run_id, iteration, prompt_hash
            order by score desc, sample_idx
        ) as score_rank,

        ---------- booleans
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
