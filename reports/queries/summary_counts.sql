-- `obs summary`: the run's iterations and rollouts (fct_iteration_summary).
select
    count(*) as iterations,
    min(iteration) as first_iteration,
    max(iteration) as last_iteration,
    sum(n_rollouts) as rollouts
from fct_iteration_summary
where run_id = $run
