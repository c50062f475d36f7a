-- The run report's rollout reliability chart, step by step.
select
    step,
    failed_rollouts,
    max_total_s,
    max_volume_reload_s
from fct_rollout_reliability
where run_id = $run
order by 1
