with

int_rollout_instructions_unnested as (
    select * from {{ ref('int_rollout_instructions_unnested') }}
),

instruction_rates as (
    {# Each instruction's own success rate over all the run's rollouts. #}
    select
        run_id,
        instruction_id,
        avg(case when is_followed then 1.0 else 0.0 end) as success_rate
    from int_rollout_instructions_unnested
    group by 1, 2
),

pairs as (
    select
        first_instruction.run_id,
        first_instruction.instruction_id as instruction_a,
        second_instruction.instruction_id as instruction_b,
        first_instruction.is_followed as is_followed_a,
        second_instruction.is_followed as is_followed_b
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
        run_id,
        instruction_a,
        instruction_b,
        count(*) as n,
        avg(case when is_followed_a and is_followed_b then 1.0 else 0.0 end)
            as joint_success_rate,
        avg(case when is_followed_a then 1.0 else 0.0 end)
            as pair_success_rate_a,
        avg(case when is_followed_b then 1.0 else 0.0 end)
            as pair_success_rate_b
    from pairs
    group by 1, 2, 3
),

with_expected as (
    select
        aggregated.*,
        rates_a.success_rate * rates_b.success_rate as expected_joint_rate
    from aggregated
    inner join instruction_rates as rates_a
        on
            aggregated.run_id = rates_a.run_id
            and aggregated.instruction_a = rates_a.instruction_id
    inner join instruction_rates as rates_b
        on
            aggregated.run_id = rates_b.run_id
            and aggregated.instruction_b = rates_b.instruction_id
),

final as (
    select
        ---------- ids
        run_id,
        instruction_a,
        instruction_b,

        ---------- numerics
        n,
        joint_success_rate,
        pair_success_rate_a,
        pair_success_rate_b,
        expected_joint_rate,
        joint_success_rate / nullif(expected_joint_rate, 0) as lift,

        ---------- booleans
        n >= {{ var('stuck_cell_min_samples') }}
        and joint_success_rate = 1 as is_stuck_at_one,
        n >= {{ var('stuck_cell_min_samples') }}
        and joint_success_rate = 0 as is_stuck_at_zero

    from with_expected
)

select * from final
