{# A whole-run summary, recomputed each build from the per-iteration counts
   (small: runs x iterations x pairs), never from the rollouts. #}
with

instruction_rates as (
    {# Each instruction's own success rate over all the run's rollouts. #}
    select
        run_id,
        instruction_id,
        sum(n_followed) / sum(n) as success_rate
    from {{ ref('fct_instruction_iteration') }}
    group by 1, 2
),

aggregated as (
    select
        run_id,
        instruction_a,
        instruction_b,
        cast(sum(n) as bigint) as n,
        sum(n_joint) / sum(n) as joint_success_rate,
        sum(n_followed_a) / sum(n) as pair_success_rate_a,
        sum(n_followed_b) / sum(n) as pair_success_rate_b
    from {{ ref('int_instruction_pair_iteration') }}
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
