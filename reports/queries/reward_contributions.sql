-- One row per run and reward function at the run's latest step with
-- per-function rewards: the function's share of the total reward (none
-- for a logged-only function, weight 0).
select
    run_id,
    step,
    reward_function,
    basis,
    mean,
    contribution_pct,
    abs_share,
    is_logged_only
from fct_reward_function_steps
where list_contains($runs, run_id)
qualify step = max(step) over (partition by run_id)
-- run, reward function
order by 1, 3
