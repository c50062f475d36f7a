-- `obs export tensorboard`: each reward function's steps of the run, each
-- column a scalar tag of the function (reports/tensorboard_export.py,
-- FUNCTION_TAGS).
select
    step,
    reward_function,
    mean,
    std,
    contribution_pct
from fct_reward_function_steps
where run_id = $run
order by 1, 2
