-- One row per run and reward function at the run's latest step with
-- per-function rewards: the function's share of the total reward (none
-- for a logged-only function, weight 0), for the run's first 20 functions
-- by importance rank (as reward_function_steps.sql).
select
    steps.run_id,
    steps.step,
    steps.reward_function,
    steps.basis,
    steps.mean,
    steps.contribution_pct,
    steps.abs_share,
    steps.is_logged_only
from fct_reward_function_steps as steps
inner join fct_reward_function_importance as importance
    on
        steps.run_id = importance.run_id
        and steps.reward_function = importance.reward_function
where list_contains($runs, steps.run_id)
qualify
    steps.step = max(steps.step) over (partition by steps.run_id)
    and importance.rank <= 20
-- run, reward function
order by 1, 3
