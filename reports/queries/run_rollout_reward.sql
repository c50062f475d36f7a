-- `obs analyze` of a run without a tracker history: its rollouts' mean score
-- over its iterations.
select
    arg_min(mean_score, iteration) as first,
    arg_max(mean_score, iteration) as last,
    min(mean_score) as min,
    max(mean_score) as max,
    avg(mean_score) as mean,
    count(*) as points
from fct_iteration_summary
where run_id = $run and isfinite(mean_score)
