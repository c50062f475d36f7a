-- One row per run, step and reward function: the function's mean and std
-- at the step (fct_reward_function_steps).
select
    run_id,
    step,
    reward_function,
    basis,
    mean,
    std,
    signal_to_noise,
    contribution_pct
from fct_reward_function_steps
where list_contains($runs, run_id)
-- run, reward function, step
order by 1, 3, 2
