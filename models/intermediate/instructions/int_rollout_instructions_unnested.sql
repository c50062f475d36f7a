{{ config(materialized='view') }}
{# One row per rollout and instruction of its prompt: a view, read by the
   incremental instruction models through changed_rows like
   int_rollouts_scored. #}
with

int_rollouts_scored as (
    select
        run_id,
        iteration,
        prompt_hash,
        sample_idx,
        instruction_ids,
        instruction_followed,
        is_success,
        ingested_at
    from {{ ref('int_rollouts_scored').include(database=false) }}
    where {{ list_size('instruction_ids') }} > 0
),

positions as (
    select
        *,
        {{ list_positions('instruction_ids') }} as instruction_position
    from int_rollouts_scored
),

unnested as (
    select
        ---------- ids
        run_id,
        iteration,
        prompt_hash,
        sample_idx,
        {{ list_element('instruction_ids', 'instruction_position') }}
            as instruction_id,

        ---------- numerics
        instruction_position,

        ---------- booleans
        {{ list_element('instruction_followed', 'instruction_position') }}
        is not null as has_instruction_flag,
        {# the instruction's own flag where the rollout carries one; else
           whether the rollout succeeded under the build's success rule
           (var success: under strict, all its instructions followed) #}
        coalesce(
            {{ list_element('instruction_followed', 'instruction_position') }},
            is_success
        ) as is_followed,

        ---------- timestamps
        ingested_at

    from positions
)

select * from unnested
