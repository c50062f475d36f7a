{{ config(materialized='view') }}
{# A view over the lake: it copies nothing. The incremental models read it
   through the macro changed_rows, which writes the (run, iteration) groups
   to recompute into the query as constants; DuckDB pushes them through this
   view (they partition the window below) into the parquet scan, which skips
   every other part and row group unread. It holds no window: DuckDB would
   compute one for every model that reads the view, used or not (the
   score rank is fct_prompt_iteration's own). #}
with

stg_rollouts as (
    select
        run_id,
        iteration,
        prompt_hash,
        sample_idx,
        group_id,
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
        rewards,
        response_chars,
        ingested_at
    from {{ ref('stg_rollouts').include(database=false) }}
),

scored as (
    select
        ---------- ids
        run_id,
        iteration,
        prompt_hash,
        sample_idx,
        {# the trainer's group (verl's uid group, prime-rl's group id, the
           agentic trainer's group), when the source names one #}
        group_id,

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
        {# what the build's success rule compares (macro success_value) #}
        {{ success_value() }} as success_value,

        ---------- booleans
        instruction_followed,
        coalesce(
            prompt_strict_acc >= 1.0,
            score >= {{ var('pass_threshold') }}
        ) as is_strict_success,
        score >= {{ var('pass_threshold') }} as is_pass,
        {# the build's one definition of success (var success) #}
        {{ success_condition() }} as is_success,

        ---------- timestamps
        ingested_at

    from stg_rollouts
)

select * from scored
