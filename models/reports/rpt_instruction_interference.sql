{# The dashboard's instruction interference matrix: each pair's lift on a log2
   scale (0 = independent, below 0 = the two interfere), and whether the pair
   has too few rollouts to colour. #}
with

fct_instruction_pairs as (
    select
        run_id,
        instruction_a,
        instruction_b,
        n,
        joint_success_rate,
        expected_joint_rate,
        lift,
        is_stuck_at_one,
        is_stuck_at_zero
    from {{ ref('fct_instruction_pairs') }}
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
        expected_joint_rate,
        lift,
        {# log2 cannot draw a lift of 0 (no rollout followed both): it is
           drawn at the floor, a lift of 1/16 #}
        {# (DuckDB's greatest skips a null: an unknown lift stays unknown) #}
        case when lift is not null then log2(greatest(lift, 0.0625)) end as drawn_log2_lift,

        ---------- booleans
        n < {{ var('stuck_cell_min_samples') }} as has_too_few_rollouts,
        is_stuck_at_one,
        is_stuck_at_zero

    from fct_instruction_pairs
)

select * from final
