-- `obs compare`: the summary of a metric ($metric: a canonical name or a key as
-- logged) in a run, its canonical name first.
-- every column: the answer shows the whole row
select *  -- noqa: AM04
from fct_metric_summary
where run_id = $run and (canonical_metric = $metric or metric = $metric)
order by canonical_metric = $metric desc  -- noqa: AM06
limit 1
