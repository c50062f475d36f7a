-- `obs analyze` and `obs export run`: the run's metric summaries, every one
-- (or the one logged as $metric).
select *  -- noqa: AM04
from fct_metric_summary
where run_id = $run and ($metric is null or metric = $metric)
