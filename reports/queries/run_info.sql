-- `obs analyze` and `obs export run`: the run's row of dim_runs.
select *  -- noqa: AM04
from dim_runs
where run_id = $run
