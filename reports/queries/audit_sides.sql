-- `obs audit`: how many rollout iterations and tracker steps the run has.
with

iterations as (
    select count(distinct iteration) as iterations
    from fct_iteration_summary
    where run_id = $run
),

steps as (
    select count(distinct step) as steps
    from fct_metric_history
    where run_id = $run
)

select
    iterations.iterations,
    steps.steps
from iterations
cross join steps
