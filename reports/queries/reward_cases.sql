select
    run_id,
    iteration,
    reward_case,
    n,
    share
from fct_reward_case_iteration
where
    list_contains($runs, run_id)
    and ($iterations is null or list_contains($iterations, iteration))
-- run, reward case, iteration
order by 1, 3, 2
