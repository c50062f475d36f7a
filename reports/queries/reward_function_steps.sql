-- One row per run, step and reward function: the function's mean and std
-- at the step (fct_reward_function_steps), for the run's first 20 functions
-- by importance rank (a run can log thousands: one trace each would not
-- draw; the page says how many it shows).
select
    steps.run_id,
    steps.step,
    steps.reward_function,
    steps.basis,
    steps.mean,
    steps.std,
    steps.signal_to_noise,
    steps.contribution_pct
from fct_reward_function_steps as steps
inner join fct_reward_function_importance as importance
    on
        steps.run_id = importance.run_id
        and steps.reward_function = importance.reward_function
where list_contains($runs, steps.run_id) and importance.rank <= 20
-- run, reward function, step
order by 1, 3, 2
