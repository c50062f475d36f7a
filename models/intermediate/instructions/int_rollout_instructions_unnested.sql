{{ config(materialized='view') }}
{# One row per rollout and instruction of its prompt. A view: it is read once
   per build by the instruction marts and holds only small columns. #}
with

stg_rollouts as (
    select
        run_id,
        iteration,
        prompt_hash,
        sample_idx,
        instruction_ids,
        instruction_followed,
        prompt_strict_acc
    from {{ ref('stg_rollouts') }}
    where len(instruction_ids) > 0
),

positions as (
    select
        *,
        unnest(range(1, len(instruction_ids) + 1)) as instruction_position
    from stg_rollouts
),

unnested as (
    select
        ---------- ids
        run_id,
        iteration,
        prompt_hash,
        sample_idx,
        instruction_ids[instruction_position] as instruction_id,

        ---------- numerics
        instruction_position,

        ---------- booleans
        instruction_followed[instruction_position] is not null
            as has_instruction_flag,
        coalesce(
            instruction_followed[instruction_position],
            prompt_strict_acc >= 1.0
        ) as is_followed

    from positions
)

select * from unnested
