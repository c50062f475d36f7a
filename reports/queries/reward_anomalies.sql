-- One row per anomalous step (fct_reward_anomalies' is_anomaly).
select
    run_id,
    step,
    mean_reward,
    historical_mean,
    z_score
from fct_reward_anomalies
where
    list_contains($runs, run_id)
    and is_anomaly
order by 1, 2
