-- The run report: whether the run logged its cumulative compute (the power
-- law's axis).
select count(*) > 0 as logs_compute
from fct_metric_summary
where run_id = $run and canonical_metric = 'cumulative_compute'
