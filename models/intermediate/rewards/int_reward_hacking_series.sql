{# The reward series reward hacking fits on its own points: one row per
   run, reward function (null for the total) and step at which that reward
   was logged (a finite step mean), with its change since the series'
   previous point and the steps between the two (null at its first point).
   The total is the step's mean reward, which is the sum of the functions'
   step means. fct_reward_hacking fits the reward on every step of a span
   (not only where the performance metric was logged), and estimates its
   noise from these changes. #}
with

total_steps as (
    select
        run_id,
        step,
        mean
    from {{ ref('int_reward_steps') }}
    where {{ is_finite('mean') }}
),

function_steps as (
    select
        run_id,
        reward_function,
        step,
        mean
    from {{ ref('int_reward_function_steps') }}
    where {{ is_finite('mean') }}
),

rewards as (
    select
        run_id,
        cast(null as string) as reward_function,
        step,
        mean as reward
    from total_steps
    union all
    select
        run_id,
        reward_function,
        step,
        mean as reward
    from function_steps
),

changes as (
    select
        run_id,
        reward_function,
        step,
        reward,
        lag(step) over series as previous_step,
        reward - lag(reward) over series as reward_change
    from rewards
    window series as (partition by run_id, reward_function order by step)
),

final as (
    select
        ---------- ids
        run_id,
        reward_function,
        step,

        ---------- numerics
        previous_step,
        reward,
        reward_change,
        step - previous_step as step_gap
    from changes
)

select * from final
