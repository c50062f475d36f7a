-- `obs analyze` of a run without a tracker history: its iterations.
select
    count(*) as iterations,
    max(iteration) as last_iteration
from fct_iteration_summary
where run_id = $run
