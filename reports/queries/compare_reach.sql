-- `obs compare --target`: the first step at which a run's metric ($key, as
-- logged) reached $target (at or below it when $lower, else at or above), its
-- wall time, and the run's first wall time.
with

reached as (
    select
        step,
        wall_time
    from fct_metric_history
    where
        run_id = $run
        and metric = $key
        and isfinite(value)
        and ((value <= $target and $lower) or (value >= $target and not $lower))
),

first_reached as (
    select min(step) as step from reached
),

reached_at as (
    select min(reached.wall_time) as wall_time
    from reached
    inner join first_reached on reached.step = first_reached.step
),

started as (
    select min(wall_time) as start
    from fct_metric_history
    where run_id = $run
)

select
    first_reached.step,
    reached_at.wall_time,
    started.start
from first_reached
cross join reached_at
cross join started
