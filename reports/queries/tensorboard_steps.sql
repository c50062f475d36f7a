-- `obs export tensorboard`: the run's reward steps, each column a scalar tag
-- (reports/tensorboard_export.py, STEP_TAGS).
select
    step,
    mean,
    std,
    min,
    max,
    total,
    signal_to_noise,
    entropy,
    variance,
    kl_divergence,
    policy_entropy,
    advantage_mean,
    advantage_std
from fct_reward_steps
where run_id = $run
order by 1
