-- The run report's performance chart: the run's throughput, step by step.
select
    step,
    trajectories_per_second,
    training_rollout_ratio,
    pipeline_overlap_s
from fct_run_throughput
where run_id = $run
order by 1
