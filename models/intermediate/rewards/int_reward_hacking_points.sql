{# The points the reward monitor's own rule (fct_reward_hacking's
   seed_verdict) is judged on, and the performance series obs's verdict
   fits: one point per run, reward function (null for the total) and step
   at which the performance metric was logged, with the reward at that step
   (the latest reward step at or before it, when the two are logged at
   different steps; int_reward_hacking_series) and the point's position in
   the series (point_index, from 0). #}
with

performance as (
    select
        run_id,
        step,
        performance
    from {{ ref('int_reward_held_out') }}
),

rewards as (
    select
        run_id,
        reward_function,
        step,
        reward
    from {{ ref('int_reward_hacking_series') }}
),

series as (
    select distinct
        run_id,
        reward_function
    from rewards
),

wanted as (
    select
        series.run_id,
        series.reward_function,
        performance.step,
        performance.performance
    from series
    inner join performance on series.run_id = performance.run_id
),

aligned as (
    select
        wanted.run_id,
        wanted.reward_function,
        wanted.step,
        rewards.step as reward_step,
        rewards.reward,
        wanted.performance
    from wanted
    {{ asof_inner_join(
        'rewards',
        [
            ('wanted.run_id', 'rewards.run_id'),
            ("coalesce(wanted.reward_function, '')", "coalesce(rewards.reward_function, '')"),
        ],
        'wanted.step',
        'rewards.step',
    ) }}
),

final as (
    select
        ---------- ids
        run_id,
        reward_function,
        step,

        ---------- numerics
        reward_step,
        reward,
        performance,
        row_number() over (
            partition by run_id, reward_function order by step
        ) - 1 as point_index
    from aligned
)

select * from final
