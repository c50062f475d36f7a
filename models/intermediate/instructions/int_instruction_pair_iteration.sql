{{ config(incremental_by(['run_id', 'iteration'])) }}
{# Counts per run, iteration and pair of instructions given together in one
   rollout (instruction_a < instruction_b), so fct_instruction_pairs sums
   iterations instead of joining every rollout of the run again. #}
with

int_rollout_instructions_unnested as (
    {{ changed_rows(
        ref('int_rollout_instructions_unnested'), lookup=ref('stg_rollouts')
    ) }}
),

pairs as (
    select
        first_instruction.run_id,
        first_instruction.iteration,
        first_instruction.instruction_id as instruction_a,
        second_instruction.instruction_id as instruction_b,
        first_instruction.is_followed as is_followed_a,
        second_instruction.is_followed as is_followed_b,
        greatest(first_instruction.ingested_at, second_instruction.ingested_at)
            as ingested_at
    from int_rollout_instructions_unnested as first_instruction
    inner join int_rollout_instructions_unnested as second_instruction
        on
            first_instruction.run_id = second_instruction.run_id
            and first_instruction.iteration = second_instruction.iteration
            and first_instruction.prompt_hash = second_instruction.prompt_hash
            and first_instruction.sample_idx = second_instruction.sample_idx
            and first_instruction.instruction_id
            < second_instruction.instruction_id
),

aggregated as (
    select
        ---------- ids
        run_id,
        iteration,
        instruction_a,
        instruction_b,

        ---------- numerics
        count(*) as n,
        count(*) filter (where is_followed_a and is_followed_b) as n_joint,
        count(*) filter (where is_followed_a) as n_followed_a,
        count(*) filter (where is_followed_b) as n_followed_b,

        ---------- timestamps
        max(max(ingested_at)) over (partition by run_id, iteration)
            as ingested_through

    from pairs
    group by 1, 2, 3, 4
)

select * from aggregated
