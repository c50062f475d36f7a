{# Advantages by turn index, one row per run, iteration and turn: how many
   rollouts were still active at the turn, and the mean and spread of their
   advantages (from fct_turn_advantages); the mean is rounded to 9
   decimals, below which it is rounding noise. Advantages computed from
   turn rewards average 0 at every turn by construction: for them the mean
   absolute advantage (how hard GRPO pushes at the turn) and the mean turn
   reward tell more. #}
with

turns as (
    select * from {{ ref('fct_turn_advantages') }}
),

iteration_rollouts as (
    select
        run_id,
        iteration,
        count(
            distinct {{ struct_from({'group_id': 'group_id', 'sample_idx': 'sample_idx'}) }}
        ) as rollouts
    from turns
    group by 1, 2
),

by_turn as (
    select
        run_id,
        iteration,
        turn,
        count(*) as rollouts_active,
        count(distinct group_id) as groups_active,
        {# advantages standardised within a group sum to 0 up to float
           noise: the mean is shown to 9 decimals, so 0 reads 0 #}
        round(avg(advantage), 9) as mean_advantage,
        avg(abs(advantage)) as mean_abs_advantage,
        case
            when min(advantage) = max(advantage) then 0.0
            else stddev_pop(advantage)
        end as std_advantage,
        min(advantage) as min_advantage,
        max(advantage) as max_advantage,
        avg(case when advantage < 0 then 1 else 0 end) as negative_share,
        avg(turn_reward) as mean_turn_reward,
        bool_and(is_given) as all_given
    from turns
    group by 1, 2, 3
),

final as (
    select
        ---------- ids
        by_turn.run_id,
        by_turn.iteration,
        by_turn.turn,

        ---------- numerics
        by_turn.rollouts_active,
        iteration_rollouts.rollouts,
        by_turn.rollouts_active / iteration_rollouts.rollouts as active_share,
        by_turn.groups_active,
        by_turn.mean_advantage,
        by_turn.mean_abs_advantage,
        by_turn.std_advantage,
        by_turn.min_advantage,
        by_turn.max_advantage,
        by_turn.negative_share,
        by_turn.mean_turn_reward,

        ---------- booleans
        by_turn.all_given
    from by_turn
    inner join iteration_rollouts using (run_id, iteration)
)

select * from final
