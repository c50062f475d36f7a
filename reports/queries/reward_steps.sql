-- One row per run and step: the total reward's statistics, the training
-- dynamics and the performance metric, as fct_reward_steps has them. The
-- band is mean ± std; variance_scaled is the variance drawn on the
-- signal-to-noise scale (variance / its run maximum x the run's largest
-- signal-to-noise ratio; the raw variance when the maximum is not positive).
select
    run_id,
    step,
    basis,
    n,
    mean,
    std,
    min,
    max,
    mean - std as band_low,
    mean + std as band_high,
    signal_to_noise,
    entropy,
    variance,
    case
        when max(variance) over run > 0
            then variance / max(variance) over run * max(signal_to_noise) over run
        else variance
    end as variance_scaled,
    kl_divergence,
    policy_entropy,
    advantage_mean,
    advantage_std,
    performance,
    performance_metric
from fct_reward_steps
where list_contains($runs, run_id)
window run as (partition by run_id)
order by 1, 2
