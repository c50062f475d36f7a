-- `obs compare`: each compared run's row of dim_runs.
select
    run_id,
    name,
    state,
    last_landed_at,
    steps,
    last_step
from dim_runs
where run_id = $run
