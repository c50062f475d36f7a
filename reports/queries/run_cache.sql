-- `obs analyze`: the run's prefix cache statistics.
select *  -- noqa: AM04
from fct_cache_stats
where run_id = $run
