-- The run report's charts of canonical metrics ($metrics): each one's finite
-- points, step by step (fct_metric_history).
select
    canonical_metric as name,
    step,
    value
from fct_metric_history
where
    run_id = $run
    and list_contains($metrics, canonical_metric)
    and isfinite(value)
order by 2
