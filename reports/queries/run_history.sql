-- `obs export run`: the run's whole metric history, step by step.
select
    step,
    metric,
    value,
    epoch(wall_time) as wall_time
from fct_metric_history
where run_id = $run
order by 1, 2
