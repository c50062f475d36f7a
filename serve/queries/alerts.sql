-- The reward alerts of every run (or of one), the most severe and the latest first.
select
    run_id,
    step,
    rule_name,
    level,
    metric,
    message,
    value,
    threshold,
    level_rank
from fct_alerts
where $run is null or run_id = $run
order by 9 desc, 1 asc, 2 desc
